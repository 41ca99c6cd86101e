/* Rewrites of finished programs (pto__rewrite_programs): fused
 * instructions in place of short chains, driven by the rule table below;
 * then the programs' names, and the streaming stores. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/exe.h"
#include "partitioner/partition.h"
#include "tileops/tileops.h"

/* Bytes [offset, offset + rows * stride * size) of a program tile. */
static int tiles_overlap(const pto_ptile *x, const pto_ptile *y) {
  uint64_t xe =
      x->offset + (uint64_t)x->rows * x->stride * pto_dtype_size(x->dtype);
  uint64_t ye =
      y->offset + (uint64_t)y->rows * y->stride * pto_dtype_size(y->dtype);
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

/* Whether any instruction of pr other than number `but` reads tile t. */
static int read_elsewhere(const pto_cprog *pr, uint32_t but, uint32_t t) {
  for (uint32_t j = 0; j < pr->n_insts; j++)
    for (int i = 0; j != but && i < pr->insts[j].n_src; i++)
      if (pr->insts[j].src[i] == t)
        return 1;
  return 0;
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

/* ---- the rules ---------------------------------------------------------- */

/* An operand of a matched instruction: instruction i of the pattern, its
 * source (D 0) or destination (D 1) j. */
typedef struct ref {
  uint8_t i, d, j;
} ref;
#define S(i, j)                                                                \
  { i, 0, j }
#define D(i, j)                                                                \
  { i, 1, j }

/* What a rule's own condition sees: the executable, the program (number
 * q) and the matched instructions m[0 .. n). */
typedef struct match {
  const pto_executable *e;
  uint32_t q;
  const pto_cprog *pr;
  pto_pinst *const *m;
} match;

/* n consecutive instructions of opcodes op[], where every link's value
 * (an operand of one) is the other operand named, every value of `dies`
 * is read by no instruction of the program but the pattern's `reader`,
 * the fused instruction takes the operands the rule lists with the dtypes
 * the table accepts (and its matched instruction's global slot where it
 * has a view), and ok (when set) holds, become one instruction: matched
 * instruction `keep`, as opcode `to`, with those sources and destinations
 * and, when slot2 >= 0, matched instruction slot2's slot as its second
 * view. Everything else of `keep` (flags, immediates, scalar) stays. */
typedef struct rule {
  uint8_t n;
  int32_t op[3];
  uint8_t n_link;
  ref link[3][2];
  uint8_t n_dies;
  struct {
    ref v;
    uint8_t reader;
  } dies[2];
  int (*ok)(const match *x);
  uint8_t keep;
  int32_t to;
  uint8_t n_src, n_dst;
  ref src[PTO_MAX_SRC], dst[PTO_MAX_DST];
  int8_t slot2;
} rule;

static const pto_ptile *tile(const match *x, ref r) {
  const pto_pinst *pi = x->m[r.i];
  return &x->pr->tiles[r.d ? pi->dst[r.j] : pi->src[r.j]];
}

/* exp(x - v) into u: only where u's buffer is x's own or clear of both
 * sources, as the planner laid them out for the two-step form */
static int expdif_ok(const match *x) {
  const pto_ptile *u = tile(x, (ref)D(1, 0)), *a = tile(x, (ref)S(0, 0)),
                  *v = tile(x, (ref)S(0, 1));
  return !tiles_overlap(u, v) && (!tiles_overlap(u, a) || tiles_same(u, a));
}
/* the row sums s clear of u and x, and of v or v itself (each row's v is
 * read before that row's sum is written) */
static int expdif_sum_ok(const match *x) {
  const pto_ptile *s = tile(x, (ref)D(1, 0)), *u = tile(x, (ref)D(0, 0)),
                  *a = tile(x, (ref)S(0, 0)), *v = tile(x, (ref)S(0, 1));
  return !tiles_overlap(s, u) && !tiles_overlap(s, a) &&
         (!tiles_overlap(s, v) || tiles_same(s, v));
}
/* a plain store (TSTORE would otherwise add into g) of all of y */
static int mul_store_ok(const match *x) {
  const pto_ptile *y = tile(x, (ref)D(0, 0)), *a = tile(x, (ref)S(0, 0));
  return !(x->m[1]->flags & PTO_TF_ACC) && a->vrows == y->vrows &&
         a->vcols == y->vcols;
}
/* an unpacked load, and the max clear of the tile */
static int load_max_ok(const match *x) {
  return !(x->m[0]->flags & (PTO_TF_PACK_A | PTO_TF_PACK_B)) &&
         !tiles_overlap(tile(x, (ref)D(0, 0)), tile(x, (ref)D(1, 0)));
}
/* g and g2 different tensors in every task that runs the program */
static int softmax_store_ok(const match *x) {
  return slots_apart(x->e, x->q, x->m[0]->slot, x->m[2]->slot);
}

/* Softmax's chain, a pass at a time in this order, each pass over every
 * program; every fused instruction computes the same values as the chain
 * it replaces (core/isa.def), in fewer passes over its tiles. */
static const rule rules[] = {
    /* TROWEXPANDSUB t = x - v, TEXP u = exp(t), t read by nothing else:
     * TROWEXPANDEXPDIF u = exp(x - v), one pass over the tile instead of
     * two (softmax's exp(x - rowmax)) */
    {.n = 2,
     .op = {PTO_OP_TROWEXPANDSUB, PTO_OP_TEXP},
     .n_link = 1,
     .link = {{D(0, 0), S(1, 0)}},
     .n_dies = 1,
     .dies = {{D(0, 0), 1}},
     .ok = expdif_ok,
     .keep = 1,
     .to = PTO_OP_TROWEXPANDEXPDIF,
     .n_src = 2,
     .src = {S(0, 0), S(0, 1)},
     .n_dst = 1,
     .dst = {D(1, 0)},
     .slot2 = -1},
    /* TROWEXPANDEXPDIF u = exp(x - v), TROWSUM s = rowsum(u):
     * TROWEXPANDEXPDIFSUM (u, s), the sums taken while u is written (the
     * fused SIMD sum is TROWSUM's, bit for bit) */
    {.n = 2,
     .op = {PTO_OP_TROWEXPANDEXPDIF, PTO_OP_TROWSUM},
     .n_link = 1,
     .link = {{D(0, 0), S(1, 0)}},
     .ok = expdif_sum_ok,
     .keep = 0,
     .to = PTO_OP_TROWEXPANDEXPDIFSUM,
     .n_src = 2,
     .src = {S(0, 0), S(0, 1)},
     .n_dst = 2,
     .dst = {D(0, 0), D(1, 0)},
     .slot2 = -1},
    /* TROWEXPANDMUL y = x * v, a plain TSTORE of y, y read by nothing
     * else: TROWEXPANDMULSTORE, the products straight to global (f32 tiles
     * and an f32 global: TSTORE would otherwise convert) */
    {.n = 2,
     .op = {PTO_OP_TROWEXPANDMUL, PTO_OP_TSTORE},
     .n_link = 1,
     .link = {{D(0, 0), S(1, 0)}},
     .n_dies = 1,
     .dies = {{D(0, 0), 1}},
     .ok = mul_store_ok,
     .keep = 1,
     .to = PTO_OP_TROWEXPANDMULSTORE,
     .n_src = 2,
     .src = {S(0, 0), S(0, 1)},
     .slot2 = -1},
    /* TLOAD x of an f32 window, TROWMAX m = rowmax(x): TLOADROWMAX (x, m),
     * the max taken while the window is read */
    {.n = 2,
     .op = {PTO_OP_TLOAD, PTO_OP_TROWMAX},
     .n_link = 1,
     .link = {{D(0, 0), S(1, 0)}},
     .ok = load_max_ok,
     .keep = 0,
     .to = PTO_OP_TLOADROWMAX,
     .n_dst = 2,
     .dst = {D(0, 0), D(1, 0)},
     .slot2 = -1},
    /* TLOADROWMAX (x, m), TROWEXPANDEXPDIFSUM (u, s) of x and m, neither
     * read by anything else: TLOADEXPDIFSUM (u, s), each row's exps taken
     * right after its max, from cache instead of from a copy in x */
    {.n = 2,
     .op = {PTO_OP_TLOADROWMAX, PTO_OP_TROWEXPANDEXPDIFSUM},
     .n_link = 2,
     .link = {{D(0, 0), S(1, 0)}, {D(0, 1), S(1, 1)}},
     .n_dies = 2,
     .dies = {{D(0, 0), 1}, {D(0, 1), 1}},
     .keep = 0,
     .to = PTO_OP_TLOADEXPDIFSUM,
     .n_dst = 2,
     .dst = {D(1, 0), D(1, 1)},
     .slot2 = -1},
    /* TLOADEXPDIFSUM (u, s) of g, TRECIP v = 1 / s, TROWEXPANDMULSTORE
     * g2 = u * v, v read by nothing else: TLOADSOFTMAXSTORE (u, s) of g
     * and g2, each row's products stored while the next row's exps are
     * taken (softmax in one pass over global); u and s are still written */
    {.n = 3,
     .op = {PTO_OP_TLOADEXPDIFSUM, PTO_OP_TRECIP, PTO_OP_TROWEXPANDMULSTORE},
     .n_link = 3,
     .link = {{D(0, 1), S(1, 0)}, {D(0, 0), S(2, 0)}, {D(1, 0), S(2, 1)}},
     .n_dies = 1,
     .dies = {{D(1, 0), 2}},
     .ok = softmax_store_ok,
     .keep = 0,
     .to = PTO_OP_TLOADSOFTMAXSTORE,
     .n_dst = 2,
     .dst = {D(0, 0), D(0, 1)},
     .slot2 = 2},
};
#undef S
#undef D

static uint16_t value(pto_pinst *const *m, ref r) {
  return r.d ? m[r.i]->dst[r.j] : m[r.i]->src[r.j];
}

/* Whether the dtypes of the fused operands, and of the views the kept
 * instruction's slots bind, are ones the fused instruction accepts. */
static int dtypes_ok(const rule *r, const match *x) {
  for (int s = 0; s < r->n_src + r->n_dst; s++) {
    const int is_dst = s >= r->n_src;
    const ref at = is_dst ? r->dst[s - r->n_src] : r->src[s];
    const pto_operand o =
        pto__insn_operand(r->to, is_dst, is_dst ? s - r->n_src : s);
    if (!(o.dtypes & PTO_DT(tile(x, at)->dtype)))
      return 0;
  }
  const pto_insn_facts *f = pto__insn_facts(r->to);
  const int32_t l = x->m[r->keep]->slot,
                l2 = r->slot2 >= 0 ? x->m[r->slot2]->slot : -1;
  if (f->g != PTO_GA_NONE &&
      (l < 0 || !(f->gdtypes & PTO_DT(x->pr->slots[l].dtype))))
    return 0;
  return f->g2 == PTO_GA_NONE ||
         (l2 >= 0 && (f->g2dtypes & PTO_DT(x->pr->slots[l2].dtype)));
}

/* Whether rule r matches program q at instruction k. */
static int matches(const pto_executable *e, uint32_t q, const rule *r,
                   uint32_t k, pto_pinst *const *m) {
  const pto_cprog *pr = &e->progs[q];
  for (int i = 0; i < r->n; i++)
    if (m[i]->op != r->op[i])
      return 0;
  for (int i = 0; i < r->n_link; i++)
    if (value(m, r->link[i][0]) != value(m, r->link[i][1]))
      return 0;
  for (int i = 0; i < r->n_dies; i++)
    if (read_elsewhere(pr, k + r->dies[i].reader, value(m, r->dies[i].v)))
      return 0;
  const match x = {e, q, pr, m};
  return dtypes_ok(r, &x) && (!r->ok || r->ok(&x));
}

/* Makes the matched instructions at k the rule's fused one. */
static void fuse(pto_cprog *pr, const rule *r, uint32_t k,
                 pto_pinst *const *m) {
  uint16_t src[PTO_MAX_SRC], dst[PTO_MAX_DST];
  for (int s = 0; s < r->n_src; s++)
    src[s] = value(m, r->src[s]);
  for (int d = 0; d < r->n_dst; d++)
    dst[d] = value(m, r->dst[d]);
  pto_pinst *f = m[r->keep];
  if (r->slot2 >= 0)
    f->slot2 = m[r->slot2]->slot;
  f->op = r->to;
  f->fn = pto__isa_active()->fn[r->to];
  f->n_src = r->n_src;
  f->n_dst = r->n_dst;
  memcpy(f->src, src, r->n_src * sizeof *src);
  memcpy(f->dst, dst, r->n_dst * sizeof *dst);
  for (int i = r->n; i-- > 0;)
    if (i != r->keep)
      drop_inst(pr, k + (uint32_t)i);
}

static void apply(pto_executable *e, const rule *r) {
  for (uint32_t q = 0; q < e->n_progs; q++) {
    pto_cprog *pr = &e->progs[q];
    for (uint32_t k = 0; k + r->n <= pr->n_insts; k++) {
      pto_pinst *m[3];
      for (int i = 0; i < r->n; i++)
        m[i] = &pr->insts[k + (uint32_t)i];
      if (matches(e, q, r, k, m))
        fuse(pr, r, k, m);
    }
  }
}

/* ---- names and streaming stores ----------------------------------------- */

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

/* Marks PTO_TF_STREAM on the plain stores (those that write a global view
 * and do not add into it) that write only program outputs no task reads
 * back: that data is done with, so a SIMD table may write it around the
 * caches (streaming stores), saving the read-for-ownership of every line
 * and the eviction of data that is still to be used. Programs are shared
 * by tasks, so every binding of the slot must qualify. */
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
          !pto__facts_acc(pto__insn_facts(in->op), in->flags))
        in->flags |= PTO_TF_STREAM;
    }
  free(read);
  free(no);
  return PTO_OK;
}

/* Marks the slots the finished programs write (pto_pslot.written), for
 * the run's test of what the extents leave a task to do. */
static void mark_written(pto_executable *e) {
  for (uint32_t q = 0; q < e->n_progs; q++) {
    pto_cprog *pr = &e->progs[q];
    for (uint32_t i = 0; i < pr->n_insts; i++)
      for (int k = 0; k < 2; k++) {
        const int32_t l = pto__pinst_slot(&pr->insts[i], k);
        if (l >= 0 && pto__pinst_stores(&pr->insts[i], k))
          pr->slots[l].written = 1;
      }
  }
}

pto_status pto__rewrite_programs(pto_executable *e) {
  for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++)
    apply(e, &rules[r]);
  name_programs(e);
  mark_written(e);
  return mark_streaming_stores(e);
}
