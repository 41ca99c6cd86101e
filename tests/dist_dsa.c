/* tests/dist_dsa: one rank of a context-parallel DSA step (pto_dsa_cp_step)
 * checked against one rank's pto_dsa on the whole caches and against the
 * plain-C reference. Run under mpirun (tests/test_dist.c does, with 2 and
 * 3 ranks) or alone (one rank):
 *
 *   dist_dsa CASE      CASE: one of the names `dist_dsa --help` lists
 *
 * Every rank builds the same inputs from the same seed, keeps the blocks
 * the case's layout gives it and runs the step. Prints "rank R: CASE: ok"
 * per rank and exits 0, or names what differed and exits 1. */
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "pto/comm.h"
#include "pto/pto.h"

/* D, Q, H, N, R, L, HI, DI, BS */
static const pto_dsa_dims dims = {64, 32, 4, 16, 8, 32, 4, 16, 4};

typedef struct dist_case {
  const char *name, *what;
  int64_t b, n[4], len[4], topk;
} dist_case;

static const dist_case cases[] = {
    {"round-robin",
     "blocks dealt to the ranks in turn",
     3,
     {1, 1, 1},
     {23, 40, 9},
     8},
    {"shuffled",
     "random owners and local block numbers",
     3,
     {1, 1, 1},
     {37, 18, 29},
     8},
    {"one-rank-seq",
     "sequence 0's blocks all on the last rank",
     2,
     {1, 1},
     {33, 26},
     8},
    {"idle-rank", "the last rank holds no block", 2, {1, 1}, {30, 21}, 8},
    {"short", "sequences shorter than topk", 3, {1, 1, 1}, {3, 6, 12}, 16},
    {"prefill",
     "several new tokens per sequence (causal on the home rank)",
     2,
     {5, 3},
     {27, 19},
     8},
    {"bad-owner",
     "an owner that is no rank: refused on every rank",
     2,
     {1, 1},
     {20, 20},
     8},
    {"bad-block",
     "a block outside rank 0's caches: refused on every rank",
     2,
     {1, 1},
     {20, 20},
     8},
    {"mismatch",
     "rank 1 has another length: refused on every rank",
     2,
     {1, 1},
     {20, 20},
     8},
    {"kill",
     "rank 1 dies before the step: the others fail within the bound",
     2,
     {1, 1},
     {20, 20},
     8},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static uint64_t rng;
static double uniform(void) { /* splitmix64 in [-1, 1) */
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0 * 2 - 1;
}

static int64_t numel(const int64_t *sh, int nd) {
  int64_t n = 1;
  for (int a = 0; a < nd; a++)
    n *= sh[a];
  return n;
}

typedef struct world {
  pto_dsa_step s;
  pto_dsa_params prm;
  void *in[PTO_DSA_INPUT_COUNT];
  int64_t in_n[PTO_DSA_INPUT_COUNT];
} world;

/* The whole step's inputs, the same on every rank: blocks of the full
 * caches shuffled as the table says. */
static int world_new(world *w, const dist_case *c) {
  memset(w, 0, sizeof *w);
  int64_t mb = 1;
  for (int64_t b = 0; b < c->b; b++) {
    const int64_t need = (c->len[b] + dims.block - 1) / dims.block;
    mb = need > mb ? need : mb;
  }
  w->s = (pto_dsa_step){c->b, c->n, c->len, c->b * mb + 2, mb + 1};
  w->prm = pto_dsa_params_default();
  w->prm.topk = c->topk;
  rng = 12345;
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_input_shape(&dims, &w->s, i, sh);
    w->in_n[i] = numel(sh, nd);
    w->in[i] = malloc((size_t)w->in_n[i] * 4);
    if (!w->in[i])
      return -1;
    float *f = w->in[i];
    for (int64_t k = 0; k < w->in_n[i]; k++)
      f[k] = (float)(uniform() *
                     (i >= PTO_DSA_W_DQ && i <= PTO_DSA_W_PROJ ? 0.25 : 1.0));
  }
  float *cs = w->in[PTO_DSA_COS], *sn = w->in[PTO_DSA_SIN];
  for (int64_t k = 0; k < w->in_n[PTO_DSA_COS]; k++) {
    const double a = cs[k] * 3.0;
    cs[k] = (float)cos(a);
    sn[k] = (float)sin(a);
  }
  float *h = w->in[PTO_DSA_HADAMARD];
  for (int64_t i = 0; i < dims.di; i++)
    for (int64_t j = 0; j < dims.di; j++)
      h[i * dims.di + j] =
          (float)((__builtin_popcountll((unsigned long long)(i & j)) & 1
                       ? -1.0
                       : 1.0) /
                  sqrt((double)dims.di));
  int32_t *table = w->in[PTO_DSA_BLOCK_TABLE];
  const int64_t nb = w->s.blocks;
  int32_t *perm = malloc((size_t)nb * sizeof *perm);
  if (!perm)
    return -1;
  for (int64_t k = 0; k < nb; k++)
    perm[k] = (int32_t)k;
  for (int64_t k = nb - 1; k > 0; k--) {
    const int64_t j =
        (int64_t)((uniform() + 1) / 2 * (double)(k + 1)) % (k + 1);
    const int32_t t = perm[k];
    perm[k] = perm[j];
    perm[j] = t;
  }
  for (int64_t b = 0; b < c->b; b++)
    for (int64_t j = 0; j < w->s.max_blocks; j++)
      table[b * w->s.max_blocks + j] = j < mb ? perm[b * mb + j] : -7;
  free(perm);
  return 0;
}

static void world_free(world *w) {
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++)
    free(w->in[i]);
}

/* The case's owners; local block numbers in each rank's order of first
 * use, shuffled for "shuffled". */
static void layout_of(const dist_case *c, const world *w, int R, int32_t *owner,
                      int32_t *block, int64_t *count) {
  const int64_t MB = w->s.max_blocks;
  rng = 777;
  for (int r = 0; r < R; r++)
    count[r] = 0;
  for (int64_t b = 0; b < c->b; b++)
    for (int64_t j = 0; j < MB; j++) {
      int o = (int)((b * 7 + j) % R);
      if (!strcmp(c->name, "shuffled"))
        o = (int)((uniform() + 1) / 2 * R) % R;
      else if (!strcmp(c->name, "one-rank-seq") && b == 0)
        o = R - 1;
      else if (!strcmp(c->name, "idle-rank") && R > 1)
        o = (int)((b + j) % (R - 1));
      owner[b * MB + j] = o;
      block[b * MB + j] = (int32_t)count[o]++;
    }
  if (!strcmp(c->name, "shuffled")) /* reverse each rank's numbering */
    for (int64_t k = 0; k < c->b * MB; k++)
      block[k] = (int32_t)(count[owner[k]] - 1 - block[k]);
  if (!strcmp(c->name, "bad-owner"))
    owner[1] = R;
  if (!strcmp(c->name, "bad-block"))
    for (int64_t k = 0; k < c->b * MB; k++)
      if (owner[k] == 0) {
        block[k] = (int32_t)count[0];
        break;
      }
}

static int outputs_new(const world *w, void **out, int64_t *out_n) {
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_output_shape(&dims, &w->s, &w->prm, i, sh);
    out_n[i] = numel(sh, nd);
    out[i] = malloc((size_t)out_n[i] * 4);
    if (!out[i])
      return -1;
    memset(out[i], 0x5a, (size_t)out_n[i] * 4);
  }
  return 0;
}

static int expect_refusal(const dist_case *c, int rank, pto_status st,
                          const char *msg, const char *needle, double secs,
                          double bound) {
  const int ok = st != PTO_OK && strstr(msg, needle) && secs <= bound;
  printf("rank %d: %s: %s (%s after %.2f s: %s)\n", rank, c->name,
         ok ? "ok" : "FAILED", pto_status_name(st), secs, msg);
  return ok ? 0 : 1;
}

static int run_case(pto_comm *comm, const dist_case *c) {
  const int R = pto_comm_size(comm), rank = pto_comm_rank(comm);
  world w;
  if (world_new(&w, c)) {
    printf("rank %d: %s: out of memory\n", rank, c->name);
    return 1;
  }
  dist_case mine = *c;
  if (!strcmp(c->name, "mismatch") && rank == 1)
    mine.len[0] += 1;
  pto_dsa_step s = w.s;
  s.len = mine.len;
  const int64_t MB = w.s.max_blocks, BS = dims.block;
  int32_t *owner = malloc((size_t)(c->b * MB) * sizeof *owner);
  int32_t *block = malloc((size_t)(c->b * MB) * sizeof *block);
  int64_t count[64];
  layout_of(c, &w, R, owner, block, count);
  /* this rank's caches: its blocks, copied from the whole caches */
  s.blocks = count[rank];
  const int64_t LR = dims.latent + dims.rope, DI = dims.di;
  float *kv = count[rank] ? calloc((size_t)(count[rank] * BS * LR), 4) : NULL;
  float *kc = count[rank] ? calloc((size_t)(count[rank] * BS * DI), 4) : NULL;
  const int32_t *table = w.in[PTO_DSA_BLOCK_TABLE];
  for (int64_t k = 0; k < c->b * MB; k++)
    if (owner[k] == rank && block[k] >= 0 && block[k] < count[rank] &&
        table[k] >= 0) {
      memcpy(kv + block[k] * BS * LR,
             (const float *)w.in[PTO_DSA_KV_CACHE] + table[k] * BS * LR,
             (size_t)(BS * LR) * 4);
      memcpy(kc + block[k] * BS * DI,
             (const float *)w.in[PTO_DSA_K_CACHE] + table[k] * BS * DI,
             (size_t)(BS * DI) * 4);
    }
  const void *in[PTO_DSA_INPUT_COUNT];
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++)
    in[i] = w.in[i];
  in[PTO_DSA_KV_CACHE] = kv;
  in[PTO_DSA_K_CACHE] = kc;
  in[PTO_DSA_BLOCK_TABLE] = NULL;
  void *out[PTO_DSA_OUTPUT_COUNT];
  int64_t out_n[PTO_DSA_OUTPUT_COUNT];
  int fails = outputs_new(&w, out, out_n);
  const pto_dsa_cp_layout lay = {owner, block};
  pto_dsa_cp_stats st;
  char msg[512] = "";
  if (!strcmp(c->name, "kill") && rank == 1) {
    fflush(stdout);
    raise(SIGKILL);
  }
  pto_dsa_cp *cp = NULL;
  if (pto_dsa_cp_new(comm, NULL, &cp)) {
    printf("rank %d: %s: FAILED: no session\n", rank, c->name);
    fails = 1;
  }
  const uint64_t t0 = uv_hrtime();
  const pto_status rc = pto_dsa_cp_step(cp, &dims, &s, &w.prm, &lay, in, out,
                                        &st, msg, sizeof msg);
  const double secs = (double)(uv_hrtime() - t0) * 1e-9;
  const double bound = pto_comm_timeout(comm) + 2;
  if (!strcmp(c->name, "bad-owner"))
    fails |= expect_refusal(c, rank, rc, msg, "is not a rank", secs, bound);
  else if (!strcmp(c->name, "bad-block"))
    fails |= expect_refusal(c, rank, rc, msg, "rank 0: sequence", secs, bound);
  else if (!strcmp(c->name, "mismatch") && R > 1)
    fails |= expect_refusal(c, rank, rc, msg, "disagree", secs, bound);
  else if (!strcmp(c->name, "kill") && R > 1)
    fails |= expect_refusal(c, rank, rc, msg, "", secs, bound);
  else if (rc) {
    printf("rank %d: %s: FAILED: %s\n", rank, c->name, msg);
    fails = 1;
  } else {
    /* against the reference (the top-k's near-ties either way) */
    char cm[512];
    if (pto_dsa_check(&dims, &w.s, &w.prm, (const void *const *)w.in,
                      (const void *const *)out, cm, sizeof cm)) {
      printf("rank %d: %s: FAILED against the reference: %s\n", rank, c->name,
             cm);
      fails = 1;
    }
    /* against one rank's pto_dsa on the whole caches */
    void *one[PTO_DSA_OUTPUT_COUNT];
    int64_t one_n[PTO_DSA_OUTPUT_COUNT];
    fails |= outputs_new(&w, one, one_n);
    pto_program *p = pto_dsa_program(&dims, &w.s, &w.prm);
    pto_executable *e = NULL;
    pto_runtime *rt = NULL;
    pto_runtime_params rp = pto_runtime_params_default();
    if (pto_compile(p, NULL, &e) || pto_runtime_new(&rp, &rt) ||
        pto_runtime_run(rt, e, (const void *const *)w.in, one)) {
      printf("rank %d: %s: FAILED: one rank's run: %s\n", rank, c->name,
             e ? pto_executable_error(e) : pto_program_error(p));
      fails = 1;
    } else {
      const int32_t *a = out[PTO_DSA_INDICES], *b = one[PTO_DSA_INDICES];
      int64_t same = 0, rows = out_n[PTO_DSA_INDICES] / c->topk;
      for (int64_t t = 0; t < rows; t++) { /* as sets: both are sorted by
                                              score, ties by position */
        int eq = 1;
        for (int64_t k = 0; k < c->topk && eq; k++)
          eq = a[t * c->topk + k] == b[t * c->topk + k];
        same += eq;
      }
      double dmax = 0;
      const float *o = out[PTO_DSA_OUT], *ob = one[PTO_DSA_OUT];
      for (int64_t k = 0; k < out_n[PTO_DSA_OUT]; k++) {
        const double dd = fabs((double)o[k] - ob[k]) / (1 + fabs(ob[k]));
        dmax = dd > dmax ? dd : dmax;
      }
      const float *l = out[PTO_DSA_LSE], *lb = one[PTO_DSA_LSE];
      for (int64_t k = 0; k < out_n[PTO_DSA_LSE]; k++) {
        const double dd = isinf(lb[k])
                              ? (l[k] == lb[k] ? 0 : 1)
                              : fabs((double)l[k] - lb[k]) / (1 + fabs(lb[k]));
        dmax = dd > dmax ? dd : dmax;
      }
      if (same != rows || dmax > 1e-4) {
        printf("rank %d: %s: FAILED against one rank: %" PRId64 " of %" PRId64
               " index rows equal, out/lse differ by %.3g\n",
               rank, c->name, same, rows, dmax);
        fails = 1;
      }
    }
    pto_runtime_free(rt);
    pto_executable_free(e);
    pto_program_free(p);
    for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
      free(one[i]);
    /* the same step again: the session compiles nothing, same results */
    void *again[PTO_DSA_OUTPUT_COUNT];
    int64_t again_n[PTO_DSA_OUTPUT_COUNT];
    fails |= outputs_new(&w, again, again_n);
    pto_dsa_cp_stats st2;
    if (pto_dsa_cp_step(cp, &dims, &s, &w.prm, &lay, in, again, &st2, msg,
                        sizeof msg) ||
        st2.compiles) {
      printf("rank %d: %s: FAILED: the step again: %d compiles, %s\n", rank,
             c->name, st2.compiles, msg);
      fails = 1;
    }
    for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++) {
      if (memcmp(out[i], again[i], (size_t)out_n[i] * 4)) {
        printf("rank %d: %s: FAILED: the step again wrote another %s\n", rank,
               c->name, pto_dsa_output_name(i));
        fails = 1;
      }
      free(again[i]);
    }
    if (!fails)
      printf("rank %d: %s: ok (%" PRId64 " cached rows here, %" PRId64
             " attended, %d programs)\n",
             rank, c->name, st.cached_rows, st.selected_rows, st.compiles);
  }
  pto_dsa_cp_free(cp);
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
    free(out[i]);
  free(kv);
  free(kc);
  free(owner);
  free(block);
  world_free(&w);
  return fails;
}

int main(int argc, char **argv) {
  if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fprintf(argc == 2 ? stdout : stderr, "usage: dist_dsa CASE\ncases:\n");
    for (int k = 0; k < N_CASES; k++)
      fprintf(argc == 2 ? stdout : stderr, "  %-13s %s\n", cases[k].name,
              cases[k].what);
    return argc == 2 ? 0 : 2;
  }
  const dist_case *c = NULL;
  for (int k = 0; k < N_CASES; k++)
    if (!strcmp(argv[1], cases[k].name))
      c = &cases[k];
  if (!c) {
    fprintf(stderr, "dist_dsa: unknown case '%s' (see --help)\n", argv[1]);
    return 2;
  }
  pto_comm *comm = NULL;
  char msg[256];
  const double bound = !strcmp(c->name, "kill") ? 3.0 : 60.0;
  if (pto_comm_open(&argc, &argv, bound, &comm, msg, sizeof msg)) {
    fprintf(stderr, "dist_dsa: %s\n", msg);
    return 1;
  }
  if (pto_comm_size(comm) > 64) {
    fprintf(stderr, "dist_dsa: at most 64 ranks\n");
    pto_comm_close(comm);
    return 1;
  }
  const int fails = run_case(comm, c);
  fflush(stdout);
  pto_comm_close(comm);
  return fails ? 1 : 0;
}
