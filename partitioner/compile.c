/* pto_compile: program -> tiles -> subgraphs -> executable, and the
 * executable's queries. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
  pto__machine_panel(mach, &mr, &nr);
  return pto__matmul_tile(mach, batch, M, N, K, workers, mr, nr, tile);
}

pto_status pto_sparse_attention_tile(const pto_machine *mach, int64_t heads,
                                     int64_t d, int64_t dv, int64_t topk,
                                     pto_tile_shape *tile) {
  uint32_t mr, nr;
  pto__machine_panel(mach, &mr, &nr);
  return pto__attention_tile(mach, heads, d, dv, topk, mr, nr, tile);
}

pto_status pto_matmul_relu_wsum_tile(const pto_machine *mach, int64_t batch,
                                     int64_t rows, int64_t group, int64_t K,
                                     int64_t N, pto_tile_shape *tile) {
  uint32_t mr, nr;
  pto__machine_panel(mach, &mr, &nr);
  return pto__relu_wsum_tile(mach, batch, rows, group, K, N, mr, nr, tile);
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
  free(e->clip);
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

/* e's warnings: the settings of cfg the program does not read, then the
 * fusions the partitioner gave up. */
static pto_status note_warnings(pto_executable *e, const pto_program *p,
                                const pto_config *cfg) {
  char *lines = NULL;
  pto_status st = pto__config_unused(cfg, p, &lines);
  const char *fusion = e->fusion_notes ? e->fusion_notes : "";
  if (st == PTO_OK && (lines || *fusion)) {
    size_t a = lines ? strlen(lines) : 0, b = strlen(fusion);
    char *w = pto__arena_alloc(&e->arena, a + b + 1, 1);
    if (w) {
      memcpy(w, lines ? lines : "", a);
      memcpy(w + a, fusion, b + 1);
    }
    e->warnings = w;
    st = w ? PTO_OK : PTO_ENOMEM;
  }
  free(lines);
  return st;
}

/* One compile of p under cfg (resolved), the vector tiles the compiler
 * chooses shrunk `shrink` times (core/tile_choose.h). *smaller: whether a
 * fusion given up, or the unit that did not fit, had such a tile. */
static pto_status compile_once(pto_program *p, const pto_config *cfg,
                               unsigned shrink, pto_executable **out,
                               int *smaller) {
  *smaller = 0;
  pto_executable *e = calloc(1, sizeof *e);
  if (!e)
    return PTO_ENOMEM;
  pto__arena_init(&e->arena);
  e->machine = *pto_config_machine(cfg);
  char *cfg_json = pto_config_to_json(cfg); /* recorded in traces */
  e->config_json = cfg_json ? pto__arena_strdup(&e->arena, cfg_json) : NULL;
  free(cfg_json);
  e->n_inputs = p->n_inputs;
  e->n_outputs = p->n_outputs;
  double t0 = now_ms();
  pto_tile_ctx tctx = {&e->machine, 0, 0, shrink};
  pto__machine_panel(&e->machine, &tctx.mr, &tctx.nr);
  pto_status st = (e->prog = pto__program_snapshot(p))
                      ? pto__tile(&e->tg, e->prog, cfg, &tctx)
                      : PTO_ENOMEM;
  if (st) {
    if (e->prog)
      pto__error_set(&p->run_err, st, "%s", e->tg.err.msg);
    goto fail;
  }
  double t1 = now_ms();
  e->stats.ms_tile = t1 - t0;
  st = pto__partition(e, cfg, &e->machine);
  *smaller = e->try_smaller && (st == PTO_ECAPACITY || e->fusion_notes);
  if (st) {
    pto__error_set(&p->run_err, st, "%s", e->err.msg);
    goto fail;
  }
  if ((st = pto__rewrite_programs(e)) || (st = note_warnings(e, e->prog, cfg)))
    goto fail;
  e->stats.ms_total = now_ms() - t0;
  *out = e;
  return PTO_OK;
fail:
  pto_executable_free(e);
  return st;
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
  pto_executable *e = NULL;
  pto_status st;
  int smaller = 0;
  for (unsigned shrink = 0;; shrink++) {
    pto__error_clear(&p->run_err);
    st = compile_once(p, cfg, shrink, &e, &smaller);
    if (!smaller || shrink == PTO_VEC_SHRINK_MAX || (st && st != PTO_ECAPACITY))
      break;
    pto_executable_free(e); /* a smaller tile may keep the fusion */
    e = NULL;
  }
  if (st == PTO_ENOMEM && p->run_err.status == PTO_OK)
    pto__error_set(&p->run_err, st, "compile: out of memory");
  pto_config_free(own);
  *out = e;
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

int pto_executable_num_dims(const pto_executable *e) {
  return e ? pto_program_num_dims(e->prog) : 0;
}
const char *pto_executable_dim_name(const pto_executable *e, int i) {
  return e ? pto_program_dim_name(e->prog, i) : "";
}
int64_t pto_executable_dim_max(const pto_executable *e, int i) {
  return e ? pto_program_dim_max(e->prog, i) : -1;
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
