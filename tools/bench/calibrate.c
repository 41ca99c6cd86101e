/* pto-bench calibrate: a machine profile of this CPU (pto/sim.h) for
 * `--simulate host`. pto_profile_calibrate times every instruction and
 * probes the memory system; then the runtime's own per-task costs are
 * measured here, on small graphs of tiny tasks run on the runtime: the
 * difference between their measured makespans and the simulated ones
 * without runtime costs, per task, per instruction call, per instance, and
 * what a hand-off to an idle worker adds (found by bisection on a graph of
 * forks, whose makespan grows with it). Each graph's makespan is the
 * median of its timed runs. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/harness.h"
#include "bench/sim.h"

const char *bench_sim_host_path(char *buf, size_t size) {
  const char *env = getenv("PTO_PROFILE");
  if (env && *env) {
    snprintf(buf, size, "%s", env);
    return buf;
  }
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && *xdg)
    snprintf(buf, size, "%s/pto/host-profile.json", xdg);
  else
    snprintf(buf, size, "%s/.cache/pto/host-profile.json",
             home && *home ? home : "/tmp");
  return buf;
}

void bench_make_dirs(const char *path) {
  char d[4096];
  snprintf(d, sizeof d, "%s", path);
  for (char *p = d + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(d, 0755);
      *p = '/';
    }
}

/* ---- the graphs ----------------------------------------------------------- */

enum { G_THIN, G_FAT, G_MERGED, G_FORKS, N_GRAPHS };
#define TASKS 384 /* tiles of the thin, fat and merged graphs */
#define FORKS 128

/* thin: TASKS tiles, each one op (TLOAD, TADDS, TSTORE); fat: each tile a
 * chain of 16 ops fused into one task of 18 instructions; merged: thin's
 * tasks merged 8 to a task (nbuffer); forks: FORKS rounds of a -> (b, c)
 * -> b + c, each round's second branch handed to the idle worker. */
static pto_program *graph(int g) {
  pto_program *p = pto_program_new("calibrate");
  if (!p)
    return NULL;
  const int64_t shape[2] = {g == G_FORKS ? 8 : 8 * TASKS, 64};
  pto_program_set_vec_tile(p, 8, 64);
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, shape);
  if (g == G_FORKS) {
    for (int i = 0; i < FORKS; i++) {
      pto_tensor *b = pto_muls(p, x, 0.5), *c = pto_adds(p, x, 0.25);
      x = pto_add(p, b, c);
    }
  } else {
    for (int i = 0; i < (g == G_FAT ? 16 : 1); i++)
      x = i & 1 ? pto_muls(p, x, 0.5) : pto_adds(p, x, 0.25);
  }
  pto_output(p, x, "y");
  return p;
}

static pto_config *graph_config(int g, const pto_machine *m) {
  pto_config *c = pto_config_new();
  if (!c)
    return NULL;
  if (pto_config_set_machine(c, m) ||
      pto_config_set_knob(c, NULL, PTO_KNOB_FUSE, g == G_FAT) ||
      pto_config_set_knob(c, NULL, PTO_KNOB_NBUFFER, g == G_MERGED ? 8 : 1)) {
    pto_config_free(c);
    return NULL;
  }
  return c;
}

typedef struct graph_run {
  pto_executable *e;
  pto_machine m;
  double ms;        /* measured makespan, median */
  double gap_ns;    /* traced: median gap between a worker's boxes */
  double exec_ns;   /* traced: median box minus its instructions */
  uint32_t tasks;
} graph_run;

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The traced run's gaps and executor time per task, from its trace. */
static void trace_split(graph_run *g, const char *path) {
  json_error_t je;
  json_t *t = json_load_file(path, 0, &je);
  if (!t)
    return;
  json_t *evs = json_object_get(t, "traceEvents"), *ev;
  size_t n = json_array_size(evs), i, m = 0;
  double *box = calloc(n + 1, sizeof *box), *ops = calloc(n + 1, sizeof *ops),
         *start = calloc(n + 1, sizeof *start),
         *exec = calloc(n + 1, sizeof *exec), *gap = calloc(n + 1, sizeof *gap);
  if (box && ops && start && exec && gap) {
    json_array_foreach(evs, i, ev) {
      const char *ph = json_string_value(json_object_get(ev, "ph"));
      if (!ph || strcmp(ph, "X") ||
          json_integer_value(json_object_get(ev, "tid")) != 0)
        continue;
      start[m] = json_number_value(json_object_get(ev, "ts")) * 1e3;
      box[m] = json_number_value(json_object_get(ev, "dur")) * 1e3;
      const char *k;
      json_t *v;
      json_object_foreach(
          json_object_get(json_object_get(ev, "args"), "ops"), k, v)
          ops[m] += (double)json_integer_value(v);
      m++;
    }
    /* worker 0's boxes in time order: their gaps */
    for (size_t a = 1; a < m; a++)
      for (size_t b = a; b > 0 && start[b] < start[b - 1]; b--) {
        double s = start[b];
        start[b] = start[b - 1];
        start[b - 1] = s;
        s = box[b];
        box[b] = box[b - 1];
        box[b - 1] = s;
        s = ops[b];
        ops[b] = ops[b - 1];
        ops[b - 1] = s;
      }
    size_t ng = 0;
    for (size_t a = 0; a < m; a++) {
      exec[a] = box[a] - ops[a];
      if (a)
        gap[ng++] = start[a] - (start[a - 1] + box[a - 1]);
    }
    if (m) {
      qsort(exec, m, sizeof *exec, cmp_double);
      g->exec_ns = exec[m / 2];
    }
    if (ng) {
      qsort(gap, ng, sizeof *gap, cmp_double);
      g->gap_ns = gap[ng / 2];
    }
  }
  free(box);
  free(ops);
  free(start);
  free(exec);
  free(gap);
  json_decref(t);
}

/* Graph g compiled for `workers` shared workers and run: repeats timed
 * runs (median), and one traced run for the split. */
static int run_graph(int gi, uint32_t workers, int repeats, graph_run *g) {
  memset(g, 0, sizeof *g);
  if (bench_machine("calibrate", (int)workers, &g->m))
    return -1;
  pto_program *p = graph(gi);
  pto_config *c = graph_config(gi, &g->m);
  int rc = -1;
  pto_runtime *rt = NULL;
  double *t = calloc((size_t)repeats, sizeof *t);
  if (!p || !c || !t || pto_compile(p, c, &g->e)) {
    fprintf(stderr, "pto-bench calibrate: compile: %s\n",
            p ? pto_program_error(p) : "out of memory");
    goto done;
  }
  g->tasks = pto_executable_num_tasks(g->e);
  const size_t n = 8 * (gi == G_FORKS ? 1 : TASKS) * 64;
  float *x = pto_buffer_alloc(n * sizeof *x), *y = pto_buffer_alloc(n * sizeof *y);
  if (!x || !y || !(rt = bench_runtime_new("calibrate", &g->m, 0))) {
    free(x);
    free(y);
    goto done;
  }
  for (size_t i = 0; i < n; i++)
    x[i] = 1.0f;
  const void *in[1] = {x};
  void *out[1] = {y};
  for (int r = -3; r < repeats; r++) {
    const uint64_t t0 = bench_now_ns();
    if (pto_runtime_run(rt, g->e, in, out)) {
      fprintf(stderr, "pto-bench calibrate: %s\n", pto_executable_error(g->e));
      goto run_done;
    }
    if (r >= 0)
      t[r] = (double)(bench_now_ns() - t0) * 1e-6;
  }
  g->ms = bench_median(t, repeats);
  pto_runtime_free(rt);
  rt = NULL;
  /* the split between the gap and the box, from a traced run */
  pto_runtime *trt = bench_runtime_new("calibrate", &g->m, 1);
  char path[] = "/tmp/pto_calibrate_XXXXXX";
  int fd = mkstemp(path);
  if (trt && fd >= 0 && !bench_traced_run(trt, g->e, in, out) &&
      !pto_executable_write_trace(g->e, path))
    trace_split(g, path);
  if (fd >= 0) {
    close(fd);
    remove(path);
  }
  pto_runtime_free(trt);
  rc = 0;
run_done:
  free(x);
  free(y);
done:
  pto_runtime_free(rt);
  pto_config_free(c);
  pto_program_free(p);
  free(t);
  if (rc) {
    pto_executable_free(g->e);
    g->e = NULL;
  }
  return rc;
}

/* g simulated on its machine with profile p: ms. */
static double sim_ms(const graph_run *g, const pto_profile *p) {
  pto_sim_params sp = pto_sim_params_default();
  sp.profile = p;
  sp.machine = &g->m;
  pto_sim_result r;
  if (pto_simulate(g->e, &sp, &r))
    return NAN;
  return r.makespan_ns * 1e-6;
}

int bench_calibrate(const bench_opts *o, int threads, double seconds,
                    const char *name, int verbose, pto_profile **out) {
  pto_calibrate_params cp = pto_calibrate_params_default();
  cp.workers = (uint32_t)threads;
  cp.seconds = seconds;
  cp.name = name;
  cp.log = o->progress || verbose ? stderr : NULL;
  cp.verbose = verbose;
  *out = NULL;
  pto_profile *p = NULL;
  if (pto_profile_calibrate(&cp, &p)) {
    fprintf(stderr, "pto-bench calibrate: %s\n", pto_last_error());
    return -1;
  }
  /* the runtime's costs: first none, then each graph's excess */
  pto_sim_runtime rt;
  memset(&rt, 0, sizeof rt);
  pto_profile_set_runtime(p, &rt);
  graph_run g[N_GRAPHS];
  memset(g, 0, sizeof g);
  const int repeats = o->quick ? 5 : 21;
  int rc = -1;
  for (int i = 0; i < G_FORKS; i++)
    if (run_graph(i, 1, repeats, &g[i]))
      goto done;
  if (threads >= 2 && run_graph(G_FORKS, 2, repeats, &g[G_FORKS]))
    goto done;
  /* per task of each 1-worker graph: what the run took beyond its
   * instructions */
  double oh[G_FORKS];
  for (int i = 0; i < G_FORKS; i++)
    oh[i] = (g[i].ms - sim_ms(&g[i], p)) * 1e6 / g[i].tasks;
  /* fat tasks have 15 more calls; merged ones 7 more instances of 3 */
  rt.call_ns = fmax(0, (oh[G_FAT] - oh[G_THIN]) / 15);
  rt.instance_ns =
      fmax(0, (oh[G_MERGED] - oh[G_THIN] - 21 * rt.call_ns) / 7);
  const double per_task = fmax(0, oh[G_THIN] - 3 * rt.call_ns - rt.instance_ns);
  /* split between the gap and the box as the traced thin run has them
   * (its executor time less what its calls take) */
  const double gap = fmax(0, g[G_THIN].gap_ns),
               box = fmax(0, g[G_THIN].exec_ns - 3 * rt.call_ns -
                                 rt.instance_ns);
  const double frac = gap + box > 0 ? gap / (gap + box) : 0.5;
  rt.dispatch_ns = per_task * frac;
  rt.task_ns = per_task * (1 - frac);
  rt.handoff_ns = rt.dispatch_ns;
  pto_profile_set_runtime(p, &rt);
  if (g[G_FORKS].e) {
    /* the hand-off: the value that makes the forks' makespan the
     * measured one (it grows with it) */
    double lo = 0, hi = 50000;
    for (int it = 0; it < 40; it++) {
      rt.handoff_ns = 0.5 * (lo + hi);
      pto_profile_set_runtime(p, &rt);
      if (sim_ms(&g[G_FORKS], p) > g[G_FORKS].ms)
        hi = rt.handoff_ns;
      else
        lo = rt.handoff_ns;
    }
    rt.handoff_ns = lo;
    pto_profile_set_runtime(p, &rt);
  }
  if (o->progress)
    fprintf(stderr,
            "calibrate: runtime: %.0f ns dispatch, %.0f ns a hand-off, "
            "%.0f ns a task, %.0f ns an instance, %.0f ns a call (graphs "
            "of %u tiny tasks: %.3f ms, %.3f ms fat, %.3f ms merged, forks "
            "%.3f ms on 2)\n",
            rt.dispatch_ns, rt.handoff_ns, rt.task_ns, rt.instance_ns,
            rt.call_ns, g[G_THIN].tasks, g[G_THIN].ms, g[G_FAT].ms,
            g[G_MERGED].ms, g[G_FORKS].ms);
  *out = p;
  p = NULL;
  rc = 0;
done:
  for (int i = 0; i < N_GRAPHS; i++)
    pto_executable_free(g[i].e);
  pto_profile_free(p);
  return rc;
}

/* ---- the command ------------------------------------------------------------ */

static void usage(FILE *f) {
  char path[4096];
  fprintf(f,
          "usage: pto-bench [--quick] [--threads N] calibrate [--out FILE] "
          "[--seconds S]\n"
          "                 [--name NAME] [--verbose]\n"
          "\n"
          "A machine profile of this CPU for the simulator (pto/sim.h,\n"
          "docs/simulation.md): every PTO instruction timed at several tile\n"
          "shapes through the instruction table in use (PTO_ISA chooses\n"
          "it), its operands hot in the core's cache, each cost term fitted\n"
          "(non-negative least squares on relative error); the bandwidth a\n"
          "core and every worker at once get from the last-level cache and\n"
          "from DRAM; the runtime's own costs per task, call, instance and\n"
          "hand-off, from small graphs of tiny tasks run on it. A few\n"
          "seconds. --simulate host reads the profile it writes.\n"
          "  --out FILE    where to write it (default %s;\n"
          "                PTO_PROFILE=FILE moves it)\n"
          "  --seconds S   about how long the instructions may take (4)\n"
          "  --name NAME   the profile's name (host)\n"
          "  --verbose     every timed shape on stderr: its features, hot and\n"
          "                cold times (to see why a term came out as it did)\n"
          "  --threads N   the workers of the memory probes and the profile's\n"
          "                machine (default: every core)\n",
          bench_sim_host_path(path, sizeof path));
}

static int run(const bench_opts *o, int argc, char **argv) {
  char def[4096];
  const char *out = bench_sim_host_path(def, sizeof def), *name = "host";
  double seconds = o->quick ? 1 : 4;
  int verbose = 0;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--out") && v && *v) {
      out = v;
      i++;
    } else if (!strcmp(argv[i], "--name") && v && *v) {
      name = v;
      i++;
    } else if (!strcmp(argv[i], "--seconds") && v && atof(v) > 0) {
      seconds = atof(v);
      i++;
    } else if (!strcmp(argv[i], "--verbose")) {
      verbose = 1;
    } else {
      fprintf(stderr, "pto-bench calibrate: bad option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  const uint64_t t0 = bench_now_ns();
  pto_profile *p;
  if (bench_calibrate(o, bench_cores(o), seconds, name, verbose, &p))
    return 1;
  char *text = pto_profile_to_json(p);
  bench_make_dirs(out);
  FILE *f = fopen(out, "w");
  int rc = 0;
  if (!text || !f || fputs(text, f) < 0 || fputc('\n', f) < 0) {
    fprintf(stderr, "pto-bench calibrate: cannot write '%s': %s\n", out,
            strerror(errno));
    rc = 1;
  }
  if (f && fclose(f) && !rc) {
    fprintf(stderr, "pto-bench calibrate: cannot write '%s': %s\n", out,
            strerror(errno));
    rc = 1;
  }
  if (!rc)
    fprintf(bench_out(o), "calibrate: profile '%s' of %s written to %s in "
                          "%.1f s\n",
            pto_profile_name(p), pto_isa_name(), out,
            (double)(bench_now_ns() - t0) * 1e-9);
  if (o->json && !rc) {
    json_error_t je;
    json_t *j = text ? json_loads(text, 0, &je) : NULL;
    if (j)
      json_array_append_new(bench_results(),
                            json_pack("{ss ss so}", "command", "calibrate",
                                      "path", out, "profile", j));
  }
  free(text);
  pto_profile_free(p);
  return rc;
}

const bench_cmd bench_calibrate_cmd = {
    "calibrate",
    "a machine profile of this CPU for --simulate (instructions, memory, "
    "the runtime's costs)",
    run, usage};
