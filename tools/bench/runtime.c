/* pto-bench runtime: the scheduler on its own (task graphs of C callbacks)
 * against OpenMP tasks with depend clauses (gcc's libgomp), same graphs,
 * same thread count, in one run.
 *
 * PTO builds each graph whole before timing (pto_graph, then one untimed run
 * that lays out its arrays) and times runs of it. OpenMP has no graph object:
 * creating the tasks is building the graph, so its time includes creation;
 * one thread creates every task inside a parallel region (libgomp queues
 * them; past its window it runs them inline, which only helps it). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "pto/pto.h"

typedef enum shape {
  CHAIN,
  FANOUT,
  INDEPENDENT,
  TREE,
  WAVEFRONT,
} shape;

typedef struct gcase {
  const char *name;
  shape shape;
  uint32_t n;       /* tasks (wavefront: side) */
  uint64_t busy_ns; /* work per task, 0: empty */
} gcase;

static const gcase cases[] = {
    {"chain", CHAIN, 100000, 0},
    {"fanout-10000", FANOUT, 10000, 0},
    {"fanout-100000", FANOUT, 100000, 0},
    {"independent", INDEPENDENT, 100000, 0},
    {"tree", TREE, 131071, 0},
    {"wavefront", WAVEFRONT, 316, 0},
    {"busy-1us", INDEPENDENT, 20000, 1000},
    {"busy-10us", INDEPENDENT, 4000, 10000},
    {"busy-100us", INDEPENDENT, 1000, 100000},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static uint32_t n_tasks(const gcase *c) {
  switch (c->shape) {
  case FANOUT:
    return c->n + 2;
  case WAVEFRONT:
    return c->n * c->n;
  default:
    return c->n;
  }
}

/* ---- PTO ---------------------------------------------------------------- */

static int nop_task(void *arg) {
  (void)arg;
  return 0;
}

static int busy_task(void *arg) {
  bench_spin_ns(*(const uint64_t *)arg);
  return 0;
}

static int add_edges(pto_graph *g, const gcase *c) {
  uint32_t n = c->n;
  int bad = 0;
  switch (c->shape) {
  case CHAIN:
    for (uint32_t i = 1; i < n; i++)
      bad |= pto_graph_depend(g, i - 1, i);
    break;
  case FANOUT: /* task 0 -> 1..n -> n + 1 */
    for (uint32_t i = 1; i <= n; i++)
      bad |= pto_graph_depend(g, 0, i) | pto_graph_depend(g, i, n + 1);
    break;
  case INDEPENDENT:
    break;
  case TREE: /* a reduction: children 2i+1, 2i+2 before their parent i */
    for (uint32_t i = 0; 2 * i + 2 < n; i++)
      bad |= pto_graph_depend(g, 2 * i + 1, i) |
             pto_graph_depend(g, 2 * i + 2, i);
    break;
  case WAVEFRONT: /* (r, c) after (r-1, c) and (r, c-1) */
    for (uint32_t r = 0; r < n; r++)
      for (uint32_t k = 0; k < n; k++) {
        if (r)
          bad |= pto_graph_depend(g, (r - 1) * n + k, r * n + k);
        if (k)
          bad |= pto_graph_depend(g, r * n + k - 1, r * n + k);
      }
    break;
  }
  return bad;
}

static pto_graph *pto_build(const gcase *c, const uint64_t *busy) {
  pto_graph *g = pto_graph_new();
  if (!g)
    return NULL;
  uint32_t n = n_tasks(c);
  for (uint32_t i = 0; i < n; i++)
    if (pto_graph_add(g, PTO_CORE_VECTOR, c->busy_ns ? busy_task : nop_task,
                      (void *)(uintptr_t)busy) < 0) {
      pto_graph_free(g);
      return NULL;
    }
  if (add_edges(g, c)) {
    fprintf(stderr, "pto-bench runtime: %s: %s\n", c->name,
            pto_graph_error(g));
    pto_graph_free(g);
    return NULL;
  }
  return g;
}

/* ---- OpenMP --------------------------------------------------------------- */

static void omp_work(uint64_t busy_ns) {
  if (busy_ns)
    bench_spin_ns(busy_ns);
}

/* Creates and runs c's graph with OpenMP tasks; dep[] are the dependence
 * objects (one byte per task). */
static void omp_graph(const gcase *c, char *dep, int threads) {
  const uint32_t n = c->n;
  const uint64_t busy = c->busy_ns;
  (void)dep; /* gcc 12 does not count uses in depend clauses */
#pragma omp parallel num_threads(threads)
#pragma omp single
  {
    switch (c->shape) {
    case CHAIN:
      for (uint32_t i = 0; i < n; i++) {
        uint32_t prev = i ? i - 1 : 0;
        (void)prev;
#pragma omp task depend(in : dep[prev]) depend(out : dep[i])
        omp_work(busy);
      }
      break;
    case FANOUT: /* writer, n readers, then a writer after all readers */
#pragma omp task depend(out : dep[0])
      omp_work(busy);
      for (uint32_t i = 0; i < n; i++) {
#pragma omp task depend(in : dep[0])
        omp_work(busy);
      }
#pragma omp task depend(inout : dep[0])
      omp_work(busy);
      break;
    case INDEPENDENT:
      for (uint32_t i = 0; i < n; i++) {
#pragma omp task
        omp_work(busy);
      }
      break;
    case TREE: /* leaves first, each parent after its two children */
      for (uint32_t i = n; i-- > 0;) {
        uint32_t l = 2 * i + 1 < n ? 2 * i + 1 : i,
                 r = 2 * i + 2 < n ? 2 * i + 2 : i;
        (void)l, (void)r;
#pragma omp task depend(in : dep[l], dep[r]) depend(out : dep[i])
        omp_work(busy);
      }
      break;
    case WAVEFRONT:
      for (uint32_t r = 0; r < n; r++)
        for (uint32_t k = 0; k < n; k++) {
          uint32_t up = (r ? r - 1 : r) * n + k, left = r * n + (k ? k - 1 : k),
                   self = r * n + k;
          (void)up, (void)left, (void)self;
#pragma omp task depend(in : dep[up], dep[left]) depend(out : dep[self])
          omp_work(busy);
        }
      break;
    }
  }
}

/* ---- the command ----------------------------------------------------------- */

static void usage(FILE *f) {
  fputs("usage: pto-bench [--json] [--quick] [--repeats N] [--threads N] "
        "runtime [GRAPH...]\n"
        "\n"
        "Task-runtime overhead: PTO's scheduler (pto_graph of C callbacks,\n"
        "built whole before timing) against OpenMP tasks with depend\n"
        "clauses (libgomp), same graphs and threads, in one run. Prints ns\n"
        "per task (median over repeats) and PTO/OpenMP ratios; the busy-*\n"
        "rows print efficiency = ideal / measured, ideal = tasks x work /\n"
        "threads.\n"
        "\n"
        "graphs: ",
        f);
  for (size_t i = 0; i < N_CASES; i++)
    fprintf(f, "%s%s", cases[i].name, i + 1 < N_CASES ? ", " : "\n");
  fputs("JSON fields: graph, tasks, threads, pto_ns_per_task,\n"
        "omp_ns_per_task, ratio (omp / pto: > 1 means PTO is faster),\n"
        "and pto_efficiency, omp_efficiency for busy rows.\n",
        f);
}

static int run(const bench_opts *o, int argc, char **argv) {
  int want[N_CASES];
  int any = argc <= 1;
  for (size_t i = 0; i < N_CASES; i++)
    want[i] = any;
  for (int a = 1; a < argc; a++) {
    size_t i = 0;
    while (i < N_CASES && strcmp(cases[i].name, argv[a]))
      i++;
    if (i == N_CASES) {
      fprintf(stderr, "pto-bench runtime: unknown graph '%s'\n", argv[a]);
      usage(stderr);
      return 2;
    }
    want[i] = 1;
  }
  int threads = bench_cores(o);
  int repeats = o->repeats ? o->repeats : o->quick ? 3 : 7;

  pto_machine m;
  pto_runtime *rt;
  if (bench_machine("runtime", threads, &m) ||
      !(rt = bench_runtime_new("runtime", &m, 0)))
    return 1;
  pto_status st;
  FILE *out = bench_out(o);
  fprintf(out,
          "runtime overhead, %d threads, median of %d (ns per task; ratio = "
          "OpenMP / PTO)\n",
          threads, repeats);
  fprintf(out, "%-14s %8s %10s %10s %7s %8s %8s\n", "graph", "tasks", "pto",
          "openmp", "ratio", "pto eff", "omp eff");
  int rc = 0;
  for (size_t i = 0; i < N_CASES; i++) {
    if (!want[i])
      continue;
    const gcase *c = &cases[i];
    uint32_t n = n_tasks(c);
    bench_progress(o, "runtime %s (%u tasks)", c->name, n);
    pto_graph *g = pto_build(c, &c->busy_ns);
    char *dep = calloc(n + 1, 1);
    double *tp = calloc((size_t)repeats, sizeof *tp),
           *to = calloc((size_t)repeats, sizeof *to);
    if (!g || !dep || !tp || !to) {
      fprintf(stderr, "pto-bench runtime: %s: out of memory\n", c->name);
      rc = 1;
      goto next;
    }
    if ((st = pto_runtime_run_graph(rt, g))) { /* untimed: lays out arrays */
      fprintf(stderr, "pto-bench runtime: %s: %s\n", c->name,
              pto_graph_error(g));
      rc = 1;
      goto next;
    }
    omp_graph(c, dep, threads); /* untimed: starts libgomp's threads */
    for (int r = 0; r < repeats; r++) {
      bench_pause_ms(30);
      uint64_t t0 = bench_now_ns();
      st = pto_runtime_run_graph(rt, g);
      tp[r] = (double)(bench_now_ns() - t0) / n;
      if (st) {
        fprintf(stderr, "pto-bench runtime: %s: %s\n", c->name,
                pto_graph_error(g));
        rc = 1;
        goto next;
      }
      bench_pause_ms(30);
      t0 = bench_now_ns();
      omp_graph(c, dep, threads);
      to[r] = (double)(bench_now_ns() - t0) / n;
    }
    double pto_ns = bench_median(tp, repeats), omp_ns = bench_median(to, repeats);
    double ideal = c->busy_ns ? (double)c->busy_ns / threads : 0;
    json_t *j = json_pack("{s:s, s:i, s:i, s:f, s:f, s:f}", "graph", c->name,
                          "tasks", (json_int_t)n, "threads", threads,
                          "pto_ns_per_task", pto_ns, "omp_ns_per_task", omp_ns,
                          "ratio", omp_ns / pto_ns);
    if (c->busy_ns) {
      fprintf(out, "%-14s %8u %10.0f %10.0f %6.2fx %8.3f %8.3f\n", c->name, n,
              pto_ns, omp_ns, omp_ns / pto_ns, ideal / pto_ns, ideal / omp_ns);
      json_object_set_new(j, "pto_efficiency", json_real(ideal / pto_ns));
      json_object_set_new(j, "omp_efficiency", json_real(ideal / omp_ns));
    } else {
      fprintf(out, "%-14s %8u %10.0f %10.0f %6.2fx\n", c->name, n, pto_ns,
              omp_ns, omp_ns / pto_ns);
    }
    json_array_append_new(bench_results(), j);
    fflush(out);
  next:
    free(tp);
    free(to);
    free(dep);
    pto_graph_free(g);
    if (rc)
      break;
  }
  pto_runtime_free(rt);
  return rc;
}

const bench_cmd bench_runtime = {"runtime",
                                 "task-runtime overhead against OpenMP tasks",
                                 run, usage};
