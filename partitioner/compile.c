/* pto_compile: program -> tiles -> subgraphs -> executable, and the
 * executable's queries. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buffer.h"
#include "core/config.h"
#include "core/exe.h"
#include "partitioner/partition.h"
#include "pto/executable.h"
#include "pto/runtime.h"
#include "tileops/tileops.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

pto_status pto_matmul_tile(const pto_machine *mach, int64_t batch, int64_t M,
                           int64_t N, int64_t K, uint32_t workers,
                           pto_tile_shape *tile) {
  uint32_t mr, nr;
  pto_matmul_panel(&mr, &nr);
  return pto__matmul_tile(mach, batch, M, N, K, workers, mr, nr, tile);
}

void pto_executable_free(pto_executable *e) {
  if (!e)
    return;
  for (uint32_t q = 0; q < e->n_progs; q++) {
    free(e->progs[q].insts);
    free(e->progs[q].tiles);
    free(e->progs[q].slots);
  }
  if (e->sched_free)
    e->sched_free(e->sched);
  free(e->progs);
  free(e->tasks);
  free(e->succ);
  free(e->args);
  free(e->storages);
  free(e->unit_subgraph);
  free(e->subgraph_task);
  pto__tgraph_free(&e->tg);
  pto_program_free(e->prog);
  pto__arena_free(&e->arena);
  free(e);
}

const char *pto_executable_error(const pto_executable *e) {
  return e ? e->err.msg : "executable is NULL";
}

const char *pto_executable_warnings(const pto_executable *e) {
  return e && e->warnings ? e->warnings : "";
}

/* Settings of cfg the program does not read, kept as e's warnings. */
static pto_status note_unused_settings(pto_executable *e, const pto_program *p,
                                       const pto_config *cfg) {
  char *lines = NULL;
  pto_status st = pto__config_unused(cfg, p, &lines);
  if (st == PTO_OK && lines) {
    e->warnings = pto__arena_strdup(&e->arena, lines);
    st = e->warnings ? PTO_OK : PTO_ENOMEM;
  }
  free(lines);
  return st;
}

/* Names programs after their instructions: "p0:TLOAD.TMULS.TLOAD.TADD..." */
static void name_programs(pto_executable *e) {
  for (uint32_t q = 0; q < e->n_progs; q++) {
    pto_cprog *pr = &e->progs[q];
    char buf[160];
    size_t n = (size_t)snprintf(buf, sizeof buf, "p%u:%s", q,
                                pr->n_insts ? "" : "barrier");
    for (uint32_t i = 0; i < pr->n_insts && n < sizeof buf; i++)
      n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? "." : "",
                            pto__insn_name(pr->insts[i].op));
    pr->name = pto__arena_strdup(&e->arena, buf);
  }
}

/* Bytes [offset, offset + rows * stride * size) of a program tile. */
static int tiles_overlap(const pto_ptile *x, const pto_ptile *y) {
  uint64_t xe = x->offset + (uint64_t)x->rows * x->stride * pto_dtype_size(x->dtype);
  uint64_t ye = y->offset + (uint64_t)y->rows * y->stride * pto_dtype_size(y->dtype);
  return x->level == y->level && x->offset < ye && y->offset < xe;
}

static int tiles_same(const pto_ptile *x, const pto_ptile *y) {
  return x->level == y->level && x->offset == y->offset &&
         x->stride == y->stride && x->dtype == y->dtype &&
         x->vrows == y->vrows && x->vcols == y->vcols;
}

/* Removes instruction k of pr. */
static void drop_inst(pto_cprog *pr, uint32_t k) {
  memmove(&pr->insts[k], &pr->insts[k + 1],
          (pr->n_insts - k - 1) * sizeof *pr->insts);
  pr->n_insts--;
}

/* Makes pi the built-in instruction op, with the active table's entry
 * point for it (a peephole's fused instruction). */
static void retarget(pto_pinst *pi, int op) {
  pi->op = op;
  pi->fn = pto__isa_active()->fn[op];
}

/* Whether any instruction of pr other than number `but` reads tile t. */
static int read_elsewhere(const pto_cprog *pr, uint32_t but, uint32_t t) {
  for (uint32_t j = 0; j < pr->n_insts; j++)
    for (int i = 0; j != but && i < pr->insts[j].n_src; i++)
      if (pr->insts[j].src[i] == t)
        return 1;
  return 0;
}

/* Peephole: TROWEXPANDSUB t = x - v followed by TEXP u = exp(t), t read by
 * nothing else, becomes TROWEXPANDEXPDIF u = exp(x - v): the same values
 * (an f32 difference, then exp) in one pass over the tile instead of two
 * (softmax's exp(x - rowmax)). Only where u's buffer is x's own or clear of
 * both sources, as the planner laid them out for the two-step form. */
static void fuse_expdif(pto_executable *e) {
  for (uint32_t q = 0; q < e->n_progs; q++) {
    pto_cprog *pr = &e->progs[q];
    for (uint32_t k = 0; k + 1 < pr->n_insts; k++) {
      pto_pinst *sub = &pr->insts[k], *ex = &pr->insts[k + 1];
      if (sub->op != PTO_OP_TROWEXPANDSUB || ex->op != PTO_OP_TEXP ||
          ex->src[0] != sub->dst[0])
        continue;
      const int used = read_elsewhere(pr, k + 1, sub->dst[0]);
      const pto_ptile *u = &pr->tiles[ex->dst[0]], *x = &pr->tiles[sub->src[0]],
                      *v = &pr->tiles[sub->src[1]];
      if (used || tiles_overlap(u, v) ||
          (tiles_overlap(u, x) && !tiles_same(u, x)))
        continue;
      retarget(ex, PTO_OP_TROWEXPANDEXPDIF);
      ex->n_src = 2;
      ex->src[0] = sub->src[0];
      ex->src[1] = sub->src[1];
      drop_inst(pr, k);
    }
  }
}

/* Peephole, after fuse_expdif: TROWEXPANDEXPDIF u = exp(x - v) followed by
 * TROWSUM s = rowsum(u) becomes TROWEXPANDEXPDIFSUM (u, s): the sums are
 * taken while u is written instead of in a second pass over it (softmax's
 * exp and row sum), the same values (the fused SIMD sum is TROWSUM's, bit
 * for bit). Only where s is clear of u and x, and of v or v itself (each
 * row's v is read before that row's sum is written). */
static void fuse_expdif_sum(pto_executable *e) {
  for (uint32_t q = 0; q < e->n_progs; q++) {
    pto_cprog *pr = &e->progs[q];
    for (uint32_t k = 0; k + 1 < pr->n_insts; k++) {
      pto_pinst *ex = &pr->insts[k], *sum = &pr->insts[k + 1];
      if (ex->op != PTO_OP_TROWEXPANDEXPDIF || sum->op != PTO_OP_TROWSUM ||
          sum->src[0] != ex->dst[0])
        continue;
      const pto_ptile *s = &pr->tiles[sum->dst[0]], *u = &pr->tiles[ex->dst[0]],
                      *x = &pr->tiles[ex->src[0]], *v = &pr->tiles[ex->src[1]];
      if (tiles_overlap(s, u) || tiles_overlap(s, x) ||
          (tiles_overlap(s, v) && !tiles_same(s, v)))
        continue;
      retarget(ex, PTO_OP_TROWEXPANDEXPDIFSUM);
      ex->n_dst = 2;
      ex->dst[1] = sum->dst[0];
      drop_inst(pr, k + 1);
    }
  }
}

/* Peephole: TROWEXPANDMUL y = x * v followed by a plain TSTORE of y, y read
 * by nothing else, becomes TROWEXPANDMULSTORE: the products go straight to
 * global, the same values, one pass over the tile instead of a multiply into
 * y and a copy of y (softmax's scaling by 1 / row sum). f32 tiles and an f32
 * global only (TSTORE would otherwise convert). */
static void fuse_mul_store(pto_executable *e) {
  for (uint32_t q = 0; q < e->n_progs; q++) {
    pto_cprog *pr = &e->progs[q];
    for (uint32_t k = 0; k + 1 < pr->n_insts; k++) {
      pto_pinst *mul = &pr->insts[k], *st = &pr->insts[k + 1];
      if (mul->op != PTO_OP_TROWEXPANDMUL || st->op != PTO_OP_TSTORE ||
          st->src[0] != mul->dst[0] || (st->flags & PTO_TF_ACC) ||
          st->slot < 0 || pr->slots[st->slot].dtype != PTO_F32)
        continue;
      const int used = read_elsewhere(pr, k + 1, mul->dst[0]);
      const pto_ptile *y = &pr->tiles[mul->dst[0]],
                      *x = &pr->tiles[mul->src[0]];
      if (used || y->dtype != PTO_F32 || x->dtype != PTO_F32 ||
          x->vrows != y->vrows || x->vcols != y->vcols)
        continue;
      retarget(st, PTO_OP_TROWEXPANDMULSTORE);
      st->n_src = 2;
      st->src[0] = mul->src[0];
      st->src[1] = mul->src[1];
      drop_inst(pr, k);
    }
  }
}

/* Peephole: TLOAD x of an f32 window followed by TROWMAX m = rowmax(x)
 * becomes TLOADROWMAX (x, m): the max is taken while the window is read
 * from memory instead of in a second pass over x (softmax's row max), the
 * same values. Only where m is clear of x. */
static void fuse_load_max(pto_executable *e) {
  for (uint32_t q = 0; q < e->n_progs; q++) {
    pto_cprog *pr = &e->progs[q];
    for (uint32_t k = 0; k + 1 < pr->n_insts; k++) {
      pto_pinst *ld = &pr->insts[k], *mx = &pr->insts[k + 1];
      if (ld->op != PTO_OP_TLOAD || mx->op != PTO_OP_TROWMAX ||
          mx->src[0] != ld->dst[0] || ld->slot < 0 ||
          (ld->flags & (PTO_TF_PACK_A | PTO_TF_PACK_B)) ||
          pr->slots[ld->slot].dtype != PTO_F32)
        continue;
      const pto_ptile *x = &pr->tiles[ld->dst[0]], *m = &pr->tiles[mx->dst[0]];
      if (x->dtype != PTO_F32 || m->dtype != PTO_F32 || tiles_overlap(x, m))
        continue;
      retarget(ld, PTO_OP_TLOADROWMAX);
      ld->n_dst = 2;
      ld->dst[1] = mx->dst[0];
      drop_inst(pr, k + 1);
    }
  }
}

/* Peephole, after fuse_load_max and fuse_expdif_sum: TLOADROWMAX (x, m)
 * followed by TROWEXPANDEXPDIFSUM (u, s) of x and m, neither read by
 * anything else, becomes TLOADEXPDIFSUM (u, s): each row's exps are taken
 * right after its max, re-reading the row from cache instead of from a
 * copy in x (softmax's first two passes as one), the same values. */
static void fuse_load_expdif_sum(pto_executable *e) {
  for (uint32_t q = 0; q < e->n_progs; q++) {
    pto_cprog *pr = &e->progs[q];
    for (uint32_t k = 0; k + 1 < pr->n_insts; k++) {
      pto_pinst *ld = &pr->insts[k], *ex = &pr->insts[k + 1];
      if (ld->op != PTO_OP_TLOADROWMAX ||
          ex->op != PTO_OP_TROWEXPANDEXPDIFSUM ||
          ex->src[0] != ld->dst[0] || ex->src[1] != ld->dst[1] ||
          read_elsewhere(pr, k + 1, ld->dst[0]) ||
          read_elsewhere(pr, k + 1, ld->dst[1]))
        continue;
      retarget(ld, PTO_OP_TLOADEXPDIFSUM);
      ld->dst[0] = ex->dst[0];
      ld->dst[1] = ex->dst[1];
      drop_inst(pr, k + 1);
    }
  }
}

/* Whether no task binds slots l1 and l2 of program q to one storage. */
static int slots_apart(const pto_executable *e, uint32_t q, int32_t l1,
                       int32_t l2) {
  const pto_cprog *pr = &e->progs[q];
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    const pto_task *task = &e->tasks[t];
    for (uint32_t i = 0; task->prog == q && i < task->n_inst; i++) {
      const pto_targ *a = &e->args[task->args + i * pr->n_slots];
      if (a[l1].storage == a[l2].storage)
        return 0;
    }
  }
  return 1;
}

/* Peephole, after fuse_load_expdif_sum and fuse_mul_store: TLOADEXPDIFSUM
 * (u, s) of g, TRECIP v = 1 / s and TROWEXPANDMULSTORE g2 = u * v, v read
 * by nothing else, become TLOADSOFTMAXSTORE (u, s) of g and g2: each row's
 * products are stored while the next row's exps are taken, instead of all
 * the exps and then all the stores (softmax in one pass over global), the
 * same values. v is no longer written, u and s still are. Only where g and
 * g2 are different tensors in every task that runs the program. */
static void fuse_softmax_store(pto_executable *e) {
  for (uint32_t q = 0; q < e->n_progs; q++) {
    pto_cprog *pr = &e->progs[q];
    for (uint32_t k = 0; k + 2 < pr->n_insts; k++) {
      pto_pinst *ld = &pr->insts[k], *rc = &pr->insts[k + 1],
                *ms = &pr->insts[k + 2];
      if (ld->op != PTO_OP_TLOADEXPDIFSUM || rc->op != PTO_OP_TRECIP ||
          ms->op != PTO_OP_TROWEXPANDMULSTORE || rc->src[0] != ld->dst[1] ||
          ms->src[0] != ld->dst[0] || ms->src[1] != rc->dst[0] ||
          read_elsewhere(pr, k + 2, rc->dst[0]) ||
          !slots_apart(e, q, ld->slot, ms->slot))
        continue;
      retarget(ld, PTO_OP_TLOADSOFTMAXSTORE);
      ld->slot2 = ms->slot;
      drop_inst(pr, k + 2);
      drop_inst(pr, k + 1);
    }
  }
}

/* Marks PTO_TF_STREAM on plain TSTOREs that write only program outputs no
 * task reads back: that data is done with, so a SIMD table may write it
 * around the caches (streaming stores), saving the read-for-ownership of
 * every line and the eviction of data that is still to be used. Programs
 * are shared by tasks, so every binding of the slot must qualify. */
static pto_status mark_streaming_stores(pto_executable *e) {
  uint8_t *read = calloc(e->n_storages + 1, 1);
  uint8_t *no = calloc(e->n_progs + 1, 1); /* per program: any disqualifies */
  if (!read || !no) {
    free(read);
    free(no);
    return PTO_ENOMEM;
  }
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t t = 0; t < e->n_tasks; t++) {
      const pto_task *task = &e->tasks[t];
      const pto_cprog *pr = &e->progs[task->prog];
      for (uint32_t k = 0; k < pr->n_insts; k++) {
        const pto_pinst *in = &pr->insts[k];
        for (int j = 0; j < 2; j++) {
          const int32_t l = pto__pinst_slot(in, j);
          const int stores = pto__pinst_stores(in, j);
          for (uint32_t i = 0; l >= 0 && i < task->n_inst; i++) {
            uint32_t st =
                e->args[task->args + i * pr->n_slots + (uint32_t)l].storage;
            if (pass == 0 && !stores)
              read[st] = 1;
            if (pass == 1 && stores &&
                (read[st] || e->storages[st].kind != PTO_STORAGE_OUTPUT))
              no[task->prog] = 1;
          }
        }
      }
    }
  for (uint32_t q = 0; q < e->n_progs; q++)
    for (uint32_t k = 0; k < e->progs[q].n_insts && !no[q]; k++) {
      pto_pinst *in = &e->progs[q].insts[k];
      if ((pto__insn_stores(in->op) || in->slot2 >= 0) &&
          !(in->flags & PTO_TF_ACC))
        in->flags |= PTO_TF_STREAM;
    }
  free(read);
  free(no);
  return PTO_OK;
}

pto_status pto_compile(pto_program *p, const pto_config *cfg,
                       pto_executable **out) {
  if (out)
    *out = NULL;
  if (!p)
    return pto__last_error(PTO_EINVAL, "pto_compile: the program is NULL");
  pto__error_clear(&p->run_err);
  if (p->err.status != PTO_OK)
    return p->err.status;
  if (!out)
    return pto__error_set(&p->run_err, PTO_EINVAL,
                          "compile: exe is NULL (pass the address of a "
                          "pto_executable * to receive the executable)");
  if (p->n_outputs == 0)
    return pto__error_set(&p->run_err, PTO_EINVAL,
                          "compile: program '%s' has no outputs", p->name);
  char isa_msg[256];
  if (pto__isa_check(isa_msg, sizeof isa_msg))
    return pto__error_set(&p->run_err, PTO_EISA, "compile: %s", isa_msg);
  pto_config *own = NULL;
  if (!cfg) { /* the defaults, or PTO_CONFIG's file */
    pto_error env_err;
    if (!(own = pto__config_from_env(&env_err)))
      return pto__error_set(&p->run_err, env_err.status, "compile: %s",
                            env_err.msg);
    cfg = own;
  }
  pto_status st = PTO_ENOMEM;
  pto_executable *e = calloc(1, sizeof *e);
  if (!e)
    goto fail_alloc;
  pto__arena_init(&e->arena);
  e->machine = *pto_config_machine(cfg);
  char *cfg_json = pto_config_to_json(cfg); /* recorded in traces */
  e->config_json = cfg_json ? pto__arena_strdup(&e->arena, cfg_json) : NULL;
  free(cfg_json);
  e->n_inputs = p->n_inputs;
  e->n_outputs = p->n_outputs;
  double t0 = now_ms();
  pto_tile_ctx tctx = {&e->machine, 0, 0};
  pto_matmul_panel(&tctx.mr, &tctx.nr);
  st = (e->prog = pto__program_snapshot(p))
           ? pto__tile(&e->tg, e->prog, cfg, &tctx)
           : PTO_ENOMEM;
  if (st) {
    if (e->prog)
      pto__error_set(&p->run_err, st, "%s", e->tg.err.msg);
    goto fail_compile;
  }
  double t1 = now_ms();
  e->stats.ms_tile = t1 - t0;
  st = pto__partition(e, cfg, &e->machine);
  if (st) {
    pto__error_set(&p->run_err, st, "%s", e->err.msg);
    goto fail_compile;
  }
  fuse_expdif(e);
  fuse_expdif_sum(e);
  fuse_mul_store(e);
  fuse_load_max(e);
  fuse_load_expdif_sum(e);
  fuse_softmax_store(e);
  name_programs(e);
  if ((st = mark_streaming_stores(e)))
    goto fail_compile;
  if ((st = note_unused_settings(e, e->prog, cfg)))
    goto fail_compile;
  if (e->workspace_bytes) {
    /* each run takes its own workspace from the pool: leave one there,
     * mapped, so the first run does not fault it in */
    size_t cap = 0;
    void *ws = e->workspace_bytes <= SIZE_MAX
                   ? pto__workspace_take((size_t)e->workspace_bytes, &cap)
                   : NULL;
    if (!ws) {
      st = pto__error_set(&p->run_err, PTO_ENOMEM,
                          "compile: cannot allocate a %llu-byte workspace",
                          (unsigned long long)e->workspace_bytes);
      goto fail_compile;
    }
    pto__workspace_give(ws, cap);
  }
  e->stats.ms_total = now_ms() - t0;
  pto_config_free(own);
  *out = e;
  return PTO_OK;

fail_compile:
  pto_executable_free(e);
fail_alloc:
  if (st == PTO_ENOMEM && p->run_err.status == PTO_OK)
    pto__error_set(&p->run_err, st, "compile: out of memory");
  pto_config_free(own);
  return st;
}

pto_status pto_executable_stats(const pto_executable *e, pto_exe_stats *s) {
  if (!e)
    return pto__last_error(PTO_EINVAL,
                           "pto_executable_stats: the executable is NULL");
  if (!s)
    return pto__error_set(pto__exe_err(e), PTO_EINVAL, "stats: s is NULL");
  const pto_compile_stats *c = &e->stats;
  memset(s, 0, sizeof *s);
  s->tensor_ops = c->tensor_ops;
  s->tile_instructions = c->tile_instructions;
  s->subgraphs = c->subgraphs;
  s->programs = c->programs;
  s->tasks = c->tasks;
  s->edges = c->edges;
  s->boundary_bytes = c->boundary_bytes;
  s->workspace_bytes = c->workspace_bytes;
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    s->mem_peak[l] = c->mem_peak[l];
  s->ms_tile = c->ms_tile;
  s->ms_partition = c->ms_partition;
  s->ms_plan = c->ms_plan;
  s->ms_graph = c->ms_graph;
  s->ms_total = c->ms_total;
  return PTO_OK;
}

uint32_t pto_executable_num_tasks(const pto_executable *e) {
  return e ? e->n_tasks : 0;
}
uint32_t pto_executable_task_program(const pto_executable *e, uint32_t t) {
  return e && t < e->n_tasks ? e->tasks[t].prog : UINT32_MAX;
}
const char *pto_executable_task_label(const pto_executable *e, uint32_t t) {
  return e && t < e->n_tasks ? e->tasks[t].label : "";
}
uint32_t pto_executable_task_succ(const pto_executable *e, uint32_t t,
                                  const uint32_t **succ) {
  if (!e || t >= e->n_tasks) {
    if (succ)
      *succ = NULL;
    return 0;
  }
  if (succ)
    *succ = e->succ + e->tasks[t].succ;
  return e->tasks[t].n_succ;
}
const char *pto_executable_program_name(const pto_executable *e,
                                        uint32_t q) {
  return e && q < e->n_progs ? e->progs[q].name : "";
}
