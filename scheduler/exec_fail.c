/* What a failed instruction of a compiled run reports. Only the failure path
 * comes here: it may take its time to find the tensors behind the tiles. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/program.h"
#include "scheduler/exec.h"

/* The root element offset of element (r, c) of the tile that instruction
 * `def` loaded, or -1 when def is not a load from global memory. */
static int64_t loaded_offset(const pto_cprog *pr, const pto_pinst *def,
                             const pto_targ *args, uint32_t r, uint32_t c) {
  if (!pto__insn_loads(def->op) || def->slot < 0)
    return -1;
  const pto_pslot *sl = &pr->slots[def->slot];
  return args[def->slot].offset + (int64_t)r * sl->rs + (int64_t)c * sl->cs;
}

/* The coordinates of t's first element at root offset `off`, as "2,0";
 * 0 when no element of t is there. */
static int view_position(const pto_tensor *t, int64_t off, char *buf,
                         size_t size) {
  int64_t idx[PTO_MAX_DIMS] = {0};
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] <= 0)
      return 0;
  for (;;) {
    int64_t o = t->offset;
    for (int d = 0; d < t->ndim; d++)
      o += idx[d] * t->stride[d];
    if (o == off) {
      size_t len = 0;
      buf[0] = '\0';
      for (int d = 0; d < t->ndim && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%" PRId64,
                                d ? "," : "", idx[d]);
      return 1;
    }
    int d = t->ndim - 1;
    while (d >= 0 && ++idx[d] == t->shape[d])
      idx[d--] = 0;
    if (d < 0)
      return 0;
  }
}

/* The strict gather op of the program with this table (and this index, when
 * known) storage; NULL when there is none. */
static const pto_node *gather_node(const pto_program *p, uint32_t table,
                                   uint32_t index) {
  const pto_node *any = NULL;
  for (uint32_t k = 0; p && k < p->n_nodes; k++) {
    const pto_node *n = p->nodes[k];
    if (pto__top_class(n->op) != PTO_TC_GATHER ||
        !(n->flags & PTO_GATHER_STRICT) || n->in[0]->root->id != table)
      continue;
    if (index == PTO_NONE || n->in[1]->root->id == index)
      return n;
    if (!any)
      any = n;
  }
  return any;
}

/* A strict TGATHER found an index outside the table: which one, where it
 * sits in the index tensor and which table, worded as the evaluator words
 * it ("gather 'sfa.kv': index 7 at [2] of idx is outside [0, 5) of table
 * 'kv' f32[5,8]"). */
static void gather_failure(const pto_executable *e, const pto_cprog *pr,
                           uint32_t i, const pto_tile *tiles,
                           const pto_targ *args, char *buf, size_t size) {
  const pto_pinst *pi = &pr->insts[i];
  const pto_tile *ix = &tiles[pi->src[0]];
  const int64_t rows = pr->slots[pi->slot].rows;
  const uint32_t n = tiles[pi->dst[0]].valid_rows, ivc = ix->valid_cols;
  uint32_t r = 0;
  int32_t v = 0;
  for (; r < n && ivc; r++) {
    memcpy(&v,
           (const char *)ix->data +
               ((size_t)(r / ivc) * ix->stride + r % ivc) * sizeof v,
           sizeof v);
    if ((v < 0 || v >= rows) && !(v == -1 && (pi->flags & PTO_TF_PAD)))
      break;
  }
  if (r == n || !ivc) { /* the instruction saw what this does not */
    snprintf(buf, size, "%s", pto_strerror(PTO_ERANGE));
    return;
  }
  /* where the index tile came from: the load that last defined it */
  const pto_program *p = e->tg.prog;
  uint32_t index_storage = PTO_NONE;
  int64_t off = -1;
  for (uint32_t j = i; j-- > 0;) {
    const pto_pinst *def = &pr->insts[j];
    if (def->n_dst && def->dst[0] == pi->src[0]) {
      off = loaded_offset(pr, def, args, r / ivc, r % ivc);
      if (off >= 0)
        index_storage = args[def->slot].storage;
      break;
    }
  }
  const pto_node *node = gather_node(p, args[pi->slot].storage, index_storage);
  /* else where its row is stored: out[s..., :] is gathered by index[s...],
   * so the output row's position is the index's */
  int64_t out_off = -1;
  for (uint32_t j = i + 1; node && index_storage == PTO_NONE && j < pr->n_insts;
       j++) {
    const pto_pinst *st = &pr->insts[j];
    if (st->n_src && st->src[0] == pi->dst[0] && st->slot >= 0 &&
        pto__insn_stores(st->op) &&
        args[st->slot].storage == node->out[0]->root->id) {
      out_off = args[st->slot].offset + (int64_t)r * pr->slots[st->slot].rs;
      break;
    }
  }
  if (!node) {
    snprintf(buf, size,
             "index %" PRId32 " (element %u of the task's index tile) is "
             "outside [0, %" PRId64 ") of the table",
             v, r, rows);
    return;
  }
  char table[128], at[64], head[192];
  pto__tensor_desc(node->in[0], table, sizeof table);
  if (node->label[0])
    snprintf(head, sizeof head, "gather '%s'", node->label);
  else
    snprintf(head, sizeof head, "gather");
  int found = index_storage == node->in[1]->root->id &&
              view_position(node->in[1], off, at, sizeof at);
  if (!found && out_off >= 0 &&
      view_position(node->out[0], out_off, at, sizeof at)) {
    char *last = strrchr(at, ','); /* drop the table's column */
    found = last != NULL;
    if (last)
      *last = '\0';
  }
  if (found)
    snprintf(buf, size,
             "%s: index %" PRId32 " at [%s] of %s is outside [0, %" PRId64
             ") of table %s",
             head, v, at, node->in[1]->name, rows, table);
  else /* computed in this task: no position in a tensor to name */
    snprintf(buf, size,
             "%s: index %" PRId32 " (element %u of the index tile this task "
             "computed from %s) is outside [0, %" PRId64 ") of table %s",
             head, v, r, node->in[1]->name, rows, table);
}

void pto__insn_failure(const pto_executable *e, const pto_cprog *pr, uint32_t i,
                       const pto_tile *tiles, const pto_targ *args, int rc,
                       char *buf, size_t size) {
  const pto_pinst *pi = &pr->insts[i];
  if ((pi->op == PTO_OP_TGATHER || pi->op == PTO_OP_TGATHERELSE) &&
      rc == PTO_ERANGE &&
      (pi->flags & PTO_TF_STRICT) && pi->slot >= 0 && pi->n_src && pi->n_dst)
    gather_failure(e, pr, i, tiles, args, buf, size);
  else
    snprintf(buf, size, "%s", pto_strerror(rc));
}
