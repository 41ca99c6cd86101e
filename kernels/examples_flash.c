/* kernels/examples_flash.c: a causal flash attention written in expert
 * mode (pto/tileprog.h): one tile program of general instructions
 * (matmuls, row reductions, element ops) with an online softmax, each
 * block one head's query rows over the key blocks it sees, the blocks
 * past the diagonal skipped. */
#include <math.h>

#include "examples.h"

#define D3(a, b, c) ((const int64_t[]){(a), (b), (c)})

/* The query rows and keys of a block: the largest power of two up to 256
 * that divides the sequence (256 x 256 measured best on a Xeon with
 * AVX-512 among 128, 256 and 512 rows by 64, 128 and 256 keys: the
 * matmuls grow, the steps of the online softmax get fewer). */
static uint32_t flash_block(int64_t S) {
  for (uint32_t b = 256; b > 1; b /= 2)
    if (S % b == 0)
      return b;
  return 1;
}

/* One step of the online softmax over the scores s of a key block, the
 * running row max m, row sum l and output o, with the key block's values
 * v: p = exp(s - m'), l = l e^(m - m') + rowsum(p), o = o e^(m - m') + p v,
 * m = m' (m' = max(m, rowmax(s))). */
typedef struct flash_tiles {
  int q, kt, v, s, p, o, m, mn, mb, al, l, lb;
} flash_tiles;

static void online_step(pto_tprog *tp, const flash_tiles *t) {
  pto_tprog_op(tp, "TROWMAX", 1, &t->mb, 1, &t->s, NULL);
  pto_tprog_op(tp, "TMAX", 1, &t->mn, 2, (int[]){t->m, t->mb}, NULL);
  pto_tprog_op(tp, "TSUB", 1, &t->al, 2, (int[]){t->m, t->mn}, NULL);
  pto_tprog_op(tp, "TEXP", 1, &t->al, 1, &t->al, NULL);
  pto_tprog_op(tp, "TROWEXPANDEXPDIFSUM", 2, (int[]){t->p, t->lb}, 2,
               (int[]){t->s, t->mn}, NULL);
  pto_tprog_op(tp, "TMUL", 1, &t->l, 2, (int[]){t->l, t->al}, NULL);
  pto_tprog_op(tp, "TADD", 1, &t->l, 2, (int[]){t->l, t->lb}, NULL);
  const pto_tp_opargs rescale = {.flags = PTO_TP_ROWSCALE};
  pto_tprog_op(tp, "TMATMUL_ACC", 1, &t->o, 3, (int[]){t->p, t->v, t->al},
               &rescale);
  pto_tprog_op(tp, "TMOV", 1, &t->m, 1, &t->mn, NULL);
}

/* The scores of the queries in q against key block key0 (its keys
 * loaded transposed, its values as they are). */
static void scores(pto_tprog *tp, const flash_tiles *t, int k, int v,
                   int hv, pto_tp_expr key0) {
  const pto_tp_expr at[3] = {pto_tp_var(hv, 1), key0, pto_tp_const(0)};
  pto_tprog_load_t(tp, t->kt, k, at, PTO_TP_TRANS);
  pto_tprog_load(tp, t->v, v, at);
  pto_tprog_op(tp, "TMATMUL", 1, &t->s, 2, (int[]){t->q, t->kt}, NULL);
}

/* The program for tile: cube_m query rows a block, cube_n keys a step
 * (0: flash_block's), on the inputs' sizes (a pto_tprog_build_fn). */
static pto_tprog *flash_tprog(const pto_tile_shape *tile, int n_in,
                              pto_tensor *const *in, void *user) {
  (void)user;
  (void)n_in;
  const int64_t H = pto_tensor_dim(in[0], 0), S = pto_tensor_dim(in[0], 1),
                D = pto_tensor_dim(in[0], 2);
  const uint32_t kb = tile->cube_n ? tile->cube_n : flash_block(S),
                 tq = tile->cube_m ? tile->cube_m : kb;
  const int fits = kb && tq && tq % kb == 0 && S % tq == 0;
  pto_tprog *tp = pto_tprog_new("flash", 2, (int64_t[]){H, fits ? S / tq : 1});
  if (!fits) {
    pto_tprog_fail(tp, PTO_EINVAL,
                   "%u query rows a block by %u keys a step over %lld keys: "
                   "the rows must be whole steps and divide the keys",
                   tq, kb, (long long)S);
    return tp;
  }
  const int q = pto_tprog_input(tp, "q", PTO_F32, 3, D3(H, S, D)),
            k = pto_tprog_input(tp, "k", PTO_F32, 3, D3(H, S, D)),
            v = pto_tprog_input(tp, "v", PTO_F32, 3, D3(H, S, D)),
            out = pto_tprog_output(tp, "out", PTO_F32, 3, D3(H, S, D));
  const uint32_t ud = (uint32_t)D;
  flash_tiles t = {
      .q = pto_tprog_tile(tp, "q", PTO_MEM_L0A, PTO_F32, tq, ud, 1),
      .kt = pto_tprog_tile(tp, "kt", PTO_MEM_L0B, PTO_F32, ud, kb, 2),
      .v = pto_tprog_tile(tp, "v", PTO_MEM_L0B, PTO_F32, kb, ud, 2),
      .s = pto_tprog_tile(tp, "s", PTO_MEM_L0C, PTO_F32, tq, kb, 1),
      .p = pto_tprog_tile(tp, "p", PTO_MEM_L0A, PTO_F32, tq, kb, 1),
      .o = pto_tprog_tile(tp, "o", PTO_MEM_L0C, PTO_F32, tq, ud, 1),
      .m = pto_tprog_tile(tp, "m", PTO_MEM_UB, PTO_F32, tq, 1, 1),
      .mn = pto_tprog_tile(tp, "mn", PTO_MEM_UB, PTO_F32, tq, 1, 1),
      .mb = pto_tprog_tile(tp, "mb", PTO_MEM_UB, PTO_F32, tq, 1, 1),
      .al = pto_tprog_tile(tp, "alpha", PTO_MEM_UB, PTO_F32, tq, 1, 1),
      .l = pto_tprog_tile(tp, "l", PTO_MEM_UB, PTO_F32, tq, 1, 1),
      .lb = pto_tprog_tile(tp, "lb", PTO_MEM_UB, PTO_F32, tq, 1, 1)};
  const int hv = pto_tprog_block(tp, 0), iv = pto_tprog_block(tp, 1);
  const pto_tp_expr q0 = pto_tp_var(iv, tq);
  pto_tprog_load(tp, t.q, q, (pto_tp_expr[]){pto_tp_var(hv, 1), q0,
                                               pto_tp_const(0)});
  pto_tprog_op(tp, "TEXPANDS", 1, &t.m, 0, NULL,
               &(pto_tp_opargs){.s = -INFINITY});
  pto_tprog_op(tp, "TEXPANDS", 1, &t.l, 0, NULL, NULL);
  pto_tprog_op(tp, "TEXPANDS", 1, &t.o, 0, NULL, NULL);
  /* the key blocks wholly before the block's first query: unmasked */
  const int j = pto_tprog_for(tp, pto_tp_var(iv, tq / kb));
  scores(tp, &t, k, v, hv, pto_tp_var(j, kb));
  online_step(tp, &t);
  pto_tprog_end(tp);
  /* the key blocks beside the block's queries: key c of block j2 is hidden
   * from query r where c + j2 kb > r */
  const int j2 = pto_tprog_for(tp, pto_tp_const(tq / kb));
  scores(tp, &t, k, v, hv, pto_tp_add(q0, pto_tp_var(j2, kb)));
  pto_tp_opargs mask = {.s = -INFINITY};
  mask.imm[0] = pto_tp_var(j2, -(int64_t)kb);
  pto_tprog_op(tp, "TTRIFILL", 1, &t.s, 1, &t.s, &mask);
  online_step(tp, &t);
  pto_tprog_end(tp);
  pto_tprog_op(tp, "TROWEXPANDDIV", 1, &t.o, 2, (int[]){t.o, t.l}, NULL);
  pto_tprog_store(tp, t.o, out, (pto_tp_expr[]){pto_tp_var(hv, 1), q0,
                                                 pto_tp_const(0)});
  return tp;
}

pto_tensor *pto_example_flash_expert(pto_program *p, pto_tensor *q,
                                     pto_tensor *k, pto_tensor *v,
                                     uint32_t tq, uint32_t kb) {
  if (!q || !k || !v)
    return NULL;
  /* the scale on the queries, by a tensor op in front */
  pto_tensor *in[3] = {pto_muls(p, q, 1 / sqrt((double)pto_tensor_dim(q, 2))),
                       k, v};
  pto_tile_shape tile = pto_program_tile(p);
  tile.cube_m = tq;
  tile.cube_n = kb;
  pto_program_push_tile(p, &tile);
  pto_tensor *o = NULL;
  pto_tile_program_tuned(p, flash_tprog, NULL, 3, in, &o);
  pto_program_pop_tile(p);
  return o;
}
