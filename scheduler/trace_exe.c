/* The executable's side of a trace: what a task graph's trace does not
 * have. The workload (the source program's name and operands), the
 * configuration it was compiled with, the tile shapes in force per label,
 * the programs and their instructions, and per task its instances and the
 * global windows of their tiles, so a viewer can say which tile a box
 * computed. */
#include "scheduler/trace_exe.h"

#include <inttypes.h>
#include <string.h>

#include "core/program.h"
#include "core/tilegraph.h"

static uint32_t exe_n_insts(const void *owner, uint32_t t) {
  const pto_executable *e = owner;
  return e->progs[e->tasks[t].prog].n_insts;
}

static const char *exe_inst_name(const void *owner, uint32_t t, uint32_t i) {
  const pto_executable *e = owner;
  return pto__insn_name(e->progs[e->tasks[t].prog].insts[i].op);
}

static uint64_t exe_inst_flops(const void *owner, uint32_t t, uint32_t i) {
  const pto_executable *e = owner;
  const pto_cprog *pr = &e->progs[e->tasks[t].prog];
  const pto_pinst *pi = &pr->insts[i];
  uint32_t dims[3][2] = {{0, 0}, {0, 0}, {0, 0}};
  const uint16_t at[3] = {pi->src[0], pi->src[1], pi->dst[0]};
  const int have[3] = {pi->n_src > 0, pi->n_src > 1, pi->n_dst > 0};
  for (int k = 0; k < 3; k++)
    if (have[k]) {
      dims[k][0] = pr->tiles[at[k]].vrows;
      dims[k][1] = pr->tiles[at[k]].vcols;
    }
  return pto__insn_flops(pi->op, pi->flags, dims[0], dims[1], dims[2]) *
         e->tasks[t].n_inst;
}

static void shape_json(FILE *f, int ndim, const int64_t *shape) {
  fputc('[', f);
  for (int d = 0; d < ndim; d++)
    fprintf(f, "%s%" PRId64, d ? "," : "", shape[d]);
  fputc(']', f);
}

static void tensor_json(FILE *f, const pto_tensor *x, const char *name) {
  fprintf(f, "{\"name\":");
  pto__trace_str(f, name);
  fprintf(f, ",\"dtype\":\"%s\",\"shape\":", pto_dtype_name(x->dtype));
  shape_json(f, x->ndim, x->shape);
  fputc('}', f);
}

/* The tensor behind storage k (a root tensor, or an output's dense copy)
 * and the name windows on it are shown with (the output's for an output). */
static const pto_tensor *storage_tensor(const pto_executable *e, uint32_t k,
                                        const char **name) {
  const pto_program *p = e->tg.prog;
  const pto_storage *s = &e->storages[k];
  if (k >= p->n_tensors && k - p->n_tensors < p->n_outputs) {
    *name = p->output_names[k - p->n_tensors];
    return p->outputs[k - p->n_tensors];
  }
  if (k >= p->n_tensors)
    return NULL;
  *name = s->kind == PTO_STORAGE_OUTPUT && s->index < p->n_outputs
              ? p->output_names[s->index]
              : p->tensors[k]->name;
  return p->tensors[k];
}

/* The tile shape op n was tiled with, as "[rows,cols]" or "[m,n,k]". */
static void node_tile_json(FILE *f, const pto_executable *e, uint32_t n) {
  const pto_tile_shape *ts = &e->tg.node_tile[n];
  if (pto__top_class(e->tg.prog->nodes[n]->op) == PTO_TC_MATMUL)
    fprintf(f, "[%u,%u,%u]", ts->cube_m, ts->cube_n, ts->cube_k);
  else
    fprintf(f, "[%u,%u]", ts->vec_rows, ts->vec_cols);
}

static int same_tile(const pto_executable *e, uint32_t a, uint32_t b) {
  const pto_program *p = e->tg.prog;
  const pto_tile_shape *x = &e->tg.node_tile[a], *y = &e->tg.node_tile[b];
  return p->nodes[a]->op == p->nodes[b]->op &&
         !strcmp(p->nodes[a]->label, p->nodes[b]->label) &&
         x->vec_rows == y->vec_rows && x->vec_cols == y->vec_cols &&
         x->cube_m == y->cube_m && x->cube_n == y->cube_n &&
         x->cube_k == y->cube_k;
}

static void exe_write_meta(const void *owner, FILE *f) {
  const pto_executable *e = owner;
  const pto_program *p = e->tg.prog;
  fprintf(f, ",\n\"workload\":{\"program\":");
  pto__trace_str(f, p->name);
  fprintf(f, ",\"tensor_ops\":%u,\"inputs\":[", p->n_nodes);
  for (uint32_t i = 0; i < p->n_inputs; i++) {
    fprintf(f, i ? "," : "");
    tensor_json(f, p->inputs[i], p->inputs[i]->name);
  }
  fprintf(f, "],\"outputs\":[");
  for (uint32_t i = 0; i < p->n_outputs; i++) {
    fprintf(f, i ? "," : "");
    tensor_json(f, p->outputs[i], p->output_names[i]);
  }
  fprintf(f, "]}");
  if (e->config_json)
    fprintf(f, ",\n\"config\":%s", e->config_json);
  /* the tile shape each op was tiled with (config overrides applied), one
   * entry per distinct label, op and shape */
  fprintf(f, ",\n\"tiles\":[");
  int first = 1;
  for (uint32_t n = 0; e->tg.node_tile && n < p->n_nodes; n++) {
    uint32_t m = 0;
    while (m < n && !same_tile(e, m, n))
      m++;
    if (m < n)
      continue;
    fprintf(f, "%s{\"label\":", first ? "" : ",");
    pto__trace_str(f, p->nodes[n]->label);
    fprintf(f, ",\"op\":\"%s\",\"tile\":", pto__top_name(p->nodes[n]->op));
    node_tile_json(f, e, n);
    fputc('}', f);
    first = 0;
  }
  fprintf(f,
          "],\n\"compile\":{\"tile_instructions\":%u,\"subgraphs\":%u,"
          "\"programs\":%u,\"ms\":%.3f},\n\"programs\":[",
          e->stats.tile_instructions, e->stats.subgraphs, e->n_progs,
          e->stats.ms_total);
  for (uint32_t q = 0; q < e->n_progs; q++) {
    const pto_cprog *pr = &e->progs[q];
    fprintf(f, "%s{\"id\":%u,\"name\":", q ? ",\n" : "", q);
    pto__trace_str(f, pr->name);
    fprintf(f, ",\"core\":\"%s\",\"tasks\":%u,\"instructions\":[",
            pto_core_type_name(pr->core), pr->n_tasks);
    for (uint32_t i = 0; i < pr->n_insts; i++)
      fprintf(f, "%s\"%s\"", i ? "," : "", pto__insn_name(pr->insts[i].op));
    fprintf(f, "]}");
  }
  fprintf(f, "]");
}

/* Writes the window of slot l of program pr at element offset off of
 * storage k: "X[0:10,0:4096]" on the last two dimensions (with the leading
 * ones as single indices) when the window is rows of the tensor (or its
 * columns, for a transposed read), else "X@off RxC". */
static void window_json(FILE *f, const pto_executable *e, const pto_pslot *sl,
                        uint32_t k, int64_t off) {
  const char *name = "?";
  const pto_tensor *x = storage_tensor(e, k, &name);
  char buf[160];
  int n = 0;
  if (x && x->ndim >= 1) {
    int64_t idx[PTO_MAX_DIMS], rem = off;
    for (int d = x->ndim - 1; d >= 0; d--) {
      idx[d] = x->shape[d] ? rem % x->shape[d] : 0;
      rem = x->shape[d] ? rem / x->shape[d] : 0;
    }
    const int nd = x->ndim;
    const int64_t C = x->shape[nd - 1], R = nd >= 2 ? x->shape[nd - 2] : 1;
    const int64_t r0 = nd >= 2 ? idx[nd - 2] : 0, c0 = idx[nd - 1];
    int64_t rr = -1, cc = -1; /* extents along dims nd-2 and nd-1 */
    if (sl->cs == 1 && (sl->rs == C || sl->rows == 1))
      rr = sl->rows, cc = sl->cols;
    else if (sl->rs == 1 && (sl->cs == C || sl->cols == 1))
      rr = sl->cols, cc = sl->rows;
    if (rr >= 0 && r0 + rr <= R && c0 + cc <= C) {
      n = snprintf(buf, sizeof buf, "%s[", name);
      for (int d = 0; d + 2 < nd && n < (int)sizeof buf; d++)
        n += snprintf(buf + n, sizeof buf - n, "%" PRId64 ",", idx[d]);
      if (nd >= 2 && n < (int)sizeof buf)
        n += snprintf(buf + n, sizeof buf - n, "%" PRId64 ":%" PRId64 ",", r0,
                      r0 + rr);
      if (n < (int)sizeof buf)
        snprintf(buf + n, sizeof buf - n, "%" PRId64 ":%" PRId64 "]", c0,
                 c0 + cc);
      pto__trace_str(f, buf);
      return;
    }
  }
  snprintf(buf, sizeof buf, "%s@%" PRId64 " %" PRId64 "x%" PRId64, name, off,
           sl->rows, sl->cols);
  pto__trace_str(f, buf);
}

#define WINDOW_INSTANCES 4 /* instances whose windows a task event lists */

static void exe_write_task(const void *owner, uint32_t t, FILE *f) {
  const pto_executable *e = owner;
  const pto_task *task = &e->tasks[t];
  const pto_cprog *pr = &e->progs[task->prog];
  fprintf(f, ",\"instances\":%u,\"windows\":[", task->n_inst);
  for (uint32_t in = 0; in < task->n_inst && in < WINDOW_INSTANCES; in++) {
    const pto_targ *args = e->args + task->args + in * pr->n_slots;
    fprintf(f, "%s{", in ? "," : "");
    for (int w = 0; w < 2; w++) { /* read windows, then written ones */
      fprintf(f, "%s\"%s\":[", w ? "," : "", w ? "w" : "r");
      int any = 0;
      for (uint32_t l = 0; l < pr->n_slots; l++) {
        int writes = 0;
        for (uint32_t i = 0; i < pr->n_insts; i++)
          for (int j = 0; j < 2; j++)
            writes |= pto__pinst_slot(&pr->insts[i], j) == (int32_t)l &&
                      pto__pinst_stores(&pr->insts[i], j);
        if (writes != w)
          continue;
        fprintf(f, any ? "," : "");
        window_json(f, e, &pr->slots[l], args[l].storage, args[l].offset);
        any = 1;
      }
      fputc(']', f);
    }
    fputc('}', f);
  }
  fputc(']', f);
}

const pto_trace_detail pto__exe_trace_detail = {
    exe_n_insts, exe_inst_name, exe_inst_flops, exe_write_meta, exe_write_task};
