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

/* Rows idx (i32 [n]) of t [rows, ...], reshaped back to [n, ...]. */
static pto_tensor *take(pto_program *p, pto_tensor *t, pto_tensor *idx) {
  pto_tensor *g = pto_gather(p, flat2(p, t), idx, PTO_GATHER_STRICT);
  int64_t sh[PTO_MAX_DIMS];
  const int nd = pto_tensor_ndim(t);
  sh[0] = pto_tensor_dim_code(idx, 0); /* the rows' dim where it is one */
  for (int a = 1; a < nd; a++)
    sh[a] = pto_tensor_dim(t, a);
  return pto_reshape(p, g, nd, sh);
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

/* Slot s: its key rows in the combined table, i32 [len_s]: the cached
 * positions through the block table (a block number outside [0, blocks)
 * fails the run, naming the entry), the new ones after the cache's rows
 * at the slot's rows of the step. */
static pto_tensor *key_rows(pto_program *p, const pto_dsa_dims *d,
                            const pto_dsa_serve *s, pto_tensor *table,
                            pto_tensor *seq, int64_t slot, int64_t len_code) {
  const int64_t BS = d->block, MB = s->max_blocks;
  pto_tensor *pos = pto_iota(p, PTO_I32, 1, (const int64_t[]){len_code}, 0);
  pto_tensor *first = seq_at(p, seq, slot, 0), *cached = seq_at(p, seq, slot, 1);
  pto_tensor *in_cache = pto_cmp(p, pos, cached, PTO_CMP_LT);
  pto_tensor *zero = pto_full(p, PTO_I32, 1, (const int64_t[]){1}, 0);
  /* the block of each cached position (0 for the new ones, which the
   * select below drops), checked against the cache through an identity
   * table */
  pto_tensor *row = pto_reshape(p,
                                pto_slice(p, table, (const int64_t[]){slot, 0},
                                          (const int64_t[]){slot + 1, MB}),
                                2, (const int64_t[]){MB, 1});
  pto_tensor *logical = pto_divs(p, pos, (double)BS);
  pto_tensor *blk = pto_gather(p, row, pto_select(p, in_cache, logical, zero),
                               PTO_GATHER_STRICT); /* [len, 1] */
  blk = pto_reshape(p, blk, 1, (const int64_t[]){len_code});
  blk = pto_select(p, in_cache, blk, zero);
  pto_tensor *ident = pto_reshape(
      p, pto_iota(p, PTO_I32, 2, (const int64_t[]){1, s->blocks}, 0), 2,
      (const int64_t[]){s->blocks, 1});
  blk = pto_reshape(p, pto_gather(p, ident, blk, PTO_GATHER_STRICT), 1,
                    (const int64_t[]){len_code});
  pto_tensor *crow = pto_add(p, pto_muls(p, blk, (double)BS),
                             pto_sub(p, pos, pto_muls(p, logical, (double)BS)));
  /* new position p: row blocks * BS + first + p - cached */
  pto_tensor *nrow =
      pto_add(p, pto_adds(p, pos, (double)(s->blocks * BS)),
              pto_sub(p, first, cached));
  return pto_select(p, in_cache, crow, nrow);
}

/* The cache's rows [blocks*BS, w] followed by the step's new rows [T, w]. */
static pto_tensor *table_of(pto_program *p, const pto_dsa_serve *s,
                            pto_tensor *cache, pto_tensor *fresh,
                            int64_t BS) {
  const int64_t w = pto_tensor_dim(cache, 2);
  pto_tensor *parts[2] = {
      pto_reshape(p, cache, 2, (const int64_t[]){s->blocks * BS, w}), fresh};
  return pto_concat(p, 2, parts, 0);
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
  pto_tensor *ktab = NULL, *kvtab = NULL;
  pto_program_push_scope(p, "indexer.keys", NULL);
  ktab = table_of(p, s, in[PTO_DSA_K_CACHE], pr.k_new, BS);
  pto_program_pop_scope(p);
  pto_program_push_scope(p, "attention.keys", NULL);
  kvtab = table_of(p, s, in[PTO_DSA_KV_CACHE], pr.kv_new, BS);
  pto_program_pop_scope(p);
  for (int64_t k = 0; k < s->slots && !pto_program_status(p); k++) {
    char name[24];
    const int64_t mk = slot_max_new(s, k);
    /* the slot's tokens: its rows first, first + 1, ... of the step */
    pto_program_push_scope(p, "indexer.keys", NULL);
    pto_tensor *rows =
        pto_add(p, pto_iota(p, PTO_I32, 1, (const int64_t[]){n[k]}, 0),
                seq_at(p, seq, k, 0));
    pto_tensor *krows =
        key_rows(p, d, s, in[PTO_DSA_BLOCK_TABLE], seq, k, len[k]);
    pto_tensor *keys = take(p, ktab, krows);
    pto_program_pop_scope(p);
    pto_indexer_params ip = pto_indexer_params_default();
    ip.topk = topk;
    ip.mask = PTO_MASK_CAUSAL;
    ip.qk_tile = prm->indexer_qk;
    ip.topk_tile = prm->indexer_topk;
    pto_tensor *idx = NULL;
    pto_indexer(p, batch1(p, take(p, pr.q_idx, rows)), batch1(p, keys),
                batch1(p, take(p, pr.weights, rows)), &ip, &idx);
    if (!idx)
      break;
    /* the selected positions as rows of the combined table; -1 stays */
    pto_program_push_scope(p, "attention.slots", NULL);
    /* n[k] (the dim's code) where an axis is the slot's tokens: with a
     * maximum of 1 its place is otherwise ambiguous */
    const int64_t nk[1] = {mk * topk}, col[2] = {mk * topk, 1},
                  i3[3] = {1, n[k], topk};
    pto_tensor *sel = pto_reshape(p, idx, 1, nk);
    pto_tensor *g = pto_gather(
        p, pto_reshape(p, krows, 2, (const int64_t[]){pto_tensor_dim(krows, 0), 1}),
        sel, 0);
    pto_tensor *phys = pto_select(
        p,
        pto_cmp(p, pto_reshape(p, sel, 2, col),
                pto_full(p, PTO_I32, 1, (const int64_t[]){1}, 0), PTO_CMP_GE),
        g, pto_full(p, PTO_I32, 1, (const int64_t[]){1}, -1));
    phys = pto_reshape(p, phys, 3, i3);
    pto_program_pop_scope(p);
    pto_attention_params ap = pto_attention_params_default();
    ap.scale = prm->scale;
    ap.tile = prm->attention;
    pto_tensor *lse = NULL;
    pto_tensor *o = pto_attention(p, batch1(p, take(p, pr.q, rows)),
                                  batch1(p, kvtab), phys, L, &ap, &lse);
    if (!o)
      break;
    snprintf(name, sizeof name, "out.%" PRId64, k);
    pto_output(p, pto_reshape(p, o, 3, (const int64_t[]){n[k], H, L}), name);
    snprintf(name, sizeof name, "lse.%" PRId64, k);
    pto_output(p, pto_reshape(p, lse, 2, (const int64_t[]){n[k], H}), name);
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
  pto_status st = pto_run_bind(run, "T", T);
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
    char name[32];
    snprintf(name, sizeof name, "n%" PRId64, k);
    st = pto_run_bind(run, name, nk);
    snprintf(name, sizeof name, "len%" PRId64, k);
    if (!st)
      st = pto_run_bind(run, name, lk);
    seq[2 * k] = (int32_t)t0;
    seq[2 * k + 1] = (int32_t)(lk - nk);
    t0 += nk;
  }
  if (st)
    snprintf(msg, size, "%s", pto_run_error(run));
  return st;
}
