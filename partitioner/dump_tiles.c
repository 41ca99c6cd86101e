/* pto_executable_dump's tile and subgraph stages (partitioner/dump.h):
 * the tile graph, its instructions and the values between them; the
 * subgraphs with the global windows they read and write, and the programs
 * they share. */
#include "partitioner/dump.h"

/* ---- PTO_STAGE_TILE ----------------------------------------------------- */

typedef struct tedges {
  uint32_t *def;        /* per value: its defining instruction */
  uint32_t *store_next; /* per instruction: next store of the same window */
  uint32_t *table;      /* open addressing: first store of a window */
  uint32_t cap;
} tedges;

static uint64_t gref_hash(const pto_gref *g) {
  int64_t k[6] = {g->storage, g->offset, g->rows, g->cols, g->rs, g->cs};
  return XXH3_64bits(k, sizeof k);
}

static int gref_eq(const pto_gref *a, const pto_gref *b) {
  return a->storage == b->storage && a->offset == b->offset &&
         a->rows == b->rows && a->cols == b->cols && a->rs == b->rs &&
         a->cs == b->cs;
}

static void tedges_free(tedges *t) {
  free(t->def);
  free(t->store_next);
  free(t->table);
}

/* The first store of g's window, or PTO_NONE. */
static uint32_t tedges_store(const tedges *t, const pto_tgraph *tg,
                             const pto_gref *g) {
  for (uint32_t h = (uint32_t)gref_hash(g) & (t->cap - 1);
       t->table[h] != PTO_NONE; h = (h + 1) & (t->cap - 1))
    if (gref_eq(&tg->insts[t->table[h]].g, g))
      return t->table[h];
  return PTO_NONE;
}

static pto_status tedges_init(tedges *t, const pto_tgraph *tg) {
  uint32_t n_stores = 0;
  for (uint32_t i = 0; i < tg->n_insts; i++)
    n_stores += pto__insn_stores(tg->insts[i].op);
  t->cap = 64;
  while (t->cap < 2 * n_stores + 2)
    t->cap *= 2;
  t->def = malloc((tg->n_vals + 1) * sizeof *t->def);
  t->store_next = malloc((tg->n_insts + 1) * sizeof *t->store_next);
  t->table = malloc(t->cap * sizeof *t->table);
  if (!t->def || !t->store_next || !t->table) {
    tedges_free(t);
    return PTO_ENOMEM;
  }
  for (uint32_t v = 0; v < tg->n_vals; v++)
    t->def[v] = PTO_NONE;
  for (uint32_t h = 0; h < t->cap; h++)
    t->table[h] = PTO_NONE;
  uint32_t *last = t->store_next; /* reuse: chain tails go in a second pass */
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    for (int d = 0; d < in->n_dst; d++)
      t->def[in->dst[d]] = i;
    last[i] = PTO_NONE;
  }
  /* stores of one window chain in instruction order: insert walking
   * backwards so each new head links to the previous head */
  for (uint32_t i = tg->n_insts; i-- > 0;) {
    const pto_tinst *in = &tg->insts[i];
    if (!pto__insn_stores(in->op))
      continue;
    uint32_t h = (uint32_t)gref_hash(&in->g) & (t->cap - 1);
    while (t->table[h] != PTO_NONE &&
           !gref_eq(&tg->insts[t->table[h]].g, &in->g))
      h = (h + 1) & (t->cap - 1);
    t->store_next[i] = t->table[h];
    t->table[h] = i;
  }
  return PTO_OK;
}

static uint32_t inst_unit_of(const pto_tgraph *tg, uint32_t *unit_of) {
  uint32_t n = 0;
  for (uint32_t u = 0; u < tg->n_units; u++)
    for (uint32_t i = 0; i < tg->units[u].count; i++, n++)
      unit_of[tg->units[u].first + i] = u;
  return n;
}

static json_t *jtval(const pto_tgraph *tg, uint32_t v) {
  const pto_tval *tv = &tg->vals[v];
  json_t *o = json_pack("{s:I, s:s, s:[I,I]}", "v", (json_int_t)v, "dtype",
                        pto_dtype_name(tv->dtype), "shape",
                        (json_int_t)tv->rows, (json_int_t)tv->cols);
  if (o && (tv->vrows != tv->rows || tv->vcols != tv->cols) &&
      jset(o, "valid", jpair(tv->vrows, tv->vcols))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *jwindow(const pto_executable *e, const pto_gref *g) {
  return json_pack("{s:o, s:I, s:s, s:I, s:I, s:I, s:I, s:I}", "storage",
                   jstr(storage_label(e, g->storage)), "storage_id",
                   (json_int_t)g->storage, "dtype", pto_dtype_name(g->dtype),
                   "offset", (json_int_t)g->offset, "rows", (json_int_t)g->rows,
                   "cols", (json_int_t)g->cols, "row_stride", (json_int_t)g->rs,
                   "col_stride", (json_int_t)g->cs);
}

pto_status pto__dump_tile_json(const pto_executable *e, FILE *f) {
  const pto_tgraph *tg = &e->tg;
  const pto_program *p = tg->prog;
  tedges te;
  uint32_t *unit_of = malloc((tg->n_insts + 1) * sizeof *unit_of);
  if (!unit_of || tedges_init(&te, tg)) {
    free(unit_of);
    return PTO_ENOMEM;
  }
  inst_unit_of(tg, unit_of);
  uint32_t n_local = 0, n_global = 0;
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    for (int r = 0; r < in->n_src; r++)
      n_local += te.def[in->src[r]] != PTO_NONE;
    if (pto__insn_loads(in->op))
      for (uint32_t s = tedges_store(&te, tg, &in->g); s != PTO_NONE;
           s = te.store_next[s])
        n_global++;
  }
  jout w;
  jout_begin(&w, f, e, PTO_STAGE_TILE);
  jout_value(&w, "counts",
             json_pack("{s:I, s:I, s:I, s:I, s:I}", "instructions",
                       (json_int_t)tg->n_insts, "values",
                       (json_int_t)tg->n_vals, "units", (json_int_t)tg->n_units,
                       "local_edges", (json_int_t)n_local, "global_edges",
                       (json_int_t)n_global));
  jout_section(&w, "units");
  for (uint32_t u = 0; u < tg->n_units; u++) {
    const pto_unit *un = &tg->units[u];
    json_t *o = json_pack(
        "{s:I, s:o, s:o, s:o, s:s, s:I, s:I, s:o}", "id", (json_int_t)u, "node",
        un->node == PTO_NONE ? json_null() : jint(un->node), "op",
        jstr(unit_op_name(p, un->node)), "label", jstr(node_label(p, un->node)),
        "core", pto_core_type_name(un->core), "first", (json_int_t)un->first,
        "count", (json_int_t)un->count, "subgraph",
        e->unit_subgraph ? jint(e->unit_subgraph[u]) : json_null());
    jout_item(&w, o, 0);
  }
  jout_section_end(&w);
  jout_section(&w, "instructions");
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    const pto_unit *un = &tg->units[unit_of[i]];
    json_t *o = json_object(), *src = json_array(), *dst = json_array();
    int bad = 0;
    for (int r = 0; r < in->n_src; r++)
      bad |= japp(src, jtval(tg, in->src[r]));
    for (int r = 0; r < in->n_dst; r++)
      bad |= japp(dst, jtval(tg, in->dst[r]));
    bad |= jset(o, "id", jint(i));
    bad |= jset(o, "name", jstr(pto__insn_name(in->op)));
    bad |= jset(o, "unit", jint(unit_of[i]));
    bad |= jset(o, "node", un->node == PTO_NONE ? json_null() : jint(un->node));
    bad |= jset(o, "op", jstr(unit_op_name(p, un->node)));
    bad |= jset(o, "label", jstr(node_label(p, un->node)));
    bad |= jset(o, "core", json_string(pto_core_type_name(un->core)));
    bad |= jset(o, "src", src);
    bad |= jset(o, "dst", dst);
    if (is_global(in->op))
      bad |= jset(o, "window", jwindow(e, &in->g));
    const pto_insn_info *info = pto__insn_info(in->op);
    if (info && info->family == PTO_FAMILY_SCALAR)
      bad |= jset(o, "scalar", jnum(in->s));
    if (in->imm[0] || in->imm[1])
      bad |= jset(o, "imm", jpair(in->imm[0], in->imm[1]));
    if (in->flags)
      bad |= jset(o, "flags", jflags(in->flags));
    jout_item(&w, o, bad);
  }
  jout_section_end(&w);
  jout_section(&w, "edges");
  for (uint32_t i = 0; i < tg->n_insts && w.st == PTO_OK; i++) {
    const pto_tinst *in = &tg->insts[i];
    for (int r = 0; r < in->n_src; r++)
      if (te.def[in->src[r]] != PTO_NONE)
        jout_item(&w,
                  json_pack("{s:I, s:I, s:s, s:I}", "from",
                            (json_int_t)te.def[in->src[r]], "to", (json_int_t)i,
                            "kind", "local", "v", (json_int_t)in->src[r]),
                  0);
  }
  for (uint32_t i = 0; i < tg->n_insts && w.st == PTO_OK; i++) {
    const pto_tinst *in = &tg->insts[i];
    if (!pto__insn_loads(in->op))
      continue;
    for (uint32_t s = tedges_store(&te, tg, &in->g); s != PTO_NONE;
         s = te.store_next[s])
      jout_item(&w,
                json_pack("{s:I, s:I, s:s, s:o}", "from", (json_int_t)s, "to",
                          (json_int_t)i, "kind", "global", "storage",
                          jstr(storage_label(e, in->g.storage))),
                0);
  }
  jout_section_end(&w);
  tedges_free(&te);
  free(unit_of);
  return jout_end(&w);
}

pto_status pto__dump_tile_dot(const pto_executable *e, FILE *f) {
  const pto_tgraph *tg = &e->tg;
  const pto_program *p = tg->prog;
  tedges te;
  if (tedges_init(&te, tg))
    return PTO_ENOMEM;
  char cap[1024];
  snprintf(cap, sizeof cap,
           "%s: tile graph, %u instructions in %u units (one cluster each); "
           "dashed: store -> load of the same window",
           ESC(p->name), tg->n_insts, tg->n_units);
  dot_begin(f, e, PTO_STAGE_TILE, "TB", cap);
  for (uint32_t u = 0; u < tg->n_units; u++) {
    const pto_unit *un = &tg->units[u];
    const char *label = node_label(p, un->node);
    char sg[32] = "";
    if (e->unit_subgraph)
      snprintf(sg, sizeof sg, ", subgraph %u", e->unit_subgraph[u]);
    fprintf(f,
            "  subgraph cluster_%u {\n"
            "    label=\"u%u: %s%s%s (%s%s)\"; style=rounded; "
            "color=\"%s\";\n",
            u, u, ESC(unit_op_name(p, un->node)), label[0] ? " " : "",
            ESC(label), pto_core_type_name(un->core), sg, core_color(un->core));
    for (uint32_t i = un->first; i < un->first + un->count; i++) {
      const pto_tinst *in = &tg->insts[i];
      if (is_global(in->op)) {
        fprintf(f,
                "    i%u [shape=box, label=\"i%u %s\\n%s\\n%s @%" PRId64
                " %" PRId64 "x%" PRId64 "\"];\n",
                i, i, ESC(pto__insn_name(in->op)), ESC(label),
                ESC(storage_label(e, in->g.storage)), in->g.offset, in->g.rows,
                in->g.cols);
      } else {
        const pto_tval *dv = in->n_dst ? &tg->vals[in->dst[0]] : NULL;
        fprintf(f,
                "    i%u [shape=ellipse, style=filled, fillcolor=\"%s\", "
                "label=\"i%u %s\\n%s\\n%s %ux%u\"];\n",
                i, core_color(un->core), i, ESC(pto__insn_name(in->op)),
                ESC(label), dv ? pto_dtype_name(dv->dtype) : "",
                dv ? dv->rows : 0, dv ? dv->cols : 0);
      }
    }
    fputs("  }\n", f);
  }
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    for (int r = 0; r < in->n_src; r++)
      if (te.def[in->src[r]] != PTO_NONE)
        fprintf(f, "  i%u -> i%u;\n", te.def[in->src[r]], i);
    if (pto__insn_loads(in->op))
      for (uint32_t s = tedges_store(&te, tg, &in->g); s != PTO_NONE;
           s = te.store_next[s])
        fprintf(f, "  i%u -> i%u [style=dashed, color=\"#1d3557\"];\n", s, i);
  }
  tedges_free(&te);
  return dot_end(f);
}

/* ---- PTO_STAGE_SUBGRAPH ------------------------------------------------- */

/* A global access of a subgraph, rebuilt from its task's slot bindings. */
typedef struct sacc {
  uint32_t storage, sg;
  int64_t lo, hi; /* element interval [lo, hi], a bounding range */
  int64_t off, rows, cols, rs, cs;
} sacc;

static int sacc_cmp(const void *a, const void *b) {
  const sacc *x = a, *y = b;
  if (x->storage != y->storage)
    return x->storage < y->storage ? -1 : 1;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Whether two windows of one storage share an element: exact for row-major
 * windows with the same row stride, conservative otherwise. */
static int sacc_overlap(const sacc *a, const sacc *b) {
  if (a->hi < b->lo || b->hi < a->lo)
    return 0;
  if (a->rs == b->rs && a->rs > 0 && a->cs == 1 && b->cs == 1 &&
      a->cols <= a->rs && b->cols <= b->rs) {
    int64_t ar = a->off / a->rs, ac = a->off % a->rs;
    int64_t br = b->off / b->rs, bc = b->off % b->rs;
    return ar < br + b->rows && br < ar + a->rows && ac < bc + b->cols &&
           bc < ac + a->cols;
  }
  return 1;
}

typedef struct sgmap {
  uint32_t n;
  uint32_t *first, *units; /* units of each subgraph, CSR */
  uint32_t *instance;      /* index of the subgraph among its task's */
  uint32_t (*edges)[2];    /* read-after-write, producer -> consumer */
  uint32_t n_edges;
} sgmap;

static void sgmap_free(sgmap *m) {
  free(m->first);
  free(m->units);
  free(m->instance);
  free(m->edges);
}

static int pair_cmp(const void *a, const void *b) {
  const uint32_t *x = a, *y = b;
  if (x[0] != y[0])
    return x[0] < y[0] ? -1 : 1;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

static sacc make_sacc(uint32_t sg, const pto_targ *a, const pto_pslot *sl) {
  sacc s;
  s.storage = a->storage;
  s.sg = sg;
  s.off = a->offset;
  s.rows = sl->rows;
  s.cols = sl->cols;
  s.rs = sl->rs;
  s.cs = sl->cs;
  s.lo = a->offset;
  s.hi = a->offset + (sl->rows - 1) * (sl->rs < 0 ? -sl->rs : sl->rs) +
         (sl->cols - 1) * (sl->cs < 0 ? -sl->cs : sl->cs);
  return s;
}

/* Subgraph membership and dependencies. Task t runs its subgraphs in
 * increasing id order as instances 0, 1, ...; instance j of t binds slots
 * args[t.args + j * n_slots ...]. */
static pto_status sgmap_init(sgmap *m, const pto_executable *e) {
  const pto_tgraph *tg = &e->tg;
  uint32_t n = e->n_subgraphs;
  memset(m, 0, sizeof *m);
  m->n = n;
  m->first = calloc(n + 2, sizeof *m->first);
  m->units = malloc((tg->n_units + 1) * sizeof *m->units);
  m->instance = malloc((n + 1) * sizeof *m->instance);
  uint32_t *seen = calloc(e->n_tasks + 1, sizeof *seen);
  pto_status st = PTO_ENOMEM;
  sacc *w = NULL, *r = NULL;
  uint32_t n_w = 0, n_r = 0, cap = 0;
  int64_t *span = NULL;
  if (!m->first || !m->units || !m->instance || !seen)
    goto out;
  for (uint32_t u = 0; u < tg->n_units; u++)
    m->first[e->unit_subgraph[u] + 2]++;
  for (uint32_t k = 0; k < n; k++)
    m->first[k + 2] += m->first[k + 1];
  for (uint32_t u = 0; u < tg->n_units; u++)
    m->units[m->first[e->unit_subgraph[u] + 1]++] = u;
  for (uint32_t k = 0; k < n; k++)
    m->instance[k] = seen[e->subgraph_task[k]]++;
  /* accesses */
  uint32_t n_acc = 0;
  for (uint32_t k = 0; k < n; k++)
    n_acc += e->progs[e->tasks[e->subgraph_task[k]].prog].n_slots;
  w = malloc((n_acc + 1) * sizeof *w);
  r = malloc((n_acc + 1) * sizeof *r);
  span = calloc(tg->n_storages + 1, sizeof *span);
  if (!w || !r || !span)
    goto out;
  for (uint32_t k = 0; k < n; k++) {
    const pto_task *t = &e->tasks[e->subgraph_task[k]];
    const pto_cprog *pr = &e->progs[t->prog];
    for (uint32_t i = 0; i < pr->n_insts; i++)
      for (int j = 0; j < 2; j++) {
        const pto_pinst *pi = &pr->insts[i];
        const int32_t l = pto__pinst_slot(pi, j);
        if (l < 0)
          continue;
        const pto_targ *a =
            &e->args[t->args + m->instance[k] * pr->n_slots + (uint32_t)l];
        sacc s = make_sacc(k, a, &pr->slots[l]);
        if (pto__pinst_stores(pi, j)) {
          w[n_w++] = s;
          if (s.storage <= tg->n_storages && s.hi - s.lo > span[s.storage])
            span[s.storage] = s.hi - s.lo;
        } else {
          r[n_r++] = s;
        }
      }
  }
  qsort(w, n_w, sizeof *w, sacc_cmp);
  for (uint32_t i = 0; i < n_r; i++) {
    const sacc *rd = &r[i];
    int64_t from = rd->lo - (rd->storage <= tg->n_storages ? span[rd->storage]
                                                           : INT64_MAX / 4);
    uint32_t lo = 0, hi = n_w;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (w[mid].storage < rd->storage ||
          (w[mid].storage == rd->storage && w[mid].lo < from))
        lo = mid + 1;
      else
        hi = mid;
    }
    for (uint32_t j = lo;
         j < n_w && w[j].storage == rd->storage && w[j].lo <= rd->hi; j++) {
      if (w[j].sg == rd->sg || !sacc_overlap(&w[j], rd))
        continue;
      if (m->n_edges == cap) {
        cap = cap ? 2 * cap : 64;
        void *g = realloc(m->edges, cap * sizeof *m->edges);
        if (!g)
          goto out;
        m->edges = g;
      }
      m->edges[m->n_edges][0] = w[j].sg;
      m->edges[m->n_edges][1] = rd->sg;
      m->n_edges++;
    }
  }
  /* deduplicate */
  if (m->n_edges)
    qsort(m->edges, m->n_edges, sizeof *m->edges, pair_cmp);
  uint32_t k = 0;
  for (uint32_t i = 0; i < m->n_edges; i++)
    if (!k || pair_cmp(m->edges[k - 1], m->edges[i])) {
      m->edges[k][0] = m->edges[i][0];
      m->edges[k][1] = m->edges[i][1];
      k++;
    }
  m->n_edges = k;
  st = PTO_OK;
out:
  free(seen);
  free(w);
  free(r);
  free(span);
  if (st)
    sgmap_free(m);
  return st;
}

static json_t *jprogram(const pto_executable *e, uint32_t q,
                        uint32_t n_subgraphs) {
  const pto_cprog *pr = &e->progs[q];
  json_t *o = json_object(), *insts = json_array(), *tiles = json_array(),
         *slots = json_array();
  int bad = 0;
  char hash[24];
  snprintf(hash, sizeof hash, "%016" PRIx64, pr->hash);
  bad |= jset(o, "id", jint(q));
  bad |= jset(o, "name", jstr(pr->name));
  bad |= jset(o, "core", json_string(pto_core_type_name(pr->core)));
  bad |= jset(o, "hash", json_string(hash));
  bad |= jset(o, "tasks", jint(pr->n_tasks));
  bad |= jset(o, "subgraphs", jint(n_subgraphs));
  bad |= jset(o, "mem", jmem(pr->mem));
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    json_t *io = json_object(), *src = json_array(), *dst = json_array();
    for (int r = 0; r < pi->n_src; r++)
      bad |= japp(src, jint(pi->src[r]));
    /* the planned scratch is the tile after the destinations */
    const int n_dst = pi->n_dst - ((pi->flags & PTO_TF_SCRATCH) != 0);
    for (int r = 0; r < n_dst; r++)
      bad |= japp(dst, jint(pi->dst[r]));
    bad |= jset(io, "op", jstr(pto__insn_name(pi->op)));
    bad |= jset(io, "src", src);
    bad |= jset(io, "dst", dst);
    if (n_dst < pi->n_dst)
      bad |= jset(io, "scratch", jint(pi->dst[n_dst]));
    if (pi->slot >= 0)
      bad |= jset(io, "slot", jint(pi->slot));
    if (pi->slot2 >= 0)
      bad |= jset(io, "slot2", jint(pi->slot2));
    const pto_insn_info *info = pto__insn_info(pi->op);
    if (info && info->family == PTO_FAMILY_SCALAR)
      bad |= jset(io, "scalar", jnum(pi->s));
    if (pi->imm[0] || pi->imm[1])
      bad |= jset(io, "imm", jpair(pi->imm[0], pi->imm[1]));
    if (pi->flags)
      bad |= jset(io, "flags", jflags(pi->flags));
    bad |= japp(insts, io);
  }
  for (uint32_t t = 0; t < pr->n_tiles; t++) {
    const pto_ptile *pt = &pr->tiles[t];
    bad |= japp(
        tiles,
        json_pack("{s:I, s:s, s:[I,I], s:[I,I], s:s, s:I, s:I}", "id",
                  (json_int_t)t, "dtype", pto_dtype_name(pt->dtype), "shape",
                  (json_int_t)pt->rows, (json_int_t)pt->cols, "valid",
                  (json_int_t)pt->vrows, (json_int_t)pt->vcols, "level",
                  pto_mem_level_name((pto_mem_level)pt->level), "offset",
                  (json_int_t)pt->offset, "bytes",
                  (json_int_t)pto_tile_bytes(pt->dtype, pt->rows, pt->cols)));
  }
  for (uint32_t l = 0; l < pr->n_slots; l++) {
    const pto_pslot *sl = &pr->slots[l];
    const char *access = "read";
    for (uint32_t k = 0; k < pr->n_insts; k++)
      for (int j = 0; j < 2; j++)
        if (pto__pinst_slot(&pr->insts[k], j) == (int32_t)l &&
            pto__pinst_stores(&pr->insts[k], j))
          access = "write";
    bad |=
        japp(slots,
             json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:I}", "id",
                       (json_int_t)l, "access", access, "dtype",
                       pto_dtype_name(sl->dtype), "rows", (json_int_t)sl->rows,
                       "cols", (json_int_t)sl->cols, "row_stride",
                       (json_int_t)sl->rs, "col_stride", (json_int_t)sl->cs));
  }
  bad |= jset(o, "instructions", insts);
  bad |= jset(o, "tiles", tiles);
  bad |= jset(o, "slots", slots);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static uint32_t *prog_subgraph_counts(const pto_executable *e) {
  uint32_t *c = calloc(e->n_progs + 1, sizeof *c);
  if (c)
    for (uint32_t k = 0; k < e->n_subgraphs; k++)
      c[e->tasks[e->subgraph_task[k]].prog]++;
  return c;
}

/* What both subgraph writers read: the subgraphs' units and edges (m) and
 * each program's subgraph count (*per_prog); both freed by the caller. */
static pto_status subgraph_maps(const pto_executable *e, sgmap *m,
                                uint32_t **per_prog) {
  pto_status st = sgmap_init(m, e);
  if (st)
    return st;
  if (!(*per_prog = prog_subgraph_counts(e))) {
    sgmap_free(m);
    return PTO_ENOMEM;
  }
  return PTO_OK;
}

pto_status pto__dump_subgraph_json(const pto_executable *e, FILE *f) {
  const pto_tgraph *tg = &e->tg;
  const pto_program *p = tg->prog;
  sgmap m;
  uint32_t *per_prog;
  pto_status st = subgraph_maps(e, &m, &per_prog);
  if (st)
    return st;
  jout w;
  jout_begin(&w, f, e, PTO_STAGE_SUBGRAPH);
  jout_value(
      &w, "counts",
      json_pack("{s:I, s:I, s:I, s:I}", "programs", (json_int_t)e->n_progs,
                "subgraphs", (json_int_t)e->n_subgraphs, "units",
                (json_int_t)tg->n_units, "edges", (json_int_t)m.n_edges));
  jout_value(&w, "mem_peak", jmem(e->stats.mem_peak));
  json_t *cap = json_object();
  int bad = 0;
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    bad |= jset(cap, pto_mem_level_name((pto_mem_level)l),
                jint((int64_t)e->machine.mem[l]));
  if (bad) {
    json_decref(cap);
    cap = NULL;
  }
  jout_value(&w, "mem_capacity", cap);
  jout_section(&w, "programs");
  for (uint32_t q = 0; q < e->n_progs; q++)
    jout_item(&w, jprogram(e, q, per_prog[q]), 0);
  jout_section_end(&w);
  jout_section(&w, "subgraphs");
  for (uint32_t k = 0; k < e->n_subgraphs; k++) {
    const pto_task *t = &e->tasks[e->subgraph_task[k]];
    json_t *o = json_object(), *units = json_array();
    bad = 0;
    for (uint32_t j = m.first[k]; j < m.first[k + 1]; j++)
      bad |= japp(units, jint(m.units[j]));
    uint32_t u0 = m.first[k] < m.first[k + 1] ? m.units[m.first[k]] : 0;
    uint32_t node = tg->n_units ? tg->units[u0].node : PTO_NONE;
    bad |= jset(o, "id", jint(k));
    bad |= jset(o, "label", jstr(node_label(p, node)));
    bad |= jset(o, "core", json_string(pto_core_type_name(t->core)));
    bad |= jset(o, "units", units);
    bad |= jset(o, "program", jint(t->prog));
    bad |= jset(o, "task", jint(e->subgraph_task[k]));
    bad |= jset(o, "instance", jint(m.instance[k]));
    jout_item(&w, o, bad);
  }
  jout_section_end(&w);
  jout_section(&w, "edges");
  for (uint32_t i = 0; i < m.n_edges && w.st == PTO_OK; i++)
    jout_item(&w,
              json_pack("{s:I, s:I}", "from", (json_int_t)m.edges[i][0], "to",
                        (json_int_t)m.edges[i][1]),
              0);
  jout_section_end(&w);
  free(per_prog);
  sgmap_free(&m);
  return jout_end(&w);
}

pto_status pto__dump_subgraph_dot(const pto_executable *e, FILE *f) {
  const pto_tgraph *tg = &e->tg;
  const pto_program *p = tg->prog;
  sgmap m;
  uint32_t *per_prog;
  pto_status st = subgraph_maps(e, &m, &per_prog);
  if (st)
    return st;
  char cap[1024];
  snprintf(cap, sizeof cap,
           "%s: %u subgraphs of %u programs (one cluster per program)",
           ESC(p->name), e->n_subgraphs, e->n_progs);
  dot_begin(f, e, PTO_STAGE_SUBGRAPH, "TB", cap);
  for (uint32_t q = 0; q < e->n_progs; q++) {
    const pto_cprog *pr = &e->progs[q];
    char mem[128] = "";
    size_t n = 0;
    for (int l = 0; l < PTO_MEM_LEVEL_COUNT && n < sizeof mem; l++)
      if (pr->mem[l])
        n += (size_t)snprintf(mem + n, sizeof mem - n, "%s%s %" PRIu64 " B",
                              n ? ", " : "",
                              pto_mem_level_name((pto_mem_level)l), pr->mem[l]);
    fprintf(f,
            "  subgraph cluster_p%u {\n"
            "    label=\"%s\\n%s, %u insts, %u tiles; %s\\n%u subgraphs, %u "
            "tasks\"; style=rounded; color=\"%s\";\n",
            q, ESC(pr->name), pto_core_type_name(pr->core), pr->n_insts,
            pr->n_tiles, mem, per_prog[q], pr->n_tasks, core_color(pr->core));
    for (uint32_t k = 0; k < e->n_subgraphs; k++) {
      const pto_task *t = &e->tasks[e->subgraph_task[k]];
      if (t->prog != q)
        continue;
      char units[64];
      uint32_t a = m.first[k], b = m.first[k + 1];
      size_t un = 0;
      units[0] = 0;
      for (uint32_t j = a; j < b && j < a + 4 && un < sizeof units; j++)
        un += (size_t)snprintf(units + un, sizeof units - un, "%su%u",
                               j > a ? "," : "", m.units[j]);
      if (b - a > 4 && un < sizeof units)
        snprintf(units + un, sizeof units - un, ",... (%u)", b - a);
      uint32_t node = a < b ? tg->units[m.units[a]].node : PTO_NONE;
      fprintf(f,
              "    sg%u [shape=box, style=filled, fillcolor=\"%s\", "
              "label=\"sg%u %s\\n%s\\ntask %u\"];\n",
              k, core_color(pr->core), k, ESC(node_label(p, node)), units,
              e->subgraph_task[k]);
    }
    fputs("  }\n", f);
  }
  for (uint32_t i = 0; i < m.n_edges; i++)
    fprintf(f, "  sg%u -> sg%u;\n", m.edges[i][0], m.edges[i][1]);
  free(per_prog);
  sgmap_free(&m);
  return dot_end(f);
}
