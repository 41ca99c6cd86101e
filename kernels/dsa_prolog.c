/* The DSA chain's two prologs as ops of a program (pto/dsa.h): the MLA
 * prolog (q in the latent space with its rope part, and the new tokens'
 * KV rows) and the indexer prolog (index queries, keys and weights). The
 * norms are pto_rms_norm and pto_layer_norm (as composed here before, bit
 * for bit), RoPE is composed from element-wise ops, slices and concats:
 * views cost no task, and the matmuls take every token at once (M = T,
 * never a matmul per token). */
#include <math.h>
#include <string.h>

#include "dsa_internal.h"
#include "pto/pto.h"

#define NORM_EPS 1e-6

typedef struct stage {
  pto_program *p;
  pto_tile_shape tile; /* the params' tile for the stage, or zeros */
  int given;
} stage;

static void stage_init(stage *st, pto_program *p, const pto_tile_shape *t) {
  memset(st, 0, sizeof *st);
  st->p = p;
  st->tile = *t;
  st->given = t->vec_rows || t->vec_cols || t->cube_m || t->cube_n || t->cube_k;
  if (!st->given)
    st->tile = pto_tile_shape_default();
}

/* a [..,M,K] x b [..,K,N] under the stage's cube tile, or, when the
 * stage has none, the one the compiler chooses for the machine it
 * compiles for (core/tile_choose.c: it spreads the batch, a's leading
 * dims, over the workers before it cuts each matmul, so the 128 heads of
 * the absorption through w_uk are not cut again into 512 tasks of 237 us
 * at prefill, 43% of them in TLOAD and TSTORE). A tile chosen here for
 * the host did not fit another machine: --simulate ascend failed to
 * compile the q_down matmul (16x384x256 needs 384 KiB of L0B, it has 64). */
static pto_tensor *mm(stage *st, const char *label, pto_tensor *a,
                      pto_tensor *b) {
  pto_program_push_label(st->p, label);
  pto_tensor *c = pto_matmul(st->p, a, b, 0);
  pto_program_pop_label(st->p);
  return c;
}

/* The stage's tile scope: the params' tile, or the default vector tile
 * with the cube tile left to the compiler (mm above). */
static void stage_push(stage *st) {
  if (st->given) {
    pto_program_push_tile(st->p, &st->tile);
    return;
  }
  pto_program_push_tile(st->p, NULL);
  pto_program_set_vec_tile(st->p, st->tile.vec_rows, st->tile.vec_cols);
}

/* t[..., b:e] along the last axis (a view). */
static pto_tensor *last(pto_program *p, pto_tensor *t, int64_t b, int64_t e) {
  const int nd = pto_tensor_ndim(t);
  if (nd < 1)
    return NULL;
  int64_t lo[PTO_MAX_DIMS], hi[PTO_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    lo[i] = 0;
    hi[i] = pto_tensor_dim(t, i);
  }
  lo[nd - 1] = b;
  hi[nd - 1] = e;
  return pto_slice(p, t, lo, hi);
}

/* Rotate-half RoPE of u [...,R] with cos and sin broadcast to it:
 * u * cos + concat(-u[R/2:], u[:R/2]) * sin. */
static pto_tensor *rope(pto_program *p, pto_tensor *u, pto_tensor *cs,
                        pto_tensor *sn) {
  const int64_t R = pto_tensor_dim(u, -1);
  pto_tensor *half[2] = {pto_neg(p, last(p, u, R / 2, R)),
                         last(p, u, 0, R / 2)};
  pto_tensor *rot = pto_concat(p, 2, half, -1);
  return pto_add(p, pto_mul(p, u, cs), pto_mul(p, rot, sn));
}

/* RoPE on the first R of v's DI columns, the rest unchanged; a dense
 * tensor (the Hadamard matmul reshapes it). */
static pto_tensor *rope_head(pto_program *p, pto_tensor *v, int64_t R,
                             pto_tensor *cs, pto_tensor *sn) {
  const int64_t DI = pto_tensor_dim(v, -1);
  pto_tensor *r = rope(p, last(p, v, 0, R), cs, sn);
  if (R == DI)
    return r;
  pto_tensor *parts[2] = {r, last(p, v, R, DI)};
  return pto_concat(p, 2, parts, -1);
}

static void mla_prolog(pto_program *p, const pto_dsa_dims *d, int64_t T,
                       const pto_dsa_params *prm, pto_tensor *const *in,
                       const int64_t *heads, pto_tensor *cos3, pto_tensor *sin3,
                       pto_tensor **c_q, pto__dsa_prolog *out) {
  const int64_t N = d->nope, R = d->rope, L = d->latent,
                H = heads[1] - heads[0];
  pto_tensor *w_uq = in[PTO_DSA_W_UQ_QR], *w_uk = in[PTO_DSA_W_UK];
  if (H != d->h) { /* the heads' columns of w_uq_qr, their w_uk */
    w_uq = last(p, w_uq, heads[0] * (N + R), heads[1] * (N + R));
    w_uk = pto__dsa_rows(p, w_uk, heads[0], H);
  }
  stage st;
  stage_init(&st, p, &prm->mla_prolog);
  stage_push(&st);
  pto_program_push_label(p, "mla_prolog");
  pto_tensor *xq = mm(&st, "q_down", in[PTO_DSA_X], in[PTO_DSA_W_DQ]);
  pto_program_push_label(p, "q_norm");
  *c_q = pto_rms_norm(p, xq, in[PTO_DSA_GAMMA_CQ], NORM_EPS);
  pto_program_pop_label(p);
  pto_tensor *qq = pto_reshape(p, mm(&st, "q_up", *c_q, w_uq), 3,
                               (const int64_t[]){T, H, N + R});
  /* the nope part absorbed into the latent space, head by head: [H,T,N] x
   * [H,N,L], read and written through transposed views */
  pto_tensor *qn = pto_transpose(p, last(p, qq, 0, N), 0, 1);
  pto_tensor *qa = pto_transpose(p, mm(&st, "q_absorb", qn, w_uk), 0, 1);
  pto_program_push_label(p, "q_rope");
  pto_tensor *qr = rope(p, last(p, qq, N, N + R), cos3, sin3);
  pto_program_pop_label(p);
  pto_program_push_label(p, "q");
  pto_tensor *qparts[2] = {qa, qr};
  out->q = pto_concat(p, 2, qparts, 2);
  pto_program_pop_label(p);
  pto_tensor *kvr = mm(&st, "kv_down", in[PTO_DSA_X], in[PTO_DSA_W_DKV_KR]);
  pto_program_push_label(p, "kv_norm");
  pto_tensor *ckv =
      pto_rms_norm(p, last(p, kvr, 0, L), in[PTO_DSA_GAMMA_CKV], NORM_EPS);
  pto_program_pop_label(p);
  pto_program_push_label(p, "k_rope");
  pto_tensor *kr =
      rope(p, last(p, kvr, L, L + R), in[PTO_DSA_COS], in[PTO_DSA_SIN]);
  pto_program_pop_label(p);
  pto_program_push_label(p, "kv");
  pto_tensor *kvparts[2] = {ckv, kr};
  out->kv_new = pto_concat(p, 2, kvparts, 1);
  pto_program_pop_label(p);
  pto_program_pop_label(p);
  pto_program_pop_tile(p);
}

static void indexer_prolog(pto_program *p, const pto_dsa_dims *d, int64_t T,
                           const pto_dsa_params *prm, pto_tensor *const *in,
                           const int64_t *heads, pto_tensor *cos3,
                           pto_tensor *sin3, pto_tensor *c_q,
                           pto__dsa_prolog *out) {
  const int64_t R = d->rope, HI = heads[3] - heads[2], DI = d->di;
  pto_tensor *w_qb = in[PTO_DSA_W_QB];
  if (HI != d->hi) /* the index heads' columns */
    w_qb = last(p, w_qb, heads[2] * DI, heads[3] * DI);
  stage st;
  stage_init(&st, p, &prm->indexer_prolog);
  stage_push(&st);
  pto_program_push_label(p, "indexer_prolog");
  pto_tensor *qi = pto_reshape(p, mm(&st, "q_up", c_q, w_qb), 3,
                               (const int64_t[]){T, HI, DI});
  pto_program_push_label(p, "q_rope");
  pto_tensor *qr = pto_reshape(p, rope_head(p, qi, R, cos3, sin3), 2,
                               (const int64_t[]){T * HI, DI});
  pto_program_pop_label(p);
  out->q_idx = pto_reshape(p, mm(&st, "q_hadamard", qr, in[PTO_DSA_HADAMARD]),
                           3, (const int64_t[]){T, HI, DI});
  pto_tensor *kx = mm(&st, "k_down", in[PTO_DSA_X], in[PTO_DSA_W_K]);
  pto_program_push_label(p, "k_norm");
  pto_tensor *kn = pto_layer_norm(p, kx, in[PTO_DSA_LN_GAMMA_K],
                                  in[PTO_DSA_LN_BETA_K], NORM_EPS);
  pto_program_pop_label(p);
  pto_program_push_label(p, "k_rope");
  pto_tensor *kr = rope_head(p, kn, R, in[PTO_DSA_COS], in[PTO_DSA_SIN]);
  pto_program_pop_label(p);
  out->k_new = mm(&st, "k_hadamard", kr, in[PTO_DSA_HADAMARD]);
  pto_tensor *wx = mm(&st, "weights", in[PTO_DSA_X], in[PTO_DSA_W_PROJ]);
  pto_program_push_label(p, "weights");
  out->weights = pto_muls(p, wx, 1.0 / sqrt((double)d->hi * (double)DI));
  pto_program_pop_label(p);
  pto_program_pop_label(p);
  pto_program_pop_tile(p);
}

void pto__dsa_prologs_heads(pto_program *p, const pto_dsa_dims *d, int64_t T,
                            const pto_dsa_params *prm, pto_tensor *const *in,
                            const int64_t *heads, pto__dsa_prolog *out) {
  memset(out, 0, sizeof *out);
  /* the token's rotary row, broadcast over the heads */
  const int64_t c3[3] = {T, 1, d->rope};
  pto_tensor *cos3 = pto_reshape(p, in[PTO_DSA_COS], 3, c3);
  pto_tensor *sin3 = pto_reshape(p, in[PTO_DSA_SIN], 3, c3);
  pto_tensor *c_q = NULL;
  mla_prolog(p, d, T, prm, in, heads, cos3, sin3, &c_q, out);
  indexer_prolog(p, d, T, prm, in, heads, cos3, sin3, c_q, out);
}

void pto__dsa_prologs(pto_program *p, const pto_dsa_dims *d, int64_t T,
                      const pto_dsa_params *prm, pto_tensor *const *in,
                      pto__dsa_prolog *out) {
  const int64_t all[4] = {0, d->h, 0, d->hi};
  pto__dsa_prologs_heads(p, d, T, prm, in, all, out);
}
