/* pto-bench dsa --preset decode-long: DeepSeek-V3.2's indexer attention
 * decoding long sequences context parallel over MPI ranks
 * (pto_dsa_cp_step), as `mpirun -n R pto-bench dsa --preset decode-long`
 * runs it (alone: one rank).
 *
 * b sequences of len .. len-max tokens decode one token a step for `steps`
 * steps; their caches' blocks are dealt to the ranks in turn (block j of a
 * sequence on rank (b + j) % R), each rank generating only its own blocks
 * from the seed (a block's rows depend on its sequence and position alone,
 * not on R). Per step: the median of the repeats' step time on every rank,
 * its compute, its communication (bytes and blocked time) and the hidden
 * fraction (1 - blocked / in flight, from the comm's counters); rank 0
 * then checks the step's outputs against one rank's pto_dsa over the whole
 * caches it builds for that (index rows equal, out and lse within 1e-4)
 * and against the plain-C reference (pto_dsa_check), outside the timing. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/dsa.h"
#include "bench/dsa_cp.h"
#include "bench/harness.h"
#include "bench/preset.h"
#include "pto/comm.h"
#include "pto/pto.h"

enum { P_B, P_LEN, P_LEN_MAX, P_STEPS, P_TOPK, P_SMALL, N_PARAMS };

static const bench_param params[N_PARAMS] = {
    {"b", "B", 1, 4},
    {"len", "len", 2, 1 << 20},
    {"len-max", "len_max", 2, 1 << 20},
    {"steps", "steps", 1, 64},
    {"topk", "topk", 1, 1 << 16},
    {"small", "small", 0, 1},
};

/* decode-long: 2 sequences of 32K and 64K tokens, topk 2048, V3.2's dims;
 * decode-long-smoke: the smoke dims, for CI. */
static const bench_preset presets[] = {
    {"decode-long", {2, 32768, 65536, 4, 2048, 0}},
    {"decode-long-smoke", {2, 300, 500, 2, 16, 1}},
};

static const bench_preset_table table = {"dsa",
                                         params,
                                         N_PARAMS,
                                         presets,
                                         sizeof presets / sizeof presets[0],
                                         "decode-long",
                                         "decode-long-smoke"};

int dsa_cp_wants(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--preset") && strstr(argv[i + 1], "decode-long")) {
      if (strchr(argv[i + 1], ',')) {
        fprintf(stderr,
                "pto-bench dsa: --preset %s: decode-long runs alone "
                "(its flow and columns are its own)\n",
                argv[i + 1]);
        return -1;
      }
      return 1;
    }
  return 0;
}

void dsa_cp_usage(FILE *f) {
  fprintf(f, "\ncontext parallel (mpirun -n R pto-bench dsa --preset "
             "decode-long):\n");
  bench_preset_usage(&table, f);
  fprintf(f,
          "  b sequences of len..len-max tokens decode one token a step, "
          "their\n  cache blocks dealt to the R ranks in turn; each rank "
          "scores its own\n  keys, the ranks merge a global top-k, attend "
          "over their own rows and\n  merge the partials by lse. Rank 0 "
          "checks each step against one rank's\n  pto_dsa on the whole "
          "caches and the plain-C reference. JSON (rank 0):\n  workload, "
          "preset, ranks, threads, b, len, topk, steps, pto_ms (mean step),\n"
          "  compute_ms, comm_bytes, comm_ms, comm_hidden_fraction, check, "
          "per_rank.\n");
}

/* ---- inputs ----------------------------------------------------------------
 */

typedef struct cp_bench {
  pto_dsa_dims d;
  pto_dsa_params prm;
  int64_t b, steps, len0[4], n[4], len[4], mb;
  int rank, size;
  uint64_t seed;
} cp_bench;

static int owner_of(const cp_bench *c, int64_t b, int64_t j) {
  return (int)((b + j) % c->size);
}

/* Logical block j of sequence b's kv and key rows, from the seed only. */
static void block_rows(const cp_bench *c, int64_t b, int64_t j, float *kv,
                       float *k) {
  const int64_t BS = c->d.block, LR = c->d.latent + c->d.rope;
  const uint64_t stream = 1000 + (uint64_t)b * 1000003u + (uint64_t)j;
  bench_fill_uniform(kv, (size_t)(BS * LR), c->seed, stream * 2, -1, 1);
  bench_fill_uniform(k, (size_t)(BS * c->d.di), c->seed, stream * 2 + 1, -1, 1);
}

static int64_t numel(const int64_t *sh, int nd) {
  int64_t n = 1;
  for (int a = 0; a < nd; a++)
    n *= sh[a];
  return n;
}

/* The step's non-cache inputs (x, cos, sin, weights) into in[], allocated. */
static int dense_inputs(const cp_bench *c, const pto_dsa_step *s, int64_t step,
                        void **in) {
  for (int i = 0; i < PTO_DSA_KV_CACHE; i++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_input_shape(&c->d, s, i, sh);
    const size_t n = (size_t)numel(sh, nd);
    in[i] = malloc(n * 4);
    if (!in[i])
      return -1;
    double sc = 1;
    switch (i) {
    case PTO_DSA_W_DQ:
    case PTO_DSA_W_DKV_KR:
    case PTO_DSA_W_K:
    case PTO_DSA_W_PROJ:
      sc = sqrt(3.0 / (double)c->d.d);
      break;
    case PTO_DSA_W_UQ_QR:
    case PTO_DSA_W_QB:
      sc = sqrt(3.0 / (double)c->d.q_lora);
      break;
    case PTO_DSA_W_UK:
      sc = sqrt(3.0 / (double)c->d.nope);
      break;
    default:
      break;
    }
    bench_fill_uniform(in[i], n, c->seed,
                       (uint64_t)(i == PTO_DSA_X ? 100 + step : i), (float)-sc,
                       (float)sc);
  }
  const int64_t R = c->d.rope;
  for (int64_t b = 0, t = 0; b < c->b; b++, t++)
    dsa_rope_row(R, (double)(s->len[b] - 1), (float *)in[PTO_DSA_COS] + t * R,
                 (float *)in[PTO_DSA_SIN] + t * R);
  float *hd = in[PTO_DSA_HADAMARD];
  const float h = (float)(1.0 / sqrt((double)c->d.di));
  for (int64_t i = 0; i < c->d.di; i++)
    for (int64_t j = 0; j < c->d.di; j++)
      hd[i * c->d.di + j] =
          __builtin_popcountll((uint64_t)(i & j)) & 1 ? -h : h;
  return 0;
}

/* This rank's caches (owned blocks in order, for the final length) and the
 * layout; with all set, every block (one rank's view, for the check). */
static int caches(const cp_bench *c, int all, float **kv, float **kc,
                  int32_t *owner, int32_t *block, int64_t *blocks) {
  const int64_t BS = c->d.block, LR = c->d.latent + c->d.rope, DI = c->d.di;
  int64_t nb = 0;
  for (int64_t b = 0; b < c->b; b++)
    for (int64_t j = 0; j < c->mb; j++) {
      const int o = all ? 0 : owner_of(c, b, j);
      owner[b * c->mb + j] = o;
      block[b * c->mb + j] = o == (all ? 0 : c->rank) ? (int32_t)nb++ : -1;
    }
  *blocks = nb;
  *kv = nb ? malloc((size_t)(nb * BS * LR) * 4) : NULL;
  *kc = nb ? malloc((size_t)(nb * BS * DI) * 4) : NULL;
  if (nb && (!*kv || !*kc))
    return -1;
  for (int64_t b = 0; b < c->b; b++)
    for (int64_t j = 0; j < c->mb; j++) {
      const int32_t k = block[b * c->mb + j];
      if (k >= 0)
        block_rows(c, b, j, *kv + k * BS * LR, *kc + k * BS * DI);
    }
  return 0;
}

typedef struct rank_row {
  double step_ms, compute_ms, comm_ms, merge_ms, compile_ms, compiles, hidden;
  double comm_bytes, cached_rows, selected_rows;
} rank_row;

/* Rank 0's checks of a step's outputs: one rank's pto_dsa on the whole
 * caches, then the reference. 0, or -1 with the reason printed. */
static int check_step(const cp_bench *c, const pto_dsa_step *s, void **in,
                      void *const *out, pto_runtime *rt) {
  float *kv = NULL, *kc = NULL;
  int32_t *owner = malloc((size_t)(c->b * c->mb) * 4);
  int32_t *btab = malloc((size_t)(c->b * c->mb) * 4);
  int64_t blocks = 0;
  int bad = -1;
  void *one[PTO_DSA_OUTPUT_COUNT] = {0};
  int64_t on[PTO_DSA_OUTPUT_COUNT];
  pto_program *p = NULL;
  pto_executable *e = NULL;
  if (!owner || !btab || caches(c, 1, &kv, &kc, owner, btab, &blocks))
    goto done;
  pto_dsa_step w = *s;
  w.blocks = blocks;
  const void *win[PTO_DSA_INPUT_COUNT];
  for (int i = 0; i < PTO_DSA_INPUT_COUNT; i++)
    win[i] = in[i];
  win[PTO_DSA_KV_CACHE] = kv;
  win[PTO_DSA_K_CACHE] = kc;
  win[PTO_DSA_BLOCK_TABLE] = btab;
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++) {
    int64_t sh[PTO_MAX_DIMS];
    const int nd = pto_dsa_output_shape(&c->d, &w, &c->prm, i, sh);
    on[i] = numel(sh, nd);
    if (!(one[i] = malloc((size_t)on[i] * 4)))
      goto done;
  }
  p = pto_dsa_program(&c->d, &w, &c->prm);
  if (pto_compile(p, NULL, &e) || pto_runtime_run(rt, e, win, one)) {
    fprintf(stderr, "pto-bench dsa: one rank's run: %s\n",
            e ? pto_executable_error(e) : pto_program_error(p));
    goto done;
  }
  const int32_t *a = out[PTO_DSA_INDICES], *r = one[PTO_DSA_INDICES];
  for (int64_t k = 0; k < on[PTO_DSA_INDICES]; k++)
    if (a[k] != r[k]) {
      fprintf(stderr, "pto-bench dsa: index %" PRId64 " is %d, one rank's %d\n",
              k, (int)a[k], (int)r[k]);
      goto done;
    }
  for (int o = PTO_DSA_OUT; o <= PTO_DSA_LSE; o++) {
    const float *x = out[o], *y = one[o];
    for (int64_t k = 0; k < on[o]; k++) {
      const double dd = isinf(y[k])
                            ? (x[k] == y[k] ? 0 : 1)
                            : fabs((double)x[k] - y[k]) / (1 + fabs(y[k]));
      if (dd > 1e-4) {
        fprintf(stderr, "pto-bench dsa: %s[%" PRId64 "] %g, one rank's %g\n",
                pto_dsa_output_name(o), k, x[k], y[k]);
        goto done;
      }
    }
  }
  char msg[512];
  if (pto_dsa_check(&c->d, &w, &c->prm, win, (const void *const *)out, msg,
                    sizeof msg)) {
    fprintf(stderr, "pto-bench dsa: against the reference: %s\n", msg);
    goto done;
  }
  bad = 0;
done:
  pto_executable_free(e);
  pto_program_free(p);
  for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
    free(one[i]);
  free(kv);
  free(kc);
  free(owner);
  free(btab);
  return bad;
}

static int run_cp(const bench_opts *o, const bench_preset_sel *sel,
                  pto_comm *comm) {
  cp_bench c;
  memset(&c, 0, sizeof c);
  int64_t v[N_PARAMS];
  bench_preset_values(&table, sel, 0, v);
  const char *preset = bench_preset_name(&table, sel, 0);
  c.d = v[P_SMALL] ? dsa_small_dims() : pto_dsa_dims_default();
  c.prm = pto_dsa_params_default();
  c.prm.topk = v[P_TOPK];
  c.b = v[P_B];
  c.steps = v[P_STEPS];
  c.rank = pto_comm_rank(comm);
  c.size = pto_comm_size(comm);
  c.seed = 42;
  const int64_t lo = v[P_LEN], hi = v[P_LEN_MAX] > lo ? v[P_LEN_MAX] : lo;
  int64_t longest = 0;
  for (int64_t b = 0; b < c.b; b++) {
    c.len0[b] = c.b > 1 ? lo + (hi - lo) * b / (c.b - 1) : lo;
    c.n[b] = 1;
    const int64_t fin = c.len0[b] + c.steps - 1;
    longest = fin > longest ? fin : longest;
  }
  c.mb = (longest + c.d.block - 1) / c.d.block;
  FILE *f = c.rank == 0 ? bench_out(o) : NULL;
  pto_machine m;
  const int threads = bench_cores(o);
  if (bench_machine("dsa", threads, &m))
    return 1;
  pto_runtime *rt = bench_runtime_new("dsa", &m, 0);
  if (!rt)
    return 1;
  float *kv = NULL, *kc = NULL;
  int32_t *owner = malloc((size_t)(c.b * c.mb) * 4);
  int32_t *block = malloc((size_t)(c.b * c.mb) * 4);
  int64_t blocks = 0;
  int fails = 0;
  if (!owner || !block || caches(&c, 0, &kv, &kc, owner, block, &blocks)) {
    fprintf(stderr, "pto-bench dsa: rank %d: out of memory\n", c.rank);
    fails = 1;
  }
  const int repeats = o->repeats ? o->repeats : o->quick ? 1 : 3;
  pto_dsa_cp *cp = NULL;
  if (!fails && pto_dsa_cp_new(comm, rt, &cp)) {
    fprintf(stderr, "pto-bench dsa: rank %d: out of memory\n", c.rank);
    fails = 1;
  }
  if (f)
    fprintf(f,
            "dsa %s: %d rank%s x %d thread%s, B %" PRId64 ", len %" PRId64
            "..%" PRId64 ", topk %" PRId64 ", %" PRId64 " steps, median of %d\n"
            "%-5s %4s %10s %10s %10s %10s %9s %12s %14s %7s\n",
            preset, c.size, c.size == 1 ? "" : "s", threads,
            threads == 1 ? "" : "s", c.b, lo, hi, c.prm.topk, c.steps, repeats,
            "step", "rank", "step_ms", "compute", "comm_ms", "merge_ms",
            "hidden", "comm_bytes", "compiled(1st)", "check");
  double sum_step = 0, sum_compute = 0, sum_comm = 0, sum_bytes = 0,
         sum_hidden = 0;
  int checked_ok = 1;
  rank_row *rows = calloc((size_t)c.size, sizeof *rows);
  json_t *per_rank = json_array();
  for (int64_t s = 0; s < c.steps && !fails; s++) {
    for (int64_t b = 0; b < c.b; b++)
      c.len[b] = c.len0[b] + s;
    pto_dsa_step st = {c.b, c.n, c.len, blocks, c.mb};
    void *in[PTO_DSA_INPUT_COUNT] = {0};
    void *out[PTO_DSA_OUTPUT_COUNT] = {0};
    if (dense_inputs(&c, &st, s, in)) {
      fails = 1;
      break;
    }
    in[PTO_DSA_KV_CACHE] = kv;
    in[PTO_DSA_K_CACHE] = kc;
    for (int i = 0; i < PTO_DSA_OUTPUT_COUNT && !fails; i++) {
      int64_t sh[PTO_MAX_DIMS];
      pto_dsa_step one = st;
      one.blocks = 1;
      const int nd = pto_dsa_output_shape(&c.d, &one, &c.prm, i, sh);
      fails = !(out[i] = malloc((size_t)numel(sh, nd) * 4));
    }
    const pto_dsa_cp_layout lay = {owner, block};
    double t_step[16], t_comp[16], t_comm[16], t_merge[16], t_hidden[16];
    pto_dsa_cp_stats cs = {0};
    double compiled[2] = {0, 0};
    for (int r = 0; r < repeats && !fails; r++) {
      char msg[512];
      pto_comm_stats_reset(comm);
      const pto_status rc =
          pto_dsa_cp_step(cp, &c.d, &st, &c.prm, &lay, (const void *const *)in,
                          out, &cs, msg, sizeof msg);
      if (!r) { /* the step's first run: what it compiled */
        compiled[0] = cs.compile_ms;
        compiled[1] = cs.compiles;
      }
      if (rc) {
        fprintf(stderr, "pto-bench dsa: %s: step %" PRId64 ": %s\n", preset,
                s + 1, msg);
        fails = 1;
        break;
      }
      const pto_comm_stats k = pto_comm_stats_get(comm);
      t_step[r % 16] = cs.step_ms;
      t_comp[r % 16] = cs.compute_ms;
      t_comm[r % 16] = cs.comm_ms;
      t_merge[r % 16] = cs.merge_ms;
      t_hidden[r % 16] = k.inflight_s > 0 && c.size > 1
                             ? fmax(0, 1 - k.wait_s / k.inflight_s)
                             : 0;
    }
    const int nr = repeats < 16 ? repeats : 16;
    rank_row mine = {0};
    if (!fails) {
      mine.step_ms = bench_median(t_step, nr);
      mine.compute_ms = bench_median(t_comp, nr);
      mine.comm_ms = bench_median(t_comm, nr);
      mine.merge_ms = bench_median(t_merge, nr);
      mine.hidden = bench_median(t_hidden, nr);
      mine.compile_ms = compiled[0];
      mine.compiles = compiled[1];
      mine.comm_bytes = (double)cs.comm_bytes;
      mine.cached_rows = (double)cs.cached_rows;
      mine.selected_rows = (double)cs.selected_rows;
    }
    char msg[256];
    if (!fails &&
        pto_comm_allgather(comm, &mine, sizeof mine, rows, msg, sizeof msg)) {
      fprintf(stderr, "pto-bench dsa: rank %d: %s\n", c.rank, msg);
      fails = 1;
    }
    int ok = 1;
    if (!fails && c.rank == 0) {
      bench_progress(o,
                     "dsa: %s: step %" PRId64 ": checking against one "
                     "rank and the reference",
                     preset, s + 1);
      ok = !check_step(&c, &st, in, out, rt);
      checked_ok &= ok;
    }
    for (int r = 0; f && !fails && r < c.size; r++)
      fprintf(f,
              "%-5" PRId64
              " %4d %10.3f %10.3f %10.3f %10.3f %8.0f%% %12.0f %4.0f:%7.2fms"
              " %7s\n",
              s + 1, r, rows[r].step_ms, rows[r].compute_ms, rows[r].comm_ms,
              rows[r].merge_ms, rows[r].hidden * 100, rows[r].comm_bytes,
              rows[r].compiles, rows[r].compile_ms,
              r    ? ""
              : ok ? "ok"
                   : "WRONG");
    if (!fails) {
      double step_max = 0;
      for (int r = 0; r < c.size; r++)
        step_max = rows[r].step_ms > step_max ? rows[r].step_ms : step_max;
      sum_step += step_max;
      sum_compute += rows[0].compute_ms;
      sum_comm += rows[0].comm_ms;
      sum_bytes += rows[0].comm_bytes;
      sum_hidden += rows[0].hidden;
      if (s == c.steps - 1)
        for (int r = 0; r < c.size; r++)
          json_array_append_new(
              per_rank,
              json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "rank", r,
                        "step_ms", rows[r].step_ms, "compute_ms",
                        rows[r].compute_ms, "comm_ms", rows[r].comm_ms,
                        "merge_ms", rows[r].merge_ms, "comm_bytes",
                        rows[r].comm_bytes, "cached_rows", rows[r].cached_rows,
                        "selected_rows", rows[r].selected_rows));
    }
    for (int i = 0; i < PTO_DSA_KV_CACHE; i++)
      free(in[i]);
    for (int i = 0; i < PTO_DSA_OUTPUT_COUNT; i++)
      free(out[i]);
  }
  if (!fails && c.rank == 0) {
    const double ns = (double)c.steps;
    if (f)
      fprintf(f,
              "mean step %.3f ms (slowest rank), rank 0: compute %.3f ms, "
              "comm %.3f ms, %.0f bytes, %.0f%% hidden; check %s\n",
              sum_step / ns, sum_compute / ns, sum_comm / ns, sum_bytes / ns,
              100 * sum_hidden / ns, checked_ok ? "ok" : "WRONG");
    if (o->json) {
      json_t *lens = json_array();
      for (int64_t b = 0; b < c.b; b++)
        json_array_append_new(lens, json_integer(c.len0[b]));
      json_array_append_new(
          bench_results(),
          json_pack("{s:s, s:s, s:i, s:i, s:I, s:o, s:I, s:I, s:f, s:f, s:f, "
                    "s:f, s:f, s:s, s:o}",
                    "workload", "dsa", "preset", preset, "ranks", c.size,
                    "threads", threads, "b", (json_int_t)c.b, "len", lens,
                    "topk", (json_int_t)c.prm.topk, "steps",
                    (json_int_t)c.steps, "pto_ms", sum_step / ns, "compute_ms",
                    sum_compute / ns, "comm_bytes", sum_bytes / ns, "comm_ms",
                    sum_comm / ns, "comm_hidden_fraction", sum_hidden / ns,
                    "check", checked_ok ? "ok" : "wrong", "per_rank",
                    per_rank));
      per_rank = NULL;
    }
  }
  json_decref(per_rank);
  pto_dsa_cp_free(cp);
  free(rows);
  free(kv);
  free(kc);
  free(owner);
  free(block);
  pto_runtime_free(rt);
  return fails ? 1 : checked_ok ? 0 : 1;
}

int dsa_cp_run(const bench_opts *o, int argc, char **argv) {
  bench_preset_sel sel;
  memset(&sel, 0, sizeof sel);
  for (int i = 1; i < argc; i++) {
    const int r = bench_preset_arg(&table, &sel, argc, argv, &i);
    if (r < 0)
      return 2;
    if (!r) {
      fprintf(stderr,
              "pto-bench dsa: decode-long: unknown option '%s' "
              "(see pto-bench dsa --help)\n",
              argv[i]);
      return 2;
    }
  }
  bench_preset_finish(&table, &sel, o->quick);
  pto_comm *comm = NULL;
  char msg[256];
  if (pto_comm_open(NULL, NULL, 600, &comm, msg, sizeof msg)) {
    fprintf(stderr, "pto-bench dsa: %s\n", msg);
    return 1;
  }
  if (pto_comm_rank(comm) != 0)
    bench_results_keep(); /* rank 0 prints the run's JSON */
  if (pto_comm_rank(comm) == 0 && !pto_comm_available())
    fprintf(stderr, "pto-bench dsa: PTO is built without MPI: one rank\n");
  const int rc = run_cp(o, &sel, comm);
  pto_comm_close(comm);
  return rc;
}
