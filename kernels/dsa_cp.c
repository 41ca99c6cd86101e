/* The DSA step across ranks, context parallel (pto/dsa.h): the ranks agree
 * on the step, each scores the keys it holds and keeps a local top-k, an
 * all-gather and a stable merge give the global top-k, each attends over
 * the selected rows it holds, and a second all-gather merges the partial
 * (out, lse) by their lse. Two programs per rank and step ("dsa_cp.score",
 * "dsa_cp.attend"); the merges are small and run on the host. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include <xxhash.h>

#include "dsa_internal.h"
#include "pto/comm.h"

#define OP "dsa_cp"

/* One sequence as this rank sees it. */
typedef struct cp_seq {
  int64_t n, len, lc, t0; /* new tokens, length, cached, first token row */
  int home;               /* the rank holding the new tokens' keys */
  int64_t lr, r0;         /* cached rows held here, their first in rows[] */
} cp_seq;

/* What a program of a step is built from, as numbers: two equal
 * descriptors build the same program, so its executable is reused. */
typedef struct cp_desc {
  int64_t v[64 + 5 * 4096];
  int n;
} cp_desc;

enum { CP_CACHE = 8 };

struct pto_dsa_cp {
  pto_comm *c;
  pto_runtime *rt, *own;
  struct {
    int64_t *v;
    int n;
    uint64_t used;
    pto_executable *e;
  } cache[CP_CACHE];
  uint64_t clock;
};

typedef struct cp_step {
  pto_dsa_cp *cp;
  pto_comm *c;
  pto_runtime *rt;
  const pto_dsa_dims *d;
  const pto_dsa_step *s;
  const pto_dsa_params *prm;
  const pto_dsa_cp_layout *lay;
  const void *const *in;
  void *const *out;
  pto_dsa_cp_stats *st;
  int rank, size;
  int64_t T, topk, nrows;
  cp_seq *seq;
  int32_t *rows, *pos;  /* [nrows]: cache row here, logical position */
  float *q, *q_idx, *w; /* [T,H,L+R], [T,HI,DI], [T,HI]: the prologs' */
  char *msg;
  size_t msg_size;
} cp_step;

/* The (score, global position) pairs ranks exchange. */
typedef struct cp_pair {
  float v;
  int32_t p;
} cp_pair;

static pto_status fail(cp_step *x, pto_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pto_status fail(cp_step *x, pto_status st, const char *fmt, ...) {
  if (x->msg && x->msg_size) {
    int n = snprintf(x->msg, x->msg_size, "%s: rank %d of %d: ", OP, x->rank,
                     x->size);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < x->msg_size)
      vsnprintf(x->msg + n, x->msg_size - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return st;
}

static double ms_since(uint64_t t0) {
  return (double)(uv_hrtime() - t0) * 1e-6;
}

/* ---- agreement ------------------------------------------------------------
 */

/* What every rank must share, hashed; and what one rank found wrong. */
typedef struct cp_hello {
  int32_t status, pad;
  uint64_t hash;
  char msg[240];
} cp_hello;

static uint64_t step_hash(const cp_step *x) {
  XXH64_state_t *h = XXH64_createState();
  if (!h)
    return 0;
  XXH64_reset(h, 0);
  XXH64_update(h, x->d, sizeof *x->d);
  const int64_t head[3] = {x->s->b, x->s->max_blocks, x->prm->topk};
  XXH64_update(h, head, sizeof head);
  XXH64_update(h, &x->prm->scale, sizeof x->prm->scale);
  XXH64_update(h, x->s->n, (size_t)x->s->b * sizeof *x->s->n);
  XXH64_update(h, x->s->len, (size_t)x->s->b * sizeof *x->s->len);
  for (int64_t b = 0; b < x->s->b; b++) {
    const size_t used = (size_t)((x->s->len[b] - 1) / x->d->block + 1);
    XXH64_update(h, x->lay->owner + b * x->s->max_blocks,
                 used * sizeof(int32_t));
  }
  const uint64_t v = XXH64_digest(h);
  XXH64_freeState(h);
  return v;
}

/* This rank's checks of the step; 0 or a status with hello->msg. */
static pto_status local_checks(cp_step *x, cp_hello *hello) {
  const pto_dsa_step *s = x->s;
  char *m = hello->msg;
  const size_t ms = sizeof hello->msg;
  pto_dsa_step v = *s;
  if (v.blocks == 0) /* a rank may hold no block */
    v.blocks = 1;
  if (!pto__dsa_valid(x->d, &v, x->prm, m, ms))
    return PTO_EINVAL;
  if (s->blocks < 0) {
    snprintf(m, ms, "step blocks %" PRId64 " (this rank's) is negative",
             s->blocks);
    return PTO_EINVAL;
  }
  if (!x->lay || !x->lay->owner || !x->lay->block) {
    snprintf(m, ms, "the layout or its owner or block table is NULL");
    return PTO_EINVAL;
  }
  for (int i = 0; i < PTO_DSA_KV_CACHE; i++)
    if (!x->in[i]) {
      snprintf(m, ms, "input %s is NULL", pto_dsa_input_name(i));
      return PTO_EINVAL;
    }
  if (s->blocks > 0 && (!x->in[PTO_DSA_KV_CACHE] || !x->in[PTO_DSA_K_CACHE])) {
    snprintf(m, ms,
             "this rank holds %" PRId64 " blocks but kv_cache or "
             "k_cache is NULL",
             s->blocks);
    return PTO_EINVAL;
  }
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
    if (!x->out[i]) {
      snprintf(m, ms, "output %s is NULL", pto_dsa_output_name(i));
      return PTO_EINVAL;
    }
  const int64_t BS = x->d->block, MB = s->max_blocks;
  for (int64_t b = 0; b < s->b; b++)
    for (int64_t j = 0; j * BS < s->len[b]; j++) {
      const int32_t o = x->lay->owner[b * MB + j],
                    k = x->lay->block[b * MB + j];
      if (o < 0 || o >= x->size) {
        snprintf(m, ms,
                 "sequence %" PRId64 " block %" PRId64 ": owner %d is not a "
                 "rank of %d",
                 b, j, (int)o, x->size);
        return PTO_EINVAL;
      }
      if (o == x->rank && j * BS < s->len[b] - s->n[b] &&
          (k < 0 || k >= s->blocks)) {
        snprintf(m, ms,
                 "sequence %" PRId64 " block %" PRId64 ": block %d is outside "
                 "this rank's %" PRId64 " cache blocks",
                 b, j, (int)k, s->blocks);
        return PTO_EINVAL;
      }
    }
  return PTO_OK;
}

/* Every rank's checks and hash, gathered: PTO_OK on every rank or the
 * same failure on every rank. */
static pto_status agree(cp_step *x) {
  cp_hello mine;
  memset(&mine, 0, sizeof mine);
  mine.status = local_checks(x, &mine);
  if (!mine.status)
    mine.hash = step_hash(x);
  cp_hello *all = calloc((size_t)x->size, sizeof *all);
  if (!all)
    return fail(x, PTO_ENOMEM, "out of memory");
  char m[256];
  pto_status st =
      pto_comm_allgather(x->c, &mine, sizeof mine, all, m, sizeof m);
  if (st) {
    free(all);
    return fail(x, st, "agreeing on the step: %s", m);
  }
  for (int r = 0; r < x->size && !st; r++)
    if (all[r].status) {
      st = all[r].status;
      fail(x, st, "rank %d: %.200s", r, all[r].msg);
    }
  for (int r = 1; r < x->size && !st; r++)
    if (all[r].hash != all[0].hash) {
      st = PTO_EINVAL;
      fail(x, st,
           "ranks 0 and %d disagree on the step (dims, counts, params or "
           "the block owners)",
           r);
    }
  free(all);
  return st;
}

/* ---- the local view -------------------------------------------------------
 */

static pto_status view(cp_step *x) {
  const pto_dsa_step *s = x->s;
  const int64_t BS = x->d->block, MB = s->max_blocks;
  x->seq = calloc((size_t)s->b, sizeof *x->seq);
  if (!x->seq)
    return fail(x, PTO_ENOMEM, "out of memory");
  int64_t t0 = 0, nr = 0;
  for (int64_t b = 0; b < s->b; b++) {
    cp_seq *q = &x->seq[b];
    q->n = s->n[b];
    q->len = s->len[b];
    q->lc = q->len - q->n;
    q->t0 = t0;
    q->home = x->lay->owner[b * MB + q->lc / BS];
    q->r0 = nr;
    for (int64_t p = 0; p < q->lc; p += BS)
      if (x->lay->owner[b * MB + p / BS] == x->rank)
        q->lr += (q->lc - p < BS ? q->lc - p : BS);
    nr += q->lr;
    t0 += q->n;
  }
  x->nrows = nr;
  x->rows = malloc((size_t)(nr ? nr : 1) * sizeof *x->rows);
  x->pos = malloc((size_t)(nr ? nr : 1) * sizeof *x->pos);
  if (!x->rows || !x->pos)
    return fail(x, PTO_ENOMEM, "out of memory");
  for (int64_t b = 0; b < s->b; b++) {
    const cp_seq *q = &x->seq[b];
    int64_t k = q->r0;
    for (int64_t p = 0; p < q->lc; p++) {
      const int64_t j = b * MB + p / BS;
      if (x->lay->owner[j] != x->rank)
        continue;
      x->rows[k] = (int32_t)(x->lay->block[j] * BS + p % BS);
      x->pos[k++] = (int32_t)p;
    }
  }
  if (x->st) {
    x->st->cached_rows = nr;
  }
  return PTO_OK;
}

/* ---- running a program ----------------------------------------------------
 */

/* A descriptor starting with the phase, the dims and the params. */
static void desc_init(cp_desc *k, const cp_step *x, int64_t phase) {
  const pto_dsa_dims *d = x->d;
  const pto_dsa_params *prm = x->prm;
  int64_t scale_bits;
  memcpy(&scale_bits, &prm->scale, sizeof scale_bits);
  const int64_t head[] = {
      phase, d->d,  d->q_lora, d->h,      d->nope,    d->rope, d->latent,
      d->hi, d->di, d->block,  prm->topk, scale_bits, x->T,    x->s->blocks};
  k->n = 0;
  for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
    k->v[k->n++] = head[i];
  const pto_tile_shape *ts[5] = {&prm->mla_prolog, &prm->indexer_prolog,
                                 &prm->indexer_qk, &prm->indexer_topk,
                                 &prm->attention};
  for (int i = 0; i < 5; i++) {
    k->v[k->n++] = ts[i]->vec_rows;
    k->v[k->n++] = ts[i]->vec_cols;
    k->v[k->n++] = ts[i]->cube_m;
    k->v[k->n++] = ts[i]->cube_n;
    k->v[k->n++] = ts[i]->cube_k;
  }
}

static void desc_add(cp_desc *k, int64_t v) {
  if (k->n >= 0 && k->n < (int)(sizeof k->v / sizeof k->v[0]))
    k->v[k->n++] = v;
  else
    k->n = -1; /* too long to keep: not cached */
}

/* The session's executable for k, or NULL. */
static pto_executable *cache_get(pto_dsa_cp *cp, const cp_desc *k) {
  for (int i = 0; k->n > 0 && i < CP_CACHE; i++)
    if (cp->cache[i].e && cp->cache[i].n == k->n &&
        !memcmp(cp->cache[i].v, k->v, (size_t)k->n * sizeof k->v[0])) {
      cp->cache[i].used = ++cp->clock;
      return cp->cache[i].e;
    }
  return NULL;
}

/* Keeps e for k in the least recently used slot; 0, or -1 when it could
 * not (e is then the caller's to free). */
static int cache_put(pto_dsa_cp *cp, const cp_desc *k, pto_executable *e) {
  if (k->n <= 0)
    return -1;
  int lru = 0;
  for (int i = 1; i < CP_CACHE; i++)
    if (cp->cache[i].used < cp->cache[lru].used)
      lru = i;
  int64_t *v = malloc((size_t)k->n * sizeof *v);
  if (!v)
    return -1;
  memcpy(v, k->v, (size_t)k->n * sizeof *v);
  pto_executable_free(cp->cache[lru].e);
  free(cp->cache[lru].v);
  cp->cache[lru].v = v;
  cp->cache[lru].n = k->n;
  cp->cache[lru].e = e;
  cp->cache[lru].used = ++cp->clock;
  return 0;
}

/* Runs program p (built from k), compiled unless an earlier step of the
 * session compiled the same; p is freed. */
static pto_status run(cp_step *x, pto_program *p, const cp_desc *k,
                      const void *const *ins, void *const *outs) {
  pto_status st = pto_program_status(p);
  if (st) {
    st = fail(x, st, "%s: %s", pto_program_name(p), pto_program_error(p));
    pto_program_free(p);
    return st;
  }
  pto_executable *e = cache_get(x->cp, k), *mine = NULL;
  if (!e) {
    const uint64_t t0 = uv_hrtime();
    st = pto_compile(p, NULL, &mine);
    if (st) {
      st = fail(x, st, "%s: %s", pto_program_name(p), pto_program_error(p));
      pto_program_free(p);
      return st;
    }
    if (x->st) {
      x->st->compile_ms += ms_since(t0);
      x->st->compiles++;
    }
    e = mine;
    if (!cache_put(x->cp, k, mine))
      mine = NULL; /* the session's now */
  }
  pto_program_free(p);
  const uint64_t t0 = uv_hrtime();
  st = pto_runtime_run(x->rt, e, ins, outs);
  if (x->st)
    x->st->compute_ms += ms_since(t0);
  if (st)
    fail(x, st, "%s", pto_executable_error(e));
  pto_executable_free(mine);
  return st;
}

/* ---- scoring: prologs and the local top-k ---------------------------------
 */

/* This rank's heads: [h[0], h[1]) of q and [h[2], h[3]) of q_idx, an even
 * split of both over the ranks (all of them on every rank when there are
 * more ranks than heads). */
static void my_heads(const cp_step *x, int64_t r, int64_t *h) {
  const int64_t H = x->d->h, HI = x->d->hi, R = x->size;
  const int split = R <= H && R <= HI;
  h[0] = split ? r * H / R : 0;
  h[1] = split ? (r + 1) * H / R : H;
  h[2] = split ? r * HI / R : 0;
  h[3] = split ? (r + 1) * HI / R : HI;
}

/* The prologs for every token with this rank's heads of the weights (the
 * heads' matmuls are most of the prologs' weights): its q heads into qh
 * [T, h1-h0, L+R], its q_idx heads into qih [T, i1-i0, DI], and the whole
 * kv_new, k_new (the outputs) and weights (x->w). */
static pto_status prolog(cp_step *x, float *qh, float *qih) {
  const pto_dsa_dims *d = x->d;
  pto_program *p = pto_program_new("dsa_cp.prolog");
  if (!p)
    return fail(x, PTO_ENOMEM, "out of memory");
  pto_tensor *in[PTO_DSA_INPUT_COUNT] = {0};
  const void *ins[PTO_DSA_INPUT_COUNT];
  pto_dsa_step one = *x->s; /* the prologs' shapes need no cache block */
  one.blocks = one.blocks ? one.blocks : 1;
  for (int i = 0; i < PTO_DSA_KV_CACHE; i++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_input_shape(d, &one, i, sh);
    in[i] = pto_input(p, pto_dsa_input_name(i), PTO_F32, nd, sh);
    ins[i] = x->in[i];
  }
  int64_t h[4];
  my_heads(x, x->rank, h);
  pto__dsa_prolog pr;
  pto__dsa_prologs_heads(p, d, x->T, x->prm, in, h, &pr);
  pto_output(p, pr.q, "q");
  pto_output(p, pr.q_idx, "q_idx");
  pto_output(p, pr.kv_new, "kv_new");
  pto_output(p, pr.k_new, "k_new");
  pto_output(p, pr.weights, "weights");
  void *outs[5] = {qh, qih, x->out[PTO_DSA_KV_NEW], x->out[PTO_DSA_K_NEW],
                   x->w};
  cp_desc *k = malloc(sizeof *k);
  if (!k) {
    pto_program_free(p);
    return fail(x, PTO_ENOMEM, "out of memory");
  }
  desc_init(k, x, 1);
  for (int i = 0; i < 4; i++)
    desc_add(k, h[i]);
  const pto_status st = run(x, p, k, ins, outs);
  free(k);
  return st;
}

/* Every rank's heads of q and q_idx from the exchange's parts (rank r's at
 * r * unit floats, q's heads then q_idx's, each padded to the widest
 * rank's) into x->q [T,H,L+R] and x->q_idx [T,HI,DI]. */
static void assemble(cp_step *x, const float *parts, int64_t qw, int64_t iw) {
  const int64_t T = x->T, H = x->d->h, HI = x->d->hi, DI = x->d->di,
                LR = x->d->latent + x->d->rope, unit = T * (qw * LR + iw * DI);
  for (int r = 0; r < x->size; r++) {
    int64_t h[4];
    my_heads(x, r, h);
    const float *qp = parts + r * unit, *ip = qp + T * qw * LR;
    const int64_t nq = h[1] - h[0], ni = h[3] - h[2];
    for (int64_t t = 0; t < T; t++) {
      memcpy(x->q + (t * H + h[0]) * LR, qp + t * nq * LR,
             (size_t)(nq * LR) * sizeof(float));
      memcpy(x->q_idx + (t * HI + h[2]) * DI, ip + t * ni * DI,
             (size_t)(ni * DI) * sizeof(float));
    }
  }
}

/* The local top-k of every token over the keys held here. */
static pto_status score(cp_step *x, float *vals, int32_t *idx) {
  const pto_dsa_dims *d = x->d;
  const int64_t T = x->T, DI = d->di, BS = d->block, K = x->topk, HI = d->hi;
  int work = 0; /* a sequence with keys here */
  for (int64_t b = 0; b < x->s->b; b++)
    work |= x->seq[b].lr > 0 || x->seq[b].home == x->rank;
  if (!work) {
    for (int64_t i = 0; i < T * K; i++) {
      vals[i] = -INFINITY;
      idx[i] = -1;
    }
    return PTO_OK;
  }
  pto_program *p = pto_program_new("dsa_cp.score");
  if (!p)
    return fail(x, PTO_ENOMEM, "out of memory");
  const void *ins[5];
  int ni = 0;
  pto__dsa_prolog pr = {0};
  pr.q_idx = pto_input(p, "q_idx", PTO_F32, 3, (const int64_t[]){T, HI, DI});
  ins[ni++] = x->q_idx;
  pr.weights = pto_input(p, "weights", PTO_F32, 2, (const int64_t[]){T, HI});
  ins[ni++] = x->w;
  int home_here = 0;
  for (int64_t b = 0; b < x->s->b; b++)
    home_here |= x->seq[b].home == x->rank;
  if (home_here) {
    pr.k_new = pto_input(p, "k_new", PTO_F32, 2, (const int64_t[]){T, DI});
    ins[ni++] = x->out[PTO_DSA_K_NEW];
  }
  pto_tensor *kc = NULL, *rows = NULL;
  if (x->nrows) {
    kc = pto_reshape(p,
                     pto_input(p, "k_cache", PTO_F32, 3,
                               (const int64_t[]){x->s->blocks, BS, DI}),
                     2, (const int64_t[]){x->s->blocks * BS, DI});
    rows = pto_input(p, "rows", PTO_I32, 1, (const int64_t[]){x->nrows});
    ins[ni++] = x->in[PTO_DSA_K_CACHE];
    ins[ni++] = x->rows;
  }
  void **outs = calloc((size_t)(1 + 2 * x->s->b), sizeof *outs);
  if (!outs) {
    pto_program_free(p);
    return fail(x, PTO_ENOMEM, "out of memory");
  }
  int no = 0;
  for (int64_t b = 0; b < x->s->b && !pto_program_status(p); b++) {
    const cp_seq *q = &x->seq[b];
    const int home = q->home == x->rank;
    for (int64_t i = q->t0 * K; i < (q->t0 + q->n) * K; i++) {
      vals[i] = -INFINITY;
      idx[i] = -1;
    }
    if (!q->lr && !home)
      continue; /* nothing of this sequence here */
    pto_program_push_label(p, "indexer");
    pto_program_push_label(p, "keys");
    pto_tensor *parts[2];
    int np = 0;
    if (q->lr) {
      pto__dsa_push_vec(p);
      parts[np++] = pto_gather(p, kc,
                               pto_slice(p, rows, (const int64_t[]){q->r0},
                                         (const int64_t[]){q->r0 + q->lr}),
                               0);
    }
    if (home)
      parts[np++] = pto__dsa_rows(p, pr.k_new, q->t0, q->n);
    pto_tensor *keys = np == 2 ? pto_concat(p, 2, parts, 0) : parts[0];
    if (q->lr)
      pto_program_pop_tile(p);
    pto_program_pop_label(p);
    pto_program_pop_label(p);
    pto_indexer_params ip = pto_indexer_params_default();
    ip.topk = K;
    /* the new keys sit last, so the causal end-aligned mask is the step's;
     * cached keys alone are all visible */
    ip.mask = home ? PTO_MASK_CAUSAL : PTO_MASK_NONE;
    ip.qk_tile = x->prm->indexer_qk;
    ip.topk_tile = x->prm->indexer_topk;
    pto_tensor *ix = NULL;
    pto_tensor *v = pto_indexer(
        p, pto__dsa_batch1(p, pto__dsa_rows(p, pr.q_idx, q->t0, q->n)),
        pto__dsa_batch1(p, keys),
        pto__dsa_batch1(p, pto__dsa_rows(p, pr.weights, q->t0, q->n)), &ip,
        &ix);
    char name[32];
    snprintf(name, sizeof name, "values.%" PRId64, b);
    pto_output(p, v, name);
    outs[no++] = vals + q->t0 * K;
    snprintf(name, sizeof name, "indices.%" PRId64, b);
    pto_output(p, ix, name);
    outs[no++] = idx + q->t0 * K;
  }
  cp_desc *key = malloc(sizeof *key);
  pto_status st = PTO_ENOMEM;
  if (key) {
    desc_init(key, x, 2);
    desc_add(key, x->nrows);
    for (int64_t b = 0; b < x->s->b; b++) {
      const cp_seq *q = &x->seq[b];
      desc_add(key, q->n);
      desc_add(key, q->t0);
      desc_add(key, q->lr);
      desc_add(key, q->r0);
      desc_add(key, q->home == x->rank);
    }
    st = run(x, p, key, ins, outs);
  } else {
    pto_program_free(p);
    fail(x, st, "out of memory");
  }
  free(key);
  free(outs);
  if (st)
    return st;
  /* local indices to global positions: cached rows in order, new rows last */
  for (int64_t b = 0; b < x->s->b; b++) {
    const cp_seq *q = &x->seq[b];
    for (int64_t i = q->t0 * K; i < (q->t0 + q->n) * K; i++) {
      const int32_t j = idx[i];
      if (j < 0)
        continue;
      idx[i] = j < q->lr ? x->pos[q->r0 + j] : (int32_t)(q->lc + (j - q->lr));
    }
  }
  return PTO_OK;
}

/* The global top-k of each token from every rank's (score desc, position
 * asc) list: a stable R-way merge. */
static void merge_topk(const cp_step *x, const cp_pair *all, int32_t *out_idx) {
  const int64_t K = x->topk, T = x->T, R = x->size;
  int64_t head[64];
  for (int64_t t = 0; t < T; t++) {
    for (int64_t r = 0; r < R; r++)
      head[r] = 0;
    for (int64_t k = 0; k < K; k++) {
      int64_t best = -1;
      for (int64_t r = 0; r < R; r++) {
        if (head[r] >= K)
          continue;
        const cp_pair *c = &all[(r * T + t) * K + head[r]];
        if (c->p < 0)
          continue;
        if (best < 0)
          best = r;
        else {
          const cp_pair *b = &all[(best * T + t) * K + head[best]];
          if (c->v > b->v || (c->v == b->v && c->p < b->p))
            best = r;
        }
      }
      if (best < 0) {
        out_idx[t * K + k] = -1;
        continue;
      }
      out_idx[t * K + k] = all[(best * T + t) * K + head[best]].p;
      head[best]++;
    }
  }
}

/* ---- attending over the rows held here ------------------------------------
 */

/* The selected slots this rank holds, per token packed to the front: cache
 * rows into ci [T, *wc] and kv_new rows into ni [T, *wn], -1 after them;
 * with ci NULL only the most per token, into *wc and *wn. Returns how many
 * slots are held here. */
static int64_t pack(const cp_step *x, const int32_t *sel, int32_t *ci,
                    int32_t *ni, int64_t *wc, int64_t *wn) {
  const int64_t K = x->topk, BS = x->d->block, MB = x->s->max_blocks;
  int64_t held = 0;
  if (!ci)
    *wc = *wn = 0;
  for (int64_t b = 0; b < x->s->b; b++) {
    const cp_seq *q = &x->seq[b];
    for (int64_t t = q->t0; t < q->t0 + q->n; t++) {
      int64_t c = 0, n = 0;
      for (int64_t k = 0; k < K; k++) {
        const int32_t g = sel[t * K + k];
        const int64_t j = b * MB + g / BS;
        if (g < 0)
          continue;
        if (g < q->lc && x->lay->owner[j] == x->rank) {
          if (ci)
            ci[t * *wc + c] = (int32_t)(x->lay->block[j] * BS + g % BS);
          c++;
        } else if (g >= q->lc && q->home == x->rank) {
          if (ci)
            ni[t * *wn + n] = (int32_t)(q->t0 + (g - q->lc));
          n++;
        }
      }
      held += c + n;
      if (!ci) {
        *wc = c > *wc ? c : *wc;
        *wn = n > *wn ? n : *wn;
        continue;
      }
      for (; c < *wc; c++)
        ci[t * *wc + c] = -1;
      for (; n < *wn; n++)
        ni[t * *wn + n] = -1;
    }
  }
  return held;
}

/* Partial out [T,H,L] and lse [T,H] over the selected rows this rank holds:
 * the cached ones in its kv_cache, the new ones (of the sequences it is
 * home to) in kv_new. */
static pto_status attend(cp_step *x, const int32_t *sel, float *po, float *pl) {
  const pto_dsa_dims *d = x->d;
  const int64_t T = x->T, H = d->h, L = d->latent, LR = L + d->rope,
                BS = d->block;
  int64_t wc = 0, wn = 0;
  pack(x, sel, NULL, NULL, &wc, &wn);
  /* whole 64-slot blocks (at most topk): a step's shapes then repeat over
   * the decode and its program is compiled once for many */
  const int64_t K = x->topk;
  wc = wc ? ((wc + 63) / 64 * 64 < K ? (wc + 63) / 64 * 64 : K) : 0;
  wn = wn ? ((wn + 63) / 64 * 64 < K ? (wn + 63) / 64 * 64 : K) : 0;
  if (x->st)
    x->st->selected_rows = 0;
  if (!wc && !wn) { /* nothing selected here: an empty partial */
    for (int64_t i = 0; i < T * H * L; i++)
      po[i] = 0;
    for (int64_t i = 0; i < T * H; i++)
      pl[i] = INFINITY;
    return PTO_OK;
  }
  int32_t *ci = malloc((size_t)(T * (wc ? wc : 1)) * sizeof *ci);
  int32_t *ni = malloc((size_t)(T * (wn ? wn : 1)) * sizeof *ni);
  if (!ci || !ni) {
    free(ci);
    free(ni);
    return fail(x, PTO_ENOMEM, "out of memory");
  }
  const int64_t held = pack(x, sel, ci, ni, &wc, &wn);
  if (x->st)
    x->st->selected_rows = held;
  pto_program *p = pto_program_new("dsa_cp.attend");
  if (!p) {
    free(ci);
    free(ni);
    return fail(x, PTO_ENOMEM, "out of memory");
  }
  const void *ins[5];
  int n_in = 0;
  pto_tensor *q = pto_input(p, "q", PTO_F32, 4, (const int64_t[]){1, T, H, LR});
  ins[n_in++] = x->q;
  pto_attention_params ap = pto_attention_params_default();
  ap.scale = x->prm->scale;
  ap.tile = x->prm->attention;
  pto_tensor *oc = NULL, *lc = NULL, *on = NULL, *ln = NULL;
  if (wc) {
    pto_tensor *kv =
        pto_reshape(p,
                    pto_input(p, "kv_cache", PTO_F32, 3,
                              (const int64_t[]){x->s->blocks, BS, LR}),
                    3, (const int64_t[]){1, x->s->blocks * BS, LR});
    pto_tensor *ix =
        pto_input(p, "cache_slots", PTO_I32, 3, (const int64_t[]){1, T, wc});
    ins[n_in++] = x->in[PTO_DSA_KV_CACHE];
    ins[n_in++] = ci;
    oc = pto_reshape(p, pto_attention(p, q, kv, ix, L, &ap, &lc), 3,
                     (const int64_t[]){T, H, L});
    lc = pto_reshape(p, lc, 2, (const int64_t[]){T, H});
  }
  if (wn) {
    pto_tensor *kv =
        pto_input(p, "kv_new", PTO_F32, 3, (const int64_t[]){1, T, LR});
    pto_tensor *ix =
        pto_input(p, "new_slots", PTO_I32, 3, (const int64_t[]){1, T, wn});
    ins[n_in++] = x->out[PTO_DSA_KV_NEW];
    ins[n_in++] = ni;
    on = pto_reshape(p, pto_attention(p, q, kv, ix, L, &ap, &ln), 3,
                     (const int64_t[]){T, H, L});
    ln = pto_reshape(p, ln, 2, (const int64_t[]){T, H});
  }
  pto_tensor *o = oc ? oc : on, *l = oc ? lc : ln;
  if (oc && on) {
    pto_program_push_label(p, "attention");
    pto_program_push_label(p, "merge");
    pto__dsa_push_vec(p);
    o = pto__dsa_merge(p, oc, lc, on, ln, &l);
    pto_program_pop_tile(p);
    pto_program_pop_label(p);
    pto_program_pop_label(p);
  }
  pto_output(p, o, "out");
  pto_output(p, l, "lse");
  void *outs[2] = {po, pl};
  cp_desc *k = malloc(sizeof *k);
  pto_status st = PTO_ENOMEM;
  if (k) {
    desc_init(k, x, 3);
    desc_add(k, wc);
    desc_add(k, wn);
    st = run(x, p, k, ins, outs);
  } else {
    pto_program_free(p);
    fail(x, st, "out of memory");
  }
  free(k);
  free(ci);
  free(ni);
  return st;
}

/* The partials of every rank merged by their lse (+inf: no slot there). */
/* One (token, head) row merged from R partials by their lse (+inf: no slot
 * there): o[r] its out row (L floats), l[r] its lse. */
static void merge_row(int64_t R, int64_t L, const float *const *o,
                      const float *l, float *out, float *lse) {
  double m = -INFINITY;
  for (int64_t r = 0; r < R; r++)
    if (l[r] != INFINITY && l[r] > m)
      m = l[r];
  if (m == -INFINITY) {
    for (int64_t i = 0; i < L; i++)
      out[i] = 0;
    *lse = INFINITY;
    return;
  }
  double w[64], sum = 0;
  for (int64_t r = 0; r < R; r++) {
    w[r] = l[r] == INFINITY ? 0 : exp((double)l[r] - m);
    sum += w[r];
  }
  for (int64_t i = 0; i < L; i++) {
    double acc = 0;
    for (int64_t r = 0; r < R; r++)
      if (w[r] != 0)
        acc += w[r] * o[r][i];
    out[i] = (float)(acc / sum);
  }
  *lse = (float)(m + log(sum));
}

/* Every rank's whole partial (out [T,H,L] then lse [T,H], rank r's at r *
 * per) merged into out and lse. */
static void merge_partials(const cp_step *x, const float *all, float *out,
                           float *lse) {
  const int64_t T = x->T, H = x->d->h, L = x->d->latent, R = x->size,
                per = T * H * (L + 1);
  const float *o[64];
  float l[64];
  for (int64_t th = 0; th < T * H; th++) {
    for (int64_t r = 0; r < R; r++) {
      o[r] = all + r * per + th * L;
      l[r] = all[r * per + T * H * L + th];
    }
    merge_row(R, L, o, l, out + th * L, lse + th);
  }
}

/* ---- exchanges ------------------------------------------------------------
 */

/* A collective of every rank's `bytes`, each block preceded by the
 * sender's status so far: a rank that failed still takes part, and every
 * rank then returns its failure instead of waiting for it. An all-gather
 * (a2a 0: payload is one block, all receives rank r's at r * bytes) or an
 * all-to-all (a2a 1: payload holds one block per destination, all receives
 * rank r's block for this rank at r * bytes). all may be NULL when this
 * rank failed. */
static pto_status exchange(cp_step *x, const char *what, int a2a,
                           pto_status mine, const void *payload, size_t bytes,
                           void *all) {
  const size_t unit = sizeof(cp_hello) + bytes, R = (size_t)x->size,
               blocks = a2a ? R : 1;
  char *snd = calloc(blocks, unit), *rcv = malloc(unit * R);
  if (!snd || !rcv) {
    free(snd);
    free(rcv);
    return fail(x, PTO_ENOMEM, "out of memory");
  }
  cp_hello h;
  memset(&h, 0, sizeof h);
  h.status = mine;
  if (mine && x->msg)
    snprintf(h.msg, sizeof h.msg, "%s", x->msg);
  for (size_t d = 0; d < blocks; d++) {
    memcpy(snd + d * unit, &h, sizeof h);
    if (bytes && !mine)
      memcpy(snd + d * unit + sizeof h, (const char *)payload + d * bytes,
             bytes);
  }
  char m[256];
  const uint64_t t0 = uv_hrtime();
  pto_status st = a2a ? pto_comm_alltoall(x->c, snd, unit, rcv, m, sizeof m)
                      : pto_comm_allgather(x->c, snd, unit, rcv, m, sizeof m);
  if (x->st) {
    x->st->comm_ms += ms_since(t0);
    x->st->comm_bytes += 2 * (uint64_t)(R - 1) * unit;
  }
  if (st)
    fail(x, st, "%s: %s", what, m);
  for (size_t r = 0; r < R && !st; r++) {
    memcpy(&h, rcv + r * unit, sizeof h);
    if (h.status && (int)r != x->rank) {
      st = h.status;
      fail(x, st, "rank %zu failed: %.200s", r, h.msg);
    } else if (h.status) {
      st = h.status; /* this rank's own message stays */
    }
    if (all && bytes)
      memcpy((char *)all + r * bytes, rcv + r * unit + sizeof h, bytes);
  }
  free(snd);
  free(rcv);
  return st;
}

/* The partials (po [T,H,L], pl [T,H]) of every rank merged into out and
 * lse on every rank. Two ranks gather each other's and merge (one
 * exchange of a partial); more reduce-scatter: rank d merges (token, head)
 * rows [d W, (d+1) W) from every rank's (an all-to-all), then an
 * all-gather spreads the merged rows, 2 (R-1)/R partials' bytes a rank
 * instead of R - 1. */
static pto_status merge_exchange(cp_step *x, pto_status mine, float *part) {
  const int64_t T = x->T, H = x->d->h, L = x->d->latent, R = x->size,
                TH = T * H;
  float *po = part, *pl = part + TH * L;
  float *out = x->out[PTO_DSA_OUT], *lse = x->out[PTO_DSA_LSE];
  if (R <= 2) {
    const size_t per = (size_t)(TH * (L + 1));
    float *parts = malloc((size_t)R * per * sizeof *parts);
    if (!parts && !mine)
      mine = fail(x, PTO_ENOMEM, "out of memory");
    pto_status st = exchange(x, "the attention's exchange", 0, mine, part,
                             per * sizeof *part, parts);
    if (!st) {
      const uint64_t t0 = uv_hrtime();
      merge_partials(x, parts, out, lse);
      if (x->st)
        x->st->merge_ms += ms_since(t0);
    }
    free(parts);
    return st;
  }
  const int64_t W = (TH + R - 1) / R, row = L + 1;
  const size_t block = (size_t)(W * row);
  float *snd = malloc((size_t)R * block * sizeof *snd);
  float *rcv = malloc((size_t)R * block * sizeof *rcv);
  float *mine_rows = malloc(block * sizeof *mine_rows);
  float *all = malloc((size_t)R * block * sizeof *all);
  if ((!snd || !rcv || !mine_rows || !all) && !mine)
    mine = fail(x, PTO_ENOMEM, "out of memory");
  for (int64_t d = 0; !mine && d < R; d++) /* rows of rank d's range */
    for (int64_t i = 0; i < W; i++) {
      float *r = snd + (size_t)d * block + i * row;
      const int64_t th = d * W + i;
      if (th < TH) {
        memcpy(r, po + th * L, (size_t)L * sizeof *r);
        r[L] = pl[th];
      } else { /* padding: no slot */
        memset(r, 0, (size_t)L * sizeof *r);
        r[L] = INFINITY;
      }
    }
  pto_status st = exchange(x, "the attention's reduction", 1, mine, snd,
                           block * sizeof *snd, rcv);
  if (!st) {
    const uint64_t t0 = uv_hrtime();
    const float *o[64];
    float l[64];
    for (int64_t i = 0; i < W; i++) {
      for (int64_t r = 0; r < R; r++) {
        o[r] = rcv + (size_t)r * block + i * row;
        l[r] = o[r][L];
      }
      merge_row(R, L, o, l, mine_rows + i * row, mine_rows + i * row + L);
    }
    if (x->st)
      x->st->merge_ms += ms_since(t0);
  }
  if (!st)
    st = exchange(x, "the attention's gather", 0, PTO_OK, mine_rows,
                  block * sizeof *mine_rows, all);
  for (int64_t th = 0; !st && th < TH; th++) {
    const float *r = all + (size_t)(th / W) * block + (th % W) * row;
    memcpy(out + th * L, r, (size_t)L * sizeof *out);
    lse[th] = r[L];
  }
  free(snd);
  free(rcv);
  free(mine_rows);
  free(all);
  return st;
}

/* ---- the step -------------------------------------------------------------
 */

static pto_status step(cp_step *x) {
  pto_status st = agree(x);
  if (st)
    return st;
  /* from here a rank's failure reaches the others through the exchanges */
  pto_status mine_st = view(x);
  const int64_t T = x->T, K = x->topk, H = x->d->h, L = x->d->latent,
                LR = L + x->d->rope, R = x->size;
  const size_t n_pairs = (size_t)(T * K);
  const int64_t HI = x->d->hi, DI = x->d->di;
  int64_t qw = 0, iw = 0; /* the most heads of a rank, of q and q_idx */
  for (int r = 0; r < R; r++) {
    int64_t h[4];
    my_heads(x, r, h);
    qw = h[1] - h[0] > qw ? h[1] - h[0] : qw;
    iw = h[3] - h[2] > iw ? h[3] - h[2] : iw;
  }
  const size_t unit = (size_t)(T * (qw * LR + iw * DI));
  float *heads = calloc(unit, sizeof *heads);
  float *all_heads = malloc((size_t)R * unit * sizeof *all_heads);
  x->q = malloc((size_t)(T * H * LR) * sizeof *x->q);
  x->q_idx = malloc((size_t)(T * HI * DI) * sizeof *x->q_idx);
  x->w = malloc((size_t)(T * HI) * sizeof *x->w);
  float *vals = malloc(n_pairs * sizeof *vals);
  int32_t *idx = malloc(n_pairs * sizeof *idx);
  cp_pair *mine = malloc(n_pairs * sizeof *mine);
  cp_pair *all = malloc((size_t)R * n_pairs * sizeof *all);
  const size_t per = (size_t)(T * H * (L + 1));
  float *part = malloc(per * sizeof *part);
  if (!mine_st && (!x->q || !x->q_idx || !x->w || !heads || !all_heads ||
                   !vals || !idx || !mine || !all || !part))
    mine_st = fail(x, PTO_ENOMEM, "out of memory");
  if (!mine_st)
    mine_st = prolog(x, heads, heads + T * qw * LR);
  if ((st = exchange(x, "the heads' exchange", 0, mine_st, heads,
                     unit * sizeof *heads, all_heads)))
    goto done;
  assemble(x, all_heads, qw, iw);
  mine_st = score(x, vals, idx);
  for (size_t i = 0; !mine_st && i < n_pairs; i++) {
    mine[i].v = vals[i];
    mine[i].p = idx[i];
  }
  if ((st = exchange(x, "the top-k exchange", 0, mine_st, mine,
                     n_pairs * sizeof *mine, all)))
    goto done;
  uint64_t t0 = uv_hrtime();
  int32_t *sel = x->out[PTO_DSA_INDICES];
  merge_topk(x, all, sel);
  if (x->st)
    x->st->merge_ms += ms_since(t0);
  mine_st = attend(x, sel, part, part + T * H * L);
  st = merge_exchange(x, mine_st, part);
done:
  free(heads);
  free(all_heads);
  free(vals);
  free(idx);
  free(mine);
  free(all);
  free(part);
  return st;
}

pto_status pto_dsa_cp_new(pto_comm *c, pto_runtime *rt, pto_dsa_cp **out) {
  if (!out)
    return PTO_EINVAL;
  *out = NULL;
  if (!c)
    return PTO_EINVAL;
  pto_dsa_cp *cp = calloc(1, sizeof *cp);
  if (!cp)
    return PTO_ENOMEM;
  cp->c = c;
  cp->rt = rt;
  if (!rt) {
    pto_runtime_params rp = pto_runtime_params_default();
    const pto_status st = pto_runtime_new(&rp, &cp->own);
    if (st) {
      free(cp);
      return st;
    }
    cp->rt = cp->own;
  }
  *out = cp;
  return PTO_OK;
}

void pto_dsa_cp_free(pto_dsa_cp *cp) {
  if (!cp)
    return;
  for (int i = 0; i < CP_CACHE; i++) {
    pto_executable_free(cp->cache[i].e);
    free(cp->cache[i].v);
  }
  pto_runtime_free(cp->own);
  free(cp);
}

pto_status pto_dsa_cp_step(pto_dsa_cp *cp, const pto_dsa_dims *d,
                           const pto_dsa_step *s, const pto_dsa_params *prm,
                           const pto_dsa_cp_layout *layout,
                           const void *const *in, void *const *out,
                           pto_dsa_cp_stats *st, char *msg, size_t msg_size) {
  const uint64_t t0 = uv_hrtime();
  cp_step x;
  memset(&x, 0, sizeof x);
  x.cp = cp;
  x.c = cp ? cp->c : NULL;
  x.rank = pto_comm_rank(x.c);
  x.size = pto_comm_size(x.c);
  x.msg = msg;
  x.msg_size = msg_size;
  if (msg && msg_size)
    msg[0] = '\0';
  if (st)
    memset(st, 0, sizeof *st);
  if (!cp || !d || !s || !prm || !in || !out)
    return fail(&x, PTO_EINVAL, "%s is NULL",
                !cp    ? "the session"
                : !d   ? "dims"
                : !s   ? "step"
                : !prm ? "params"
                : !in  ? "the input array"
                       : "the output array");
  if (x.size > 64)
    return fail(&x, PTO_ENOTSUP, "%d ranks: at most 64", x.size);
  x.d = d;
  x.s = s;
  x.prm = prm;
  x.lay = layout;
  x.in = in;
  x.out = out;
  x.st = st;
  x.topk = prm->topk;
  x.T = pto_dsa_tokens(s);
  if (x.T < 0) /* agree() says why on every rank */
    x.T = 0;
  x.rt = cp->rt;
  const pto_status r = step(&x);
  free(x.seq);
  free(x.rows);
  free(x.pos);
  free(x.q);
  free(x.q_idx);
  free(x.w);
  if (st)
    st->step_ms = ms_since(t0);
  return r;
}
