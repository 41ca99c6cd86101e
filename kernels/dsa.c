/* DeepSeek-V3.2's indexer attention as one PTO program (pto/dsa.h): the
 * step's checks, the prologs (dsa_prolog.c), then per sequence the key
 * gather through the block table, the lightning indexer with its top-k and
 * the sparse attention, split into the cache's part and the new rows' part
 * and merged by their lse. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsa_internal.h"
#include "pto/pto.h"

#define OP "dsa"

pto_dsa_dims pto_dsa_dims_default(void) {
  pto_dsa_dims d = {7168, 1536, 128, 128, 64, 512, 64, 128, 128};
  return d;
}

pto_dsa_params pto_dsa_params_default(void) {
  pto_dsa_params prm;
  memset(&prm, 0, sizeof prm);
  prm.topk = 2048;
  prm.scale = 0.135234;
  return prm;
}

static const char *const input_names[PTO_DSA_INPUT_COUNT] = {
    "x",        "cos",        "sin",        "w_dq",      "gamma_cq",
    "w_uq_qr",  "w_uk",       "w_dkv_kr",   "gamma_ckv", "w_qb",
    "w_k",      "ln_gamma_k", "ln_beta_k",  "w_proj",    "hadamard",
    "kv_cache", "k_cache",    "block_table"};
static const char *const output_names[PTO_DSA_OUTPUT_COUNT] = {
    "out", "lse", "kv_new", "k_new", "indices"};

const char *pto_dsa_input_name(int i) {
  return i >= 0 && i < PTO_DSA_INPUT_COUNT ? input_names[i] : NULL;
}

const char *pto_dsa_output_name(int i) {
  return i >= 0 && i < PTO_DSA_OUTPUT_COUNT ? output_names[i] : NULL;
}

int64_t pto_dsa_tokens(const pto_dsa_step *s) {
  if (!s || s->b < 1 || !s->n)
    return -1;
  int64_t T = 0;
  for (int64_t b = 0; b < s->b; b++) {
    if (s->n[b] < 1 || s->n[b] > INT32_MAX)
      return -1;
    T += s->n[b];
  }
  return T;
}

int pto__dsa_valid(const pto_dsa_dims *d, const pto_dsa_step *s,
                   const pto_dsa_params *prm, char *msg, size_t size) {
  if (!d || !s || !prm) {
    snprintf(msg, size, "%s is NULL", !d ? "dims" : !s ? "step" : "params");
    return 0;
  }
  if (d->d < 1 || d->q_lora < 1 || d->h < 1 || d->nope < 1 || d->rope < 2 ||
      d->rope % 2 || d->latent < 1 || d->hi < 1 || d->di < d->rope ||
      d->block < 1) {
    snprintf(msg, size,
             "dims D %" PRId64 " Q %" PRId64 " H %" PRId64 " N %" PRId64
             " R %" PRId64 " L %" PRId64 " HI %" PRId64 " DI %" PRId64
             " BS %" PRId64 ": every size must be >= 1, R even and >= 2, "
             "and DI >= R",
             d->d, d->q_lora, d->h, d->nope, d->rope, d->latent, d->hi, d->di,
             d->block);
    return 0;
  }
  if (prm->topk < 1 || prm->topk > INT32_MAX || !(prm->scale > 0) ||
      !isfinite(prm->scale)) {
    snprintf(msg, size, "topk %" PRId64 " must be >= 1 and scale %g > 0",
             prm->topk, prm->scale);
    return 0;
  }
  if (s->b < 1 || !s->n || !s->len || s->blocks < 1 || s->max_blocks < 1) {
    snprintf(msg, size,
             "step B %" PRId64 " blocks %" PRId64 " max_blocks %" PRId64
             "%s: each must be >= 1 with n and len given",
             s->b, s->blocks, s->max_blocks,
             !s->n || !s->len ? " (n or len is NULL)" : "");
    return 0;
  }
  if (s->blocks > INT32_MAX / d->block) {
    snprintf(msg, size,
             "kv_cache's %" PRId64 " blocks of %" PRId64
             " rows exceed the i32 row indices",
             s->blocks, d->block);
    return 0;
  }
  for (int64_t b = 0; b < s->b; b++) {
    if (s->n[b] < 1 || s->len[b] < s->n[b]) {
      snprintf(msg, size,
               "sequence %" PRId64 ": n %" PRId64
               " new tokens and length %" PRId64 " (1 <= n <= len)",
               b, s->n[b], s->len[b]);
      return 0;
    }
    if (s->len[b] > s->max_blocks * d->block) {
      snprintf(msg, size,
               "sequence %" PRId64 ": length %" PRId64 " needs %" PRId64
               " blocks of %" PRId64 "; block_table [%" PRId64 ",%" PRId64
               "] holds %" PRId64,
               b, s->len[b], (s->len[b] + d->block - 1) / d->block, d->block,
               s->b, s->max_blocks, s->max_blocks);
      return 0;
    }
  }
  return 1;
}

static int shape_of(const pto_dsa_dims *d, const pto_dsa_step *s, int64_t T,
                    int i, int64_t *sh) {
  const int64_t D = d->d, Q = d->q_lora, H = d->h, N = d->nope, R = d->rope,
                L = d->latent, HI = d->hi, DI = d->di, BS = d->block;
#define SET(...)                                                               \
  do {                                                                         \
    const int64_t v_[] = {__VA_ARGS__};                                        \
    memcpy(sh, v_, sizeof v_);                                                 \
    return (int)(sizeof v_ / sizeof v_[0]);                                    \
  } while (0)
  switch (i) {
  case PTO_DSA_X:
    SET(T, D);
  case PTO_DSA_COS:
  case PTO_DSA_SIN:
    SET(T, R);
  case PTO_DSA_W_DQ:
    SET(D, Q);
  case PTO_DSA_GAMMA_CQ:
    SET(Q);
  case PTO_DSA_W_UQ_QR:
    SET(Q, H * (N + R));
  case PTO_DSA_W_UK:
    SET(H, N, L);
  case PTO_DSA_W_DKV_KR:
    SET(D, L + R);
  case PTO_DSA_GAMMA_CKV:
    SET(L);
  case PTO_DSA_W_QB:
    SET(Q, HI * DI);
  case PTO_DSA_W_K:
    SET(D, DI);
  case PTO_DSA_LN_GAMMA_K:
  case PTO_DSA_LN_BETA_K:
    SET(DI);
  case PTO_DSA_W_PROJ:
    SET(D, HI);
  case PTO_DSA_HADAMARD:
    SET(DI, DI);
  case PTO_DSA_KV_CACHE:
    SET(s->blocks, BS, L + R);
  case PTO_DSA_K_CACHE:
    SET(s->blocks, BS, DI);
  case PTO_DSA_BLOCK_TABLE:
    SET(s->b, s->max_blocks);
  default:
    return -1;
  }
#undef SET
}

int pto_dsa_input_shape(const pto_dsa_dims *d, const pto_dsa_step *s, int i,
                        int64_t *shape) {
  char msg[256];
  const pto_dsa_params prm = pto_dsa_params_default();
  if (!shape || !pto__dsa_valid(d, s, &prm, msg, sizeof msg))
    return -1;
  return shape_of(d, s, pto_dsa_tokens(s), i, shape);
}

int pto_dsa_output_shape(const pto_dsa_dims *d, const pto_dsa_step *s,
                         const pto_dsa_params *prm, int i, int64_t *shape) {
  char msg[256];
  if (!shape || !pto__dsa_valid(d, s, prm, msg, sizeof msg))
    return -1;
  const int64_t T = pto_dsa_tokens(s), H = d->h, L = d->latent;
  switch (i) {
  case PTO_DSA_OUT:
    shape[0] = T, shape[1] = H, shape[2] = L;
    return 3;
  case PTO_DSA_LSE:
    shape[0] = T, shape[1] = H;
    return 2;
  case PTO_DSA_KV_NEW:
    shape[0] = T, shape[1] = L + d->rope;
    return 2;
  case PTO_DSA_K_NEW:
    shape[0] = T, shape[1] = d->di;
    return 2;
  case PTO_DSA_INDICES:
    shape[0] = T, shape[1] = prm->topk;
    return 2;
  default:
    return -1;
  }
}

double pto_dsa_gflop(const pto_dsa_dims *d, const pto_dsa_step *s,
                     const pto_dsa_params *prm) {
  char msg[256];
  if (!pto__dsa_valid(d, s, prm, msg, sizeof msg))
    return -1;
  const double T = (double)pto_dsa_tokens(s), D = (double)d->d,
               Q = (double)d->q_lora, H = (double)d->h, N = (double)d->nope,
               R = (double)d->rope, L = (double)d->latent, HI = (double)d->hi,
               DI = (double)d->di;
  double f = 2 * T *
             (D * Q + Q * H * (N + R) + H * N * L + D * (L + R) + Q * HI * DI +
              HI * DI * DI + D * DI + DI * DI + D * HI);
  for (int64_t b = 0; b < s->b; b++)
    for (int64_t i = 0; i < s->n[b]; i++) {
      const double vis = (double)(s->len[b] - s->n[b] + i + 1);
      const double sel = vis < (double)prm->topk ? vis : (double)prm->topk;
      f += 2 * HI * DI * vis + 2 * H * (L + R + L) * sel;
    }
  return f * 1e-9;
}

/* ---- the program ----------------------------------------------------------
 */

/* Every input's dtype and shape against d and s; 0 or the recorded error. */
static pto_status check_inputs(pto_program *p, const pto_dsa_dims *d,
                               const pto_dsa_step *s, int64_t T,
                               pto_tensor *const *in) {
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = shape_of(d, s, T, i, sh);
    const pto_dtype dt = i == PTO_DSA_BLOCK_TABLE ? PTO_I32 : PTO_F32;
    if (!in[i]) {
      if (pto_program_status(p))
        return pto_program_status(p);
      return pto_program_fail(p, PTO_EINVAL, OP, "input %s is NULL",
                              input_names[i]);
    }
    int same = pto_tensor_ndim(in[i]) == nd && pto_tensor_dtype(in[i]) == dt;
    for (int a = 0; same && a < nd; a++)
      same = pto_tensor_dim(in[i], a) == sh[a];
    if (same)
      continue;
    char got[96], want[96];
    int n = snprintf(want, sizeof want, "%s [", pto_dtype_name(dt));
    for (int a = 0; a < nd && n < (int)sizeof want; a++)
      n += snprintf(want + n, sizeof want - (size_t)n, "%s%" PRId64,
                    a ? "," : "", sh[a]);
    if (n < (int)sizeof want)
      snprintf(want + n, sizeof want - (size_t)n, "]");
    return pto_program_fail(
        p, pto_tensor_dtype(in[i]) != dt ? PTO_EDTYPE : PTO_ESHAPE, OP,
        "input %s: the dims and step need %s for %s",
        pto_tensor_describe(in[i], got, sizeof got), want, input_names[i]);
  }
  return PTO_OK;
}

/* One plus the physical cache row of each of sequence b's positions in its
 * first lc / BS blocks (rounded up), i32 [nb,BS], computed in the graph:
 * block_table[b][p / BS] * BS + p % BS + 1 (the +1 leaves 0, which a
 * gather past the table's end returns, for "no cache row"). A block
 * number outside [0, blocks) fails the run (a strict gather through the
 * identity table), naming the op and the entry. */
static pto_tensor *cache_rows1(pto_program *p, const pto_dsa_dims *d,
                               const pto_dsa_step *s, pto_tensor *table,
                               int64_t b, int64_t lc) {
  const int64_t BS = d->block, nb = (lc + BS - 1) / BS, MB = s->max_blocks;
  pto_tensor *row = pto_reshape(p,
                                pto_slice(p, table, (const int64_t[]){b, 0},
                                          (const int64_t[]){b + 1, MB}),
                                2, (const int64_t[]){MB, 1});
  pto_tensor *logical =
      pto_reshape(p, pto_iota(p, PTO_I32, 2, (const int64_t[]){1, nb}, 0), 1,
                  (const int64_t[]){nb});
  pto_tensor *blk = pto_gather(p, row, logical, 0); /* [nb,1] */
  pto_tensor *ident = pto_reshape(
      p, pto_iota(p, PTO_I32, 2, (const int64_t[]){1, s->blocks}, 0), 2,
      (const int64_t[]){s->blocks, 1});
  blk = pto_gather(p, ident, pto_reshape(p, blk, 1, (const int64_t[]){nb}),
                   PTO_GATHER_STRICT); /* [nb,1] */
  return pto_add(p, pto_muls(p, blk, (double)BS),
                 pto_iota(p, PTO_I32, 2, (const int64_t[]){1, BS}, 1));
}

/* kernels/dsa_internal.h */
pto_tensor *pto__dsa_merge(pto_program *p, pto_tensor *oa, pto_tensor *la,
                           pto_tensor *ob, pto_tensor *lb, pto_tensor **lse) {
  const int64_t one[1] = {1};
  pto_tensor *inf = pto_full(p, PTO_F32, 1, one, INFINITY);
  pto_tensor *ninf = pto_full(p, PTO_F32, 1, one, -INFINITY);
  pto_tensor *zero = pto_full(p, PTO_F32, 1, one, 0);
  la = pto_select(p, pto_cmp(p, la, inf, PTO_CMP_EQ), ninf, la);
  lb = pto_select(p, pto_cmp(p, lb, inf, PTO_CMP_EQ), ninf, lb);
  pto_tensor *m = pto_max(p, la, lb);
  pto_tensor *none = pto_cmp(p, m, ninf, PTO_CMP_EQ);
  pto_tensor *m0 = pto_select(p, none, zero, m);
  pto_tensor *ea = pto_exp(p, pto_sub(p, la, m0));
  pto_tensor *eb = pto_exp(p, pto_sub(p, lb, m0));
  /* the larger side's weight is 1, so the sum is >= 1 unless both are
   * empty: clamping it to 1 keeps 1/sum and ln(sum) finite there, where
   * both weights are 0 */
  pto_tensor *sum = pto_maxs(p, pto_add(p, ea, eb), 1.0);
  pto_tensor *inv = pto_recip(p, sum);
  *lse = pto_select(p, none, inf, pto_add(p, m0, pto_log(p, sum)));
  const int nd = pto_tensor_ndim(oa);
  int64_t w4[PTO_MAX_DIMS];
  for (int a = 0; a < nd - 1; a++) /* a dynamic axis's code: its place */
    w4[a] = pto_tensor_dim_code(oa, a);
  w4[nd - 1] = 1;
  pto_tensor *wa = pto_reshape(p, pto_mul(p, ea, inv), nd, w4);
  pto_tensor *wb = pto_reshape(p, pto_mul(p, eb, inv), nd, w4);
  return pto_add(p, pto_mul(p, oa, wa), pto_mul(p, ob, wb));
}

/* The new rows' slots of idx (positions lc.. of the sequence, as rows of
 * its kv_new) packed into the first min(width, topk) slots, width being
 * the most new rows any of its queries sees: the new rows' attention then
 * runs over those slots, not all topk. The positions ride as f32 values
 * (exact below 2^24) through a masked top-k; the empty slots come back
 * -inf, cast to a negative (so invalid) index. */
static pto_tensor *new_slots(pto_program *p, pto_tensor *idx, int64_t lc,
                             int64_t width, int64_t topk) {
  pto_tensor *j = lc ? pto_adds(p, idx, -(double)lc) : idx;
  if (width >= topk)
    return j;
  const int64_t one[1] = {1};
  pto_tensor *valid =
      pto_cmp(p, j, pto_full(p, PTO_I32, 1, one, 0), PTO_CMP_GE);
  pto_tensor *v = pto_select(p, valid, pto_cast(p, j, PTO_F32),
                             pto_full(p, PTO_F32, 1, one, -INFINITY));
  pto_tensor *slot = NULL;
  pto_tensor *packed = pto_topk_masked(p, v, width, &slot);
  return pto_cast(p, packed, PTO_I32);
}

/* Concatenates n tensors along axis 0, at most PTO's operand limit at a
 * time; one tensor is returned as is (no copy). */
static pto_tensor *concat_rows(pto_program *p, pto_tensor **ts, int64_t n) {
  enum { FAN = 8 };
  while (n > 1) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i += FAN) {
      const int64_t k = n - i < FAN ? n - i : FAN;
      ts[m++] = k == 1 ? ts[i] : pto_concat(p, (int)k, ts + i, 0);
    }
    n = m;
  }
  return ts[0];
}

/* Sequence b's indexer and attention: its indices [n,topk], out [n,H,L]
 * and lse [n,H]. */
static void sequence(pto_program *p, const pto_dsa_dims *d,
                     const pto_dsa_step *s, const pto_dsa_params *prm,
                     pto_tensor *const *in, const pto__dsa_prolog *pr,
                     int64_t b, int64_t t0, pto_tensor **idx_out,
                     pto_tensor **out, pto_tensor **lse) {
  const int64_t n = s->n[b], len = s->len[b], lc = len - n, H = d->h,
                L = d->latent, R = d->rope, DI = d->di, BS = d->block;
  pto_tensor *map1 = NULL; /* [lc,1]: 1 + the cache row of each position */
  /* the sequence's index keys, contiguous: cache rows, then new rows */
  pto_program_push_label(p, "indexer");
  pto_program_push_label(p, "keys");
  pto_tensor *knew = pto__dsa_rows(p, pr->k_new, t0, n), *keys = knew;
  if (lc > 0) {
    pto__dsa_push_vec(p);
    pto_tensor *m1 = cache_rows1(p, d, s, in[PTO_DSA_BLOCK_TABLE], b, lc);
    const int64_t nbs = pto_tensor_numel(m1);
    pto_tensor *flat =
        pto_reshape(p, pto_adds(p, m1, -1.0), 1, (const int64_t[]){nbs});
    pto_program_pop_tile(p);
    map1 = pto_slice(p, pto_reshape(p, m1, 2, (const int64_t[]){nbs, 1}),
                     (const int64_t[]){0, 0}, (const int64_t[]){lc, 1});
    /* 64 KiB of keys (128 at DI = 128) per gather or copy task */
    pto__dsa_push_vec(p);
    pto_tensor *kc = pto_gather(
        p,
        pto_reshape(p, in[PTO_DSA_K_CACHE], 2,
                    (const int64_t[]){s->blocks * BS, DI}),
        pto_slice(p, flat, (const int64_t[]){0}, (const int64_t[]){lc}), 0);
    pto_tensor *parts[2] = {kc, knew};
    keys = pto_concat(p, 2, parts, 0);
    pto_program_pop_tile(p);
  }
  pto_program_pop_label(p);
  pto_program_pop_label(p);
  pto_indexer_params ip = pto_indexer_params_default();
  ip.topk = prm->topk;
  ip.mask = PTO_MASK_CAUSAL;
  ip.qk_tile = prm->indexer_qk;
  ip.topk_tile = prm->indexer_topk;
  pto_tensor *idx = NULL;
  pto_indexer(p, pto__dsa_batch1(p, pto__dsa_rows(p, pr->q_idx, t0, n)),
              pto__dsa_batch1(p, keys),
              pto__dsa_batch1(p, pto__dsa_rows(p, pr->weights, t0, n)), &ip,
              &idx);
  *idx_out = idx ? pto__dsa_unbatch(p, idx) : NULL;

  pto_attention_params ap = pto_attention_params_default();
  ap.scale = prm->scale;
  ap.tile = prm->attention;
  pto_tensor *q = pto__dsa_batch1(p, pto__dsa_rows(p, pr->q, t0, n));
  pto_program_push_label(p, "attention");
  pto_program_push_label(p, "slots");
  pto__dsa_push_vec(p); /* whole rows of slots */
  pto_tensor *cidx = NULL;
  if (lc > 0) { /* the cached positions as kv_cache rows, others -1: the
                   gather yields 0 past the map, less the 1 it adds */
    const int64_t slots = n * prm->topk;
    pto_program_set_vec_tile(p, 1024, 0); /* a [1024,1] i32 column: 64 KiB
                                             in 64-byte rows */
    pto_tensor *g = pto_gather(
        p, map1, pto_reshape(p, idx, 1, (const int64_t[]){slots}), 0);
    pto_program_auto_vec_tile(p);
    cidx = pto_adds(p, pto_reshape(p, g, 3, (const int64_t[]){1, n, prm->topk}),
                    -1.0);
  }
  pto_program_pop_tile(p);
  pto_program_pop_label(p);
  pto_program_pop_label(p);
  /* The new rows' attention, in chunks of queries: query i sees new rows
   * 0..i only, so a chunk's slots pack into as many as its last query
   * sees, over just those rows (a 512-token prefill in 8 chunks of 64
   * runs 9/16 of the slots a single packing to 512 would). */
  enum {
    CHUNKS = 8,
    CHUNK_MIN = 8
  }; /* the attention's tasks are per
       query: chunks add no task there */
  const int64_t by8 = (n + CHUNKS - 1) / CHUNKS,
                ch = by8 > CHUNK_MIN ? by8 : CHUNK_MIN;
  const int64_t LR = L + R;
  pto_tensor *oc[CHUNKS + 1], *lcs[CHUNKS + 1];
  int64_t m = 0;
  for (int64_t r0 = 0; r0 < n; r0 += ch, m++) {
    const int64_t rn = n - r0 < ch ? n - r0 : ch;
    pto_program_push_label(p, "attention");
    pto_program_push_label(p, "slots");
    pto__dsa_push_vec(p);
    pto_tensor *jn =
        new_slots(p,
                  pto_slice(p, idx, (const int64_t[]){0, r0, 0},
                            (const int64_t[]){1, r0 + rn, prm->topk}),
                  lc, r0 + rn, prm->topk);
    pto_program_pop_tile(p);
    pto_program_pop_label(p);
    pto_program_pop_label(p);
    pto_tensor *qk = pto_slice(p, q, (const int64_t[]){0, r0, 0, 0},
                               (const int64_t[]){1, r0 + rn, H, LR});
    pto_tensor *l = NULL;
    pto_attention_params an = ap; /* its tile: the params', or the
                                      compiler's for the machine */
    pto_tensor *o = pto_attention(
        p, qk, pto__dsa_batch1(p, pto__dsa_rows(p, pr->kv_new, t0, r0 + rn)),
        jn, L, &an, &l);
    oc[m] = pto_reshape(p, o, 3, (const int64_t[]){rn, H, L});
    lcs[m] = pto_reshape(p, l, 2, (const int64_t[]){rn, H});
  }
  pto_program_push_label(p, "attention");
  pto_program_push_label(p, "concat");
  pto_tensor *on = concat_rows(p, oc, m), *ln = concat_rows(p, lcs, m);
  pto_program_pop_label(p);
  pto_program_pop_label(p);
  const int64_t o3[3] = {n, H, L}, l2[2] = {n, H};
  if (lc > 0) {
    pto_tensor *lcache = NULL;
    pto_attention_params ac = ap;
    pto_tensor *ocache =
        pto_attention(p, q,
                      pto_reshape(p, in[PTO_DSA_KV_CACHE], 3,
                                  (const int64_t[]){1, s->blocks * BS, L + R}),
                      cidx, L, &ac, &lcache);
    pto_program_push_label(p, "attention");
    pto_program_push_label(p, "merge");
    pto__dsa_push_vec(p);
    on = pto__dsa_merge(p, pto_reshape(p, ocache, 3, o3),
                        pto_reshape(p, lcache, 2, l2), on, ln, &ln);
    pto_program_pop_tile(p);
    pto_program_pop_label(p);
    pto_program_pop_label(p);
  }
  *out = on;
  *lse = ln;
}

pto_status pto_dsa(pto_program *p, const pto_dsa_dims *d, const pto_dsa_step *s,
                   const pto_dsa_params *prm, pto_tensor *const *in,
                   pto_tensor **out) {
  if (!p)
    return PTO_EINVAL;
  if (out)
    for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
      out[i] = NULL;
  if (!in || !out)
    return pto_program_fail(p, PTO_EINVAL, OP, "%s is NULL",
                            !in ? "the input array" : "the output array");
  char msg[256];
  if (!pto__dsa_valid(d, s, prm, msg, sizeof msg))
    return pto_program_fail(p, PTO_EINVAL, OP, "%s", msg);
  const int64_t T = pto_dsa_tokens(s);
  if (check_inputs(p, d, s, T, in))
    return pto_program_status(p);
  pto__dsa_prolog pr;
  pto__dsa_prologs(p, d, T, prm, in, &pr);
  if (pto_program_status(p))
    return pto_program_status(p);
  pto_tensor **parts = calloc((size_t)s->b * 3, sizeof *parts);
  if (!parts)
    return pto_program_fail(p, PTO_ENOMEM, OP, "out of memory");
  pto_tensor **pi = parts, **po = parts + s->b, **pl = parts + 2 * s->b;
  for (int64_t b = 0, t0 = 0; b < s->b && !pto_program_status(p); b++) {
    sequence(p, d, s, prm, in, &pr, b, t0, &pi[b], &po[b], &pl[b]);
    t0 += s->n[b];
  }
  if (!pto_program_status(p)) {
    pto_program_push_label(p, "attention");
    pto_program_push_label(p, "concat");
    out[PTO_DSA_OUT] = concat_rows(p, po, s->b);
    out[PTO_DSA_LSE] = concat_rows(p, pl, s->b);
    pto_program_pop_label(p);
    pto_program_pop_label(p);
    pto_program_push_label(p, "indexer");
    pto_program_push_label(p, "concat");
    out[PTO_DSA_INDICES] = concat_rows(p, pi, s->b);
    pto_program_pop_label(p);
    pto_program_pop_label(p);
    out[PTO_DSA_KV_NEW] = pr.kv_new;
    out[PTO_DSA_K_NEW] = pr.k_new;
  }
  free(parts);
  if (pto_program_status(p)) {
    for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
      out[i] = NULL;
    return pto_program_status(p);
  }
  return PTO_OK;
}

pto_program *pto_dsa_program(const pto_dsa_dims *d, const pto_dsa_step *s,
                             const pto_dsa_params *prm) {
  pto_program *p = pto_program_new("dsa");
  if (!p)
    return NULL;
  char msg[256];
  if (!pto__dsa_valid(d, s, prm, msg, sizeof msg)) {
    pto_program_fail(p, PTO_EINVAL, OP, "%s", msg);
    return p;
  }
  const int64_t T = pto_dsa_tokens(s);
  pto_tensor *in[PTO_DSA_INPUT_COUNT], *out[PTO_DSA_OUTPUT_COUNT];
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = shape_of(d, s, T, i, sh);
    in[i] = pto_input(p, input_names[i],
                      i == PTO_DSA_BLOCK_TABLE ? PTO_I32 : PTO_F32, nd, sh);
  }
  if (pto_dsa(p, d, s, prm, in, out) == PTO_OK)
    for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
      pto_output(p, out[i], output_names[i]);
  return p;
}
