/* partitioner/dump.h (internal): what the stages of pto_executable_dump
 * share: names of ops, tensors and storages, the JSON record writer and
 * the DOT helpers (partitioner/dump.c writes the tensor and execution
 * graphs and dispatches; partitioner/dump_tiles.c the tile graph and the
 * subgraphs with their programs). */
#ifndef PTO_PARTITIONER_DUMP_H
#define PTO_PARTITIONER_DUMP_H

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/custom.h"
#include "core/exe.h"
#include "pto/executable.h"

/* ---- names -------------------------------------------------------------- */

static const char *const stage_names[PTO_STAGE_COUNT] = {"tensor", "tile",
                                                         "subgraph", "exec"};

static inline const char *node_label(const pto_program *p, uint32_t node) {
  return node == PTO_NONE ? "output" : p->nodes[node]->label;
}

/* The op's name: "matmul", or a custom op's registered name. */
static inline const char *node_op_name(const pto_node *n) {
  if (n->op == PTO_TOP_CUSTOM) {
    const pto_custom_op *c = pto__custom_get((int)n->ival);
    if (c)
      return c->name;
  }
  return pto__top_name(n->op);
}

static inline const char *unit_op_name(const pto_program *p, uint32_t node) {
  return node == PTO_NONE ? "copy" : node_op_name(p->nodes[node]);
}

/* The name of storage s: its root tensor's, its output's for the dense
 * copy of an output, or a scratch's. */
static inline const char *storage_name(const pto_tgraph *tg, uint32_t s) {
  return pto__storage_name(tg, s);
}

/* How a storage is shown in windows: the output's name for an output (the
 * name the user gave), else its tensor's. */
static inline const char *storage_label(const pto_executable *e, uint32_t s) {
  const pto_program *p = e->tg.prog;
  if (s < e->n_storages && e->storages[s].kind == PTO_STORAGE_OUTPUT &&
      e->storages[s].index < p->n_outputs)
    return p->output_names[e->storages[s].index];
  return storage_name(&e->tg, s);
}

static inline const char *storage_kind_name(pto_storage_kind k) {
  switch (k) {
  case PTO_STORAGE_INPUT:
    return "input";
  case PTO_STORAGE_OUTPUT:
    return "output";
  case PTO_STORAGE_WORKSPACE:
    return "workspace";
  default:
    return "none";
  }
}

static inline int is_global(int op) {
  const pto_insn_info *info = pto__insn_info(op);
  return info && (info->flags & PTO_IF_GLOBAL);
}

/* ---- JSON helpers ------------------------------------------------------- */

/* A JSON string; bytes that are not valid UTF-8 become '?'. */
static inline json_t *jstr(const char *s) {
  if (!s)
    return json_null();
  json_t *j = json_string(s);
  if (j)
    return j;
  size_t n = strlen(s);
  char *c = malloc(n + 1);
  if (!c)
    return NULL;
  for (size_t i = 0; i <= n; i++)
    c[i] = (unsigned char)s[i] >= 0x80 ? '?' : s[i];
  j = json_string(c);
  free(c);
  return j;
}

static inline json_t *jint(int64_t v) {
  return json_integer((json_int_t)v);
}

/* A number, or a string for the values JSON cannot hold. */
static inline json_t *jnum(double v) {
  if (isnan(v))
    return json_string("nan");
  if (isinf(v))
    return json_string(v > 0 ? "inf" : "-inf");
  return json_real(v);
}

/* Sets key to v (stolen); a NULL v marks the object as incomplete, which
 * jout_item reports as out of memory. */
static inline int jset(json_t *o, const char *key, json_t *v) {
  if (!o || !v) {
    json_decref(v);
    return -1;
  }
  return json_object_set_new(o, key, v);
}

static inline int japp(json_t *a, json_t *v) {
  if (!a || !v) {
    json_decref(v);
    return -1;
  }
  return json_array_append_new(a, v);
}

static inline json_t *jpair(int64_t a, int64_t b) {
  json_t *j = json_array();
  int bad = japp(j, jint(a)) | japp(j, jint(b));
  if (bad) {
    json_decref(j);
    return NULL;
  }
  return j;
}

static inline json_t *jmem(const uint64_t *mem) {
  json_t *o = json_object();
  int bad = 0;
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    bad |= jset(o, pto_mem_level_name((pto_mem_level)l), jint((int64_t)mem[l]));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* Instruction flags by name, in PTO_TF_* bit order (core/isa.h). */
static inline json_t *jflags(uint32_t flags) {
  static const char *const names[] = {"acc",  "strict", "trans_a", "trans_b",
                                      "relu", "stream", "pack_a",  "pack_b"};
  const unsigned n = sizeof names / sizeof names[0];
  json_t *a = json_array();
  int bad = 0;
  for (unsigned b = 0; b < n; b++)
    if (flags & (1u << b))
      bad |= japp(a, json_string(names[b]));
  if (flags >> n)
    bad |= japp(a, jint(flags >> n << n));
  if (bad) {
    json_decref(a);
    return NULL;
  }
  return a;
}

/* The streaming writer: a top-level object whose sections are arrays
 * written one record per line. */
typedef struct jout {
  FILE *f;
  pto_status st;
  int first; /* no record yet in the open section */
} jout;

static inline void jout_raw(jout *w, const char *s) {
  if (w->st == PTO_OK && fputs(s, w->f) == EOF)
    w->st = PTO_EIO;
}

static inline void jout_dump(jout *w, json_t *v, size_t flags) {
  if (!v) {
    if (w->st == PTO_OK)
      w->st = PTO_ENOMEM;
    return;
  }
  if (w->st == PTO_OK && json_dumpf(v, w->f, flags | JSON_PRESERVE_ORDER))
    w->st = ferror(w->f) ? PTO_EIO : PTO_ENOMEM;
  json_decref(v);
}

/* A top-level key with a value (stolen). */
static inline void jout_value(jout *w, const char *key, json_t *v) {
  jout_raw(w, ",\n \"");
  jout_raw(w, key);
  jout_raw(w, "\": ");
  jout_dump(w, v, JSON_ENCODE_ANY);
}

static inline void jout_begin(jout *w, FILE *f, const pto_executable *e,
                              pto_stage stage) {
  w->f = f;
  w->st = PTO_OK;
  jout_raw(w, "{\n \"format\": \"pto-dump\",\n \"version\": 1");
  jout_value(w, "stage", json_string(stage_names[stage]));
  jout_value(w, "program", jstr(e->tg.prog->name));
  jout_value(w, "machine", jstr(e->machine.name));
}

static inline void jout_section(jout *w, const char *key) {
  jout_raw(w, ",\n \"");
  jout_raw(w, key);
  jout_raw(w, "\": [");
  w->first = 1;
}

/* One record (stolen) of the open section. */
static inline void jout_item(jout *w, json_t *item, int bad) {
  if (bad) {
    json_decref(item);
    item = NULL;
  }
  jout_raw(w, w->first ? "\n  " : ",\n  ");
  w->first = 0;
  jout_dump(w, item, 0);
}

static inline void jout_section_end(jout *w) {
  jout_raw(w, w->first ? "]" : "\n ]");
}

static inline pto_status jout_end(jout *w) {
  jout_raw(w, "\n}\n");
  return w->st;
}

/* ---- DOT helpers -------------------------------------------------------- */

/* s escaped for a double-quoted DOT string, into buf (truncated). */
static inline const char *desc(char *buf, size_t size, const char *s) {
  size_t n = 0;
  for (; s && *s && n + 3 < size; s++) {
    if (*s == '"' || *s == '\\')
      buf[n++] = '\\';
    if (*s == '\n') {
      buf[n++] = ' ';
      continue;
    }
    buf[n++] = *s;
  }
  buf[n] = 0;
  return buf;
}

typedef struct esc {
  char s[256];
} esc;

static inline esc E(const char *s) {
  esc b;
  desc(b.s, sizeof b.s, s);
  return b;
}
#define ESC(str) (E(str).s)

static inline void dot_begin(FILE *f, const pto_executable *e, pto_stage stage,
                             const char *rankdir, const char *caption) {
  fprintf(f,
          "digraph \"%s.%s\" {\n"
          "  graph [rankdir=%s, labelloc=t, fontname=\"Helvetica\", "
          "label=\"%s\"];\n"
          "  node [fontname=\"Helvetica\", fontsize=10];\n"
          "  edge [fontname=\"Helvetica\", fontsize=8];\n",
          ESC(e->tg.prog->name), stage_names[stage], rankdir, caption);
}

static inline pto_status dot_end(FILE *f) {
  fputs("}\n", f);
  return PTO_OK;
}

static inline const char *core_color(pto_core_type c) {
  return c == PTO_CORE_CUBE     ? "#f4a261"
         : c == PTO_CORE_VECTOR ? "#8ecae6"
                                : "#dddddd";
}

/* "32x32", "64x64x64" or "whole" for a tile shape of node n. */
static inline void tile_desc(const pto_tgraph *tg, uint32_t n, char *buf,
                             size_t size) {
  const pto_tile_shape *ts = &tg->node_tile[n];
  char d[3][12];
  int cube = pto__top_core(tg->prog->nodes[n]->op) == PTO_CORE_CUBE;
  const uint32_t v[3] = {cube ? ts->cube_m : ts->vec_rows,
                         cube ? ts->cube_n : ts->vec_cols, ts->cube_k};
  for (int k = 0; k < 3; k++) /* 0: the whole extent */
    if (v[k])
      snprintf(d[k], sizeof d[k], "%u", v[k]);
    else
      strcpy(d[k], "*");
  if (cube)
    snprintf(buf, size, "cube tile %sx%sx%s", d[0], d[1], d[2]);
  else
    snprintf(buf, size, "vec tile %sx%s", d[0], d[1]);
}

static inline void shape_desc(const pto_tensor *t, char *buf, size_t size) {
  size_t n = (size_t)snprintf(buf, size, "%s[", pto_dtype_name(t->dtype));
  for (int d = 0; d < t->ndim && n < size; d++)
    n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, d ? "," : "",
                          t->shape[d]);
  if (n < size)
    snprintf(buf + n, size - n, "]");
}

/* ---- the stages in dump_tiles.c ----------------------------------------- */

pto_status pto__dump_tile_json(const pto_executable *e, FILE *f);
pto_status pto__dump_tile_dot(const pto_executable *e, FILE *f);
pto_status pto__dump_subgraph_json(const pto_executable *e, FILE *f);
pto_status pto__dump_subgraph_dot(const pto_executable *e, FILE *f);

#endif /* PTO_PARTITIONER_DUMP_H */
