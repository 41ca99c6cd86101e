/* pto-dump: compiles a built-in example program and reports every stage
 * (tensor graph, tile graph, subgraphs and programs, execution graph), as a
 * summary and optionally as DOT and JSON files. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "examples.h"

/* Tile-stage dumps above this many instructions are skipped unless --force. */
#define TILE_DUMP_LIMIT 200000u

typedef struct example {
  const char *name, *what;
  pto_program *(*build)(void);
} example;

static const example examples[] = {
    {"pypto-example", "C = rowsum(matmul(A*2 + B, W)), PyPTO's worked example",
     pto_example_pypto},
    {"softmax", "row softmax of a [1024,1024] f32, vector tile 16x1024",
     pto_example_softmax},
    {"mlp", "Y = relu(X W1) W2, cube tile 64x64x64", pto_example_mlp},
    {"big-add", "sum of eight [4096,4096] f32, vector tile 32x128",
     pto_example_big_add},
};
#define N_EXAMPLES (sizeof examples / sizeof examples[0])

static const char *const stage_files[PTO_STAGE_COUNT] = {"tensor", "tile",
                                                         "subgraph", "exec"};

static void usage(FILE *f) {
  fputs(
      "usage: pto-dump [options] EXAMPLE\n"
      "Compiles a built-in example program (tensor graph -> tile graph ->\n"
      "subgraphs -> programs -> tasks) and prints a summary of each stage.\n"
      "\n"
      "options:\n"
      "  --config FILE          load a JSON config (machine, knobs, labels)\n"
      "  --machine host|ascend  the machine to compile for (default ascend,\n"
      "                         or the config's; this option wins)\n"
      "  --out-dir DIR          write {tensor,tile,subgraph,exec}.{dot,json}\n"
      "                         into DIR (created if missing)\n"
      "  --force                write the tile-stage dumps even when the tile\n"
      "                         graph has more than 200000 instructions\n"
      "  --json                 print the summary as one JSON object\n"
      "  --list                 list the examples\n"
      "  --help                 show this help\n",
      f);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int bad_usage(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("pto-dump: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  usage(stderr);
  return 2;
}

/* mkdir -p dir. Returns 0 or -1 with errno set. */
static int make_dirs(const char *dir) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != 0)
      continue;
    char c = path[i];
    path[i] = 0;
    struct stat sb;
    if (mkdir(path, 0777) && errno != EEXIST)
      return -1;
    if (stat(path, &sb) || !S_ISDIR(sb.st_mode)) {
      errno = ENOTDIR;
      return -1;
    }
    path[i] = c;
  }
  return 0;
}

/* Writes every stage in both formats into dir. Returns 0 or 1 (reported). */
static int write_dumps(const pto_executable *e, const char *dir, int force,
                       uint32_t n_insts, json_t *written) {
  if (make_dirs(dir)) {
    fprintf(stderr, "pto-dump: cannot create '%s': %s\n", dir, strerror(errno));
    return 1;
  }
  static const char *const ext[2] = {"dot", "json"};
  for (int s = 0; s < PTO_STAGE_COUNT; s++) {
    if (s == PTO_STAGE_TILE && n_insts > TILE_DUMP_LIMIT && !force) {
      fprintf(stderr,
              "pto-dump: skipping tile.dot and tile.json: %u tile "
              "instructions (more than %u; --force writes them)\n",
              n_insts, TILE_DUMP_LIMIT);
      continue;
    }
    for (int k = 0; k < 2; k++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s.%s", dir, stage_files[s], ext[k]);
      FILE *f = fopen(path, "w");
      if (!f) {
        fprintf(stderr, "pto-dump: cannot open '%s': %s\n", path,
                strerror(errno));
        return 1;
      }
      pto_status st = pto_executable_dump(e, (pto_stage)s,
                                          k ? PTO_DUMP_JSON : PTO_DUMP_DOT, f);
      if (fclose(f) && st == PTO_OK)
        st = PTO_EIO;
      if (st != PTO_OK) {
        fprintf(stderr, "pto-dump: writing '%s': %s\n", path, pto_strerror(st));
        return 1;
      }
      if (written)
        json_array_append_new(written, json_string(path));
    }
  }
  return 0;
}

static void print_summary(const char *name, const pto_machine *m,
                          const pto_exe_stats *s) {
  printf("%s on '%s': compiled in %.3f ms\n", name, m->name, s->ms_total);
  printf("  tensor ops         %u\n", s->tensor_ops);
  printf("  tile instructions  %u\n", s->tile_instructions);
  printf("  subgraphs          %u\n", s->subgraphs);
  printf("  programs           %u\n", s->programs);
  printf("  tasks              %u\n", s->tasks);
  printf("  edges              %u\n", s->edges);
  printf("  local memory       largest program's use / capacity per level:\n");
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    printf("    %-4s %10llu / %llu B\n", pto_mem_level_name((pto_mem_level)l),
           (unsigned long long)s->mem_peak[l], (unsigned long long)m->mem[l]);
  printf("  boundary bytes     %llu (global memory moved by one run)\n",
         (unsigned long long)s->boundary_bytes);
  printf("  workspace bytes    %llu\n", (unsigned long long)s->workspace_bytes);
  printf("  compile time (ms)  tile %.3f, partition %.3f, plan %.3f, "
         "graph %.3f, total %.3f\n",
         s->ms_tile, s->ms_partition, s->ms_plan, s->ms_graph, s->ms_total);
}

static json_t *json_summary(const char *name, const pto_machine *m,
                            const pto_exe_stats *s) {
  json_t *mem = json_object(), *cap = json_object();
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++) {
    const char *ln = pto_mem_level_name((pto_mem_level)l);
    json_object_set_new(mem, ln, json_integer((json_int_t)s->mem_peak[l]));
    json_object_set_new(cap, ln, json_integer((json_int_t)m->mem[l]));
  }
  return json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, "
      "s:{s:f, s:f, s:f, s:f, s:f}}",
      "example", name, "machine", m->name, "tensor_ops",
      (json_int_t)s->tensor_ops, "tile_instructions",
      (json_int_t)s->tile_instructions, "subgraphs", (json_int_t)s->subgraphs,
      "programs", (json_int_t)s->programs, "tasks", (json_int_t)s->tasks,
      "edges", (json_int_t)s->edges, "boundary_bytes",
      (json_int_t)s->boundary_bytes, "workspace_bytes",
      (json_int_t)s->workspace_bytes, "mem_peak", mem, "mem_capacity", cap,
      "compile_ms", "tile", s->ms_tile, "partition", s->ms_partition, "plan",
      s->ms_plan, "graph", s->ms_graph, "total", s->ms_total);
}

int main(int argc, char **argv) {
  const char *config = NULL, *machine = NULL, *out_dir = NULL, *name = NULL;
  int as_json = 0, force = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--list")) {
      for (size_t k = 0; k < N_EXAMPLES; k++)
        printf("%-14s %s\n", examples[k].name, examples[k].what);
      return 0;
    } else if (!strcmp(a, "--json")) {
      as_json = 1;
    } else if (!strcmp(a, "--force")) {
      force = 1;
    } else if (!strcmp(a, "--config") || !strcmp(a, "--machine") ||
               !strcmp(a, "--out-dir")) {
      if (i + 1 >= argc)
        return bad_usage("%s needs a value", a);
      const char *v = argv[++i];
      if (a[2] == 'c')
        config = v;
      else if (a[2] == 'm')
        machine = v;
      else
        out_dir = v;
    } else if (a[0] == '-' && a[1]) {
      return bad_usage("unknown option '%s'", a);
    } else if (name) {
      return bad_usage("more than one example given ('%s')", a);
    } else {
      name = a;
    }
  }
  if (!name)
    return bad_usage("no example given");
  const example *ex = NULL;
  for (size_t k = 0; k < N_EXAMPLES; k++)
    if (!strcmp(examples[k].name, name))
      ex = &examples[k];
  if (!ex)
    return bad_usage("unknown example '%s' (--list shows them)", name);
  if (machine && strcmp(machine, "host") && strcmp(machine, "ascend"))
    return bad_usage("unknown machine '%s' (host or ascend)", machine);

  int rc = 1;
  pto_program *p = NULL;
  pto_executable *e = NULL;
  pto_config *cfg = pto_config_new();
  if (!cfg) {
    fputs("pto-dump: out of memory\n", stderr);
    return 1;
  }
  /* ascend unless the config file or --machine says otherwise */
  pto_machine m = pto_machine_ascend();
  pto_config_set_machine(cfg, &m);
  if (config && pto_config_load_file(cfg, config) != PTO_OK) {
    fprintf(stderr, "pto-dump: %s\n", pto_config_error(cfg));
    goto done;
  }
  if (machine && !strcmp(machine, "host")) {
    if (pto_machine_host(&m) != PTO_OK)
      fputs("pto-dump: hwloc failed; using the default host machine\n", stderr);
    if (pto_config_set_machine(cfg, &m) != PTO_OK) {
      fprintf(stderr, "pto-dump: %s\n", pto_config_error(cfg));
      goto done;
    }
  } else if (machine) {
    m = pto_machine_ascend();
    pto_config_set_machine(cfg, &m);
  }
  p = ex->build();
  if (!p || pto_program_status(p) != PTO_OK) {
    fprintf(stderr, "pto-dump: building '%s': %s\n", name,
            p ? pto_program_error(p) : "out of memory");
    goto done;
  }
  if (pto_compile(p, cfg, &e) != PTO_OK) {
    fprintf(stderr, "pto-dump: compiling '%s': %s\n", name,
            pto_program_error(p));
    goto done;
  }
  /* settings the program does not read (a label with a typo, say) */
  const char *warn = pto_executable_warnings(e);
  while (*warn) {
    size_t len = strcspn(warn, "\n");
    fprintf(stderr, "pto-dump: warning: %.*s\n", (int)len, warn);
    warn += len + (warn[len] == '\n');
  }
  pto_exe_stats s;
  pto_executable_stats(e, &s);
  const pto_machine *cm = pto_config_machine(cfg);
  json_t *written = as_json && out_dir ? json_array() : NULL;
  double t0 = now_ms();
  if (out_dir && write_dumps(e, out_dir, force, s.tile_instructions, written)) {
    json_decref(written);
    goto done;
  }
  double dump_ms = now_ms() - t0;
  if (as_json) {
    json_t *j = json_summary(name, cm, &s);
    if (j && out_dir) {
      json_object_set_new(j, "dump_ms", json_real(dump_ms));
      json_object_set_new(j, "files", written);
      written = NULL;
    }
    json_decref(written);
    if (!j || json_dumpf(j, stdout,
                         JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                             JSON_REAL_PRECISION(6))) {
      json_decref(j);
      fputs("pto-dump: cannot write the JSON summary\n", stderr);
      goto done;
    }
    json_decref(j);
    putchar('\n');
  } else {
    print_summary(name, cm, &s);
    if (out_dir)
      printf("  dumps              written to %s in %.1f ms\n", out_dir,
             dump_ms);
  }
  rc = fflush(stdout) == 0 ? 0 : 1;
done:
  pto_executable_free(e);
  pto_program_free(p);
  pto_config_free(cfg);
  return rc;
}
