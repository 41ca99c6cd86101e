/* pto_executable_dump: every compile stage (tensor graph, tile graph,
 * subgraphs and programs, execution graph) as Graphviz DOT or JSON.
 *
 * JSON documents have a fixed top-level key order ("format", "version",
 * "stage", "program", "machine", "counts", then the stage's sections). Each
 * section is an array written one record per line, so a tile graph of a
 * million instructions is streamed instead of built in memory; every record
 * is a jansson object, so strings are escaped and numbers are exact.
 * DOT node ids are stable across stages: t<i> tensors, n<i> ops, i<i> tile
 * instructions, sg<i> subgraphs, task<i> tasks. */
#include "partitioner/dump.h"

/* ---- PTO_STAGE_TENSOR --------------------------------------------------- */

static const char *tensor_kind(const pto_tensor *t) {
  if (t->root != t)
    return "view";
  if (t->input_index >= 0)
    return "input";
  return "result";
}

static pto_status tensor_json(const pto_executable *e, FILE *f) {
  const pto_program *p = e->tg.prog;
  jout w;
  uint32_t n_edges = 0;
  for (uint32_t i = 0; i < p->n_tensors; i++)
    n_edges += p->tensors[i]->root != p->tensors[i];
  for (uint32_t n = 0; n < p->n_nodes; n++)
    n_edges += (uint32_t)(p->nodes[n]->n_in + p->nodes[n]->n_out);
  jout_begin(&w, f, e, PTO_STAGE_TENSOR);
  jout_value(&w, "counts",
             json_pack("{s:I, s:I, s:I, s:I, s:I}", "tensors",
                       (json_int_t)p->n_tensors, "ops", (json_int_t)p->n_nodes,
                       "inputs", (json_int_t)p->n_inputs, "outputs",
                       (json_int_t)p->n_outputs, "edges", (json_int_t)n_edges));
  jout_section(&w, "tensors");
  for (uint32_t i = 0; i < p->n_tensors; i++) {
    const pto_tensor *t = p->tensors[i];
    json_t *o = json_object(), *shape = json_array(), *outs = json_array();
    int bad = 0;
    for (int d = 0; d < t->ndim; d++)
      bad |= japp(shape, jint(t->shape[d]));
    for (uint32_t j = 0; j < p->n_outputs; j++)
      if (p->outputs[j] == t)
        bad |= japp(outs, jstr(p->output_names[j]));
    bad |= jset(o, "id", jint(t->id));
    bad |= jset(o, "name", jstr(t->name));
    bad |= jset(o, "dtype", json_string(pto_dtype_name(t->dtype)));
    bad |= jset(o, "shape", shape);
    bad |= jset(o, "kind", json_string(tensor_kind(t)));
    if (t->input_index >= 0)
      bad |= jset(o, "input", jint(t->input_index));
    bad |= jset(o, "outputs", outs);
    bad |=
        jset(o, "producer", t->producer ? jint(t->producer->id) : json_null());
    if (t->root != t) {
      json_t *stride = json_array();
      for (int d = 0; d < t->ndim; d++)
        bad |= japp(stride, jint(t->stride[d]));
      bad |= jset(o, "root", jint(t->root->id));
      bad |= jset(o, "offset", jint(t->offset));
      bad |= jset(o, "stride", stride);
    } else if (t->id < e->n_storages) {
      const pto_storage *s = &e->storages[t->id];
      bad |= jset(o, "storage", json_string(storage_kind_name(s->kind)));
      bad |= jset(o, "bytes", jint((int64_t)s->bytes));
    }
    jout_item(&w, o, bad);
  }
  jout_section_end(&w);
  jout_section(&w, "ops");
  uint32_t *units = calloc(p->n_nodes + 1, sizeof *units);
  pto_core_type *core = malloc((p->n_nodes + 1) * sizeof *core);
  if (!units || !core) {
    free(units);
    free(core);
    return PTO_ENOMEM;
  }
  for (uint32_t n = 0; n < p->n_nodes; n++)
    core[n] = PTO_CORE_TYPE_COUNT;
  for (uint32_t u = 0; u < e->tg.n_units; u++)
    if (e->tg.units[u].node != PTO_NONE) {
      units[e->tg.units[u].node]++;
      core[e->tg.units[u].node] = e->tg.units[u].core;
    }
  for (uint32_t n = 0; n < p->n_nodes; n++) {
    const pto_node *nd = p->nodes[n];
    const pto_tile_shape *ts = &e->tg.node_tile[n];
    json_t *o = json_object(), *in = json_array(), *out = json_array();
    int bad = 0;
    for (int i = 0; i < nd->n_in; i++)
      bad |= japp(in, jint(nd->in[i]->id));
    for (int i = 0; i < nd->n_out; i++)
      bad |= japp(out, jint(nd->out[i]->id));
    bad |= jset(o, "id", jint(n));
    bad |= jset(o, "op", jstr(node_op_name(nd)));
    bad |= jset(o, "label", jstr(nd->label));
    bad |= jset(o, "inputs", in);
    bad |= jset(o, "outputs", out);
    bad |=
        jset(o, "tile",
             json_pack("{s:[I,I], s:[I,I,I], s:b}", "vec",
                       (json_int_t)ts->vec_rows, (json_int_t)ts->vec_cols,
                       "cube", (json_int_t)ts->cube_m, (json_int_t)ts->cube_n,
                       (json_int_t)ts->cube_k, "vec_chosen",
                       (int)e->tg.vec_chosen[n]));
    bad |= jset(o, "units", jint(units[n]));
    bad |= jset(o, "core",
                core[n] == PTO_CORE_TYPE_COUNT
                    ? json_null()
                    : json_string(pto_core_type_name(core[n])));
    pto_top_class cls = pto__top_class(nd->op);
    if (cls == PTO_TC_SCALAR || cls == PTO_TC_FILL)
      bad |= jset(o, "scalar", jnum(nd->scalar));
    if (cls == PTO_TC_TOPK || cls == PTO_TC_IOTA || cls == PTO_TC_CONCAT ||
        cls == PTO_TC_CMP)
      bad |= jset(o, "param", jint(nd->ival));
    if (cls == PTO_TC_IOTA)
      bad |= jset(o, "axis", jint(nd->axis));
    if (nd->op == PTO_TOP_MATMUL && (nd->flags & PTO_MATMUL_CAUSAL))
      bad |= jset(o, "diag", jint((int64_t)nd->scalar));
    if (cls == PTO_TC_ASSEMBLE) { /* where the block goes */
      json_t *b = json_array();
      for (int d = 0; d < nd->out[0]->ndim; d++)
        bad |= japp(b, jint(nd->offs[d]));
      bad |= jset(o, "begin", b);
    }
    if (nd->flags)
      bad |= jset(o, "flags", jint(nd->flags));
    jout_item(&w, o, bad);
  }
  free(units);
  free(core);
  jout_section_end(&w);
  jout_section(&w, "edges");
  for (uint32_t i = 0; i < p->n_tensors; i++) {
    const pto_tensor *t = p->tensors[i];
    if (t->root != t) {
      char a[16], b[16];
      snprintf(a, sizeof a, "t%u", t->root->id);
      snprintf(b, sizeof b, "t%u", t->id);
      jout_item(
          &w, json_pack("{s:s, s:s, s:s}", "from", a, "to", b, "kind", "view"),
          0);
    }
  }
  for (uint32_t n = 0; n < p->n_nodes; n++) {
    const pto_node *nd = p->nodes[n];
    char a[16], b[16];
    for (int i = 0; i < nd->n_in; i++) {
      snprintf(a, sizeof a, "t%u", nd->in[i]->id);
      snprintf(b, sizeof b, "n%u", n);
      jout_item(&w,
                json_pack("{s:s, s:s, s:s, s:I}", "from", a, "to", b, "kind",
                          "input", "index", (json_int_t)i),
                0);
    }
    for (int i = 0; i < nd->n_out; i++) {
      snprintf(a, sizeof a, "n%u", n);
      snprintf(b, sizeof b, "t%u", nd->out[i]->id);
      jout_item(&w,
                json_pack("{s:s, s:s, s:s, s:I}", "from", a, "to", b, "kind",
                          "output", "index", (json_int_t)i),
                0);
    }
  }
  jout_section_end(&w);
  return jout_end(&w);
}

static pto_status tensor_dot(const pto_executable *e, FILE *f) {
  const pto_program *p = e->tg.prog;
  char cap[1024], sh[96], tile[64];
  snprintf(cap, sizeof cap, "%s: tensor graph, %u tensors, %u ops",
           ESC(p->name), p->n_tensors, p->n_nodes);
  dot_begin(f, e, PTO_STAGE_TENSOR, "TB", cap);
  for (uint32_t i = 0; i < p->n_tensors; i++) {
    const pto_tensor *t = p->tensors[i];
    const char *fill = "#ffffff";
    char role[160] = "";
    size_t rn = 0;
    if (t->input_index >= 0) {
      fill = "#d8f3dc";
      rn += (size_t)snprintf(role, sizeof role, "\\ninput %d", t->input_index);
    }
    for (uint32_t j = 0; j < p->n_outputs && rn < sizeof role; j++)
      if (p->outputs[j] == t) {
        fill = "#ffe8a3";
        rn += (size_t)snprintf(role + rn, sizeof role - rn, "\\noutput '%s'",
                               ESC(p->output_names[j]));
      }
    shape_desc(t, sh, sizeof sh);
    fprintf(f,
            "  t%u [shape=ellipse, style=filled, fillcolor=\"%s\"%s, "
            "label=\"%s\\n%s%s\"];\n",
            i, fill, t->root != t ? ", peripheries=2" : "", ESC(t->name), sh,
            role);
  }
  for (uint32_t n = 0; n < p->n_nodes; n++) {
    const pto_node *nd = p->nodes[n];
    pto_core_type core = pto__top_core(nd->op);
    for (uint32_t u = 0; u < e->tg.n_units; u++)
      if (e->tg.units[u].node == n) {
        core = e->tg.units[u].core;
        break;
      }
    tile_desc(&e->tg, n, tile, sizeof tile);
    fprintf(f,
            "  n%u [shape=box, style=\"rounded,filled\", fillcolor=\"%s\", "
            "label=\"%s%s%s\\n%s\"];\n",
            n, core_color(core), ESC(nd->label), nd->label[0] ? "\\n" : "",
            ESC(node_op_name(nd)), tile);
  }
  for (uint32_t i = 0; i < p->n_tensors; i++) {
    const pto_tensor *t = p->tensors[i];
    if (t->root != t)
      fprintf(f, "  t%u -> t%u [style=dashed, label=\"view\"];\n", t->root->id,
              t->id);
  }
  for (uint32_t n = 0; n < p->n_nodes; n++) {
    const pto_node *nd = p->nodes[n];
    for (int i = 0; i < nd->n_in; i++)
      fprintf(f, "  t%u -> n%u;\n", nd->in[i]->id, n);
    for (int i = 0; i < nd->n_out; i++)
      fprintf(f, "  n%u -> t%u;\n", n, nd->out[i]->id);
  }
  return dot_end(f);
}

/* ---- PTO_STAGE_EXEC ----------------------------------------------------- */

static pto_status exec_json(const pto_executable *e, FILE *f) {
  jout w;
  jout_begin(&w, f, e, PTO_STAGE_EXEC);
  jout_value(&w, "counts",
             json_pack("{s:I, s:I, s:I, s:I, s:I}", "tasks",
                       (json_int_t)e->n_tasks, "edges", (json_int_t)e->n_edges,
                       "programs", (json_int_t)e->n_progs, "boundary_bytes",
                       (json_int_t)e->stats.boundary_bytes, "workspace_bytes",
                       (json_int_t)e->workspace_bytes));
  jout_section(&w, "tasks");
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    const pto_task *k = &e->tasks[t];
    json_t *o = json_object(), *succ = json_array();
    int bad = 0;
    for (uint32_t j = 0; j < k->n_succ; j++)
      bad |= japp(succ, jint(e->succ[k->succ + j]));
    bad |= jset(o, "id", jint(t));
    bad |= jset(o, "program", jint(k->prog));
    bad |= jset(o, "program_name", jstr(e->progs[k->prog].name));
    bad |= jset(o, "label", jstr(k->label));
    bad |= jset(o, "node", k->node == PTO_NONE ? json_null() : jint(k->node));
    bad |= jset(o, "core", json_string(pto_core_type_name(k->core)));
    bad |= jset(o, "instances", jint(k->n_inst));
    bad |= jset(o, "n_pred", jint(k->n_pred));
    bad |= jset(o, "successors", succ);
    bad |= jset(o, "cost", jint((int64_t)k->cost));
    bad |= jset(o, "path", jint((int64_t)k->path));
    jout_item(&w, o, bad);
  }
  jout_section_end(&w);
  jout_section(&w, "edges");
  for (uint32_t t = 0; t < e->n_tasks && w.st == PTO_OK; t++)
    for (uint32_t j = 0; j < e->tasks[t].n_succ; j++)
      jout_item(&w,
                json_pack("{s:I, s:I}", "from", (json_int_t)t, "to",
                          (json_int_t)e->succ[e->tasks[t].succ + j]),
                0);
  jout_section_end(&w);
  jout_section(&w, "storages");
  for (uint32_t s = 0; s < e->n_storages; s++) {
    const pto_storage *g = &e->storages[s];
    json_t *o = json_pack(
        "{s:I, s:o, s:s, s:s, s:I}", "id", (json_int_t)s, "name",
        jstr(storage_label(e, s)), "kind", storage_kind_name(g->kind), "dtype",
        pto_dtype_name(g->dtype), "bytes", (json_int_t)g->bytes);
    int bad = 0;
    if (o && (g->kind == PTO_STORAGE_INPUT || g->kind == PTO_STORAGE_OUTPUT))
      bad |= jset(o, "index", jint(g->index));
    if (o && g->kind == PTO_STORAGE_WORKSPACE)
      bad |= jset(o, "offset", jint((int64_t)g->offset));
    jout_item(&w, o, bad);
  }
  jout_section_end(&w);
  return jout_end(&w);
}

static pto_status exec_dot(const pto_executable *e, FILE *f) {
  char cap[1024];
  snprintf(cap, sizeof cap,
           "%s: %u tasks, %u edges on '%s' (orange: cube, blue: vector)",
           ESC(e->tg.prog->name), e->n_tasks, e->n_edges, ESC(e->machine.name));
  dot_begin(f, e, PTO_STAGE_EXEC, "TB", cap);
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    const pto_task *k = &e->tasks[t];
    char inst[32] = "";
    if (k->n_inst > 1)
      snprintf(inst, sizeof inst, " x%u", k->n_inst);
    fprintf(f,
            "  task%u [shape=box, style=\"rounded,filled\", "
            "fillcolor=\"%s\", label=\"t%u %s\\np%u%s (%s)\"];\n",
            t, core_color(k->core), t, ESC(k->label), k->prog, inst,
            pto_core_type_name(k->core));
  }
  for (uint32_t t = 0; t < e->n_tasks; t++)
    for (uint32_t j = 0; j < e->tasks[t].n_succ; j++)
      fprintf(f, "  task%u -> task%u;\n", t, e->succ[e->tasks[t].succ + j]);
  return dot_end(f);
}

/* ---- entry -------------------------------------------------------------- */

pto_status pto_executable_dump(const pto_executable *e, pto_stage stage,
                               pto_dump_format fmt, FILE *out) {
  if (!e)
    return pto__last_error(PTO_EINVAL,
                           "pto_executable_dump: the executable is NULL");
  pto_error *err = pto__exe_err(e);
  if (!out)
    return pto__error_set(err, PTO_EINVAL, "dump: out is NULL");
  if ((unsigned)stage >= PTO_STAGE_COUNT ||
      (fmt != PTO_DUMP_DOT && fmt != PTO_DUMP_JSON))
    return pto__error_set(err, PTO_EINVAL,
                          "dump: stage %d or format %d is not one of "
                          "pto_stage or pto_dump_format",
                          (int)stage, (int)fmt);
  if (!e->tg.prog)
    return pto__error_set(err, PTO_EINVAL,
                          "dump: the executable has no tensor graph");
  static pto_status (*const fns[PTO_STAGE_COUNT][2])(const pto_executable *,
                                                     FILE *) = {
      {tensor_dot, tensor_json},
      {pto__dump_tile_dot, pto__dump_tile_json},
      {pto__dump_subgraph_dot, pto__dump_subgraph_json},
      {exec_dot, exec_json},
  };
  if (stage >= PTO_STAGE_SUBGRAPH && !e->unit_subgraph)
    return pto__error_set(err, PTO_EINVAL,
                          "dump: the executable has no subgraphs to dump "
                          "(it was not made by pto_compile)");
  pto_status st = fns[stage][fmt == PTO_DUMP_JSON](e, out);
  if (fflush(out) == EOF || ferror(out)) {
    char eb[128];
    return pto__error_set(err, PTO_EIO, "dump: cannot write: %s",
                          errno ? strerror_r(errno, eb, sizeof eb)
                                : "stream error");
  }
  if (st != PTO_OK)
    return pto__error_set(err, st, "dump: %s", pto_strerror(st));
  return st;
}
