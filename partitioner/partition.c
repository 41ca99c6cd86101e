/* The partitioner: tile graph -> subgraphs -> compiled programs -> tasks.
 *
 * 1. Fusion at op level: a producer op and a consumer op may share subgraphs
 *    when they run on the same core type and every window the consumer loads
 *    from the producer is exactly a tile the producer stores. Ops are merged
 *    into clusters greedily, never creating a cycle between clusters, and only
 *    when every edge between the two clusters is such an exact match; a
 *    cluster whose subgraphs would be fewer than the workers can use gives
 *    up the fusion that collapses it.
 * 2. Subgraphs: units of one cluster joined by forwarded store->load pairs.
 *    Forwarded loads disappear; a store disappears when nothing outside the
 *    cluster reads its tensor and it is not an output.
 * 3. Local memory: each subgraph's tiles get fixed offsets per level by
 *    liveness; a subgraph that does not fit (local memory, or the tiles a
 *    program addresses) is split (its fused ops dissolved, or its l1_reuse
 *    group halved), and a unit that does not fit is an error naming the op,
 *    the level, the bytes needed and the capacity.
 * 4. Isomorphism: a subgraph's canonical form (opcodes, dtypes, tile shapes,
 *    internal edges, window shapes; not which tiles it touches) is hashed
 *    with xxHash and compared exactly; equal forms share one program.
 * 5. Tasks, their read-after-write dependencies, and the workspace.
 * Steps 1 and 2 live in fuse.c, 3 in plan.c, 5 in graph.c (shared state in
 * part.h); this file runs them and deduplicates the programs (step 4). */
#include "partitioner/partition.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "partitioner/part.h"
#include "tileops/tileops.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The compute term of a task's cost estimate, bytes moved + flops / 8:
 * the flops of its program's matmuls (the table's, pto_insn_facts.flops),
 * each divided by 8. The other instructions' flops are left out: they are
 * bound by the bytes their loads and stores move, which the estimate
 * counts. */
/* One instance's cost, the critical-path priority's unit: the global bytes
 * its instructions move and an eighth of its matmuls' flops, as the
 * instruction table states them (a gather's bytes are the rows it
 * gathers, not its table: counted as the window its slot names, a task
 * gathering 2 048 rows of a 1.2 GB KV cache cost as much as reading it,
 * and every such task's path looked alike). */
static uint64_t program_cost(const pto_cprog *pr) {
  uint64_t cost = 0;
  for (uint32_t j = 0; j < pr->n_insts; j++) {
    const pto_pinst *pi = &pr->insts[j];
    pto_insn_shape sh;
    pto__plan_shape(pr, pi, 0, &sh);
    cost += pto__insn_bytes_of(&sh);
    if (pto__insn_info(pi->op)->family == PTO_FAMILY_MATMUL)
      cost += pto__insn_flops_of(&sh) / 8;
  }
  return cost;
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

/* Records that subgraph sg, needing `need` bytes of level lvl, had its
 * fusions undone: a warning line naming its ops (the first few) and the
 * sizes, for the first few such subgraphs. */
static void note_undone(part *s, const sgraph *sg, pto_mem_level lvl,
                        uint64_t need) {
  const pto_tgraph *tg = s->tg;
  uint32_t prev = PTO_NONE, n_ops = 0, node0 = PTO_NONE, chosen = 0;
  char ops[400] = "";
  size_t len = 0;
  for (uint32_t j = 0; j < sg->n_units; j++) {
    const uint32_t node = tg->units[sg->units[j]].node;
    if (node == PTO_NONE || node == prev)
      continue;
    prev = node;
    chosen |= tg->vec_chosen[node];
    if (node0 == PTO_NONE)
      node0 = node;
    if (n_ops++ < 4 && len < sizeof ops) {
      const pto_node *pn = s->p->nodes[node];
      len += (size_t)snprintf(ops + len, sizeof ops - len, "%s%s -> '%s'",
                              n_ops > 1 ? ", " : "", pto__top_name(pn->op),
                              pn->out[0]->name);
    }
  }
  /* a chosen tile a quarter the size may fit: pto_compile tries it (a
   * subgraph far larger holds whole rows of column tiles: it would not) */
  const int may_fit = need <= (uint64_t)s->m->mem[lvl] << PTO_VEC_SHRINK_MAX;
  s->undone_chosen |= chosen && may_fit;
  if (s->n_undone++ >= 4 || node0 == PTO_NONE)
    return;
  const pto_tile_shape *ts = &tg->node_tile[node0];
  size_t used = strlen(s->undone);
  snprintf(s->undone + used, sizeof s->undone - used,
           "fusion undone: the subgraph of %s%s needs %" PRIu64
           " bytes of %s, the machine '%s' has %zu (vector tile %ux%u): its "
           "ops run as separate passes through memory%s\n",
           ops, n_ops > 4 ? " and more" : "", need, pto_mem_level_name(lvl),
           s->m->name, s->m->mem[lvl], ts->vec_rows, ts->vec_cols,
           may_fit ? " (a smaller tile keeps them fused)" : "");
}

/* Compiles every subgraph; splits clusters that would leave workers idle
 * (pto__fuse_split_for_parallelism) and subgraphs that overflow local memory or
 * a program's limits (pto__fuse_split_subgraph), and retries; fails when a
 * single unit does not fit. */
static pto_status compile_subgraphs(part *s, sgraph **sgs_out, uint32_t *n_out,
                                    cbuild **builds_out, uint32_t *alias,
                                    uint8_t *drop) {
  pto_tgraph *tg = s->tg;
  for (;;) {
    sgraph *sgs;
    uint32_t n;
    pto_status st = pto__fuse_form_subgraphs(s, &sgs, &n, alias, drop);
    if (st)
      return st;
    int split = pto__fuse_split_for_parallelism(s);
    if (split) {
      pto__fuse_free_subgraphs(sgs);
      if (split < 0)
        return PTO_ENOMEM;
      if ((st = pto__fuse_cluster(s)))
        return st;
      continue;
    }
    cbuild *builds = calloc(n + 1, sizeof *builds);
    uint32_t *tov = malloc((tg->n_vals + 1) * sizeof *tov);
    if (!builds || !tov) {
      free(builds);
      free(tov);
      pto__fuse_free_subgraphs(sgs);
      return PTO_ENOMEM;
    }
    for (uint32_t v = 0; v < tg->n_vals; v++)
      tov[v] = PTO_NONE;
    int retry = 0;
    for (uint32_t k = 0; st == PTO_OK && k < n; k++) {
      builds[k].tile_of_val = tov;
      pto_mem_level lvl = PTO_MEM_UB;
      uint64_t need = 0;
      st = pto__plan_program(s, &sgs[k], alias, tg->units[sgs[k].units[0]].core,
                             &builds[k], &lvl, &need);
      for (uint32_t i = 0; i < sgs[k].n_insts; i++) { /* reset the map */
        const pto_tinst *in = &tg->insts[sgs[k].insts[i]];
        for (int r = 0; r < in->n_src; r++)
          tov[resolve(s, alias, in->src[r])] = PTO_NONE;
        for (int r = 0; r < in->n_dst; r++)
          tov[resolve(s, alias, in->dst[r])] = PTO_NONE;
      }
      builds[k].tile_of_val = NULL;
      if (st != PTO_ECAPACITY && st != PTO_ERANGE)
        continue;
      /* split it; or, when this pass already split another one (perhaps
       * of the same op), look at it again after the retry */
      const int cut = pto__fuse_split_subgraph(s, &sgs[k]);
      if (cut == 2)
        note_undone(s, &sgs[k], lvl, need);
      if (cut || retry) {
        retry = 1;
        st = PTO_OK;
        continue;
      }
      if (st == PTO_ERANGE) {
        fail(s, st,
             "a subgraph of op %s has %" PRIu64 " local tiles; at most "
             "%u fit a program: use larger tiles",
             tg->units[sgs[k].units[0]].node == PTO_NONE
                 ? "output copy"
                 : pto__top_name(
                       s->p->nodes[tg->units[sgs[k].units[0]].node]->op),
             need, (unsigned)UINT16_MAX);
        continue;
      }
      uint32_t node = tg->units[sgs[k].units[0]].node;
      if (node != PTO_NONE && tg->vec_chosen[node])
        s->undone_chosen = 1; /* a smaller chosen tile may fit */
      const pto_tile_shape *ts = node == PTO_NONE ? NULL : &tg->node_tile[node];
      char what[200] = "output copy";
      if (node != PTO_NONE) {
        const pto_node *pn = s->p->nodes[node];
        snprintf(what, sizeof what, "%s%s%s%s -> '%s'", pto__top_name(pn->op),
                 pn->label[0] ? " '" : "", pn->label, pn->label[0] ? "'" : "",
                 pn->out[0]->name);
      }
      char packed[96] = "";
      if (node != PTO_NONE &&
          pto__top_core(s->p->nodes[node]->op) == PTO_CORE_CUBE) {
        uint32_t mr, nr;
        pto__machine_panel(s->m, &mr, &nr);
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
        pto__plan_free(&builds[k]);
      free(builds);
      pto__fuse_free_subgraphs(sgs);
      /* re-cluster without the dissolved ops, and group again */
      if ((st = pto__fuse_cluster(s)))
        return st;
      continue;
    }
    if (st) {
      for (uint32_t k = 0; k < n; k++)
        pto__plan_free(&builds[k]);
      free(builds);
      pto__fuse_free_subgraphs(sgs);
      return st;
    }
    *sgs_out = sgs;
    *n_out = n;
    *builds_out = builds;
    return PTO_OK;
  }
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
  s.load_key = malloc((tg->n_insts + 1) * sizeof *s.load_key);
  s.cluster = malloc((p->n_nodes + 1) * sizeof *s.cluster);
  s.cnext = malloc((p->n_nodes + 1) * sizeof *s.cnext);
  s.dissolved = calloc(p->n_nodes + 1, 1);
  s.reuse = malloc((p->n_nodes + 1) * sizeof *s.reuse);
  s.unit_sg = malloc((tg->n_units + 1) * sizeof *s.unit_sg);
  s.inst_unit = malloc((tg->n_insts + 1) * sizeof *s.inst_unit);
  s.storage_node = malloc((tg->n_storages + 1) * sizeof *s.storage_node);
  s.storage_is_output = calloc(tg->n_storages + 1, 1);
  sgraph *sgs = NULL;
  uint32_t n_sg = 0;
  cbuild *builds = NULL;
  access *acc = NULL;
  uint32_t *prog_of = NULL, *mark = NULL;
  if (!alias || !drop || !s.match || !s.load_key || !s.cluster || !s.cnext ||
      !s.dissolved || !s.reuse || !s.unit_sg || !s.inst_unit ||
      !s.storage_node || !s.storage_is_output) {
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
  for (uint32_t v = 0; v < p->n_nodes; v++) {
    int64_t k = knob(&s, v, PTO_KNOB_L1_REUSE);
    s.reuse[v] = k < 1 ? 1 : k > UINT32_MAX ? UINT32_MAX : (uint32_t)k;
  }

  if ((st = pto__fuse_find_matches(&s)) || (st = pto__fuse_cluster(&s))) {
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
    size_t len = pto__plan_canon(&builds[k].prog, NULL);
    if (len > cbuf_cap) {
      free(cbuf);
      cbuf = malloc(len);
      cbuf_cap = cbuf ? len : 0;
      if (!cbuf) {
        st = fail(&s, PTO_ENOMEM, "out of memory");
        break;
      }
    }
    pto__plan_canon(&builds[k].prog, cbuf);
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
  if ((st = pto__graph_group_tasks(&s, sgs, n_sg, prog_of, e->subgraph_task,
                                   &e->n_tasks))) {
    fail(&s, st, "out of memory");
    goto done;
  }
  e->tasks = calloc(e->n_tasks + 1, sizeof *e->tasks);
  uint32_t n_args = 0;
  for (uint32_t k = 0; k < n_sg; k++)
    n_args += e->progs[prog_of[k]].n_slots;
  e->args = calloc(n_args + 1, sizeof *e->args);
  /* clip offsets of the instances of programs clipped by dynamic dims */
  for (uint32_t k = 0; k < n_sg; k++)
    if (e->progs[prog_of[k]].clipped)
      e->n_clip += PTO_CLIP_WORDS(&e->progs[prog_of[k]]);
  e->clip = e->n_clip ? malloc(e->n_clip * sizeof *e->clip) : NULL;
  acc = malloc((n_args + 1) * sizeof *acc);
  uint32_t *order = malloc((n_sg + 1) * sizeof *order);
  if (!e->tasks || !e->args || !acc || !order || (e->n_clip && !e->clip)) {
    free(order);
    st = fail(&s, PTO_ENOMEM, "out of memory");
    goto done;
  }
  /* members of each task in subgraph order: counting sort by task */
  for (uint32_t k = 0; k < n_sg; k++)
    e->tasks[e->subgraph_task[k]].n_inst++;
  uint32_t a = 0, n_acc = 0;
  uint64_t nc = 0;
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
    task->clip = nc;
    pr->n_tasks++;
    for (uint32_t inst = 0; inst < task->n_inst; inst++, i++) {
      uint32_t k = order[i];
      if (pr->clipped) { /* this instance's offsets of its clips */
        for (uint32_t q = 0; q < pr->n_tiles; q++) {
          const pto_tval *tv = &tg->vals[builds[k].val_of_tile[q]];
          const pto_clip *c[2] = {&tv->cr, &tv->cc};
          for (int j = 0; j < 2; j++) {
            e->clip[nc++] = c[j]->off;
            e->clip[nc++] = c[j]->d1 ? c[j]->mul : 1;
          }
        }
        for (uint32_t l = 0; l < pr->n_slots; l++) {
          const pto_gref *g = &tg->insts[builds[k].slot_inst[l]].g;
          const pto_clip *c[4] = {&g->cr, &g->cc, &g->cb[0], &g->cb[1]};
          for (int j = 0; j < 4; j++) {
            e->clip[nc++] = c[j]->off;
            e->clip[nc++] = c[j]->d1 ? c[j]->mul : 1;
          }
        }
      }
      for (uint32_t l = 0; l < pr->n_slots; l++) {
        const pto_tinst *in = &tg->insts[builds[k].slot_inst[l]];
        uint64_t bytes =
            (uint64_t)(in->g.rows * in->g.cols) * pto_dtype_size(in->g.dtype);
        e->args[a].storage = in->g.storage;
        e->args[a].offset = in->g.offset;
        a++;
        acc[n_acc++] =
            pto__graph_access(t, &in->g, in->g.offset,
                              pto__insn_facts(in->op)->g == PTO_GA_WRITE);
        e->stats.boundary_bytes += bytes;
      }
      task->cost += program_cost(pr);
    }
  }
  free(order);

  /* dependencies: each read depends on every write it overlaps
   * (read-after-write). Each storage is written by one op and intermediates
   * are not reused, so there is no write-after-read or write-after-write. */
  st = pto__graph_edges(e, acc, n_acc);
  if (st) {
    fail(&s, st, "out of memory");
    goto done;
  }
  if ((st = pto__graph_stage_barriers(e, cfg)))
    goto done;
  if ((st = pto__graph_storages(e, tg))) {
    fail(&s, st, "out of memory");
    goto done;
  }
  if ((st = pto__graph_critical_paths(e)))
    goto done;
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
  e->try_smaller = s.undone_chosen;
  if (s.n_undone) {
    size_t used = strlen(s.undone);
    if (s.n_undone > 4)
      snprintf(s.undone + used, sizeof s.undone - used,
               "fusion undone in %u more subgraphs\n", s.n_undone - 4);
    if (!(e->fusion_notes = pto__arena_strdup(&e->arena, s.undone)) && !st)
      st = fail(&s, PTO_ENOMEM, "out of memory");
  }
  free(alias);
  free(drop);
  free(s.match);
  free(s.load_key);
  free(s.cluster);
  free(s.cnext);
  free(s.dissolved);
  free(s.reuse);
  free(s.veto);
  pto__fuse_free_edges(&s.edges);
  free(s.unit_sg);
  free(s.inst_unit);
  free(s.storage_node);
  free(s.storage_is_output);
  free(s.plan_tmp);
  free(prog_of);
  free(mark);
  free(acc);
  for (uint32_t k = 0; builds && k < n_sg; k++)
    pto__plan_free(&builds[k]);
  free(builds);
  pto__fuse_free_subgraphs(sgs);
  /* the execution graph alone: programs, tasks, edges, storages */
  e->stats.ms_graph = t_graph ? now_ms() - t_graph : 0;
  return st;
}
