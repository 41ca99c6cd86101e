/* The partitioner: tile graph -> subgraphs -> compiled programs -> tasks.
 *
 * 1. Fusion at op level: a producer op and a consumer op may share subgraphs
 *    when they run on the same core type and every window the consumer loads
 *    from the producer is exactly a tile the producer stores. Ops are merged
 *    into clusters greedily, never creating a cycle between clusters, and only
 *    when every edge between the two clusters is such an exact match.
 * 2. Subgraphs: units of one cluster joined by forwarded store->load pairs.
 *    Forwarded loads disappear; a store disappears when nothing outside the
 *    cluster reads its tensor and it is not an output.
 * 3. Local memory: each subgraph's tiles get fixed offsets per level by
 *    liveness; a subgraph that does not fit is split back into its units (the
 *    cluster is dissolved), and a unit that does not fit is an error naming
 *    the op, the level, the bytes needed and the capacity.
 * 4. Isomorphism: a subgraph's canonical form (opcodes, dtypes, tile shapes,
 *    internal edges, window shapes; not which tiles it touches) is hashed
 *    with xxHash and compared exactly; equal forms share one program.
 * 5. Tasks, their read-after-write dependencies, and the workspace. */
#include "partitioner/partition.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "core/custom.h"
#include "tileops/tileops.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- a small open-addressing hash map: 64-bit key -> uint32 ----------- */

typedef struct hmap {
  uint64_t *keys;
  uint32_t *vals;
  uint32_t cap, n;
} hmap;

static int hmap_init(hmap *m, uint32_t n) {
  m->cap = 64;
  while (m->cap < 2 * n + 2)
    m->cap *= 2;
  m->n = 0;
  m->keys = calloc(m->cap, sizeof *m->keys);
  m->vals = malloc(m->cap * sizeof *m->vals);
  return m->keys && m->vals ? 0 : -1;
}
static void hmap_free(hmap *m) {
  free(m->keys);
  free(m->vals);
}
/* Slot for key (key 0 is reserved as empty: callers use hash | 1). */
static uint32_t hmap_slot(const hmap *m, uint64_t key) {
  uint32_t i = (uint32_t)(key ^ (key >> 32)) & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != key)
    i = (i + 1) & (m->cap - 1);
  return i;
}

static uint64_t gref_key(const pto_gref *g) {
  int64_t k[6] = {g->storage, g->offset, g->rows, g->cols, g->rs, g->cs};
  return XXH3_64bits(k, sizeof k) | 1;
}

static int gref_eq(const pto_gref *a, const pto_gref *b) {
  return a->storage == b->storage && a->offset == b->offset &&
         a->rows == b->rows && a->cols == b->cols && a->rs == b->rs &&
         a->cs == b->cs;
}

/* ---- union-find --------------------------------------------------------- */

static uint32_t uf_find(uint32_t *parent, uint32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

/* ---- state -------------------------------------------------------------- */

typedef struct part {
  pto_executable *e;
  const pto_program *p;
  const pto_config *cfg;
  const pto_machine *m;
  pto_tgraph *tg;
  /* per instruction: the store a TLOAD matches exactly, or PTO_NONE */
  uint32_t *match;
  /* per node */
  uint32_t *cluster;   /* union-find over nodes */
  uint8_t *dissolved;  /* node may not fuse (its subgraph did not fit) */
  /* per unit */
  uint32_t *unit_sg;   /* union-find over units, then subgraph ids */
  uint32_t *inst_unit; /* per instruction */
  /* storage -> producing node */
  uint32_t *storage_node;
  uint8_t *storage_is_output;
} part;

static const char *node_label(const part *s, uint32_t node) {
  return node == PTO_NONE ? "output" : s->p->nodes[node]->label;
}

static int64_t knob(const part *s, uint32_t node, pto_knob k) {
  return pto_config_knob(s->cfg, node == PTO_NONE ? NULL : node_label(s, node),
                         k);
}

/* ---- step 1: exact matches and op-level fusion -------------------------- */

static pto_status find_matches(part *s) {
  pto_tgraph *tg = s->tg;
  hmap stores;
  if (hmap_init(&stores, tg->n_insts))
    return PTO_ENOMEM;
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    if (in->op != PTO_OP_TSTORE || in->flags & PTO_TF_ACC)
      continue;
    uint32_t slot = hmap_slot(&stores, gref_key(&in->g));
    stores.keys[slot] = gref_key(&in->g);
    stores.vals[slot] = i;
  }
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    s->match[i] = PTO_NONE;
    if (in->op != PTO_OP_TLOAD)
      continue;
    uint32_t slot = hmap_slot(&stores, gref_key(&in->g));
    if (!stores.keys[slot])
      continue;
    const pto_tinst *st = &tg->insts[stores.vals[slot]];
    const pto_tval *sv = &tg->vals[st->src[0]], *lv = &tg->vals[in->dst[0]];
    /* forward only when the store does not convert (the value in memory is
     * the value in the tile) and the tile shapes agree */
    if (gref_eq(&st->g, &in->g) && sv->dtype == lv->dtype &&
        pto_dtype_size(st->g.dtype) == 4 && sv->rows == lv->rows &&
        sv->cols == lv->cols)
      s->match[i] = stores.vals[slot];
  }
  hmap_free(&stores);
  return PTO_OK;
}

/* Whether every global read of consumer node c from producer node p is an
 * exact match of a store of p, and the two run on one core type. */
static int edge_fusable(const part *s, uint32_t p, uint32_t c) {
  const pto_tgraph *tg = s->tg;
  if (s->dissolved[p] || s->dissolved[c] || !knob(s, p, PTO_KNOB_FUSE) ||
      !knob(s, c, PTO_KNOB_FUSE))
    return 0;
  pto_core_type core = PTO_CORE_TYPE_COUNT;
  for (uint32_t u = 0; u < tg->n_units; u++) {
    const pto_unit *un = &tg->units[u];
    if (un->node != p && un->node != c)
      continue;
    if (core == PTO_CORE_TYPE_COUNT)
      core = un->core;
    if (un->core != core)
      return 0;
    if (un->node != c)
      continue;
    for (uint32_t i = un->first; i < un->first + un->count; i++) {
      const pto_tinst *in = &tg->insts[i];
      if (!(pto__insn_info(in->op)->flags & PTO_IF_GLOBAL) ||
          in->op == PTO_OP_TSTORE)
        continue;
      if (in->g.storage >= s->p->n_tensors ||
          s->storage_node[in->g.storage] != p)
        continue;
      if (in->op != PTO_OP_TLOAD || s->match[i] == PTO_NONE)
        return 0;
    }
  }
  return 1;
}

/* Node-level edges (producer -> consumer), deduplicated, CSR by producer. */
typedef struct nedges {
  uint32_t *first, *to;
  uint8_t *fusable;
  uint32_t n;
} nedges;

static pto_status node_edges(part *s, nedges *g) {
  const pto_program *p = s->p;
  uint32_t nn = p->n_nodes;
  uint32_t cap = 0, n = 0;
  uint32_t (*pairs)[2] = NULL;
  for (uint32_t c = 0; c < nn; c++) {
    const pto_node *node = p->nodes[c];
    for (int i = 0; i < node->n_in; i++) {
      uint32_t prod = s->storage_node[node->in[i]->root->id];
      if (prod == PTO_NONE)
        continue;
      int dup = 0;
      for (uint32_t k = n; k > 0 && pairs[k - 1][1] == c; k--)
        dup |= pairs[k - 1][0] == prod;
      if (dup)
        continue;
      if (pto__grow((void **)&pairs, sizeof *pairs, &cap, n + 1)) {
        free(pairs);
        return PTO_ENOMEM;
      }
      pairs[n][0] = prod;
      pairs[n][1] = c;
      n++;
    }
  }
  g->first = calloc(nn + 1, sizeof *g->first);
  g->to = malloc((n + 1) * sizeof *g->to);
  g->fusable = malloc(n + 1);
  if (!g->first || !g->to || !g->fusable) {
    free(pairs);
    return PTO_ENOMEM;
  }
  for (uint32_t k = 0; k < n; k++)
    g->first[pairs[k][0] + 1]++;
  for (uint32_t v = 0; v < nn; v++)
    g->first[v + 1] += g->first[v];
  uint32_t *fill = calloc(nn + 1, sizeof *fill);
  if (!fill) {
    free(pairs);
    return PTO_ENOMEM;
  }
  for (uint32_t k = 0; k < n; k++) {
    uint32_t at = g->first[pairs[k][0]] + fill[pairs[k][0]]++;
    g->to[at] = pairs[k][1];
    g->fusable[at] = (uint8_t)edge_fusable(s, pairs[k][0], pairs[k][1]);
  }
  g->n = n;
  free(fill);
  free(pairs);
  return PTO_OK;
}

/* Whether clusters a and b may merge: every edge between them fusable, and
 * no path from one to the other through a third cluster. */
static int can_merge(part *s, const nedges *g, uint32_t a, uint32_t b,
                     uint32_t *stack, uint8_t *seen) {
  uint32_t nn = s->p->n_nodes;
  memset(seen, 0, nn);
  uint32_t sp = 0;
  for (uint32_t v = 0; v < nn; v++) {
    uint32_t cv = uf_find(s->cluster, v);
    if (cv != a && cv != b)
      continue;
    for (uint32_t k = g->first[v]; k < g->first[v + 1]; k++) {
      uint32_t w = g->to[k], cw = uf_find(s->cluster, w);
      if ((cw == a || cw == b) && cw != cv && !g->fusable[k])
        return 0;
      if (cw != a && cw != b && !seen[w]) {
        seen[w] = 1;
        stack[sp++] = w;
      }
    }
  }
  /* anything reachable from outside a and b that lands back in a or b
   * would make a cycle once they are one cluster */
  while (sp) {
    uint32_t v = stack[--sp];
    for (uint32_t k = g->first[v]; k < g->first[v + 1]; k++) {
      uint32_t w = g->to[k], cw = uf_find(s->cluster, w);
      if (cw == a || cw == b)
        return 0;
      if (!seen[w]) {
        seen[w] = 1;
        stack[sp++] = w;
      }
    }
  }
  return 1;
}

static pto_status cluster_ops(part *s) {
  uint32_t nn = s->p->n_nodes;
  for (uint32_t v = 0; v < nn; v++)
    s->cluster[v] = v;
  nedges g = {0};
  pto_status st = node_edges(s, &g);
  uint32_t *stack = malloc((nn + 1) * sizeof *stack);
  uint8_t *seen = malloc(nn + 1);
  if (st == PTO_OK && (!stack || !seen))
    st = PTO_ENOMEM;
  for (uint32_t v = 0; st == PTO_OK && v < nn; v++)
    for (uint32_t k = g.first[v]; k < g.first[v + 1]; k++) {
      if (!g.fusable[k])
        continue;
      uint32_t a = uf_find(s->cluster, v), b = uf_find(s->cluster, g.to[k]);
      if (a != b && can_merge(s, &g, a, b, stack, seen))
        s->cluster[b] = a;
    }
  free(stack);
  free(seen);
  free(g.first);
  free(g.to);
  free(g.fusable);
  return st;
}

/* ---- step 2: subgraphs -------------------------------------------------- */

static uint32_t unit_cluster(const part *s, uint32_t u) {
  uint32_t node = s->tg->units[u].node;
  return node == PTO_NONE ? PTO_NONE : uf_find(s->cluster, node);
}

/* Whether TLOAD i is forwarded from its matching store. */
static int forwarded(const part *s, uint32_t i) {
  uint32_t st = s->match[i];
  if (st == PTO_NONE)
    return 0;
  uint32_t cu = unit_cluster(s, s->inst_unit[i]);
  return cu != PTO_NONE && cu == unit_cluster(s, s->inst_unit[st]);
}

typedef struct sgraph {
  uint32_t n_units;
  uint32_t *units; /* unit ids in order */
  uint32_t n_insts;
  uint32_t *insts; /* kept tile-graph instruction ids in order */
} sgraph;

/* ---- step 3: compile one subgraph into a program ------------------------ */

typedef struct cbuild {
  pto_cprog prog;
  uint32_t *tile_of_val; /* tval -> program tile, PTO_NONE */
  uint32_t *slot_inst;   /* program slot -> tile-graph instruction */
} cbuild;

/* Where a cube or vector program's tiles live by default; matmul operands
 * are moved to L0A/L0B/L0C once their uses are known. */
static pto_mem_level level_for(pto_core_type core) {
  return core == PTO_CORE_CUBE ? PTO_MEM_L1 : PTO_MEM_UB;
}

/* Resolves forwarding: the value a tile-graph value stands for. */
static uint32_t resolve(const part *s, const uint32_t *alias, uint32_t v) {
  (void)s;
  while (alias[v] != PTO_NONE)
    v = alias[v];
  return v;
}

typedef struct interval {
  uint64_t off, size;
  uint32_t end; /* last use (instruction index) */
  uint8_t level;
  uint8_t live;
} interval;

/* Packs matmul operands (PTO_TF_PACK_A / PTO_TF_PACK_B, core/isa.def): a
 * tile that a TLOAD defines and that only TMATMUL* instructions read, always
 * as the same untransposed operand, is loaded packed in panels of the active
 * table's micro-kernel widths (pto__mm_panel), and the matmuls are told so.
 * The tile grows to whole panels: rows up to a multiple of mr for A, cols
 * up to a multiple of nr for B; iv[t].size follows. */
static pto_status pack_operands(pto_cprog *pr, interval *iv) {
  enum { UNSEEN, ROLE_A, ROLE_B, NOT_PACKED };
  uint8_t *role = calloc(pr->n_tiles + 1, 1);
  uint32_t *def = malloc((pr->n_tiles + 1) * sizeof *def);
  if (!role || !def) {
    free(role);
    free(def);
    return PTO_ENOMEM;
  }
  for (uint32_t t = 0; t < pr->n_tiles; t++)
    def[t] = PTO_NONE;
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    int mm = pi->op == PTO_OP_TMATMUL || pi->op == PTO_OP_TMATMUL_ACC;
    if (pi->op == PTO_OP_TLOAD && def[pi->dst[0]] == PTO_NONE)
      def[pi->dst[0]] = k;
    for (int r = 0; r < pi->n_src; r++) {
      uint32_t want = NOT_PACKED;
      if (mm && r == 0 && !(pi->flags & PTO_TF_TRANS_A))
        want = ROLE_A;
      if (mm && r == 1 && !(pi->flags & PTO_TF_TRANS_B))
        want = ROLE_B;
      uint8_t *have = &role[pi->src[r]];
      *have = *have == UNSEEN || *have == want ? (uint8_t)want : NOT_PACKED;
    }
  }
  uint32_t mr, nr;
  pto__mm_panel(&mr, &nr);
  for (uint32_t t = 0; t < pr->n_tiles; t++) {
    if ((role[t] != ROLE_A && role[t] != ROLE_B) || def[t] == PTO_NONE)
      continue;
    int is_a = role[t] == ROLE_A;
    uint32_t w = is_a ? mr : nr, flag = is_a ? PTO_TF_PACK_A : PTO_TF_PACK_B;
    pto_ptile *pt = &pr->tiles[t];
    if (is_a)
      pt->rows = (pt->rows + w - 1) / w * w;
    else
      pt->cols = (pt->cols + w - 1) / w * w;
    pt->stride = pto_tile_stride(pt->dtype, pt->cols);
    iv[t].size = pto_tile_bytes(pt->dtype, pt->rows, pt->cols);
    pr->insts[def[t]].flags |= flag;
    pr->insts[def[t]].imm[0] = (int32_t)w;
    for (uint32_t k = 0; k < pr->n_insts; k++) {
      pto_pinst *pi = &pr->insts[k];
      if ((pi->op == PTO_OP_TMATMUL || pi->op == PTO_OP_TMATMUL_ACC) &&
          pi->src[is_a ? 0 : 1] == t) {
        pi->flags |= flag;
        pi->imm[is_a ? 0 : 1] = (int32_t)w;
      }
    }
  }
  free(role);
  free(def);
  return PTO_OK;
}

/* Builds the program for sg: tiles, slots, instructions, and the liveness
 * based local-memory plan. Returns PTO_ECAPACITY (with *lvl and *need) when a
 * level overflows. */
static pto_status build_program(part *s, const sgraph *sg, uint32_t *alias,
                                pto_core_type core, cbuild *b,
                                pto_mem_level *lvl, uint64_t *need) {
  const pto_tgraph *tg = s->tg;
  pto_cprog *pr = &b->prog;
  memset(pr, 0, sizeof *pr);
  pr->core = core;
  pr->insts = calloc(sg->n_insts + 1, sizeof *pr->insts);
  pr->tiles = calloc(2 * sg->n_insts + 1, sizeof *pr->tiles);
  pr->slots = calloc(sg->n_insts + 1, sizeof *pr->slots);
  b->slot_inst = calloc(sg->n_insts + 1, sizeof *b->slot_inst);
  interval *iv = calloc(2 * sg->n_insts + 1, sizeof *iv);
  if (!pr->insts || !pr->tiles || !pr->slots || !b->slot_inst || !iv) {
    free(iv);
    return PTO_ENOMEM;
  }
  /* instructions, tiles (one per distinct value), slots */
  for (uint32_t k = 0; k < sg->n_insts; k++) {
    const pto_tinst *in = &tg->insts[sg->insts[k]];
    pto_pinst *pi = &pr->insts[pr->n_insts++];
    pi->op = in->op;
    pi->s = in->s;
    pi->imm[0] = in->imm[0];
    pi->imm[1] = in->imm[1];
    pi->flags = in->flags;
    pi->slot = pi->slot2 = -1;
    pi->n_src = in->n_src;
    pi->n_dst = in->n_dst;
    if (pto__insn_info(in->op)->flags & PTO_IF_GLOBAL) {
      pto_pslot *sl = &pr->slots[pr->n_slots];
      sl->dtype = in->g.dtype;
      sl->rows = in->g.rows;
      sl->cols = in->g.cols;
      sl->rs = in->g.rs;
      sl->cs = in->g.cs;
      b->slot_inst[pr->n_slots] = sg->insts[k];
      pi->slot = (int32_t)pr->n_slots++;
    }
    for (int r = 0; r < in->n_src + in->n_dst; r++) {
      int is_dst = r >= in->n_src;
      uint32_t v = resolve(s, alias, is_dst ? in->dst[r - in->n_src]
                                            : in->src[r]);
      uint32_t t = b->tile_of_val[v];
      if (t == PTO_NONE) {
        const pto_tval *tv = &tg->vals[v];
        t = pr->n_tiles++;
        b->tile_of_val[v] = t;
        pto_ptile *pt = &pr->tiles[t];
        pt->dtype = tv->dtype;
        pt->rows = tv->rows;
        pt->cols = tv->cols;
        pt->stride = pto_tile_stride(tv->dtype, tv->cols);
        pt->vrows = tv->vrows;
        pt->vcols = tv->vcols;
        pt->level = (uint8_t)level_for(core);
        iv[t].size = pto_tile_bytes(tv->dtype, tv->rows, tv->cols);
        iv[t].level = pt->level;
      }
      iv[t].end = k;
      if (is_dst)
        pi->dst[r - in->n_src] = (uint16_t)t;
      else
        pi->src[r] = (uint16_t)t;
    }
    /* TMATMUL_ACC accumulates in place: its destination takes the
     * accumulator's buffer, which dies here */
    if (in->op == PTO_OP_TMATMUL_ACC && in->n_src == 3) {
      pi->n_src = 2;
      iv[pi->dst[0]].size = 0; /* placed at its accumulator's offset */
      iv[pi->dst[0]].off = UINT64_MAX - pi->src[2];
    }
  }
  if (pr->n_tiles > UINT16_MAX) {
    free(iv);
    *need = pr->n_tiles;
    return PTO_ERANGE; /* reported by the caller */
  }
  if (core == PTO_CORE_CUBE && pack_operands(pr, iv)) {
    free(iv);
    return PTO_ENOMEM;
  }
  /* a tile's level follows its use, not its definition: the operands of a
   * matmul live in L0A/L0B and its accumulator in L0C, even though a TLOAD
   * defined them */
  for (uint32_t k = 0; core == PTO_CORE_CUBE && k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    if (pi->op != PTO_OP_TMATMUL && pi->op != PTO_OP_TMATMUL_ACC)
      continue;
    pr->tiles[pi->src[0]].level = PTO_MEM_L0A;
    pr->tiles[pi->src[1]].level = PTO_MEM_L0B;
    pr->tiles[pi->dst[0]].level = PTO_MEM_L0C;
  }
  for (uint32_t t = 0; t < pr->n_tiles; t++)
    iv[t].level = pr->tiles[t].level;
  /* liveness-based placement: first fit among the offsets of tiles dead
   * before this instruction */
  uint32_t *live = malloc((pr->n_tiles + 1) * sizeof *live);
  uint32_t n_live = 0;
  pto_status st = live ? PTO_OK : PTO_ENOMEM;
  uint32_t next_def = 0;
  for (uint32_t k = 0; st == PTO_OK && k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    /* free the tiles whose last use was before k */
    for (uint32_t j = 0; j < n_live;) {
      if (iv[live[j]].end < k) {
        iv[live[j]].live = 0;
        live[j] = live[--n_live];
      } else {
        j++;
      }
    }
    for (int d = 0; d < pi->n_dst; d++) {
      uint32_t t = pi->dst[d];
      if (t < next_def)
        continue; /* defined earlier (in place) */
      next_def = t + 1;
      if (iv[t].size == 0 && iv[t].off >= UINT64_MAX - pr->n_tiles) {
        uint32_t acc = (uint32_t)(UINT64_MAX - iv[t].off);
        iv[t].off = iv[acc].off;
        iv[t].size = iv[acc].size;
        iv[t].level = iv[acc].level;
        pr->tiles[t].level = iv[acc].level;
        if (iv[t].end < iv[acc].end)
          iv[t].end = iv[acc].end;
        iv[t].live = 1;
        live[n_live++] = t;
        continue;
      }
      /* first fit: lowest offset not overlapping a live tile of the level */
      uint64_t off = 0;
      for (int moved = 1; moved;) {
        moved = 0;
        for (uint32_t j = 0; j < n_live; j++) {
          const interval *o = &iv[live[j]];
          if (o->level == iv[t].level && off < o->off + o->size &&
              o->off < off + iv[t].size) {
            off = (o->off + o->size + PTO_TILE_ALIGN - 1) &
                  ~(uint64_t)(PTO_TILE_ALIGN - 1);
            moved = 1;
          }
        }
      }
      iv[t].off = off;
      iv[t].live = 1;
      live[n_live++] = t;
      uint64_t top = off + iv[t].size;
      if (top > pr->mem[iv[t].level])
        pr->mem[iv[t].level] = top;
    }
  }
  for (uint32_t t = 0; t < pr->n_tiles; t++)
    pr->tiles[t].offset = iv[t].off;
  /* custom instructions may need scratch beyond their operands */
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const pto_custom_op *c = pto__custom_get(pr->insts[k].op);
    if (c && c->desc.scratch_bytes) {
      pto_mem_level l = core == PTO_CORE_CUBE ? PTO_MEM_L1 : PTO_MEM_UB;
      pr->mem[l] += c->desc.scratch_bytes;
    }
  }
  free(live);
  free(iv);
  for (int l = 0; st == PTO_OK && l < PTO_MEM_LEVEL_COUNT; l++)
    if (pr->mem[l] > s->m->mem[l]) {
      *lvl = (pto_mem_level)l;
      *need = pr->mem[l];
      st = PTO_ECAPACITY;
    }
  /* resolve entry points */
  const pto_isa_table *isa = pto__isa_active();
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    int op = pr->insts[k].op;
    pr->insts[k].fn = op < PTO_OP_COUNT ? isa->fn[op] : pto__tileop_run;
  }
  return st;
}

static void free_build(cbuild *b) {
  free(b->prog.insts);
  free(b->prog.tiles);
  free(b->prog.slots);
  free(b->slot_inst);
}

/* Canonical bytes of a program: everything but where its tiles are. */
static size_t canon(const pto_cprog *pr, unsigned char *buf) {
  size_t n = 0;
#define PUT(x)                                                                 \
  do {                                                                         \
    if (buf)                                                                   \
      memcpy(buf + n, &(x), sizeof(x));                                        \
    n += sizeof(x);                                                            \
  } while (0)
  PUT(pr->core);
  PUT(pr->n_insts);
  PUT(pr->n_tiles);
  PUT(pr->n_slots);
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    PUT(pi->op);
    PUT(pi->n_src);
    PUT(pi->n_dst);
    PUT(pi->src);
    PUT(pi->dst);
    PUT(pi->slot);
    PUT(pi->slot2);
    PUT(pi->s);
    PUT(pi->imm);
    PUT(pi->flags);
  }
  for (uint32_t t = 0; t < pr->n_tiles; t++) {
    const pto_ptile *pt = &pr->tiles[t];
    PUT(pt->dtype);
    PUT(pt->level);
    PUT(pt->rows);
    PUT(pt->cols);
    PUT(pt->vrows);
    PUT(pt->vcols);
    PUT(pt->offset);
  }
  for (uint32_t l = 0; l < pr->n_slots; l++) {
    const pto_pslot *sl = &pr->slots[l];
    PUT(sl->dtype);
    PUT(sl->rows);
    PUT(sl->cols);
    PUT(sl->rs);
    PUT(sl->cs);
  }
#undef PUT
  return n;
}

/* ---- driver ------------------------------------------------------------- */

static pto_status fail(part *s, pto_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pto_status fail(part *s, pto_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char msg[PTO_ERROR_MSG];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return pto__error_set(&s->e->err, st, "compile: %s", msg);
}

/* l1_reuse: cube units of one op whose first load is the same window (the
 * left operand of their matmuls) are joined k at a time into one subgraph,
 * where that window is loaded once for all of them. */
static int reuse_l1(part *s) {
  const pto_tgraph *tg = s->tg;
  hmap groups;
  uint32_t *root = malloc((tg->n_units + 1) * sizeof *root);
  uint32_t *count = malloc((tg->n_units + 1) * sizeof *count);
  if (!root || !count || hmap_init(&groups, tg->n_units)) {
    free(root);
    free(count);
    return -1;
  }
  uint32_t n = 0;
  for (uint32_t u = 0; u < tg->n_units; u++) {
    const pto_unit *un = &tg->units[u];
    if (un->core != PTO_CORE_CUBE || un->node == PTO_NONE)
      continue;
    int64_t k = knob(s, un->node, PTO_KNOB_L1_REUSE);
    if (k <= 1)
      continue;
    /* the load of the first matmul's left operand */
    const pto_tinst *first = NULL;
    uint32_t lhs = PTO_NONE;
    for (uint32_t i = un->first; lhs == PTO_NONE && i < un->first + un->count;
         i++)
      if (tg->insts[i].op == PTO_OP_TMATMUL ||
          tg->insts[i].op == PTO_OP_TMATMUL_ACC)
        lhs = tg->insts[i].src[0];
    for (uint32_t i = un->first; !first && i < un->first + un->count; i++)
      if (tg->insts[i].op == PTO_OP_TLOAD && tg->insts[i].dst[0] == lhs)
        first = &tg->insts[i];
    if (!first)
      continue;
    uint64_t key[2] = {un->node, gref_key(&first->g)};
    uint64_t h = XXH3_64bits(key, sizeof key) | 1;
    uint32_t slot = hmap_slot(&groups, h);
    if (!groups.keys[slot] || count[groups.vals[slot]] >= k) {
      groups.keys[slot] = h;
      groups.vals[slot] = n;
      root[n] = uf_find(s->unit_sg, u);
      count[n++] = 0;
    }
    uint32_t g = groups.vals[slot];
    uint32_t a = uf_find(s->unit_sg, root[g]), b = uf_find(s->unit_sg, u);
    if (a != b)
      s->unit_sg[a > b ? a : b] = a < b ? a : b;
    count[g]++;
  }
  hmap_free(&groups);
  free(root);
  free(count);
  return 0;
}

/* Forms subgraphs from the current clusters: fills sgs (array of n) and
 * unit_sg. */
static pto_status form_subgraphs(part *s, sgraph **out, uint32_t *n_out,
                                 uint32_t *alias, uint8_t *drop) {
  pto_tgraph *tg = s->tg;
  uint32_t nu = tg->n_units;
  for (uint32_t u = 0; u < nu; u++)
    s->unit_sg[u] = u;
  memset(drop, 0, tg->n_insts);
  for (uint32_t v = 0; v < tg->n_vals; v++)
    alias[v] = PTO_NONE;
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    if (!forwarded(s, i))
      continue;
    uint32_t a = uf_find(s->unit_sg, s->inst_unit[i]);
    uint32_t b = uf_find(s->unit_sg, s->inst_unit[s->match[i]]);
    if (a != b)
      s->unit_sg[a > b ? a : b] = a < b ? a : b;
    alias[tg->insts[i].dst[0]] = tg->insts[s->match[i]].src[0];
    drop[i] = 1;
  }
  /* stores whose tensor never leaves its cluster: one pass over every read,
   * clearing the tensors some reader outside its producer's cluster (or not
   * forwarded) still needs in global memory */
  uint32_t nt = s->p->n_tensors;
  uint8_t *internal = malloc(nt + 1);
  if (!internal)
    return PTO_ENOMEM;
  for (uint32_t st = 0; st < nt; st++)
    internal[st] = !s->storage_is_output[st] &&
                   s->storage_node[st] != PTO_NONE;
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    uint32_t st = in->g.storage;
    if (in->op == PTO_OP_TSTORE ||
        !(pto__insn_info(in->op)->flags & PTO_IF_GLOBAL) || st >= nt ||
        !internal[st])
      continue;
    uint32_t c = uf_find(s->cluster, s->storage_node[st]);
    if (unit_cluster(s, s->inst_unit[i]) != c || !forwarded(s, i))
      internal[st] = 0;
  }
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    if (in->op == PTO_OP_TSTORE && in->g.storage < nt &&
        unit_cluster(s, s->inst_unit[i]) != PTO_NONE)
      drop[i] = internal[in->g.storage];
  }
  free(internal);
  if (reuse_l1(s))
    return PTO_ENOMEM;
  /* number subgraphs in order of their first unit */
  uint32_t *sgid = malloc((nu + 1) * sizeof *sgid);
  if (!sgid)
    return PTO_ENOMEM;
  uint32_t n = 0;
  for (uint32_t u = 0; u < nu; u++)
    sgid[u] = PTO_NONE;
  for (uint32_t u = 0; u < nu; u++) {
    uint32_t r = uf_find(s->unit_sg, u);
    if (sgid[r] == PTO_NONE)
      sgid[r] = n++;
    sgid[u] = sgid[r];
  }
  for (uint32_t u = 0; u < nu; u++)
    s->unit_sg[u] = sgid[u];
  free(sgid);
  sgraph *sgs = calloc(n + 1, sizeof *sgs);
  if (!sgs)
    return PTO_ENOMEM;
  for (uint32_t u = 0; u < nu; u++) {
    sgraph *g = &sgs[s->unit_sg[u]];
    g->n_units++;
    for (uint32_t i = tg->units[u].first;
         i < tg->units[u].first + tg->units[u].count; i++)
      g->n_insts += !drop[i];
  }
  for (uint32_t k = 0; k < n; k++) {
    sgs[k].units = malloc((sgs[k].n_units + 1) * sizeof *sgs[k].units);
    sgs[k].insts = malloc((sgs[k].n_insts + 1) * sizeof *sgs[k].insts);
    if (!sgs[k].units || !sgs[k].insts) {
      for (uint32_t j = 0; j <= k; j++) {
        free(sgs[j].units);
        free(sgs[j].insts);
      }
      free(sgs);
      return PTO_ENOMEM;
    }
    sgs[k].n_units = sgs[k].n_insts = 0;
  }
  for (uint32_t u = 0; u < nu; u++) {
    sgraph *g = &sgs[s->unit_sg[u]];
    g->units[g->n_units++] = u;
    for (uint32_t i = tg->units[u].first;
         i < tg->units[u].first + tg->units[u].count; i++) {
      if (drop[i])
        continue;
      /* a window loaded twice in one subgraph is loaded once (l1_reuse
       * merges tasks precisely to share such loads) */
      const pto_tinst *in = &tg->insts[i];
      uint32_t dup = PTO_NONE;
      for (uint32_t j = 0; in->op == PTO_OP_TLOAD && j < g->n_insts; j++) {
        const pto_tinst *prev = &tg->insts[g->insts[j]];
        if (prev->op == PTO_OP_TLOAD && gref_eq(&prev->g, &in->g) &&
            !memcmp(&tg->vals[prev->dst[0]], &tg->vals[in->dst[0]],
                    sizeof(pto_tval))) {
          dup = prev->dst[0];
          break;
        }
      }
      if (dup != PTO_NONE) {
        alias[in->dst[0]] = dup;
        drop[i] = 1;
        continue;
      }
      g->insts[g->n_insts++] = i;
    }
  }
  *out = sgs;
  *n_out = n;
  return PTO_OK;
}

static void free_subgraphs(sgraph *sgs, uint32_t n) {
  for (uint32_t k = 0; sgs && k < n; k++) {
    free(sgs[k].units);
    free(sgs[k].insts);
  }
  free(sgs);
}

/* Compiles every subgraph; dissolves clusters whose subgraphs overflow local
 * memory and retries; fails when a single unit overflows. */
static pto_status compile_subgraphs(part *s, sgraph **sgs_out,
                                    uint32_t *n_out, cbuild **builds_out,
                                    uint32_t *alias, uint8_t *drop) {
  pto_tgraph *tg = s->tg;
  for (;;) {
    sgraph *sgs;
    uint32_t n;
    pto_status st = form_subgraphs(s, &sgs, &n, alias, drop);
    if (st)
      return st;
    cbuild *builds = calloc(n + 1, sizeof *builds);
    uint32_t *tov = malloc((tg->n_vals + 1) * sizeof *tov);
    if (!builds || !tov) {
      free(builds);
      free(tov);
      free_subgraphs(sgs, n);
      return PTO_ENOMEM;
    }
    for (uint32_t v = 0; v < tg->n_vals; v++)
      tov[v] = PTO_NONE;
    int retry = 0;
    for (uint32_t k = 0; st == PTO_OK && k < n; k++) {
      builds[k].tile_of_val = tov;
      pto_mem_level lvl = PTO_MEM_UB;
      uint64_t need = 0;
      st = build_program(s, &sgs[k], alias, tg->units[sgs[k].units[0]].core,
                         &builds[k], &lvl, &need);
      for (uint32_t i = 0; i < sgs[k].n_insts; i++) { /* reset the map */
        const pto_tinst *in = &tg->insts[sgs[k].insts[i]];
        for (int r = 0; r < in->n_src; r++)
          tov[resolve(s, alias, in->src[r])] = PTO_NONE;
        for (int r = 0; r < in->n_dst; r++)
          tov[resolve(s, alias, in->dst[r])] = PTO_NONE;
      }
      builds[k].tile_of_val = NULL;
      if (st == PTO_ERANGE) {
        fail(s, st, "a subgraph of op %s has %" PRIu64 " local tiles; at most "
             "%u fit a program: use larger tiles or fuse=0",
             tg->units[sgs[k].units[0]].node == PTO_NONE
                 ? "output copy"
                 : pto__top_name(s->p->nodes[tg->units[sgs[k].units[0]].node]->op),
             need, (unsigned)UINT16_MAX);
        continue;
      }
      if (st != PTO_ECAPACITY)
        continue;
      if (sgs[k].n_units > 1) { /* split: dissolve the fused ops */
        for (uint32_t j = 0; j < sgs[k].n_units; j++) {
          uint32_t node = tg->units[sgs[k].units[j]].node;
          if (node != PTO_NONE)
            s->dissolved[node] = 1;
        }
        retry = 1;
        st = PTO_OK;
        continue;
      }
      uint32_t node = tg->units[sgs[k].units[0]].node;
      const pto_tile_shape *ts = node == PTO_NONE ? NULL : &tg->node_tile[node];
      char what[200] = "output copy";
      if (node != PTO_NONE) {
        const pto_node *pn = s->p->nodes[node];
        snprintf(what, sizeof what, "%s%s%s%s -> '%s'", pto__top_name(pn->op),
                 pn->label[0] ? " '" : "", pn->label,
                 pn->label[0] ? "'" : "", pn->out[0]->name);
      }
      char packed[96] = "";
      if (node != PTO_NONE && s->p->nodes[node]->op == PTO_TOP_MATMUL) {
        uint32_t mr, nr;
        pto__mm_panel(&mr, &nr);
        snprintf(packed, sizeof packed,
                 "; operands packed in panels of %u rows (A) and %u cols (B)",
                 mr, nr);
      }
      fail(s, PTO_ECAPACITY,
           "%s needs %" PRIu64 " bytes of %s, the machine '%s' has %zu "
           "(vector tile %ux%u, cube tile %ux%ux%u%s): use a smaller tile",
           what, need, pto_mem_level_name(lvl), s->m->name, s->m->mem[lvl],
           ts ? ts->vec_rows : 0, ts ? ts->vec_cols : 0, ts ? ts->cube_m : 0,
           ts ? ts->cube_n : 0, ts ? ts->cube_k : 0, packed);
    }
    free(tov);
    if (st == PTO_OK && retry) {
      for (uint32_t k = 0; k < n; k++)
        free_build(&builds[k]);
      free(builds);
      free_subgraphs(sgs, n);
      /* re-cluster without the dissolved ops */
      if ((st = cluster_ops(s)))
        return st;
      continue;
    }
    if (st) {
      for (uint32_t k = 0; k < n; k++)
        free_build(&builds[k]);
      free(builds);
      free_subgraphs(sgs, n);
      return st;
    }
    *sgs_out = sgs;
    *n_out = n;
    *builds_out = builds;
    return PTO_OK;
  }
}

/* A global access of a task, for dependencies. */
typedef struct access {
  uint32_t storage, task;
  int is_write;
  int64_t lo, hi;       /* element interval [lo, hi] (a bounding range) */
  int64_t rows, cols, rs, cs, off;
} access;

static int access_cmp(const void *a, const void *b) {
  const access *x = a, *y = b;
  if (x->storage != y->storage)
    return x->storage < y->storage ? -1 : 1;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static access make_access(uint32_t task, const pto_gref *g, int64_t off,
                          int is_write) {
  access a;
  a.is_write = is_write;
  a.storage = g->storage;
  a.task = task;
  a.off = off;
  a.rows = g->rows;
  a.cols = g->cols;
  a.rs = g->rs;
  a.cs = g->cs;
  int64_t span = 0;
  span += (g->rows - 1) * (g->rs < 0 ? -g->rs : g->rs);
  span += (g->cols - 1) * (g->cs < 0 ? -g->cs : g->cs);
  a.lo = off;
  a.hi = off + span;
  return a;
}

/* Whether two windows of one storage share an element. Exact for windows
 * with the same row-major strides; conservative (interval overlap) else. */
static int overlap(const access *a, const access *b) {
  if (a->hi < b->lo || b->hi < a->lo)
    return 0;
  if (a->rs == b->rs && a->cs == 1 && b->cs == 1 && a->rs > 0 &&
      a->cols <= a->rs && b->cols <= b->rs) {
    int64_t ar = a->off / a->rs, ac = a->off % a->rs;
    int64_t br = b->off / b->rs, bc = b->off % b->rs;
    return ar < br + b->rows && br < ar + a->rows && ac < bc + b->cols &&
           bc < ac + a->cols;
  }
  return 1;
}

static int task_cmp(const void *a, const void *b) {
  const access *x = a, *y = b;
  return x->task < y->task ? -1 : x->task > y->task;
}

/* Fills e->succ (CSR) and the tasks' n_pred from the accesses. */
static pto_status build_edges(pto_executable *e, access *acc, uint32_t n_acc) {
  uint32_t nt = e->n_tasks;
  /* writes sorted by (storage, lo); reads sorted by task */
  uint32_t n_w = 0, n_r = 0;
  for (uint32_t i = 0; i < n_acc; i++)
    n_w += acc[i].is_write;
  n_r = n_acc - n_w;
  access *w = malloc((n_w + 1) * sizeof *w), *r = malloc((n_r + 1) * sizeof *r);
  uint32_t *mark = malloc((nt + 1) * sizeof *mark);
  int64_t *span = calloc(e->tg.n_storages + 1, sizeof *span);
  uint32_t (*pairs)[2] = NULL;
  unsigned cap = 0;
  uint32_t n_pairs = 0;
  pto_status st = PTO_OK;
  if (!w || !r || !mark || !span) {
    st = PTO_ENOMEM;
    goto out;
  }
  n_w = n_r = 0;
  for (uint32_t i = 0; i < n_acc; i++) {
    if (acc[i].is_write) {
      w[n_w++] = acc[i];
      int64_t sp = acc[i].hi - acc[i].lo;
      if (sp > span[acc[i].storage])
        span[acc[i].storage] = sp;
    } else {
      r[n_r++] = acc[i];
    }
  }
  qsort(w, n_w, sizeof *w, access_cmp);
  qsort(r, n_r, sizeof *r, task_cmp);
  for (uint32_t t = 0; t < nt; t++)
    mark[t] = PTO_NONE;
  for (uint32_t i = 0; i < n_r; i++) {
    const access *rd = &r[i];
    /* first write of the storage with lo >= rd->lo - span */
    int64_t from = rd->lo - span[rd->storage];
    uint32_t lo = 0, hi = n_w;
    while (lo < hi) {
      uint32_t mid = (lo + hi) / 2;
      if (w[mid].storage < rd->storage ||
          (w[mid].storage == rd->storage && w[mid].lo < from))
        lo = mid + 1;
      else
        hi = mid;
    }
    for (uint32_t j = lo; j < n_w && w[j].storage == rd->storage &&
                          w[j].lo <= rd->hi;
         j++) {
      uint32_t pred = w[j].task;
      if (pred == rd->task || mark[pred] == rd->task || !overlap(&w[j], rd))
        continue;
      mark[pred] = rd->task;
      if (pto__grow((void **)&pairs, sizeof *pairs, &cap, n_pairs + 1)) {
        st = PTO_ENOMEM;
        goto out;
      }
      pairs[n_pairs][0] = pred;
      pairs[n_pairs][1] = rd->task;
      n_pairs++;
    }
  }
  /* CSR by predecessor */
  e->succ = malloc((n_pairs + 1) * sizeof *e->succ);
  if (!e->succ) {
    st = PTO_ENOMEM;
    goto out;
  }
  for (uint32_t k = 0; k < n_pairs; k++) {
    e->tasks[pairs[k][0]].n_succ++;
    e->tasks[pairs[k][1]].n_pred++;
  }
  uint32_t at = 0;
  for (uint32_t t = 0; t < nt; t++) {
    e->tasks[t].succ = at;
    at += e->tasks[t].n_succ;
    e->tasks[t].n_succ = 0;
  }
  for (uint32_t k = 0; k < n_pairs; k++) {
    pto_task *t = &e->tasks[pairs[k][0]];
    e->succ[t->succ + t->n_succ++] = pairs[k][1];
  }
  e->n_edges = n_pairs;
out:
  free(w);
  free(r);
  free(mark);
  free(span);
  free(pairs);
  return st;
}

/* Where every storage lives: inputs and outputs are the caller's buffers;
 * intermediates that some task stores get a slice of the workspace. */
static pto_status plan_storages(pto_executable *e, const pto_tgraph *tg) {
  const pto_program *p = tg->prog;
  e->n_storages = tg->n_storages;
  e->storages = calloc(tg->n_storages + 1, sizeof *e->storages);
  if (!e->storages)
    return PTO_ENOMEM;
  for (uint32_t k = 0; k < tg->n_storages; k++) {
    pto_storage *s = &e->storages[k];
    s->bytes = (uint64_t)pto__storage_bytes(tg, k);
    s->dtype = pto__storage_dtype(tg, k);
    if (k < p->n_tensors && p->tensors[k]->input_index >= 0) {
      s->kind = PTO_STORAGE_INPUT;
      s->index = (uint32_t)p->tensors[k]->input_index;
    }
  }
  for (uint32_t j = 0; j < p->n_outputs; j++) {
    pto_storage *s = &e->storages[tg->out_storage[j]];
    s->kind = PTO_STORAGE_OUTPUT;
    s->index = j;
  }
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    const pto_cprog *pr = &e->progs[e->tasks[t].prog];
    for (uint32_t i = 0; i < pr->n_insts; i++) {
      if (pr->insts[i].op != PTO_OP_TSTORE)
        continue;
      pto_storage *s =
          &e->storages[e->args[e->tasks[t].args + pr->insts[i].slot].storage];
      if (s->kind == PTO_STORAGE_NONE) {
        s->kind = PTO_STORAGE_WORKSPACE;
        s->offset = e->workspace_bytes;
        e->workspace_bytes += (s->bytes + 63) & ~(uint64_t)63;
      }
    }
  }
  e->stats.workspace_bytes = e->workspace_bytes;
  return PTO_OK;
}

/* Bytes of global memory one instance of program pr moves. */
static uint64_t prog_bytes(const pto_cprog *pr) {
  uint64_t b = 0;
  for (uint32_t l = 0; l < pr->n_slots; l++)
    b += (uint64_t)(pr->slots[l].rows * pr->slots[l].cols) *
         pto_dtype_size(pr->slots[l].dtype);
  return b;
}

/* Vector instances this small are merged automatically (nbuffer = 0). */
#define NBUFFER_SMALL_BYTES (64u * 1024u)

/* Assigns each subgraph a task: vector subgraphs with the same program and
 * the same fusion cluster (hence independent) are grouped nbuffer at a time;
 * nbuffer 0 groups small ones into about one task per vector worker. */
static pto_status group_tasks(part *s, const sgraph *sgs, uint32_t n_sg,
                              const uint32_t *prog_of, uint32_t *task_of,
                              uint32_t *n_tasks) {
  const pto_executable *e = s->e;
  uint32_t nn = s->p->n_nodes;
  hmap groups;
  uint32_t *count = calloc(n_sg + 1, sizeof *count);
  uint32_t *open = malloc((n_sg + 1) * sizeof *open);
  uint32_t *fill = calloc(n_sg + 1, sizeof *fill);
  uint32_t *gid = malloc((n_sg + 1) * sizeof *gid);
  if (!count || !open || !fill || !gid || hmap_init(&groups, n_sg)) {
    free(count);
    free(open);
    free(fill);
    free(gid);
    return PTO_ENOMEM;
  }
  uint32_t n_groups = 0;
  for (uint32_t k = 0; k < n_sg; k++) {
    uint32_t node = s->tg->units[sgs[k].units[0]].node;
    uint32_t c = node == PTO_NONE ? nn : uf_find(s->cluster, node);
    uint64_t key = ((uint64_t)(prog_of[k] + 1) << 32) | (uint64_t)(c + 1);
    uint32_t slot = hmap_slot(&groups, key);
    if (!groups.keys[slot]) {
      groups.keys[slot] = key;
      groups.vals[slot] = n_groups++;
    }
    gid[k] = groups.vals[slot];
    count[gid[k]]++;
  }
  uint32_t workers = s->m->workers[PTO_CORE_VECTOR] ? s->m->workers[PTO_CORE_VECTOR] : 1;
  uint32_t n = 0;
  for (uint32_t g = 0; g < n_groups; g++)
    open[g] = PTO_NONE;
  for (uint32_t k = 0; k < n_sg; k++) {
    uint32_t g = gid[k];
    const pto_cprog *pr = &e->progs[prog_of[k]];
    uint32_t node = s->tg->units[sgs[k].units[0]].node;
    int64_t per = pr->core == PTO_CORE_VECTOR ? knob(s, node, PTO_KNOB_NBUFFER)
                                              : 1;
    if (per == 0)
      per = prog_bytes(pr) < NBUFFER_SMALL_BYTES
                ? (count[g] + workers - 1) / workers
                : 1;
    if (open[g] == PTO_NONE || fill[g] >= per) {
      open[g] = n++;
      fill[g] = 0;
    }
    fill[g]++;
    task_of[k] = open[g];
  }
  *n_tasks = n;
  hmap_free(&groups);
  free(count);
  free(open);
  free(fill);
  free(gid);
  return PTO_OK;
}

/* path[t]: the largest total cost from t to any exit, t included: the
 * critical-path scheduling priority. Kahn order, then backwards. */
static pto_status critical_paths(pto_executable *e) {
  uint32_t n = e->n_tasks;
  uint32_t *order = malloc((n + 1) * sizeof *order);
  uint32_t *pending = malloc((n + 1) * sizeof *pending);
  if (!order || !pending) {
    free(order);
    free(pending);
    return PTO_ENOMEM;
  }
  uint32_t head = 0, tail = 0;
  for (uint32_t t = 0; t < n; t++) {
    pending[t] = e->tasks[t].n_pred;
    if (!pending[t])
      order[tail++] = t;
  }
  while (head < tail) {
    const pto_task *t = &e->tasks[order[head++]];
    for (uint32_t k = 0; k < t->n_succ; k++)
      if (--pending[e->succ[t->succ + k]] == 0)
        order[tail++] = e->succ[t->succ + k];
  }
  for (uint32_t i = tail; i-- > 0;) {
    pto_task *t = &e->tasks[order[i]];
    uint64_t best = 0;
    for (uint32_t k = 0; k < t->n_succ; k++)
      if (e->tasks[e->succ[t->succ + k]].path > best)
        best = e->tasks[e->succ[t->succ + k]].path;
    t->path = best + t->cost + 1;
  }
  free(order);
  free(pending);
  return PTO_OK;
}

pto_status pto__partition(pto_executable *e, const pto_config *cfg,
                          const pto_machine *m) {
  pto_tgraph *tg = &e->tg;
  const pto_program *p = tg->prog;
  part s = {0};
  s.e = e;
  s.p = p;
  s.cfg = cfg;
  s.m = m;
  s.tg = tg;
  double t0 = now_ms(), t_graph = 0;
  pto_status st = PTO_OK;
  uint32_t *alias = malloc((tg->n_vals + 1) * sizeof *alias);
  uint8_t *drop = malloc(tg->n_insts + 1);
  s.match = malloc((tg->n_insts + 1) * sizeof *s.match);
  s.cluster = malloc((p->n_nodes + 1) * sizeof *s.cluster);
  s.dissolved = calloc(p->n_nodes + 1, 1);
  s.unit_sg = malloc((tg->n_units + 1) * sizeof *s.unit_sg);
  s.inst_unit = malloc((tg->n_insts + 1) * sizeof *s.inst_unit);
  s.storage_node = malloc((tg->n_storages + 1) * sizeof *s.storage_node);
  s.storage_is_output = calloc(tg->n_storages + 1, 1);
  sgraph *sgs = NULL;
  uint32_t n_sg = 0;
  cbuild *builds = NULL;
  access *acc = NULL;
  uint32_t *prog_of = NULL, *mark = NULL;
  if (!alias || !drop || !s.match || !s.cluster || !s.dissolved ||
      !s.unit_sg || !s.inst_unit || !s.storage_node || !s.storage_is_output) {
    st = fail(&s, PTO_ENOMEM, "out of memory");
    goto done;
  }
  for (uint32_t u = 0; u < tg->n_units; u++)
    for (uint32_t i = tg->units[u].first;
         i < tg->units[u].first + tg->units[u].count; i++)
      s.inst_unit[i] = u;
  for (uint32_t k = 0; k < tg->n_storages; k++)
    s.storage_node[k] = PTO_NONE;
  for (uint32_t v = 0; v < p->n_nodes; v++)
    for (int o = 0; o < p->nodes[v]->n_out; o++)
      s.storage_node[p->nodes[v]->out[o]->id] = v;
  for (uint32_t j = 0; j < p->n_outputs; j++)
    s.storage_is_output[tg->out_storage[j]] = 1;

  if ((st = find_matches(&s)) || (st = cluster_ops(&s))) {
    st = fail(&s, st, "out of memory");
    goto done;
  }
  double t1 = now_ms();
  e->stats.ms_partition = t1 - t0;
  if ((st = compile_subgraphs(&s, &sgs, &n_sg, &builds, alias, drop))) {
    if (st == PTO_ENOMEM)
      fail(&s, st, "out of memory");
    goto done;
  }
  t_graph = now_ms();
  e->stats.ms_plan = t_graph - t1;

  /* programs: deduplicate isomorphic subgraphs */
  prog_of = malloc((n_sg + 1) * sizeof *prog_of);
  hmap progs;
  if (!prog_of || hmap_init(&progs, n_sg)) {
    st = fail(&s, PTO_ENOMEM, "out of memory");
    goto done;
  }
  unsigned char *cbuf = NULL;
  size_t cbuf_cap = 0;
  e->progs = calloc(n_sg + 1, sizeof *e->progs);
  unsigned char **canon_of = calloc(n_sg + 1, sizeof *canon_of);
  size_t *canon_len = calloc(n_sg + 1, sizeof *canon_len);
  if (!e->progs || !canon_of || !canon_len) {
    free(canon_of);
    free(canon_len);
    hmap_free(&progs);
    st = fail(&s, PTO_ENOMEM, "out of memory");
    goto done;
  }
  for (uint32_t k = 0; k < n_sg && st == PTO_OK; k++) {
    size_t len = canon(&builds[k].prog, NULL);
    if (len > cbuf_cap) {
      free(cbuf);
      cbuf = malloc(len);
      cbuf_cap = cbuf ? len : 0;
      if (!cbuf) {
        st = fail(&s, PTO_ENOMEM, "out of memory");
        break;
      }
    }
    canon(&builds[k].prog, cbuf);
    uint64_t h = XXH3_64bits(cbuf, len) | 1;
    uint32_t slot = hmap_slot(&progs, h);
    /* linear probing may meet a colliding hash: confirm byte for byte */
    while (progs.keys[slot] == h) {
      uint32_t q = progs.vals[slot];
      if (canon_len[q] == len && !memcmp(canon_of[q], cbuf, len))
        break;
      slot = (slot + 1) & (progs.cap - 1);
      while (progs.keys[slot] && progs.keys[slot] != h)
        slot = (slot + 1) & (progs.cap - 1);
    }
    if (progs.keys[slot] == h) {
      prog_of[k] = progs.vals[slot];
      continue;
    }
    uint32_t q = e->n_progs++;
    progs.keys[slot] = h;
    progs.vals[slot] = q;
    canon_of[q] = malloc(len);
    if (!canon_of[q]) {
      st = fail(&s, PTO_ENOMEM, "out of memory");
      break;
    }
    memcpy(canon_of[q], cbuf, len);
    canon_len[q] = len;
    e->progs[q] = builds[k].prog;
    e->progs[q].hash = h;
    builds[k].prog.insts = NULL; /* moved */
    builds[k].prog.tiles = NULL;
    builds[k].prog.slots = NULL;
    prog_of[k] = q;
  }
  free(cbuf);
  for (uint32_t q = 0; q < e->n_progs; q++)
    free(canon_of[q]);
  free(canon_of);
  free(canon_len);
  hmap_free(&progs);
  if (st)
    goto done;

  /* tasks: isomorphic subgraphs of one cluster are independent, so nbuffer
   * may run k of them as one task (k instances of one program) */
  e->n_subgraphs = n_sg;
  e->unit_subgraph = malloc((tg->n_units + 1) * sizeof *e->unit_subgraph);
  e->subgraph_task = malloc((n_sg + 1) * sizeof *e->subgraph_task);
  if (!e->unit_subgraph || !e->subgraph_task) {
    st = fail(&s, PTO_ENOMEM, "out of memory");
    goto done;
  }
  memcpy(e->unit_subgraph, s.unit_sg, tg->n_units * sizeof *s.unit_sg);
  if ((st = group_tasks(&s, sgs, n_sg, prog_of, e->subgraph_task,
                        &e->n_tasks))) {
    fail(&s, st, "out of memory");
    goto done;
  }
  e->tasks = calloc(e->n_tasks + 1, sizeof *e->tasks);
  uint32_t n_args = 0;
  for (uint32_t k = 0; k < n_sg; k++)
    n_args += e->progs[prog_of[k]].n_slots;
  e->args = calloc(n_args + 1, sizeof *e->args);
  acc = malloc((n_args + 1) * sizeof *acc);
  uint32_t *order = malloc((n_sg + 1) * sizeof *order);
  if (!e->tasks || !e->args || !acc || !order) {
    free(order);
    st = fail(&s, PTO_ENOMEM, "out of memory");
    goto done;
  }
  /* members of each task in subgraph order: counting sort by task */
  for (uint32_t k = 0; k < n_sg; k++)
    e->tasks[e->subgraph_task[k]].n_inst++;
  uint32_t a = 0, n_acc = 0;
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    e->tasks[t].args = a; /* temporarily: next member position */
    a += e->tasks[t].n_inst;
  }
  for (uint32_t k = 0; k < n_sg; k++)
    order[e->tasks[e->subgraph_task[k]].args++] = k;
  a = 0;
  for (uint32_t i = 0, t = 0; i < n_sg; t++) {
    pto_task *task = &e->tasks[t];
    uint32_t first = order[i];
    pto_cprog *pr = &e->progs[prog_of[first]];
    task->prog = prog_of[first];
    task->args = a;
    task->node = tg->units[sgs[first].units[0]].node;
    task->label = node_label(&s, task->node);
    task->core = pr->core;
    pr->n_tasks++;
    for (uint32_t inst = 0; inst < task->n_inst; inst++, i++) {
      uint32_t k = order[i];
      for (uint32_t l = 0; l < pr->n_slots; l++) {
        const pto_tinst *in = &tg->insts[builds[k].slot_inst[l]];
        uint64_t bytes =
            (uint64_t)(in->g.rows * in->g.cols) * pto_dtype_size(in->g.dtype);
        e->args[a].storage = in->g.storage;
        e->args[a].offset = in->g.offset;
        a++;
        acc[n_acc++] =
            make_access(t, &in->g, in->g.offset, in->op == PTO_OP_TSTORE);
        task->cost += bytes;
        e->stats.boundary_bytes += bytes;
      }
      for (uint32_t j = 0; j < pr->n_insts; j++) {
        const pto_pinst *pi = &pr->insts[j];
        if (pi->op == PTO_OP_TMATMUL || pi->op == PTO_OP_TMATMUL_ACC) {
          const pto_ptile *ta = &pr->tiles[pi->src[0]],
                          *tb = &pr->tiles[pi->src[1]];
          task->cost += (uint64_t)ta->vrows * ta->vcols * tb->vcols / 4;
        }
      }
    }
  }
  free(order);

  /* dependencies: each read depends on every write it overlaps
   * (read-after-write). Each storage is written by one op and intermediates
   * are not reused, so there is no write-after-read or write-after-write. */
  st = build_edges(e, acc, n_acc);
  if (st) {
    fail(&s, st, "out of memory");
    goto done;
  }
  st = plan_storages(e, tg);
  if (!st)
    st = critical_paths(e);
  if (st)
    fail(&s, st, "out of memory");
  e->stats.tensor_ops = p->n_nodes;
  e->stats.tile_instructions = tg->n_insts;
  e->stats.subgraphs = n_sg;
  e->stats.programs = e->n_progs;
  e->stats.tasks = e->n_tasks;
  e->stats.edges = e->n_edges;
  for (uint32_t q = 0; q < e->n_progs; q++)
    for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
      if (e->progs[q].mem[l] > e->stats.mem_peak[l])
        e->stats.mem_peak[l] = e->progs[q].mem[l];

done:
  free(alias);
  free(drop);
  free(s.match);
  free(s.cluster);
  free(s.dissolved);
  free(s.unit_sg);
  free(s.inst_unit);
  free(s.storage_node);
  free(s.storage_is_output);
  free(prog_of);
  free(mark);
  free(acc);
  for (uint32_t k = 0; builds && k < n_sg; k++)
    free_build(&builds[k]);
  free(builds);
  free_subgraphs(sgs, n_sg);
  /* the execution graph alone: programs, tasks, edges, storages */
  e->stats.ms_graph = t_graph ? now_ms() - t_graph : 0;
  return st;
}
