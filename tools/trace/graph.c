/* `pto-trace graph DUMP-DIR -o DIR`: the stage dumps pto-dump --out-dir
 * writes (tensor, tile, subgraph, exec as DOT and JSON), rendered to SVG by
 * Graphviz's dot. A graph with more nodes than dot lays out in reasonable
 * time is summarised first: isomorphic nodes collapsed into one with a
 * count (tasks and subgraphs by program, tile instructions by tensor op,
 * tensor ops by label), edges between the groups counted. */
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "trace/tool.h"

extern char **environ;

static const char *const stages[] = {"tensor", "tile", "subgraph", "exec"};

/* Runs dot -Tsvg in -o out; 0, or -1 after printing why. */
static int run_dot(const char *dot, const char *in, const char *out) {
  char tsvg[] = "-Tsvg", o[] = "-o";
  char *argv[] = {(char *)dot, tsvg, (char *)in, o, (char *)out, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, dot, NULL, NULL, argv, environ);
  if (rc == ENOENT) {
    fprintf(stderr,
            "pto-trace graph: Graphviz's '%s' is not installed (Debian: "
            "apt-get install graphviz; tools/install-deps.sh installs it)\n",
            dot);
    return -2;
  }
  if (rc) {
    fprintf(stderr, "pto-trace graph: cannot run %s: %s\n", dot, strerror(rc));
    return -1;
  }
  int status;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status)) {
    fprintf(stderr, "pto-trace graph: %s failed on %s\n", dot, in);
    return -1;
  }
  return 0;
}

/* ---- summaries -------------------------------------------------------------
 */

/* Groups: a key per node, the nodes of each group counted; edges between
 * groups counted. */
typedef struct group {
  char *key, *label;
  const char *core; /* "cube", "vector" or NULL */
  uint32_t count;
} group;

typedef struct gedge {
  uint32_t from, to, count;
} gedge;

typedef struct summary {
  group *g;
  uint32_t n, cap;
  gedge *e;
  uint32_t n_e, cap_e;
  uint32_t *node_group; /* per node of the dump */
  uint32_t n_nodes, internal;
} summary;

static uint32_t group_of(summary *s, const char *key, const char *label,
                         const char *core) {
  for (uint32_t i = 0; i < s->n; i++) /* groups are few: programs, ops */
    if (!strcmp(s->g[i].key, key)) {
      s->g[i].count++;
      return i;
    }
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 64;
    s->g = realloc(s->g, s->cap * sizeof *s->g);
    if (!s->g)
      abort();
  }
  s->g[s->n] = (group){strdup(key), strdup(label), core, 1};
  return s->n++;
}

static void edge_add(summary *s, uint32_t a, uint32_t b) {
  if (a == b) {
    s->internal++;
    return;
  }
  for (uint32_t i = 0; i < s->n_e; i++)
    if (s->e[i].from == a && s->e[i].to == b) {
      s->e[i].count++;
      return;
    }
  if (s->n_e == s->cap_e) {
    s->cap_e = s->cap_e ? 2 * s->cap_e : 64;
    s->e = realloc(s->e, s->cap_e * sizeof *s->e);
    if (!s->e)
      abort();
  }
  s->e[s->n_e++] = (gedge){a, b, 1};
}

static void summary_free(summary *s) {
  for (uint32_t i = 0; i < s->n; i++) {
    free(s->g[i].key);
    free(s->g[i].label);
  }
  free(s->g);
  free(s->e);
  free(s->node_group);
}

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

/* The nodes of a stage dump and the group key and label of each. */
static int summarise(json_t *root, const char *stage, summary *s) {
  const char *section = !strcmp(stage, "exec")       ? "tasks"
                        : !strcmp(stage, "subgraph") ? "subgraphs"
                        : !strcmp(stage, "tile")     ? "instructions"
                                                     : "ops";
  json_t *nodes = json_object_get(root, section);
  if (!json_is_array(nodes))
    return -1;
  s->n_nodes = (uint32_t)json_array_size(nodes);
  s->node_group = calloc(s->n_nodes + 1, sizeof *s->node_group);
  json_t *progs = json_object_get(root, "programs");
  size_t i;
  json_t *x;
  json_array_foreach(nodes, i, x) {
    char key[64], label[512];
    const char *l = str(x, "label");
    const char *core = json_string_value(json_object_get(x, "core"));
    if (!strcmp(stage, "exec") || !strcmp(stage, "subgraph")) {
      json_int_t p = json_integer_value(json_object_get(x, "program"));
      const char *name = str(x, "program_name");
      if (!*name) /* subgraph dumps name programs in their own section */
        name = str(json_array_get(progs, (size_t)p), "name");
      snprintf(key, sizeof key, "p%lld", (long long)p);
      snprintf(label, sizeof label, "%.80s%s\\n'%s'", name,
               strlen(name) > 80 ? "..." : "", *l ? l : "(none)");
    } else if (!strcmp(stage, "tile")) {
      json_t *nd = json_object_get(x, "node");
      snprintf(key, sizeof key, "n%lld",
               json_is_null(nd) ? -1LL : (long long)json_integer_value(nd));
      if (json_is_null(nd))
        snprintf(label, sizeof label, "output copies");
      else
        snprintf(label, sizeof label, "%s (op %lld) '%s'", str(x, "op"),
                 (long long)json_integer_value(nd), *l ? l : "(none)");
    } else { /* tensor ops by label */
      snprintf(key, sizeof key, "%.60s", *l ? l : "(none)");
      snprintf(label, sizeof label, "ops labelled '%s'", *l ? l : "(none)");
    }
    s->node_group[i] = group_of(s, key, label, core);
  }
  if (!strcmp(stage, "tensor")) { /* op -> tensor -> op, through roots */
    json_t *tensors = json_object_get(root, "tensors");
    json_array_foreach(nodes, i, x) {
      size_t j;
      json_t *in;
      json_array_foreach(json_object_get(x, "inputs"), j, in) {
        json_t *tn = json_array_get(tensors, (size_t)json_integer_value(in));
        json_t *root_id = json_object_get(tn, "root");
        if (json_is_integer(root_id))
          tn = json_array_get(tensors, (size_t)json_integer_value(root_id));
        json_t *p = json_object_get(tn, "producer");
        if (json_is_integer(p) && json_integer_value(p) >= 0 &&
            json_integer_value(p) < s->n_nodes)
          edge_add(s, s->node_group[json_integer_value(p)], s->node_group[i]);
      }
    }
    return 0;
  }
  json_array_foreach(json_object_get(root, "edges"), i, x) {
    json_int_t a = json_integer_value(json_object_get(x, "from")),
               b = json_integer_value(json_object_get(x, "to"));
    if (a < 0 || b < 0 || a >= s->n_nodes || b >= s->n_nodes)
      continue;
    if (!strcmp(stage, "tile") && strcmp(str(x, "kind"), "local") &&
        strcmp(str(x, "kind"), "global"))
      continue;
    edge_add(s, s->node_group[a], s->node_group[b]);
  }
  return 0;
}

static int write_summary_dot(const summary *s, const char *stage,
                             const char *program, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  const char *what = !strcmp(stage, "exec")       ? "tasks"
                     : !strcmp(stage, "subgraph") ? "subgraphs"
                     : !strcmp(stage, "tile")     ? "tile instructions"
                                                  : "ops";
  const char *how = !strcmp(stage, "tile") ? "grouped by their tensor op"
                    : !strcmp(stage, "tensor")
                        ? "grouped by label"
                        : "of one program (isomorphic) collapsed";
  fprintf(f,
          "digraph \"%s\" {\n  rankdir=TB;\n  node [shape=box, "
          "style=\"rounded,filled\", fontname=\"Helvetica\", "
          "fontsize=10];\n  labelloc=t;\n  label=\"%s %s: %u %s in %u groups "
          "(%s %s, with a count); %u edges inside groups not drawn\";\n",
          stage, program, stage, s->n_nodes, what, s->n, what, how,
          s->internal);
  for (uint32_t i = 0; i < s->n; i++) {
    const group *g = &s->g[i];
    const char *fill = !g->core                   ? "#eeeeee"
                       : !strcmp(g->core, "cube") ? "#f4a261"
                                                  : "#a8dadc";
    fprintf(f, "  g%u [fillcolor=\"%s\", label=\"", i, fill);
    for (const char *c = g->label; *c; c++) /* already DOT-escaped "\n" */
      fputs(*c == '"' ? "\\\"" : (char[2]){*c, 0}, f);
    fprintf(f, "\\nx %u\"];\n", g->count);
  }
  for (uint32_t i = 0; i < s->n_e; i++)
    fprintf(f, "  g%u -> g%u [label=\"%u\", penwidth=%.1f];\n", s->e[i].from,
            s->e[i].to, s->e[i].count,
            1.0 + (s->e[i].count > 1000 ? 3
                   : s->e[i].count > 10 ? 1.5
                                        : 0));
  fprintf(f, "}\n");
  return fclose(f);
}

int tr_graph(const char *dir, const char *out, unsigned max_nodes,
             const char *dot) {
  if (mkdir(out, 0777) && errno != EEXIST) {
    fprintf(stderr, "pto-trace graph: cannot create %s: %s\n", out,
            strerror(errno));
    return 1;
  }
  int found = 0, rc = 0;
  for (size_t k = 0; k < sizeof stages / sizeof *stages; k++) {
    char jpath[4096], dpath[4096], spath[4096], opath[4096];
    snprintf(jpath, sizeof jpath, "%s/%s.json", dir, stages[k]);
    snprintf(dpath, sizeof dpath, "%s/%s.dot", dir, stages[k]);
    snprintf(spath, sizeof spath, "%s/%s.summary.dot", out, stages[k]);
    snprintf(opath, sizeof opath, "%s/%s.svg", out, stages[k]);
    struct stat sb;
    if (stat(jpath, &sb) && stat(dpath, &sb))
      continue;
    found = 1;
    json_error_t je;
    json_t *root = json_load_file(jpath, 0, &je);
    const char *fmt = json_string_value(json_object_get(root, "format"));
    if (!root || !fmt || strcmp(fmt, "pto-dump")) {
      fprintf(stderr, "pto-trace graph: %s: not a pto-dump stage dump (%s)\n",
              jpath, root ? "no \"format\": \"pto-dump\"" : je.text);
      json_decref(root);
      rc = 1;
      continue;
    }
    summary s = {0};
    if (summarise(root, stages[k], &s)) {
      fprintf(stderr, "pto-trace graph: %s: no node list\n", jpath);
      json_decref(root);
      rc = 1;
      continue;
    }
    int whole = s.n_nodes <= max_nodes && !stat(dpath, &sb), drc = 0;
    if (!whole &&
        write_summary_dot(&s, stages[k], str(root, "program"), spath)) {
      fprintf(stderr, "pto-trace graph: cannot write %s\n", spath);
      rc = 1;
    } else if ((drc = run_dot(dot, whole ? dpath : spath, opath))) {
      rc = 1;
    } else if (whole) {
      printf("%-9s %8u nodes                        -> %s\n", stages[k],
             s.n_nodes, opath);
    } else {
      printf("%-9s %8u nodes, summarised in %5u groups -> %s\n", stages[k],
             s.n_nodes, s.n, opath);
    }
    summary_free(&s);
    json_decref(root);
    if (drc == -2) /* no dot: no use trying the other stages */
      break;
  }
  if (!found) {
    fprintf(stderr,
            "pto-trace graph: %s holds no stage dumps ({tensor,tile,"
            "subgraph,exec}.{dot,json}; pto-dump EXAMPLE --out-dir %s writes "
            "them)\n",
            dir, dir);
    return 1;
  }
  return rc;
}
