/* pto-bench: the benchmark harness. Each subcommand runs PTO and the peer a
 * user would otherwise pick side by side in one run, and prints medians,
 * ratios and fractions of the machine's measured peak (--json: one JSON
 * array on stdout). With no subcommand it runs the headline, the operators
 * the project exists for on short workloads (about a minute); `all` runs
 * every command on its default workload, in the order of cmds[] below. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

/* In this order for `all`: the operators against PyTorch first. */
static const bench_cmd *const cmds[] = {
    &bench_indexer,
    &bench_attention,
    &bench_dsa,
    &bench_runtime,
    &bench_gemm,
    &bench_softmax,
    &bench_ops,
    &bench_flash,
};
#define N_CMDS (sizeof cmds / sizeof cmds[0])

/* The headline: DeepSeek's indexer attention for two decode steps, then
 * its two operators alone at their default size, each against PyTorch;
 * 5 timed runs each unless --repeats says otherwise. */
static const struct {
  const bench_cmd *cmd;
  const char *args[6];
} headline[] = {
    {&bench_dsa, {"dsa", "--preset", "decode", "--steps", "2", NULL}},
    {&bench_indexer, {"indexer", NULL}},
    {&bench_attention, {"attention", NULL}},
};
#define N_HEADLINE (sizeof headline / sizeof headline[0])
#define HEADLINE_REPEATS 5

/* The headline's cases in a few lines, from their JSON objects: PTO and
 * PyTorch medians, their ratio, PTO's fraction of the FMA peak and the
 * check, each case under its command and preset. */
static void headline_summary(FILE *f, json_t *results, size_t first,
                             double secs) {
  fprintf(f, "\nheadline (%.0f s): %-15s %10s %10s %7s %6s  %s\n", secs,
          "case", "PTO ms", "PyTorch ms", "ratio", "%peak", "check");
  size_t i;
  json_t *r;
  json_array_foreach(results, i, r) {
    if (i < first)
      continue;
    char name[64], tm[32], ratio[16], pk[16];
    snprintf(name, sizeof name, "%s %s",
             json_string_value(json_object_get(r, "workload")),
             json_string_value(json_object_get(r, "preset")));
    const json_t *t = json_object_get(r, "torch_ms"),
                 *q = json_object_get(r, "ratio"),
                 *k = json_object_get(r, "pto_peak_fraction");
    snprintf(tm, sizeof tm, json_is_number(t) ? "%.2f" : "-",
             json_number_value(t));
    snprintf(ratio, sizeof ratio, json_is_number(q) ? "%.2fx" : "-",
             json_number_value(q));
    snprintf(pk, sizeof pk, json_is_number(k) ? "%.1f%%" : "-",
             100 * json_number_value(k));
    fprintf(f, "%20s %-15s %10.2f %10s %7s %6s  %s\n", "", name,
            json_number_value(json_object_get(r, "pto_ms")), tm, ratio, pk,
            json_string_value(json_object_get(r, "check")));
  }
}

static void usage(FILE *f) {
  fputs("usage: pto-bench [options] [command [command options]]\n"
        "\n"
        "Runs PTO side by side with its peers on this machine, in one run.\n"
        "With no command, runs the headline in about a minute: DeepSeek's\n"
        "indexer attention for two decode steps, then the lightning indexer\n"
        "and the sparse attention at their default sizes, each against\n"
        "PyTorch (5 timed runs each). `pto-bench all` runs every command\n"
        "below on its default workload (several minutes).\n"
        "\n"
        "options:\n"
        "  --json         print results as a JSON array on stdout (the table\n"
        "                 goes to stderr)\n"
        "  --quick        smaller sizes and fewer repeats (smoke test)\n"
        "  --repeats N    timed repeats per case (medians are reported)\n"
        "  --threads N    worker threads (default: every core)\n"
        "  --quiet        no progress lines\n"
        "  -h, --help     this text; `pto-bench COMMAND --help` for a command\n"
        "\n"
        "commands:\n",
        f);
  for (size_t i = 0; i < N_CMDS; i++)
    fprintf(f, "  %-12s %s\n", cmds[i]->name, cmds[i]->summary);
  fprintf(f, "  %-12s %s\n", "all", "every command above on its default workload");
  fprintf(f, "  %-12s %s\n", bench_calibrate_cmd.name,
          bench_calibrate_cmd.summary);
}

static int parse_int(const char *opt, const char *v, int lo, int *out) {
  char *end;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || *end || x < lo || x > 1000000) {
    fprintf(stderr, "pto-bench: %s needs an integer >= %d, got '%s'\n", opt,
            lo, v ? v : "");
    return -1;
  }
  *out = (int)x;
  return 0;
}

/* Parses the common options anywhere on the line; leaves the rest in argv
 * (compacted) and returns the new argc, or -1 on a bad option value. */
static int common_opts(bench_opts *o, int argc, char **argv) {
  int k = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--json")) {
      o->json = 1;
    } else if (!strcmp(a, "--quick")) {
      o->quick = 1;
    } else if (!strcmp(a, "--quiet")) {
      o->progress = 0;
    } else if (!strcmp(a, "--repeats")) {
      if (parse_int(a, i + 1 < argc ? argv[++i] : NULL, 1, &o->repeats))
        return -1;
    } else if (!strcmp(a, "--threads")) {
      if (parse_int(a, i + 1 < argc ? argv[++i] : NULL, 1, &o->threads))
        return -1;
    } else {
      argv[k++] = argv[i];
    }
  }
  return k;
}

static const bench_cmd *find(const char *name) {
  for (size_t i = 0; i < N_CMDS; i++)
    if (!strcmp(cmds[i]->name, name))
      return cmds[i];
  /* not a benchmark: not in `all` */
  if (!strcmp(bench_calibrate_cmd.name, name))
    return &bench_calibrate_cmd;
  return NULL;
}

int main(int argc, char **argv) {
  bench_opts o = {0};
  o.progress = 1;
  argc = common_opts(&o, argc, argv);
  if (argc < 0)
    return 2;
  if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    usage(stdout);
    return 0;
  }
  int rc = 0;
  uint64_t t0 = bench_now_ns();
  if (argc > 1 && strcmp(argv[1], "all")) {
    const bench_cmd *c = find(argv[1]);
    if (!c) {
      fprintf(stderr, "pto-bench: unknown command '%s'\n\n", argv[1]);
      usage(stderr);
      return 2;
    }
    for (int i = 2; i < argc; i++)
      if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
        c->usage(stdout);
        return 0;
      }
    rc = c->run(&o, argc - 1, argv + 1);
  } else if (argc > 1) {
    if (argc > 2) {
      fprintf(stderr, "pto-bench: all takes no options of its own, got "
                      "'%s'\n",
              argv[2]);
      return 2;
    }
    for (size_t i = 0; i < N_CMDS; i++) {
      bench_progress(&o, "all: %zu of %zu: %s", i + 1, N_CMDS, cmds[i]->name);
      char *sub[] = {(char *)cmds[i]->name, NULL};
      int r = cmds[i]->run(&o, 1, sub);
      if (r && !rc)
        rc = r;
    }
  } else {
    bench_opts h = o;
    if (!h.repeats && !h.quick)
      h.repeats = HEADLINE_REPEATS;
    const size_t first = json_array_size(bench_results());
    for (size_t i = 0; i < N_HEADLINE; i++) {
      int n = 0;
      char *sub[6];
      while (headline[i].args[n]) {
        sub[n] = (char *)headline[i].args[n];
        n++;
      }
      /* --quick: each command's smoke preset instead */
      if (o.quick)
        n = 1;
      sub[n] = NULL;
      bench_progress(&o, "headline %zu of %zu: %s", i + 1, N_HEADLINE,
                     headline[i].cmd->name);
      int r = headline[i].cmd->run(&h, n, sub);
      if (r && !rc)
        rc = r;
    }
    const double secs = (double)(bench_now_ns() - t0) / 1e9;
    headline_summary(bench_out(&o), bench_results(), first, secs);
    fprintf(stderr,
            "pto-bench: headline done in %.0f s%s. `pto-bench all` runs every "
            "command on its default workload; `pto-bench --help` lists "
            "them.\n",
            secs, rc ? " (with failures above)" : "");
  }
  if (o.json && !bench_results_kept()) {
    json_dumpf(bench_results(), stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    fputc('\n', stdout);
  }
  json_decref(bench_results());
  return rc;
}
