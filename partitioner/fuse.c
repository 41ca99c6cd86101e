/* Fusion: exact matches between producer stores and consumer loads, ops
 * merged into clusters (never into a cycle, never where it would leave the
 * workers idle), and the subgraphs a clustering makes: units joined by
 * forwarded store -> load pairs and by l1_reuse, with their duplicate
 * loads shared. Splits undo a fusion or an l1_reuse group that did not
 * fit. Steps 1 and 2 of partitioner/partition.c. */
#include <stdlib.h>
#include <string.h>

#include "partitioner/part.h"

/* What fusion asks of an instruction (core/isa.h): whether it writes its
 * window with the values of its source (a store: PTO_IF_COPY; a plain one
 * does not accumulate), reads one into its destination (a plain load), or
 * reads global memory at all. */
static int is_store(const pto_tinst *in) {
  return (pto__insn_info(in->op)->flags & PTO_IF_COPY) &&
         pto__insn_facts(in->op)->g == PTO_GA_WRITE;
}
static int plain_store(const pto_tinst *in) {
  return is_store(in) && !pto__facts_acc(pto__insn_facts(in->op), in->flags);
}
static int plain_load(const pto_tinst *in) {
  return (pto__insn_info(in->op)->flags & PTO_IF_COPY) &&
         pto__insn_facts(in->op)->g == PTO_GA_READ;
}
static int reads_global(const pto_tinst *in) {
  return pto__insn_facts(in->op)->g == PTO_GA_READ;
}

/* ---- step 1: exact matches and op-level fusion -------------------------- */

pto_status pto__fuse_find_matches(part *s) {
  pto_tgraph *tg = s->tg;
  hmap stores;
  if (hmap_init(&stores, tg->n_insts))
    return PTO_ENOMEM;
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    if (!plain_store(in))
      continue;
    uint32_t slot = hmap_slot(&stores, gref_key(&in->g));
    stores.keys[slot] = gref_key(&in->g);
    stores.vals[slot] = i;
  }
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    s->match[i] = PTO_NONE;
    s->load_key[i] = 0;
    if (!plain_load(in))
      continue;
    const pto_tval *v = &tg->vals[in->dst[0]];
    const int64_t id[11] = {in->g.storage, in->g.offset, in->g.rows, in->g.cols,
                            in->g.rs,      in->g.cs,     v->dtype,   v->rows,
                            v->cols,       v->vrows,     v->vcols};
    s->load_key[i] = XXH3_64bits(id, sizeof id) | 1;
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

/* The units of each node, CSR: units ids[first[v] .. first[v + 1]) of node
 * v, in unit order. */
typedef struct node_units {
  uint32_t *first, *ids;
} node_units;

static pto_status node_units_new(const part *s, node_units *nu) {
  const pto_tgraph *tg = s->tg;
  const uint32_t nn = s->p->n_nodes;
  nu->first = calloc(nn + 2, sizeof *nu->first);
  nu->ids = malloc((tg->n_units + 1) * sizeof *nu->ids);
  if (!nu->first || !nu->ids)
    return PTO_ENOMEM;
  for (uint32_t u = 0; u < tg->n_units; u++)
    if (tg->units[u].node < nn)
      nu->first[tg->units[u].node + 2]++;
  for (uint32_t v = 0; v < nn; v++)
    nu->first[v + 2] += nu->first[v + 1];
  for (uint32_t u = 0; u < tg->n_units; u++)
    if (tg->units[u].node < nn)
      nu->ids[nu->first[tg->units[u].node + 1]++] = u;
  return PTO_OK;
}

static void node_units_free(node_units *nu) {
  free(nu->first);
  free(nu->ids);
}

/* Whether every global read of consumer node c from producer node p is an
 * exact match of a store of p, the two run on one core type, in one stage,
 * and the fuse knob lets both fuse: all fixed for a compile (what changes
 * between clusterings, dissolved ops and vetoed edges, is edges_now's). */
static int edge_fusable(const part *s, const node_units *nu, uint32_t p,
                        uint32_t c) {
  const pto_tgraph *tg = s->tg;
  if (!knob(s, p, PTO_KNOB_FUSE) || !knob(s, c, PTO_KNOB_FUSE))
    return 0;
  /* a task belongs to one stage (pto_config_set_stage_barriers): ops of
   * two stages, or of a stage and none, never share a subgraph */
  if (pto_config_n_stage_barriers(s->cfg) &&
      pto__config_stage(s->cfg, s->p->nodes[p]->label) !=
          pto__config_stage(s->cfg, s->p->nodes[c]->label))
    return 0;
  pto_core_type core = PTO_CORE_TYPE_COUNT;
  const uint32_t *us[2] = {nu->ids + nu->first[p], nu->ids + nu->first[c]};
  const uint32_t nus[2] = {nu->first[p + 1] - nu->first[p],
                           nu->first[c + 1] - nu->first[c]};
  for (uint32_t k = 0; k < nus[0] + nus[1]; k++) {
    const pto_unit *un = &tg->units[k < nus[0] ? us[0][k] : us[1][k - nus[0]]];
    if (core == PTO_CORE_TYPE_COUNT)
      core = un->core;
    if (un->core != core)
      return 0;
    if (un->node != c)
      continue;
    for (uint32_t i = un->first; i < un->first + un->count; i++) {
      const pto_tinst *in = &tg->insts[i];
      if (!reads_global(in))
        continue;
      if (in->g.storage >= s->p->n_tensors ||
          s->storage_node[in->g.storage] != p)
        continue;
      if (!plain_load(in) || s->match[i] == PTO_NONE)
        return 0;
    }
  }
  return 1;
}

/* Adds the edge prod -> c to pairs unless c already has it (pairs are
 * added consumer by consumer). -1 out of memory. */
static int add_pair(uint32_t (**pairs)[2], unsigned *cap, uint32_t *n,
                    uint32_t prod, uint32_t c) {
  for (uint32_t k = *n; k > 0 && (*pairs)[k - 1][1] == c; k--)
    if ((*pairs)[k - 1][0] == prod)
      return 0;
  if (pto__grow((void **)pairs, sizeof **pairs, cap, *n + 1))
    return -1;
  (*pairs)[*n][0] = prod;
  (*pairs)[*n][1] = c;
  (*n)++;
  return 0;
}

/* Node-level edges (producer -> consumer), deduplicated, CSR by producer,
 * each with edge_fusable: built once per compile, by the first clustering
 * (walking every load of every consumer for each edge took a sixth of
 * compiling a DSA decode step when each of its seven clusterings did).
 * An op's edges are what its units read, with its inputs: an op the tiler
 * gave no units (the earlier assembles of a chain, which its last one
 * tiles) has none, so it never joins its producer to its consumer with
 * nothing between them to fuse, and the op that reads for it (the chain's
 * last, reading the chain's base) gets the edge from the op it reads. */
static pto_status node_edges(part *s, nedges *g) {
  const pto_program *p = s->p;
  const pto_tgraph *tg = s->tg;
  uint32_t nn = p->n_nodes;
  unsigned cap = 0;
  uint32_t n = 0;
  uint32_t(*pairs)[2] = NULL;
  node_units nu = {NULL, NULL};
  if (node_units_new(s, &nu)) {
    node_units_free(&nu);
    return PTO_ENOMEM;
  }
  for (uint32_t c = 0; c < nn; c++) {
    const pto_node *node = p->nodes[c];
    if (nu.first[c + 1] == nu.first[c])
      continue;
    /* what it reads: its inputs, or what the tiler made it read instead
     * (pto_tgraph.reads), so no edge joins it to ops it stands for */
    const pto_tensor *const *rd =
        tg->reads && tg->reads[c][0] ? tg->reads[c] : NULL;
    const int n_rd = rd ? (rd[1] ? rd[2] ? 3 : 2 : 1) : node->n_in;
    int oom = 0;
    for (int i = 0; i < n_rd && !oom; i++) {
      uint32_t prod = s->storage_node[(rd ? rd[i] : node->in[i])->root->id];
      oom = prod != PTO_NONE && add_pair(&pairs, &cap, &n, prod, c);
    }
    for (uint32_t k = nu.first[c]; k < nu.first[c + 1] && !oom; k++) {
      const pto_unit *un = &tg->units[nu.ids[k]];
      for (uint32_t i = un->first; i < un->first + un->count && !oom; i++) {
        const pto_tinst *in = &tg->insts[i];
        if (!reads_global(in) || in->g.storage >= p->n_tensors)
          continue;
        uint32_t prod = s->storage_node[in->g.storage];
        oom = prod != PTO_NONE && prod != c &&
              add_pair(&pairs, &cap, &n, prod, c);
      }
    }
    if (oom) {
      free(pairs);
      node_units_free(&nu);
      return PTO_ENOMEM;
    }
  }
  g->first = calloc(nn + 1, sizeof *g->first);
  g->to = malloc((n + 1) * sizeof *g->to);
  g->fusable = malloc(n + 1);
  if (!g->first || !g->to || !g->fusable) {
    free(pairs);
    node_units_free(&nu);
    return PTO_ENOMEM;
  }
  for (uint32_t k = 0; k < n; k++)
    g->first[pairs[k][0] + 1]++;
  for (uint32_t v = 0; v < nn; v++)
    g->first[v + 1] += g->first[v];
  uint32_t *fill = calloc(nn + 1, sizeof *fill);
  if (!fill) {
    free(pairs);
    node_units_free(&nu);
    return PTO_ENOMEM;
  }
  for (uint32_t k = 0; k < n; k++) {
    uint32_t at = g->first[pairs[k][0]] + fill[pairs[k][0]]++;
    g->to[at] = pairs[k][1];
    g->fusable[at] = (uint8_t)edge_fusable(s, &nu, pairs[k][0], pairs[k][1]);
  }
  g->n = n;
  node_units_free(&nu);
  free(fill);
  free(pairs);
  return PTO_OK;
}

/* Whether clusters a and b, with an edge from a to b, may merge: every
 * edge from a to b fusable, and no other path from a to b, through a third
 * cluster. A cluster becomes subgraphs that run as whole tasks, so a path
 * enters a cluster at any of its nodes and leaves it from any other: the
 * search walks clusters (every member's edges), not single nodes.
 * Following node edges alone misses a -> x, y -> b with x and y in one
 * cluster, and merging a and b then makes two tasks wait for each other.
 * Clusters never form a cycle, so with an edge from a to b nothing leads
 * from b back to a: only a's side is searched. seen[c] == stamp marks the
 * clusters this search reached (a new stamp per search: no clearing). */
static int can_merge(part *s, const nedges *g, uint32_t a, uint32_t b,
                     uint32_t *stack, uint32_t *seen, uint32_t stamp) {
  seen[a] = seen[b] = stamp;
  uint32_t sp = 0;
  /* first the edges out of a: those into b must fuse; every other cluster
   * they lead to starts the search */
  uint32_t v = a;
  do {
    for (uint32_t k = g->first[v]; k < g->first[v + 1]; k++) {
      uint32_t cw = uf_find(s->cluster, g->to[k]);
      if (cw == b) {
        if (!g->fusable[k])
          return 0;
      } else if (seen[cw] != stamp) {
        seen[cw] = stamp;
        stack[sp++] = cw;
      }
    }
    v = s->cnext[v];
  } while (v != a);
  /* then every cluster reachable from those: reaching b would be a cycle
   * once a and b are one cluster */
  while (sp) {
    uint32_t c = stack[--sp];
    v = c;
    do {
      for (uint32_t k = g->first[v]; k < g->first[v + 1]; k++) {
        uint32_t cw = uf_find(s->cluster, g->to[k]);
        if (cw == b)
          return 0;
        if (seen[cw] != stamp) {
          seen[cw] = stamp;
          stack[sp++] = cw;
        }
      }
      v = s->cnext[v];
    } while (v != c);
  }
  return 1;
}

void pto__fuse_free_edges(nedges *g) {
  free(g->first);
  free(g->to);
  free(g->fusable);
  g->first = g->to = NULL;
  g->fusable = NULL;
}

/* The edges of s->edges that fuse now: fusable, between ops no split
 * dissolved, and not vetoed; into ok (one flag per edge). */
static void edges_now(const part *s, uint8_t *ok) {
  const nedges *g = &s->edges;
  for (uint32_t v = 0; v < s->p->n_nodes; v++)
    for (uint32_t k = g->first[v]; k < g->first[v + 1]; k++) {
      ok[k] = g->fusable[k] && !s->dissolved[v] && !s->dissolved[g->to[k]];
      for (unsigned j = 0; ok[k] && j < s->n_veto; j++)
        ok[k] = s->veto[j][0] != v || s->veto[j][1] != g->to[k];
    }
}

pto_status pto__fuse_cluster(part *s) {
  uint32_t nn = s->p->n_nodes;
  for (uint32_t v = 0; v < nn; v++)
    s->cluster[v] = s->cnext[v] = v;
  pto_status st = PTO_OK;
  if (!s->edges.first && (st = node_edges(s, &s->edges)))
    pto__fuse_free_edges(&s->edges);
  nedges g = s->edges; /* with this clustering's flags */
  uint32_t *stack = malloc((nn + 1) * sizeof *stack);
  uint32_t *seen = calloc(nn + 1, sizeof *seen), stamp = 0;
  g.fusable = st ? NULL : malloc(g.n + 1);
  if (st == PTO_OK && (!stack || !seen || !g.fusable))
    st = PTO_ENOMEM;
  if (st == PTO_OK)
    edges_now(s, g.fusable);
  for (uint32_t v = 0; st == PTO_OK && v < nn; v++)
    for (uint32_t k = g.first[v]; k < g.first[v + 1]; k++) {
      if (!g.fusable[k])
        continue;
      uint32_t a = uf_find(s->cluster, v), b = uf_find(s->cluster, g.to[k]);
      if (a == b || !can_merge(s, &g, a, b, stack, seen, ++stamp))
        continue;
      s->cluster[b] = a;
      uint32_t t = s->cnext[a]; /* splice b's member ring into a's */
      s->cnext[a] = s->cnext[b];
      s->cnext[b] = t;
    }
  free(stack);
  free(seen);
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
    uint32_t k = s->reuse[un->node];
    if (k <= 1)
      continue;
    /* the load of the first matmul's first operand */
    const pto_tinst *first = NULL;
    uint32_t lhs = PTO_NONE;
    for (uint32_t i = un->first; lhs == PTO_NONE && i < un->first + un->count;
         i++)
      if (pto__insn_info(tg->insts[i].op)->family == PTO_FAMILY_MATMUL)
        lhs = tg->insts[i].src[0];
    for (uint32_t i = un->first; !first && i < un->first + un->count; i++)
      if (plain_load(&tg->insts[i]) && tg->insts[i].dst[0] == lhs)
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

void pto__fuse_free_subgraphs(sgraph *sgs) {
  free(sgs); /* one block: the array, then every subgraph's lists */
}

/* Forms subgraphs from the current clusters: fills sgs (array of n) and
 * unit_sg. */
/* ---- the order of a subgraph's instructions ------------------------------
 *
 * Units are listed by op, then by tile; a consumer that reads many tiles of
 * one producer (a reduction over the column tiles of a row) would find all
 * of them computed, and live, before its first instruction: the subgraph of
 * a norm over rows of 65536 floats needed 16 MiB of UB. So a producer unit
 * whose every store stays inside the subgraph (dropped) and that reads
 * nothing the subgraph writes to global memory waits until an instruction
 * of its consumer needs it (the forwarded load), and then runs: a
 * reduction streams its row, one tile live at a time. Every other unit runs
 * where it is listed, so the order of global writes, and of the reads
 * around them, is the listed one. */

enum { U_CONSUMED = 1, U_DELAYED = 2, U_DONE = 4, U_OPEN = 8 };
#define SHARE_NEAR 4 /* loads: a tile loaded this recently is shared */

typedef struct order {
  part *s;
  uint32_t *alias;
  uint8_t *drop;
  hmap *loads;
  uint32_t *used, n_used;
  uint8_t *ustate;  /* per unit: U_* */
  uint32_t *wstamp; /* per storage: the subgraph (k + 1) writing it last */
  uint32_t *seq;    /* per load: how many loads the subgraph listed before */
  uint32_t n_loaded;
  struct {
    uint32_t u, i;
  } *stack;
} order;

static int writes_global(const pto_tinst *in) {
  return pto__insn_facts(in->op)->g == PTO_GA_WRITE ||
         (pto__insn_info(in->op)->flags & PTO_IF_STORE2);
}

/* Appends instruction i to g, loading a window once per subgraph: the
 * first load of each (window, tile shape), found by hash in a table of the
 * subgraph's size (one table for the whole graph misses the cache on every
 * probe: 16% of compiling a DSA prefill), a prefix of one table that each
 * subgraph empties again. Except where the first load was a delayed
 * unit's that has run (not one still waiting for its producers), with
 * more than SHARE_NEAR other loads since: a norm's second pass over the
 * rows of x would keep every tile of its first pass live; it loads them
 * again. */
static void append_inst(order *o, sgraph *g, uint32_t i) {
  part *s = o->s;
  const pto_tgraph *tg = s->tg;
  const pto_tinst *in = &tg->insts[i];
  if (plain_load(in)) {
    const pto_tval *v = &tg->vals[in->dst[0]];
    uint32_t slot = hmap_slot(o->loads, s->load_key[i]);
    if (!o->loads->keys[slot]) {
      o->loads->keys[slot] = s->load_key[i];
      o->loads->vals[slot] = i;
      o->used[o->n_used++] = slot;
      o->seq[i] = o->n_loaded++;
    } else {
      const uint32_t pi = o->loads->vals[slot];
      const pto_tinst *prev = &tg->insts[pi];
      /* equal hashes of different loads (never seen) just load twice */
      if (gref_eq(&prev->g, &in->g) &&
          !memcmp(&tg->vals[prev->dst[0]], v, sizeof *v)) {
        const uint8_t pu = o->ustate[s->inst_unit[pi]];
        if (!(pu & U_DELAYED) || (pu & U_OPEN) ||
            o->n_loaded - o->seq[pi] <= SHARE_NEAR) {
          o->alias[in->dst[0]] = prev->dst[0];
          o->drop[i] = 1;
          return;
        }
        o->loads->vals[slot] = i; /* the loads after it share this one */
        o->seq[i] = o->n_loaded++;
      }
    }
  }
  g->insts[g->n_insts++] = i;
}

/* Lists subgraph g's instructions (its id + 1 is k), delayed producers
 * where their consumers need them. */
static void order_subgraph(order *o, sgraph *g, uint32_t k) {
  part *s = o->s;
  const pto_tgraph *tg = s->tg;
  for (uint32_t j = 0; j < g->n_units; j++) {
    const pto_unit *un = &tg->units[g->units[j]];
    for (uint32_t i = un->first; i < un->first + un->count; i++)
      if (!o->drop[i] && writes_global(&tg->insts[i]))
        o->wstamp[tg->insts[i].g.storage] = k;
  }
  for (uint32_t j = 0; j < g->n_units; j++) {
    const uint32_t u = g->units[j];
    const pto_unit *un = &tg->units[u];
    int delay = (o->ustate[u] & U_CONSUMED) != 0;
    for (uint32_t i = un->first; delay && i < un->first + un->count; i++) {
      const pto_tinst *in = &tg->insts[i];
      delay = !(writes_global(in) && !o->drop[i]) &&
              !(reads_global(in) && o->wstamp[in->g.storage] == k);
    }
    o->ustate[u] = (uint8_t)((o->ustate[u] & U_CONSUMED) |
                             (delay ? U_DELAYED : 0));
  }
  g->n_insts = 0;
  for (uint32_t j = 0; j < g->n_units; j++) {
    const uint32_t root = g->units[j];
    if (o->ustate[root] & (U_DELAYED | U_DONE))
      continue;
    uint32_t sp = 0;
    o->stack[sp].u = root;
    o->stack[sp++].i = tg->units[root].first;
    o->ustate[root] |= U_OPEN;
    while (sp) {
      const uint32_t u = o->stack[sp - 1].u, i = o->stack[sp - 1].i;
      if (i == tg->units[u].first + tg->units[u].count) {
        o->ustate[u] = (uint8_t)((o->ustate[u] & ~U_OPEN) | U_DONE);
        sp--;
        continue;
      }
      o->stack[sp - 1].i++;
      if (forwarded(s, i)) { /* dropped: its producer, if it waits, runs */
        const uint32_t pu = s->inst_unit[s->match[i]];
        if (!(o->ustate[pu] & (U_DONE | U_OPEN))) {
          o->ustate[pu] |= U_OPEN;
          o->stack[sp].u = pu;
          o->stack[sp++].i = tg->units[pu].first;
        }
        continue;
      }
      if (!o->drop[i])
        append_inst(o, g, i);
    }
  }
  /* a delayed unit nothing here consumed (never: it is U_CONSUMED) would
   * be lost; list any such one where it stands */
  for (uint32_t j = 0; j < g->n_units; j++) {
    const uint32_t u = g->units[j];
    const pto_unit *un = &tg->units[u];
    if (!(o->ustate[u] & U_DONE))
      for (uint32_t i = un->first; i < un->first + un->count; i++)
        if (!o->drop[i])
          append_inst(o, g, i);
    o->ustate[u] &= U_CONSUMED;
  }
}

pto_status pto__fuse_form_subgraphs(part *s, sgraph **out, uint32_t *n_out,
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
    internal[st] = !s->storage_is_output[st] && s->storage_node[st] != PTO_NONE;
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    uint32_t st = in->g.storage;
    if (!reads_global(in) || st >= nt || !internal[st])
      continue;
    uint32_t c = uf_find(s->cluster, s->storage_node[st]);
    if (unit_cluster(s, s->inst_unit[i]) != c || !forwarded(s, i))
      internal[st] = 0;
  }
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    const pto_tinst *in = &tg->insts[i];
    if (is_store(in) && in->g.storage < nt &&
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
  /* the subgraphs, then their unit and instruction lists, in one block
   * (a malloc per list, and a hash table per subgraph below, were a sixth
   * of compiling a DSA decode step: 4537 subgraphs, formed six times) */
  uint32_t *n_units = calloc(2 * (size_t)n + 2, sizeof *n_units);
  if (!n_units)
    return PTO_ENOMEM;
  uint32_t *n_insts = n_units + n + 1, max_insts = 0;
  size_t total = 0;
  for (uint32_t u = 0; u < nu; u++) {
    n_units[s->unit_sg[u]]++;
    for (uint32_t i = tg->units[u].first;
         i < tg->units[u].first + tg->units[u].count; i++)
      n_insts[s->unit_sg[u]] += !drop[i];
  }
  for (uint32_t k = 0; k < n; k++) {
    total += (size_t)n_units[k] + n_insts[k];
    max_insts = n_insts[k] > max_insts ? n_insts[k] : max_insts;
  }
  sgraph *sgs = malloc((n + 1) * sizeof *sgs + (total + 1) * sizeof(uint32_t));
  uint32_t *used = malloc((max_insts + 1) * sizeof *used); /* slots */
  hmap loads;
  if (!sgs || !used || hmap_init(&loads, max_insts)) {
    free(n_units);
    free(sgs);
    free(used);
    return PTO_ENOMEM;
  }
  uint32_t *list = (uint32_t *)(sgs + n + 1);
  for (uint32_t k = 0; k < n; k++) {
    sgs[k].units = list;
    list += n_units[k];
    sgs[k].insts = list;
    list += n_insts[k];
    sgs[k].n_units = sgs[k].n_insts = 0;
  }
  for (uint32_t u = 0; u < nu; u++) {
    sgraph *g = &sgs[s->unit_sg[u]];
    g->units[g->n_units++] = u;
  }
  /* a window loaded twice in one subgraph is loaded once (l1_reuse merges
   * tasks precisely to share such loads): append_inst */
  const uint32_t cap = loads.cap;
  order o = {s, alias, drop, &loads, used, 0, NULL, NULL, NULL, 0, NULL};
  o.ustate = calloc(nu + 1, 1);
  o.wstamp = calloc(tg->n_storages + 1, sizeof *o.wstamp);
  o.seq = malloc((tg->n_insts + 1) * sizeof *o.seq);
  o.stack = malloc((nu + 1) * sizeof *o.stack);
  if (!o.ustate || !o.wstamp || !o.seq || !o.stack) {
    free(o.ustate), free(o.wstamp), free(o.seq), free(o.stack);
    hmap_free(&loads);
    free(n_units), free(sgs), free(used);
    return PTO_ENOMEM;
  }
  for (uint32_t i = 0; i < tg->n_insts; i++)
    if (forwarded(s, i))
      o.ustate[s->inst_unit[s->match[i]]] |= U_CONSUMED;
  for (uint32_t k = 0; k < n; k++) {
    for (loads.cap = 64; loads.cap < 2 * n_insts[k] + 2;)
      loads.cap *= 2;
    order_subgraph(&o, &sgs[k], k + 1);
    while (o.n_used)
      loads.keys[used[--o.n_used]] = 0;
  }
  free(o.ustate), free(o.wstamp), free(o.seq), free(o.stack);
  loads.cap = cap;
  hmap_free(&loads);
  free(used);
  free(n_units);
  *out = sgs;
  *n_out = n;
  return PTO_OK;
}

/* Splits subgraph sg, which does not fit (local memory, or the tiles a
 * program can address): dissolves the fused ops it joins
 * or, when it holds the units of one op that l1_reuse joined, halves that
 * op's l1_reuse. Each split dissolves an op or halves a count, so retries
 * end. Returns 2 when it dissolved ops, 1 when it halved an l1_reuse, 0
 * when nothing is left to split (a single unit). */
int pto__fuse_split_subgraph(part *s, const sgraph *sg) {
  const pto_tgraph *tg = s->tg;
  int changed = 0, several = 0;
  uint32_t first = tg->units[sg->units[0]].node;
  for (uint32_t j = 1; j < sg->n_units; j++)
    several |= tg->units[sg->units[j]].node != first;
  for (uint32_t j = 0; several && j < sg->n_units; j++) {
    uint32_t node = tg->units[sg->units[j]].node;
    if (node != PTO_NONE && !s->dissolved[node])
      s->dissolved[node] = 1, changed = 2;
  }
  /* units of one op are consecutive: halve each op's l1_reuse once */
  for (uint32_t j = 0; !changed && j < sg->n_units; j++) {
    uint32_t node = tg->units[sg->units[j]].node;
    if (node == PTO_NONE || s->reuse[node] <= 1 ||
        (j && tg->units[sg->units[j - 1]].node == node))
      continue;
    s->reuse[node] /= 2;
    changed = 1;
  }
  return changed;
}

/* A forwarded load, as the units and nodes it joins. */
typedef struct fwd {
  uint32_t p, c;   /* producer and consumer node */
  uint32_t up, uc; /* producer and consumer unit */
} fwd;

static int fwd_cmp(const void *a, const void *b) {
  const fwd *x = a, *y = b;
  if (x->p != y->p)
    return x->p < y->p ? -1 : 1;
  return x->c < y->c ? -1 : x->c > y->c;
}

/* Parallelism against fusion. Fusing joins every unit of a consumer with
 * the producer units it reads, so a consumer that reads many of them (a
 * column reduction of row tiles) or many consumers of one producer tile
 * collapse a cluster into a few subgraphs: one worker may end up doing what
 * the unfused ops would spread over all of them. A cluster of several ops
 * whose subgraphs (from pto__fuse_form_subgraphs, in s->unit_sg) number fewer
 * than min(workers of its core type, the most tasks one of its ops has alone)
 * gives up fusions: the edge between two of its ops whose units, joined on
 * that edge alone, form the fewest components (the one that collapses it),
 * and of those the one that joins the most units, and every other edge
 * as bad. In a chain of one-tile ops between a fan-in and a fan-out (an
 * RMS norm: x * x, rowsum, muls, adds, rsqrt, then mul by x) every edge
 * leaves one component, and taking the first one cut the chain an op at a
 * time, where the fan-in and the fan-out (16 units joined each) are the
 * edges that collapse it; constants broadcast to several consumers (the
 * prefill's attention.merge) are as many fan-outs, once cut one per pass.
 * Each pass is a clustering and a formation of every subgraph. Returns 1
 * when it vetoed an edge (form the subgraphs again), 0 when every cluster
 * keeps the workers busy, or -1 out of memory. */
int pto__fuse_split_for_parallelism(part *s) {
  const pto_tgraph *tg = s->tg;
  uint32_t nn = s->p->n_nodes, nu = tg->n_units;
  uint32_t *units = calloc(nn + 1, sizeof *units);  /* per node */
  uint32_t *most = calloc(nn + 1, sizeof *most);    /* per cluster root */
  uint32_t *n_sg = calloc(nn + 1, sizeof *n_sg);    /* per cluster root */
  uint32_t *nodes = calloc(nn + 1, sizeof *nodes);  /* per cluster root */
  uint32_t *seen = malloc((nu + 1) * sizeof *seen); /* per subgraph */
  uint32_t *uf = malloc((nu + 1) * sizeof *uf);     /* per unit */
  uint8_t *core = calloc(nn + 1, 1);                /* per cluster root */
  uint8_t *cube = calloc(nn + 1, 1);                /* per node */
  fwd *f = NULL;
  unsigned cap_f = 0, n_f = 0;
  int rc = -1;
  if (!units || !most || !n_sg || !nodes || !seen || !uf || !core || !cube)
    goto out;
  for (uint32_t u = 0; u < nu; u++) {
    seen[u] = PTO_NONE;
    uf[u] = u;
    if (tg->units[u].node != PTO_NONE) {
      units[tg->units[u].node]++;
      cube[tg->units[u].node] |= tg->units[u].core == PTO_CORE_CUBE;
    }
  }
  for (uint32_t v = 0; v < nn; v++) {
    uint32_t c = uf_find(s->cluster, v);
    /* l1_reuse joins cube units only (reuse_l1): a vector op keeps its
     * tasks whatever the knob says */
    uint32_t r = cube[v] ? s->reuse[v] : 1;
    uint32_t alone = (units[v] + r - 1) / r;
    nodes[c] += units[v] > 0;
    if (alone > most[c])
      most[c] = alone;
  }
  for (uint32_t u = 0; u < nu; u++) { /* distinct subgraphs per cluster */
    uint32_t node = tg->units[u].node, sg = s->unit_sg[u];
    if (node == PTO_NONE)
      continue;
    uint32_t c = uf_find(s->cluster, node);
    core[c] = (uint8_t)tg->units[u].core;
    if (seen[sg] != c) {
      seen[sg] = c;
      n_sg[c]++;
    }
  }
  int any = 0;
  for (uint32_t c = 0; c < nn; c++) {
    if (uf_find(s->cluster, c) != c)
      continue;
    if (nodes[c] < 2) { /* one op: nothing to split */
      most[c] = 0;
      continue;
    }
    uint32_t w = core[c] < PTO_CORE_MEMORY && s->m->workers[core[c]]
                     ? s->m->workers[core[c]]
                     : 1;
    uint32_t need = most[c] < w ? most[c] : w;
    most[c] = n_sg[c] < need; /* from here: whether c is too collapsed */
    any |= (int)most[c];
  }
  rc = 0;
  if (!any)
    goto out;
  /* the forwarded loads inside collapsed clusters, by node edge */
  for (uint32_t i = 0; i < tg->n_insts; i++) {
    if (!forwarded(s, i))
      continue;
    uint32_t uc = s->inst_unit[i], up = s->inst_unit[s->match[i]];
    uint32_t pn = tg->units[up].node, cn = tg->units[uc].node;
    if (pn == cn || !most[uf_find(s->cluster, cn)])
      continue;
    if (pto__grow((void **)&f, sizeof *f, &cap_f, n_f + 1)) {
      rc = -1;
      goto out;
    }
    f[n_f++] = (fwd){pn, cn, up, uc};
  }
  qsort(f, n_f, sizeof *f, fwd_cmp);
  /* per collapsed cluster, the edge with the fewest components, then the
   * most joins */
  uint32_t *best = n_sg; /* reused: per cluster root, the best fwd index */
  uint64_t *comps = NULL, *joined;
  for (uint32_t c = 0; c < nn; c++)
    best[c] = PTO_NONE;
  comps = malloc(2 * (n_f + 1) * sizeof *comps);
  if (!comps) {
    rc = -1;
    goto out;
  }
  joined = comps + n_f + 1;
  for (unsigned a = 0, b; a < n_f; a = b) {
    uint64_t joins = 0;
    for (b = a; b < n_f && f[b].p == f[a].p && f[b].c == f[a].c; b++) {
      uint32_t x = uf_find(uf, f[b].up), y = uf_find(uf, f[b].uc);
      if (x != y) {
        uf[x > y ? x : y] = x < y ? x : y;
        joins++;
      }
    }
    for (unsigned k = a; k < b; k++) /* reset what this edge touched */
      uf[f[k].up] = f[k].up, uf[f[k].uc] = f[k].uc;
    comps[a] = (uint64_t)units[f[a].p] + units[f[a].c] - joins;
    joined[a] = joins;
    uint32_t c = uf_find(s->cluster, f[a].c), o = best[c];
    if (o == PTO_NONE || comps[a] < comps[o] ||
        (comps[a] == comps[o] && joins > joined[o]))
      best[c] = a;
  }
  for (uint32_t c = 0; c < nn; c++) {
    if (uf_find(s->cluster, c) != c || !most[c])
      continue;
    rc = 1;
    if (best[c] == PTO_NONE) { /* no edge to blame: undo the cluster */
      uint32_t v = c;
      do { /* its member ring */
        s->dissolved[v] = 1;
        v = s->cnext[v];
      } while (v != c);
    }
  }
  /* the other clusters give up their best edge and every edge as bad */
  for (unsigned a = 0, b; a < n_f; a = b) {
    for (b = a; b < n_f && f[b].p == f[a].p && f[b].c == f[a].c; b++)
      ;
    uint32_t c = uf_find(s->cluster, f[a].c), o = best[c];
    if (!most[c] || o == PTO_NONE || comps[a] != comps[o] ||
        joined[a] != joined[o])
      continue;
    if (pto__grow((void **)&s->veto, sizeof *s->veto, &s->cap_veto,
                  s->n_veto + 1)) {
      rc = -1;
      break;
    }
    s->veto[s->n_veto][0] = f[a].p;
    s->veto[s->n_veto][1] = f[a].c;
    s->n_veto++;
  }
  free(comps);
out:
  free(units);
  free(most);
  free(n_sg);
  free(nodes);
  free(seen);
  free(uf);
  free(core);
  free(cube);
  free(f);
  return rc;
}
