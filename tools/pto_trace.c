/* pto-trace: the tuning loop's tool. Turns a PTO trace into a swimlane page
 * (html), reads it (report), sets two runs side by side (compare), and
 * draws the compiler's stage dumps (graph). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/tool.h"

typedef struct cmd {
  const char *name, *summary, *help;
  int (*run)(int argc, char **argv);
} cmd;

__attribute__((format(printf, 2, 3))) static int
usage_error(const cmd *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "pto-trace %s: ", c->name);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(pto-trace %s --help)\n", c->name);
  return 2;
}

/* ---- html ------------------------------------------------------------------
 */

static const cmd cmd_html;

static int run_html(int argc, char **argv) {
  const char *in = NULL, *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
      if (++i == argc)
        return usage_error(&cmd_html, "%s needs a file name", argv[i - 1]);
      out = argv[i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return usage_error(&cmd_html, "unknown option %s", argv[i]);
    } else if (!in) {
      in = argv[i];
    } else {
      return usage_error(&cmd_html, "one trace at a time (%s)", argv[i]);
    }
  }
  if (!in || !out)
    return usage_error(&cmd_html, "%s", "usage: pto-trace html TRACE -o FILE");
  tr_trace t;
  if (tr_load(&t, in))
    return 1;
  FILE *f = strcmp(out, "-") ? fopen(out, "w") : stdout;
  if (!f) {
    fprintf(stderr, "pto-trace html: cannot write %s: %s\n", out,
            strerror(errno));
    tr_free(&t);
    return 1;
  }
  int rc = tr_html(&t, f);
  if (f != stdout && fclose(f))
    rc = -1;
  if (rc)
    fprintf(stderr, "pto-trace html: could not write %s\n", out);
  else if (f != stdout)
    fprintf(stderr, "pto-trace html: %u tasks on %u workers -> %s\n", t.n_tasks,
            t.n_workers, out);
  tr_free(&t);
  return rc ? 1 : 0;
}

static const cmd cmd_html = {
    "html", "the swimlane of a trace as one self-contained HTML page",
    "usage: pto-trace html TRACE -o FILE\n"
    "Writes the swimlane of TRACE (a trace a PTO run wrote: PTO_TRACE=FILE,\n"
    "pto_executable_write_trace, pto-bench ... --trace) as one HTML file with\n"
    "no external script, style or font: open it in any browser, offline.\n"
    "\n"
    "The page: one lane per worker, grouped by core type; one box per task\n"
    "coloured by label; hatched background where a worker is idle.\n"
    "  wheel          zoom around the pointer    drag      pan\n"
    "  double-click   zoom to fit                keys      + - arrows 0\n"
    "  hover          task, label, program, start, duration, instances,\n"
    "                 tile windows and time per instruction\n"
    "  click          highlight the task's producers (blue) and consumers\n"
    "                 (green) with their edges; the panel lists each one's\n"
    "                 dependency slack (how long before the task's start a\n"
    "                 producer ended, after its end a consumer started)\n"
    "  legend         click a label to hide it, shift-click to isolate it\n"
    "  critical path  outline the longest chain of task times\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   where to write the page (- for stdout)\n",
    run_html};

/* ---- report
 * ------------------------------------------------------------------ */

static const cmd cmd_report;

static int run_report(int argc, char **argv) {
  const char *in = NULL;
  int json = 0;
  long gaps = 10;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else if (!strcmp(argv[i], "--gaps")) {
      char *end;
      if (++i == argc || (gaps = strtol(argv[i], &end, 10)) < 0 || *end ||
          gaps > 100000)
        return usage_error(&cmd_report, "%s",
                           "--gaps needs a count from 0 to 100000");
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return usage_error(&cmd_report, "unknown option %s", argv[i]);
    } else if (!in) {
      in = argv[i];
    } else {
      return usage_error(&cmd_report, "one trace at a time (%s)", argv[i]);
    }
  }
  if (!in)
    return usage_error(&cmd_report, "%s",
                       "usage: pto-trace report TRACE [--json]");
  tr_trace t;
  if (tr_load(&t, in))
    return 1;
  tr_analysis a;
  int rc = tr_analyse(&t, &a, (uint32_t)gaps);
  if (!rc) {
    rc = tr_report(&t, &a, json, stdout);
    tr_analysis_free(&a);
  }
  tr_free(&t);
  return rc ? 1 : 0;
}

static const cmd cmd_report = {
    "report", "what a trace says: busy, labels, critical path, gaps, tail",
    "usage: pto-trace report TRACE [--json] [--gaps N]\n"
    "Reads a trace and prints:\n"
    "  - the workload, makespan, critical path and tail (from the first\n"
    "    worker going idle for good to the end) against the makespan;\n"
    "  - busy time and fraction per worker and per core type;\n"
    "  - time and task count per label, and per label and instruction\n"
    "    (where each label's time goes: TLOAD packing, TMATMUL, ...;\n"
    "    \"(executor)\" is the time between instructions), with each\n"
    "    matmul instruction's GFLOP/s per worker (2 M N K of its tiles\n"
    "    over its worker time; JSON \"gflops\", null for the others) and,\n"
    "    when any ran on it, the share of its time in the scalar reference\n"
    "    (no SIMD path for its tiles: 10-100x slower; JSON\n"
    "    \"reference_us\");\n"
    "  - the critical path: its time per label and its first tasks;\n"
    "  - the largest idle gaps, each with the task the worker ran next and\n"
    "    the producer of that task it was waiting for.\n"
    "\n"
    "options:\n"
    "  --json     one JSON object instead of tables\n"
    "  --gaps N   idle gaps to list (default 10)\n",
    run_report};

/* ---- compare ---------------------------------------------------------------
 */

static const cmd cmd_compare;

static int run_compare(int argc, char **argv) {
  const char *in[2] = {NULL, NULL};
  int json = 0, force = 0, n = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--force"))
      force = 1;
    else if (argv[i][0] == '-' && argv[i][1])
      return usage_error(&cmd_compare, "unknown option %s", argv[i]);
    else if (n < 2)
      in[n++] = argv[i];
    else
      return usage_error(&cmd_compare, "two traces, not more (%s)", argv[i]);
  }
  if (n != 2)
    return usage_error(&cmd_compare, "%s",
                       "usage: pto-trace compare A B [--json] [--force]");
  tr_trace a, b;
  if (tr_load(&a, in[0]))
    return 1;
  if (tr_load(&b, in[1])) {
    tr_free(&a);
    return 1;
  }
  int rc = 0;
  if (!force && !tr_same_workload(&a, &b)) {
    char wa[512], wb[512];
    fprintf(stderr,
            "pto-trace compare: %s and %s are traces of different "
            "workloads:\n  A runs %s\n  B runs %s\ncompare two runs of one "
            "workload, before and after a change (--force compares them "
            "anyway)\n",
            a.path, b.path, tr_workload_desc(&a, wa, sizeof wa),
            tr_workload_desc(&b, wb, sizeof wb));
    rc = 1;
  } else {
    rc = tr_compare(&a, &b, json, stdout) ? 1 : 0;
  }
  tr_free(&a);
  tr_free(&b);
  return rc;
}

static const cmd cmd_compare = {
    "compare", "two runs of one workload side by side",
    "usage: pto-trace compare A B [--json] [--force]\n"
    "Compares two traces of the same workload (the same program on the same\n"
    "operand shapes), before (A) and after (B) a change of tile shape, knob\n"
    "or machine: makespan, critical path and tail with the ratio B/A; busy\n"
    "fraction per core type; time and task count per label; each matmul\n"
    "instruction's GFLOP/s per worker on both sides; the share of each\n"
    "instruction's time in the scalar reference where either has any; and "
    "every\n"
    "configuration key that differs (config.knobs.*, config.labels.*,\n"
    "config.machine.*, the tile shape of each label and op, workers).\n"
    "Traces of different workloads are refused.\n"
    "\n"
    "options:\n"
    "  --json    one JSON object instead of tables\n"
    "  --force   compare traces of different workloads anyway\n",
    run_compare};

/* ---- graph ------------------------------------------------------------------
 */

static const cmd cmd_graph;

static int run_graph(int argc, char **argv) {
  const char *dir = NULL, *out = NULL, *dot = "dot";
  long max = 1500;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
      if (++i == argc)
        return usage_error(&cmd_graph, "%s needs a directory", argv[i - 1]);
      out = argv[i];
    } else if (!strcmp(argv[i], "--max-nodes")) {
      char *end;
      if (++i == argc || (max = strtol(argv[i], &end, 10)) < 1 || *end ||
          max > 1000000)
        return usage_error(&cmd_graph, "%s",
                           "--max-nodes needs a count from 1 to 1000000");
    } else if (!strcmp(argv[i], "--dot")) {
      if (++i == argc)
        return usage_error(&cmd_graph, "%s", "--dot needs a program");
      dot = argv[i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return usage_error(&cmd_graph, "unknown option %s", argv[i]);
    } else if (!dir) {
      dir = argv[i];
    } else {
      return usage_error(&cmd_graph, "one dump directory at a time (%s)",
                         argv[i]);
    }
  }
  if (!dir || !out)
    return usage_error(&cmd_graph, "%s",
                       "usage: pto-trace graph DUMP-DIR -o DIR");
  return tr_graph(dir, out, (unsigned)max, dot);
}

static const cmd cmd_graph = {
    "graph", "the compiler's stage dumps as SVG pictures (Graphviz)",
    "usage: pto-trace graph DUMP-DIR -o DIR [--max-nodes N] [--dot PROGRAM]\n"
    "Renders the stage dumps in DUMP-DIR (the tensor, tile, subgraph and\n"
    "execution graphs pto-dump --out-dir writes as DOT and JSON) to\n"
    "DIR/{tensor,tile,subgraph,exec}.svg with Graphviz's dot. A graph of\n"
    "more than N nodes is summarised first (DIR/STAGE.summary.dot):\n"
    "isomorphic nodes collapse into one with a count (tasks and subgraphs by\n"
    "program, tile instructions by tensor op, tensor ops by label), and the\n"
    "edges between groups are counted, so a 100 000-task graph still\n"
    "renders.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR    where to write the SVGs (created if missing)\n"
    "  --max-nodes N       draw graphs up to N nodes whole (default 1500)\n"
    "  --dot PROGRAM       Graphviz's dot (default: dot on the PATH)\n",
    run_graph};

/* ---- main ------------------------------------------------------------------
 */

static const cmd *const cmds[] = {&cmd_html, &cmd_report, &cmd_compare,
                                  &cmd_graph};
#define N_CMDS (sizeof cmds / sizeof *cmds)

static void usage(FILE *f) {
  fprintf(f, "usage: pto-trace COMMAND [options]   (pto-trace COMMAND "
             "--help for each)\n"
             "The tuning loop: run with PTO_TRACE=trace.json, look at the "
             "swimlane,\nchange a tile shape or knob in a config file "
             "(PTO_CONFIG=tune.json), run\nagain and compare.\n\n");
  for (size_t i = 0; i < N_CMDS; i++)
    fprintf(f, "  %-9s %s\n", cmds[i]->name, cmds[i]->summary);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
      !strcmp(argv[1], "help")) {
    if (argc > 2)
      for (size_t i = 0; i < N_CMDS; i++)
        if (!strcmp(argv[2], cmds[i]->name)) {
          fputs(cmds[i]->help, stdout);
          return 0;
        }
    usage(stdout);
    return 0;
  }
  for (size_t i = 0; i < N_CMDS; i++) {
    if (strcmp(argv[1], cmds[i]->name))
      continue;
    for (int k = 2; k < argc; k++)
      if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
        fputs(cmds[i]->help, stdout);
        return 0;
      }
    return cmds[i]->run(argc - 1, argv + 1);
  }
  fprintf(stderr, "pto-trace: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
