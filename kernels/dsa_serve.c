/* DeepSeek-V3.2's indexer attention for serving (pto/dsa.h,
 * pto_dsa_serve_program): one program, compiled once, for every step of a
 * continuous batch. Its dims are the step's tokens T and, per slot s, the
 * slot's new tokens n<s> and its length len<s>; a step binds them
 * (pto_dsa_serve_bind), with an empty slot at 0, so nothing of it runs.
 *
 * The prologs run over all T tokens at once. A slot's tokens are gathered
 * from their rows (its first row comes from the `seq` input), and its keys
 * are gathered from one table, the cache's rows followed by the step's new
 * rows: position p of the slot is cache row block_table[s][p / BS] * BS +
 * p % BS while p is below the slot's cached count (also from `seq`), else
 * new row p - cached of the slot. One sparse attention over that table
 * reads the selected positions, cached or new. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dsa_internal.h"
#include "pto/pto.h"

#define OP "dsa_serve"

/* The most new tokens slot k takes in a step. */
static int64_t slot_max_new(const pto_dsa_serve *s, int64_t k) {
  return s->prefill_slots && k >= s->prefill_slots ? 1 : s->max_new;
}

static int valid(const pto_dsa_dims *d, const pto_dsa_serve *s,
                 const pto_dsa_params *prm, char *msg, size_t size) {
  if (!d || !s || !prm) {
    snprintf(msg, size, "%s is NULL",
             !d ? "dims" : !s ? "the serving sizes" : "params");
    return 0;
  }
  /* the step's checks with one sequence of the maxima */
  const int64_t n = s->max_new, len = s->max_len;
  const pto_dsa_step one = {1, &n, &len, s->blocks, s->max_blocks};
  if (!pto__dsa_valid(d, &one, prm, msg, size))
    return 0;
  if (s->slots < 1 || s->slots > PTO_DSA_SERVE_SLOTS_MAX ||
      s->max_tokens < s->max_new || s->max_new < 1 || s->prefill_slots < 0 ||
      s->prefill_slots > s->slots) {
    snprintf(msg, size,
             "slots %" PRId64 " (1 to %d), max_tokens %" PRId64
             " >= max_new %" PRId64 " >= 1, prefill_slots %" PRId64
             " (0 to the slots)",
             s->slots, PTO_DSA_SERVE_SLOTS_MAX, s->max_tokens, s->max_new,
             s->prefill_slots);
    return 0;
  }
  return 1;
}

/* t [rows, ...] as [rows, the rest] (a 2-D table for a gather). */
static pto_tensor *flat2(pto_program *p, pto_tensor *t) {
  int64_t rest = 1;
  for (int a = 1; a < pto_tensor_ndim(t); a++)
    rest *= pto_tensor_dim(t, a);
  const int64_t sh[2] = {pto_tensor_dim(t, 0), rest};
  return pto_reshape(p, t, 2, sh);
}

/* A vector tile of whole rows of `cols` elements, 64 KiB of them a task
 * (at least one row): the default 32 x 128 cuts the long rows and index
 * vectors here into thousands of tasks of a few microseconds. */
static pto_tile_shape rows_tile(int64_t cols) {
  const int64_t padded = (cols + 15) / 16 * 16, r = 16384 / padded;
  return (pto_tile_shape){(uint32_t)(r < 1 ? 1 : r > 4096 ? 4096 : r), 0, 0,
                          0, 0};
}

/* The same for tensors of rows of `cols` beside 1-D ones (index vectors),
 * which take 16384 elements a task. */
static pto_tile_shape mixed_tile(int64_t cols) {
  pto_tile_shape t = rows_tile(cols);
  t.vec_cols = 16384;
  return t;
}

/* Rows idx (i32 [n]) of t [rows, ...], reshaped back to [n, ...]; with
 * pad, an index of -1 takes a row of zeros (every other one outside t's
 * rows fails the run). */
static pto_tensor *take_rows(pto_program *p, pto_tensor *t, pto_tensor *idx,
                             int pad) {
  pto_tensor *f = flat2(p, t);
  const pto_tile_shape tile = rows_tile(pto_tensor_dim(f, 1));
  pto_program_push_scope(p, NULL, &tile);
  pto_tensor *g = pto_gather(p, f, idx,
                             PTO_GATHER_STRICT | (pad ? PTO_GATHER_PAD : 0));
  pto_program_pop_scope(p);
  int64_t sh[PTO_MAX_DIMS];
  const int nd = pto_tensor_ndim(t);
  sh[0] = pto_tensor_dim_code(idx, 0); /* the rows' dim where it is one */
  for (int a = 1; a < nd; a++)
    sh[a] = pto_tensor_dim(t, a);
  return pto_reshape(p, g, nd, sh);
}

/* Rows idx of t [rows, w] where idx is not -1, else other's rows (other
 * [n, w]). */
static pto_tensor *gather_else(pto_program *p, pto_tensor *t, pto_tensor *idx,
                               pto_tensor *other) {
  const pto_tile_shape tile = rows_tile(pto_tensor_dim(t, 1));
  pto_program_push_scope(p, NULL, &tile);
  pto_tensor *g = pto_gather_else(p, t, idx, other, PTO_GATHER_STRICT);
  pto_program_pop_scope(p);
  return g;
}

static pto_tensor *take(pto_program *p, pto_tensor *t, pto_tensor *idx) {
  return take_rows(p, t, idx, 0);
}

/* t with a leading axis of 1 (dims kept). */
static pto_tensor *batch1(pto_program *p, pto_tensor *t) {
  int64_t sh[PTO_MAX_DIMS] = {1};
  const int nd = pto_tensor_ndim(t);
  for (int a = 0; a < nd; a++)
    sh[a + 1] = pto_tensor_dim_code(t, a);
  return pto_reshape(p, t, nd + 1, sh);
}

/* Element (s, c) of the slot table `seq` [slots, 2], as an i32 [1]. */
static pto_tensor *seq_at(pto_program *p, pto_tensor *seq, int64_t s,
                          int64_t c) {
  pto_tensor *v = pto_slice(p, seq, (const int64_t[]){s, c},
                            (const int64_t[]){s + 1, c + 1});
  return pto_reshape(p, v, 1, (const int64_t[]){1});
}

/* Position p's row in the K or KV cache for slot `slot`'s positions [len]
 * (pos, i32): block_table[slot][p / BS] * BS + p % BS for the cached ones
 * (p below `cached`, i32 [1]), -1 for the new ones (padding to a gather
 * with PTO_GATHER_PAD; the attention's slots drop them). The rows are
 * made per block of the table row, [max_blocks, BS], and each position
 * picks its own: a block holding cached positions whose entry is outside
 * the cache fails the run, naming the entry. */
static pto_tensor *cache_rows(pto_program *p, const pto_dsa_dims *d,
                              const pto_dsa_serve *s, pto_tensor *table,
                              int64_t slot, pto_tensor *pos,
                              pto_tensor *in_cache, pto_tensor *cached,
                              int64_t len_code) {
  const int64_t BS = d->block, MB = s->max_blocks, one[1] = {1};
  pto_tensor *zero = pto_full(p, PTO_I32, 1, one, 0),
             *none = pto_full(p, PTO_I32, 1, one, -1);
  pto_tensor *row = pto_reshape(p,
                                pto_slice(p, table, (const int64_t[]){slot, 0},
                                          (const int64_t[]){slot + 1, MB}),
                                1, (const int64_t[]){MB});
  pto_tensor *first = pto_muls(
      p, pto_iota(p, PTO_I32, 1, (const int64_t[]){MB}, 0), (double)BS);
  pto_tensor *blk =
      pto_select(p, pto_cmp(p, first, cached, PTO_CMP_LT), row, zero);
  pto_tensor *ident = pto_reshape(
      p, pto_iota(p, PTO_I32, 2, (const int64_t[]){1, s->blocks}, 0), 2,
      (const int64_t[]){s->blocks, 1});
  blk = pto_gather(p, ident, blk, PTO_GATHER_STRICT); /* [MB, 1] */
  pto_tensor *rows = pto_reshape(
      p,
      pto_add(p, pto_muls(p, blk, (double)BS),
              pto_iota(p, PTO_I32, 2, (const int64_t[]){1, BS}, 0)),
      2, (const int64_t[]){MB * BS, 1});
  /* the positions' [len, 1] column in 1024 rows a tile (the scope's rows
   * of keys would give 128: 8 times the instructions), 1-D operands fused
   * with it in as many elements */
  pto_tile_shape col = rows_tile(1);
  col.vec_cols = col.vec_rows;
  pto_program_push_scope(p, NULL, &col);
  pto_tensor *crow = pto_gather(p, rows, pos, 0); /* pos < len <= MB * BS */
  pto_program_pop_scope(p);
  crow = pto_reshape(p, crow, 1, (const int64_t[]){len_code});
  return pto_select(p, in_cache, crow, none);
}

/* t [rows, w] as [rows, w] of the cache c [blocks, BS, w]. */
static pto_tensor *cache2(pto_program *p, const pto_dsa_serve *s,
                          pto_tensor *c, int64_t BS) {
  return pto_reshape(
      p, c, 2, (const int64_t[]){s->blocks * BS, pto_tensor_dim(c, 2)});
}

/* Per slot of the selection sel [n * topk] (positions, -1 past the
 * visible keys), as an i32 [1, n, w]: the cached positions' cache rows,
 * others -1 (w = topk), or the new positions' rows of the slot's new rows
 * packed into its first w slots (the most new rows a query sees). */
static pto_tensor *cached_slots(pto_program *p, pto_tensor *sel,
                                pto_tensor *crow, pto_tensor *cached,
                                int64_t len_code, int64_t n_code,
                                int64_t topk) {
  const int64_t one[1] = {1};
  pto_tensor *none = pto_full(p, PTO_I32, 1, one, -1);
  /* rows of one column, 1024 a task (the scope's tile, for rows of topk,
   * would give 8) */
  const pto_tile_shape col = rows_tile(1);
  pto_program_push_scope(p, NULL, &col);
  pto_tensor *g = pto_gather(
      p, pto_reshape(p, crow, 2, (const int64_t[]){len_code, 1}), sel, 0);
  pto_program_pop_scope(p);
  g = pto_reshape(p, g, 1, (const int64_t[]){pto_tensor_dim(sel, 0)});
  pto_tensor *c = pto_select(
      p, pto_cmp(p, sel, pto_full(p, PTO_I32, 1, one, 0), PTO_CMP_GE),
      pto_select(p, pto_cmp(p, sel, cached, PTO_CMP_LT), g, none), none);
  return pto_reshape(p, c, 3, (const int64_t[]){1, n_code, topk});
}

static pto_tensor *new_slots(pto_program *p, pto_tensor *sel,
                             pto_tensor *cached, int64_t n_code, int64_t topk,
                             int64_t width) {
  const int64_t one[1] = {1};
  pto_tensor *j = pto_reshape(p, pto_sub(p, sel, cached), 3,
                              (const int64_t[]){1, n_code, topk});
  pto_tensor *v = pto_select(
      p, pto_cmp(p, j, pto_full(p, PTO_I32, 1, one, 0), PTO_CMP_GE),
      pto_cast(p, j, PTO_F32), pto_full(p, PTO_F32, 1, one, -INFINITY));
  if (width >= topk)
    return pto_cast(p, v, PTO_I32);
  pto_tensor *slot = NULL;
  return pto_cast(p, pto_topk_masked(p, v, width, &slot), PTO_I32);
}

pto_program *pto_dsa_serve_program(const pto_dsa_dims *d,
                                   const pto_dsa_serve *s,
                                   const pto_dsa_params *prm) {
  pto_program *p = pto_program_new("dsa_serve");
  if (!p)
    return NULL;
  char msg[256];
  if (!valid(d, s, prm, msg, sizeof msg)) {
    pto_program_fail(p, PTO_EINVAL, OP, "%s", msg);
    return p;
  }
  const int64_t H = d->h, L = d->latent, R = d->rope, BS = d->block,
                topk = prm->topk;
  /* dims: T, then n<s> and len<s> per slot */
  const int64_t T = pto_dim_dynamic(p, "T", s->max_tokens);
  int64_t n[PTO_DSA_SERVE_SLOTS_MAX], len[PTO_DSA_SERVE_SLOTS_MAX];
  for (int64_t k = 0; k < s->slots; k++) {
    char name[32];
    snprintf(name, sizeof name, "n%" PRId64, k);
    n[k] = pto_dim_dynamic(p, name, slot_max_new(s, k));
    snprintf(name, sizeof name, "len%" PRId64, k);
    len[k] = pto_dim_dynamic(p, name, s->max_len);
  }
  /* inputs: pto_dsa's, with T dynamic and a block table row per slot */
  const int64_t one = 1;
  const pto_dsa_step st = {1, &one, &one, s->blocks, s->max_blocks};
  pto_tensor *in[PTO_DSA_INPUT_COUNT];
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_input_shape(d, &st, i, sh);
    if (i == PTO_DSA_X || i == PTO_DSA_COS || i == PTO_DSA_SIN)
      sh[0] = T;
    if (i == PTO_DSA_BLOCK_TABLE)
      sh[0] = s->slots;
    in[i] = pto_input(p, pto_dsa_input_name(i),
                      i == PTO_DSA_BLOCK_TABLE ? PTO_I32 : PTO_F32, nd, sh);
  }
  pto_tensor *seq = pto_input(p, "seq", PTO_I32, 2,
                              (const int64_t[]){s->slots, 2});
  if (pto_program_status(p))
    return p;
  pto__dsa_prolog pr;
  pto__dsa_prologs(p, d, s->max_tokens, prm, in, &pr);
  if (pto_program_status(p))
    return p;
  pto_output(p, pr.kv_new, "kv_new");
  pto_output(p, pr.k_new, "k_new");
  const int64_t one1[1] = {1};
  pto_tensor *kc2 = cache2(p, s, in[PTO_DSA_K_CACHE], BS);
  pto_tensor *kv3 = pto_reshape(
      p, in[PTO_DSA_KV_CACHE], 3,
      (const int64_t[]){1, s->blocks * BS, pto_tensor_dim(in[PTO_DSA_KV_CACHE], 2)});
  for (int64_t k = 0; k < s->slots && !pto_program_status(p); k++) {
    char name[32];
    const int64_t mk = slot_max_new(s, k);
    /* the slot's tokens are rows first .. first + n of the step, its
     * positions 0 .. len, the first `cached` of them in the cache */
    const pto_tile_shape ktile = mixed_tile(d->di), stile = mixed_tile(topk),
                         mtile = rows_tile(L);
    pto_program_push_scope(p, "indexer.keys", &ktile);
    pto_tensor *first = seq_at(p, seq, k, 0), *cached = seq_at(p, seq, k, 1);
    pto_tensor *rows =
        pto_add(p, pto_iota(p, PTO_I32, 1, (const int64_t[]){n[k]}, 0), first);
    pto_tensor *pos = pto_iota(p, PTO_I32, 1, (const int64_t[]){len[k]}, 0);
    pto_tensor *in_cache = pto_cmp(p, pos, cached, PTO_CMP_LT);
    pto_tensor *crow = cache_rows(p, d, s, in[PTO_DSA_BLOCK_TABLE], k, pos,
                                  in_cache, cached, len[k]);
    pto_tensor *nrow = pto_select(p, in_cache,
                                  pto_full(p, PTO_I32, 1, one1, -1),
                                  pto_add(p, pto_sub(p, pos, cached), first));
    /* its keys: the cache's rows, then its new ones, read in place in one
     * pass: the new rows' gather takes the cache's row at every cached
     * position (-1 in nrow) */
    pto_tensor *keys = gather_else(p, pr.k_new, nrow,
                                   take_rows(p, kc2, crow, 1));
    pto_program_pop_scope(p);
    pto_indexer_params ip = pto_indexer_params_default();
    ip.topk = topk;
    ip.mask = PTO_MASK_CAUSAL;
    ip.qk_tile = prm->indexer_qk;
    ip.topk_tile = prm->indexer_topk;
    pto_tensor *idx = NULL;
    pto_program_push_label(p, "indexer.queries"); /* the slot's rows */
    pto_tensor *qi = take(p, pr.q_idx, rows), *wi = take(p, pr.weights, rows);
    pto_program_pop_label(p);
    pto_indexer(p, batch1(p, qi), batch1(p, keys), batch1(p, wi), &ip, &idx);
    if (!idx)
      break;
    /* two attentions: over the cache's rows of the selected cached
     * positions, and over the slot's new rows (their slots packed into
     * as many as it has), merged by their lse */
    pto_program_push_scope(p, "attention.slots", &stile);
    pto_tensor *sel = pto_reshape(p, idx, 1, (const int64_t[]){mk * topk});
    pto_tensor *cidx = cached_slots(p, sel, crow, cached, len[k], n[k], topk);
    pto_tensor *nidx = new_slots(p, sel, cached, n[k], topk, mk);
    pto_program_pop_scope(p);
    pto_attention_params ap = pto_attention_params_default();
    ap.scale = prm->scale;
    ap.tile = prm->attention;
    pto_program_push_label(p, "attention.queries");
    pto_tensor *q = batch1(p, take(p, pr.q, rows)),
               *kvn = batch1(p, take(p, pr.kv_new, rows)), *lc = NULL,
               *ln = NULL;
    pto_program_pop_label(p);
    pto_tensor *oc = pto_attention(p, q, kv3, cidx, L, &ap, &lc);
    pto_tensor *on = pto_attention(p, q, kvn, nidx, L, &ap, &ln);
    if (!oc || !on)
      break;
    const int64_t o3[3] = {n[k], H, L}, l2[2] = {n[k], H};
    pto_program_push_scope(p, "attention.merge", &mtile);
    pto_tensor *lse = NULL;
    pto_tensor *o = pto__dsa_merge(p, pto_reshape(p, oc, 3, o3),
                                   pto_reshape(p, lc, 2, l2),
                                   pto_reshape(p, on, 3, o3),
                                   pto_reshape(p, ln, 2, l2), &lse);
    pto_program_pop_scope(p);
    snprintf(name, sizeof name, "out.%" PRId64, k);
    pto_output(p, o, name);
    snprintf(name, sizeof name, "lse.%" PRId64, k);
    pto_output(p, lse, name);
    snprintf(name, sizeof name, "indices.%" PRId64, k);
    pto_output(p, pto_reshape(p, idx, 2, (const int64_t[]){n[k], topk}),
               name);
  }
  (void)R;
  return p;
}

pto_status pto_dsa_serve_bind(struct pto_run *run, const pto_dsa_dims *d,
                              const pto_dsa_serve *s, const pto_dsa_step *step,
                              int32_t *seq, char *msg, size_t size) {
  char why[256];
  const pto_dsa_params prm = pto_dsa_params_default();
  if (!msg || !size)
    return PTO_EINVAL;
  msg[0] = '\0';
  if (!run || !seq || !step) {
    snprintf(msg, size, "%s: %s is NULL", OP,
             !run ? "run" : !seq ? "seq" : "step");
    return PTO_EINVAL;
  }
  if (!valid(d, s, &prm, why, sizeof why) ||
      !pto__dsa_valid(d, step, &prm, why, sizeof why)) {
    snprintf(msg, size, "%s: %s", OP, why);
    return PTO_EINVAL;
  }
  const int64_t T = pto_dsa_tokens(step);
  if (step->b > s->slots || T > s->max_tokens ||
      step->max_blocks > s->max_blocks || step->blocks != s->blocks) {
    snprintf(msg, size,
             "%s: the step's %" PRId64 " sequences (at most %" PRId64
             "), %" PRId64 " tokens (at most %" PRId64 "), %" PRId64
             " table columns (at most %" PRId64 ") or %" PRId64
             " blocks (the program's %" PRId64 ") do not fit",
             OP, step->b, s->slots, T, s->max_tokens, step->max_blocks,
             s->max_blocks, step->blocks, s->blocks);
    return PTO_EINVAL;
  }
  /* the dims by their index, in pto_dsa_serve_program's order (T, then
   * n<k> and len<k> per slot: no name looked up per step), once the
   * executable is seen to be of that shape */
  const pto_executable *e = pto_run_executable(run);
  char last[32];
  snprintf(last, sizeof last, "len%" PRId64, s->slots - 1);
  if (!e || pto_executable_num_dims(e) != 1 + 2 * s->slots ||
      strcmp(pto_executable_dim_name(e, 0), "T") ||
      strcmp(pto_executable_dim_name(e, (int)(2 * s->slots)), last)) {
    snprintf(msg, size,
             "%s: the run is not of pto_dsa_serve_program's executable for "
             "%" PRId64 " slots (dims T, n0, len0, ..., %s)",
             OP, s->slots, last);
    return PTO_EINVAL;
  }
  pto_status st = pto_run_bind_index(run, 0, T);
  for (int64_t k = 0, t0 = 0; !st && k < s->slots; k++) {
    const int in = k < step->b;
    const int64_t nk = in ? step->n[k] : 0, lk = in ? step->len[k] : 0;
    if (nk > slot_max_new(s, k) || lk > s->max_len) {
      snprintf(msg, size,
               "%s: sequence %" PRId64 ": %" PRId64 " new tokens (at most %"
               PRId64 "%s) and length %" PRId64 " (at most %" PRId64 ")",
               OP, k, nk, slot_max_new(s, k),
               slot_max_new(s, k) < s->max_new ? " in a decoding slot" : "",
               lk, s->max_len);
      return PTO_ERANGE;
    }
    st = pto_run_bind_index(run, (int)(1 + 2 * k), nk);
    if (!st)
      st = pto_run_bind_index(run, (int)(2 + 2 * k), lk);
    seq[2 * k] = (int32_t)t0;
    seq[2 * k + 1] = (int32_t)(lk - nk);
    t0 += nk;
  }
  if (st)
    snprintf(msg, size, "%s", pto_run_error(run));
  return st;
}
