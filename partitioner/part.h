/* partitioner/part.h (internal): the partitioner's shared state and the
 * steps its files implement, in the order pto__partition runs them:
 * fuse.c (clusters and subgraphs), plan.c (a subgraph's program and its
 * local memory), graph.c (tasks, dependencies, storages), and the driver
 * in partition.c. */
#ifndef PTO_PARTITIONER_PART_H
#define PTO_PARTITIONER_PART_H

#include <stdint.h>
#include <stdlib.h>
#include <xxhash.h>

#include "core/config.h"
#include "core/exe.h"
#include "partitioner/partition.h"

/* ---- a small open-addressing hash map: 64-bit key -> uint32 ----------- */

typedef struct hmap {
  uint64_t *keys;
  uint32_t *vals;
  uint32_t cap, n;
} hmap;

static inline int hmap_init(hmap *m, uint32_t n) {
  m->cap = 64;
  while (m->cap < 2 * n + 2)
    m->cap *= 2;
  m->n = 0;
  m->keys = calloc(m->cap, sizeof *m->keys);
  m->vals = malloc(m->cap * sizeof *m->vals);
  return m->keys && m->vals ? 0 : -1;
}
static inline void hmap_free(hmap *m) {
  free(m->keys);
  free(m->vals);
}
/* Slot for key (key 0 is reserved as empty: callers use hash | 1). */
static inline uint32_t hmap_slot(const hmap *m, uint64_t key) {
  uint32_t i = (uint32_t)(key ^ (key >> 32)) & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != key)
    i = (i + 1) & (m->cap - 1);
  return i;
}

static inline uint64_t gref_key(const pto_gref *g) {
  int64_t k[6] = {g->storage, g->offset, g->rows, g->cols, g->rs, g->cs};
  return XXH3_64bits(k, sizeof k) | 1;
}

static inline int gref_eq(const pto_gref *a, const pto_gref *b) {
  return a->storage == b->storage && a->offset == b->offset &&
         a->rows == b->rows && a->cols == b->cols && a->rs == b->rs &&
         a->cs == b->cs;
}

/* ---- union-find --------------------------------------------------------- */

static inline uint32_t uf_find(uint32_t *parent, uint32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

/* ---- state -------------------------------------------------------------- */

/* Node-level edges (producer -> consumer), CSR by producer: to[first[v] ..
 * first[v + 1]) are v's consumers; fusable[k], whether edge k may fuse as
 * far as the ops and their loads go (fuse.c). */
typedef struct nedges {
  uint32_t *first, *to;
  uint8_t *fusable;
  uint32_t n;
} nedges;

typedef struct part {
  pto_executable *e;
  const pto_program *p;
  const pto_config *cfg;
  const pto_machine *m;
  pto_tgraph *tg;
  /* per instruction: the store a TLOAD matches exactly, or PTO_NONE; a
   * TLOAD's window and tile shape hashed (nonzero), 0 for the others */
  uint32_t *match;
  uint64_t *load_key;
  /* per node */
  uint32_t *cluster;  /* union-find over nodes */
  uint32_t *cnext;    /* the members of a cluster: a ring through cnext */
  uint8_t *dissolved; /* node may not fuse (its subgraph did not fit) */
  uint32_t *reuse;    /* l1_reuse in force: the knob, halved by splits */
  /* producer -> consumer node edges that may not fuse: joined, they left
   * too few subgraphs for the workers (pto__fuse_split_for_parallelism) */
  uint32_t (*veto)[2];
  unsigned n_veto, cap_veto;
  nedges edges; /* built by the first pto__fuse_cluster */
  /* per unit */
  uint32_t *unit_sg;   /* union-find over units, then subgraph ids */
  uint32_t *inst_unit; /* per instruction */
  /* storage -> producing node */
  uint32_t *storage_node;
  uint8_t *storage_is_output;
  /* pto__plan_program's working arrays, kept from one subgraph to the next
   * (most subgraphs are a few instructions: allocating them per subgraph
   * cost more than planning) */
  void *plan_tmp;
  size_t plan_tmp_cap;
  /* fusions given up because their subgraph did not fit local memory: the
   * first few as warning lines, their count, and whether one of their ops
   * had a vector tile the compiler chose (pto_compile then tries smaller) */
  char undone[1024];
  unsigned n_undone;
  int undone_chosen;
} part;

static inline const char *node_label(const part *s, uint32_t node) {
  return node == PTO_NONE ? "output" : s->p->nodes[node]->label;
}

/* Knob k for a node's units: a config label setting for its label, else
 * what its program recommends for it (pto_program_set_knob), else the
 * config's global value. */
static inline int64_t knob(const part *s, uint32_t node, pto_knob k) {
  if (node == PTO_NONE)
    return pto_config_knob(s->cfg, NULL, k);
  const pto_node *n = s->p->nodes[node];
  int64_t v;
  if (pto__config_label_knob(s->cfg, n->label, k, &v))
    return v;
  if (n->knob_set & (UINT32_C(1) << k))
    return n->knob[k];
  return pto_config_knob(s->cfg, NULL, k);
}

typedef struct sgraph {
  uint32_t n_units;
  uint32_t *units; /* unit ids in order */
  uint32_t n_insts;
  uint32_t *insts; /* kept tile-graph instruction ids in order */
} sgraph;

typedef struct cbuild {
  pto_cprog prog;
  uint32_t *tile_of_val; /* tval -> program tile, PTO_NONE */
  uint32_t *slot_inst;   /* program slot -> tile-graph instruction */
  uint32_t *val_of_tile; /* program tile -> the tval it holds */
} cbuild;

/* Resolves forwarding: the value a tile-graph value stands for. */
static inline uint32_t resolve(const part *s, const uint32_t *alias,
                               uint32_t v) {
  (void)s;
  while (alias[v] != PTO_NONE)
    v = alias[v];
  return v;
}

/* A global access of a task, for dependencies. */
typedef struct access {
  uint32_t storage, task;
  int is_write;
  int64_t lo, hi; /* element interval [lo, hi] (a bounding range) */
  int64_t rows, cols, rs, cs, off;
} access;

/* ---- fuse.c: clusters of ops and the subgraphs they make ----------------- */

pto_status pto__fuse_find_matches(part *s);
pto_status pto__fuse_cluster(part *s);
void pto__fuse_free_edges(nedges *g);
pto_status pto__fuse_form_subgraphs(part *s, sgraph **out, uint32_t *n_out,
                                    uint32_t *alias, uint8_t *drop);
/* Frees what pto__fuse_form_subgraphs made (NULL: nothing). */
void pto__fuse_free_subgraphs(sgraph *sgs);
int pto__fuse_split_subgraph(part *s, const sgraph *sg);
int pto__fuse_split_for_parallelism(part *s);

/* ---- plan.c: a subgraph's program and its local memory ------------------ */

pto_status pto__plan_program(part *s, const sgraph *sg, uint32_t *alias,
                             pto_core_type core, cbuild *b, pto_mem_level *lvl,
                             uint64_t *need);
void pto__plan_free(cbuild *b);
/* The shape block (core/isa.h) of instruction pi of program pr: its tiles'
 * valid shapes and dtypes, its slots' windows; mr: the table's panel rows. */
void pto__plan_shape(const pto_cprog *pr, const pto_pinst *pi, uint32_t mr,
                     pto_insn_shape *sh);
size_t pto__plan_canon(const pto_cprog *pr, unsigned char *buf);

/* ---- graph.c: tasks, dependencies and storages --------------------------- */

access pto__graph_access(uint32_t task, const pto_gref *g, int64_t off,
                         int is_write);
pto_status pto__graph_edges(pto_executable *e, access *acc, uint32_t n_acc);
/* Adds the edges of cfg's stage barriers (partitioner/stages.c): each task
 * of a stage with no producer in it waits for each task of the previous
 * stage with tasks that has no consumer in it, directly or through an
 * empty join task appended to e->tasks. PTO_ECONFIG when a stage feeds an
 * earlier one; PTO_ENOMEM. Sets e->err. */
pto_status pto__graph_stage_barriers(pto_executable *e, const pto_config *cfg);
pto_status pto__graph_storages(pto_executable *e, const pto_tgraph *tg);
pto_status pto__graph_group_tasks(part *s, const sgraph *sgs, uint32_t n_sg,
                                  const uint32_t *prog_of, uint32_t *task_of,
                                  uint32_t *n_tasks);
pto_status pto__graph_critical_paths(pto_executable *e);

#endif /* PTO_PARTITIONER_PART_H */
