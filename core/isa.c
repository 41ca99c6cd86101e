/* The instruction table, generated from core/isa.def, and the facts of its
 * operand classes: every column a pass reads (core/isa.h). A class's flops,
 * bytes and scratch are small functions of its operands' shapes, defined
 * here beside its row; tests/test_tileops_facts.c checks each against the
 * instruction's scalar reference run on guarded buffers. */
#include "core/isa.h"

#include "core/custom.h"

const pto_insn_info pto__insn_rows[PTO_OP_COUNT] = {
#define PTO_INSN(name, fam, core, nsrc, ndst, cls, flags)                      \
  {#name, PTO_FAMILY_##fam, PTO_CORE_##core, nsrc, ndst,                       \
   flags, PTO_CLASS_##cls},
#include "core/isa.def"
#undef PTO_INSN
};

/* ---- the shape functions ------------------------------------------------ */

static uint64_t area(const uint32_t rc[2]) {
  return (uint64_t)rc[0] * rc[1];
}
static uint64_t gsize(pto_dtype dt) {
  return pto_dtype_size(dt);
}
static uint64_t up(uint64_t x, uint64_t m) {
  return m ? (x + m - 1) / m * m : x;
}

/* one operation per element of dst0 (of src0), or several */
static uint64_t per_dst0(const pto_insn_shape *s) {
  return area(s->dst[0]);
}
static uint64_t per_src0(const pto_insn_shape *s) {
  return area(s->src[0]);
}
static uint64_t two_per_dst0(const pto_insn_shape *s) { /* exp(x - v) */
  return 2 * area(s->dst[0]);
}
static uint64_t three_per_dst0(const pto_insn_shape *s) { /* ... and a sum */
  return 3 * area(s->dst[0]);
}
static uint64_t
four_per_dst0(const pto_insn_shape *s) { /* max, exp(x - m), sum */
  return 4 * area(s->dst[0]);
}
/* TLOADSOFTMAXSTORE: max, exp(x - m), sum and a product per element, a
 * reciprocal per row */
static uint64_t softmax_flops(const pto_insn_shape *s) {
  return 5 * area(s->dst[0]) + s->dst[0][0];
}
/* TSOFTMAXONLINE: scale, max, exp(x - m), sum per score; the state per
 * row */
static uint64_t smonline_flops(const pto_insn_shape *s) {
  return 4 * area(s->src[0]) + 4 * (uint64_t)s->dst[1][0];
}
/* TSOFTMAXFINAL: a product per element; a reciprocal, a log and a sum per
 * row */
static uint64_t smfinal_flops(const pto_insn_shape *s) {
  return area(s->dst[0]) + 3 * (uint64_t)s->dst[0][0];
}

/* M, N, K of a matmul from its valid shapes. */
static void mm_plain(const pto_insn_shape *s, uint64_t *M, uint64_t *N,
                     uint64_t *K) {
  const int ta = (s->flags & PTO_TF_TRANS_A) != 0,
            tb = (s->flags & PTO_TF_TRANS_B) != 0;
  *M = s->src[0][ta];
  *K = s->src[0][!ta];
  *N = s->src[1][!tb];
}
static uint64_t mm_flops(const pto_insn_shape *s) {
  uint64_t M, N, K;
  mm_plain(s, &M, &N, &K);
  return 2 * M * N * K;
}
/* TMATMUL_GA: the n rows the indices pick (M) by B (K x N) */
static uint64_t ga_flops(const pto_insn_shape *s) {
  return 2 * area(s->src[0]) * s->src[1][0] * s->src[1][1];
}
/* TMATMUL_GB: A (M x K slots) by the K rows picked, N of their columns */
static uint64_t gb_flops(const pto_insn_shape *s) {
  return 2 * (uint64_t)s->src[0][0] * s->src[0][1] * s->dst[0][1];
}
/* TMATMUL_RELU_WSUM_G: Q^T (K x M) against the N keys */
static uint64_t wsg_flops(const pto_insn_shape *s) {
  return 2 * (uint64_t)s->src[0][0] * s->src[0][1] * s->dst[0][1];
}

/* Global bytes: the window of dst0's (src0's) valid region. */
static uint64_t load_bytes(const pto_insn_shape *s) {
  return area(s->dst[0]) * gsize(s->gdt);
}
static uint64_t store_bytes(const pto_insn_shape *s) { /* ACC: read too */
  return area(s->src[0]) * gsize(s->gdt) * (s->flags & PTO_TF_ACC ? 2 : 1);
}
static uint64_t load_store_bytes(const pto_insn_shape *s) {
  return area(s->dst[0]) * (gsize(s->gdt) + gsize(s->g2dt));
}
/* the rows an index picks, the columns read of each */
static uint64_t gather_cols(const pto_insn_shape *s) { /* dst's */
  return s->dst[0][1];
}
static uint64_t gather_bytes(const pto_insn_shape *s) {
  return (uint64_t)s->dst[0][0] * gather_cols(s) * gsize(s->gdt);
}
static uint64_t ga_cols(const pto_insn_shape *s) { /* K */
  return s->src[1][0];
}
static uint64_t ga_bytes(const pto_insn_shape *s) {
  return area(s->src[0]) * ga_cols(s) * gsize(s->gdt);
}
static uint64_t gb_cols(const pto_insn_shape *s) { /* N */
  return s->dst[0][1];
}
static uint64_t gb_bytes(const pto_insn_shape *s) {
  return area(s->src[1]) * gb_cols(s) * gsize(s->gdt);
}
static uint64_t all_bytes(const pto_insn_shape *s) {
  return (uint64_t)(s->g[0] * s->g[1]) * gsize(s->gdt);
}

/* Scratch: what each kernel needs past its stack buffers (core/isa.h),
 * when its fast path runs at all, laid out in this order. TMATMUL_GA: the
 * valid slots' list past PTO_GA_SLOTS_STACK, and an f32 copy of a group of
 * mr bf16 rows when it widens them, past PTO_WIDEN_K_STACK. */
static uint64_t ga_scratch(const pto_insn_shape *s) {
  if (!(s->flags & PTO_TF_PACK_B))
    return 0;
  const uint64_t n = area(s->src[0]), K = s->src[1][0];
  const uint64_t slots = n > PTO_GA_SLOTS_STACK ? up(4 * n, 64) : 0;
  const int widen = s->gdt == PTO_BF16 && s->sdt[1] == PTO_F32;
  return slots + (widen && K > PTO_WIDEN_K_STACK ? 4 * (uint64_t)s->mr * K : 0);
}
/* TMATMUL_GB: the valid slots' columns of A, when a slot in the middle is
 * invalid: A's panels of imm[0] rows, a column per slot. */
static uint64_t gb_scratch(const pto_insn_shape *s) {
  if (!(s->flags & PTO_TF_PACK_A) || s->sdt[0] != PTO_F32 || s->imm[0] < 1)
    return 0;
  return 4 * up(s->src[0][0], (uint64_t)s->imm[0]) * s->src[0][1];
}
/* TMATMUL_RELU_WSUM_G: a query's weights past PTO_WSG_WEIGHTS heads, and
 * a bf16 group of mr keys widened to f32 past PTO_WIDEN_K_STACK. */
static uint64_t wsg_scratch(const pto_insn_shape *s) {
  if (!(s->flags & PTO_TF_PACK_B) || !s->dst[0][0])
    return 0;
  const uint64_t K = s->src[0][0], G = s->src[0][1] / s->dst[0][0];
  const int widen = s->gdt == PTO_BF16 && s->sdt[0] == PTO_F32;
  return (G > PTO_WSG_WEIGHTS ? up(4 * G, 64) : 0) +
         (widen && K > PTO_WIDEN_K_STACK ? 4 * (uint64_t)s->mr * K : 0);
}
/* TMATMUL, TMATMUL_ACC: the operands the plan did not pack, packed by
 * the kernel (pto__mm_pack_scratch, core/isa.h). */
static uint64_t mm_scratch(const pto_insn_shape *s) {
  uint64_t M, N, K, a, b;
  mm_plain(s, &M, &N, &K);
  pto__mm_pack_scratch(M, N, K, s->mr, (s->flags & PTO_TF_PACK_A) != 0,
                       (s->flags & PTO_TF_PACK_B) != 0, &a, &b);
  return a + b;
}
/* TTOPK: keeping more than PTO_TOPK_BUF of a row, the radix sort's second
 * buffer of (key, column) pairs (past PTO_TOPK_MSD_MAX a heap sort needs
 * none). */
static uint64_t topk_scratch(const pto_insn_shape *s) {
  const uint64_t kk = s->dst[0][1];
  return kk > PTO_TOPK_BUF && kk <= PTO_TOPK_MSD_MAX ? 8 * kk : 0;
}
/* a custom instruction: what it registered (its function gets no pointer:
 * the planner adds it to its program's level) */
static uint64_t custom_scratch(const pto_insn_shape *s) {
  const pto_custom_op *c = pto__custom_get(s->op);
  return c ? c->desc.scratch_bytes : 0;
}

/* ---- the classes -------------------------------------------------------- */

#define DEF PTO_MEM_LEVEL_COUNT
#define NUM PTO_DT_NUM
#define F32 PTO_DT_F32
#define I32 PTO_DT_I32
#define MM PTO_DT_MM
#define ANY PTO_DT_ANY
/* an operand: role and dtypes; in a cube level; with a written extent and
 * attributes */
#define O(role, dt)                                                            \
  { PTO_ROLE_##role, DEF, PTO_EXT_VALID, 0, dt }
#define OL(role, lvl, dt)                                                      \
  { PTO_ROLE_##role, PTO_MEM_##lvl, PTO_EXT_VALID, 0, dt }
#define OX(role, lvl, ext, attr, dt)                                           \
  { PTO_ROLE_##role, lvl, PTO_EXT_##ext, attr, dt }
/* a global view read (written) over the window of dst0 (src0) */
#define G_LOAD(dt) .g = PTO_GA_READ, .gpart = PTO_GP_DST0, .gdtypes = dt
#define G_STORE(dt) .g = PTO_GA_WRITE, .gpart = PTO_GP_SRC0, .gdtypes = dt
#define G_ROWS(dt) .g = PTO_GA_READ, .gpart = PTO_GP_ROWS, .gdtypes = dt

const pto_insn_facts pto__class_table[PTO_CLASS_COUNT] = {
    [PTO_CLASS_CUSTOM] =
        {
            .src = {O(TILE, ANY), O(TILE, ANY), O(TILE, ANY), O(TILE, ANY)},
            .dst = {O(TILE, ANY)},
            .scratch = custom_scratch,
        },
    [PTO_CLASS_LOAD] = {.dst = {OX(TILE, DEF, PANELS, PTO_OA_PACKABLE, ANY)},
                        G_LOAD(ANY),
                        .bytes = load_bytes},
    [PTO_CLASS_STORE] = {.src = {O(TILE, ANY)},
                         G_STORE(ANY),
                         .acc_if = PTO_TF_ACC,
                         .bytes = store_bytes},
    [PTO_CLASS_MULSTORE] = {.src = {O(TILE, F32), O(ROWVEC, F32)},
                            G_STORE(F32),
                            .flops = per_src0,
                            .bytes = store_bytes},
    [PTO_CLASS_LOADMAX] = {.dst = {O(TILE, F32), O(ROWVEC, F32)},
                           G_LOAD(F32),
                           .flops = per_dst0,
                           .bytes = load_bytes},
    [PTO_CLASS_LOADEXPSUM] = {.dst = {O(TILE, F32), O(ROWVEC, F32)},
                              G_LOAD(F32),
                              .flops = four_per_dst0,
                              .bytes = load_bytes},
    [PTO_CLASS_LOADSTORE] = {.dst = {O(TILE, F32), O(ROWVEC, F32)},
                             G_LOAD(F32),
                             .g2 = PTO_GA_WRITE,
                             .g2part = PTO_GP_DST0,
                             .g2dtypes = F32,
                             .flops = softmax_flops,
                             .bytes = load_store_bytes},
    [PTO_CLASS_GATHER] = {.src = {O(INDEX, I32)},
                          .dst = {O(TILE, ANY)},
                          G_ROWS(ANY),
                          .bytes = gather_bytes,
                          .gcols = gather_cols},
    [PTO_CLASS_GATHERELSE] = {.inplace = 1,
                              .src = {O(INDEX, I32), O(TILE, ANY)},
                              .dst = {O(TILE, ANY)},
                              G_ROWS(ANY),
                              .bytes = gather_bytes,
                              .gcols = gather_cols},
    [PTO_CLASS_BINARY] = {.inplace = 1,
                          .src = {O(TILE, NUM), O(TILE, NUM)},
                          .dst = {O(TILE, NUM)},
                          .flops = per_dst0},
    [PTO_CLASS_UNARY] = {.inplace = 1,
                         .src = {O(TILE, NUM)},
                         .dst = {O(TILE, NUM)},
                         .flops = per_dst0},
    [PTO_CLASS_CMP] = {.inplace = 1,
                       .src = {O(TILE, NUM), O(TILE, NUM)},
                       .dst = {O(TILE, I32)},
                       .flops = per_dst0},
    [PTO_CLASS_SEL] = {.inplace = 1,
                       .src = {O(TILE, I32), O(TILE, NUM), O(TILE, NUM)},
                       .dst = {O(TILE, NUM)},
                       .flops = per_dst0},
    [PTO_CLASS_CONVERT] = {.inplace = 1,
                           .src = {O(TILE, ANY)},
                           .dst = {O(TILE, ANY)}},
    [PTO_CLASS_SCALAR] = {.inplace = 1,
                          .src = {O(TILE, NUM)},
                          .dst = {O(TILE, NUM)},
                          .flops = per_dst0},
    [PTO_CLASS_FILL] =
        {
            .dst = {O(TILE, NUM)},
        },
    [PTO_CLASS_ROWRED] = {.inplace = 1,
                          .src = {O(TILE, NUM)},
                          .dst = {O(ROWVEC, NUM)},
                          .flops = per_src0},
    [PTO_CLASS_COLRED] = {.inplace = 1,
                          .src = {O(TILE, NUM)},
                          .dst = {O(COLVEC, NUM)},
                          .flops = per_src0},
    [PTO_CLASS_ROWEXPAND] = {.inplace = 1,
                             .src = {O(ROWVEC, NUM)},
                             .dst = {O(TILE, NUM)}},
    [PTO_CLASS_ROWEXPAND2] = {.inplace = 1,
                              .src = {O(TILE, NUM), O(ROWVEC, NUM)},
                              .dst = {O(TILE, NUM)},
                              .flops = per_dst0},
    [PTO_CLASS_ROWEXPDIF] = {.inplace = 1,
                             .src = {O(TILE, NUM), O(ROWVEC, NUM)},
                             .dst = {O(TILE, NUM)},
                             .flops = two_per_dst0},
    [PTO_CLASS_ROWEXPSUM] = {.inplace = 1,
                             .src = {O(TILE, F32), O(ROWVEC, F32)},
                             .dst = {O(TILE, F32), O(ROWVEC, F32)},
                             .flops = three_per_dst0},
    [PTO_CLASS_COLEXPAND] = {.inplace = 1,
                             .src = {O(COLVEC, NUM)},
                             .dst = {O(TILE, NUM)}},
    [PTO_CLASS_COLEXPAND2] = {.inplace = 1,
                              .src = {O(TILE, NUM), O(COLVEC, NUM)},
                              .dst = {O(TILE, NUM)},
                              .flops = per_dst0},
    [PTO_CLASS_MATMUL] = {.src = {OL(MM_A, L0A, MM), OL(MM_B, L0B, MM)},
                          .dst = {OL(MM_C, L0C, F32)},
                          .native = 1u << 0 | 1u << 1,
                          .flops = mm_flops,
                          .scratch = mm_scratch},
    /* its accumulator: the tile graph's src2 (the planner removes it) */
    [PTO_CLASS_MATMUL_ACC] = {.src = {OL(MM_A, L0A, MM), OL(MM_B, L0B, MM),
                                      O(ROWVEC, F32)},
                              .dst = {OL(MM_C, L0C, F32)},
                              .native = 1u << 0 | 1u << 1,
                              .src_if = PTO_TF_ROWSCALE,
                              .acc_if = PTO_ACC_ALWAYS,
                              .flops = mm_flops,
                              .scratch = mm_scratch},
    [PTO_CLASS_MATMUL_WSUM] = {.src = {OL(MM_A, L0A, MM), OL(MM_B, L0B, MM),
                                       O(ROWVEC, F32)},
                               .dst = {OL(MM_C, L0C, F32)},
                               .flops = mm_flops},
    /* Q^T is the right operand (the keys, read in place, the left); its
     * weights wait in L0B beside it */
    [PTO_CLASS_MATMUL_WSUM_G] =
        {
            .src = {OL(MM_B, L0B, MM), OL(ROWVEC, L0B, F32)},
            .dst = {OL(MM_C, L0C, F32)},
            .g = PTO_GA_READ,
            .gpart = PTO_GP_ALL,
            .gdtypes = MM,
            .native = 1u << 0 | PTO_NATIVE_G,
            .flops = wsg_flops,
            .bytes = all_bytes,
            .scratch = wsg_scratch,
        },
    /* the indices stand where the operand whose rows they pick would */
    [PTO_CLASS_MATMUL_GA] = {.src = {OL(INDEX, L0A, I32), OL(MM_B, L0B, MM)},
                             .dst = {OL(MM_C, L0C, F32)},
                             G_ROWS(MM),
                             .native = 1u << 1 | PTO_NATIVE_G,
                             .flops = ga_flops,
                             .bytes = ga_bytes,
                             .scratch = ga_scratch,
                             .gcols = ga_cols},
    /* its accumulator (PTO_TF_ACC): the tile graph's src2 */
    [PTO_CLASS_MATMUL_GB] = {.src = {OL(MM_A, L0A, MM), OL(INDEX, L0B, I32),
                                     O(ROWVEC, F32)},
                             .dst = {OL(MM_C, L0C, F32)},
                             G_ROWS(MM),
                             .src_if = PTO_TF_ROWSCALE,
                             .acc_if = PTO_TF_ACC,
                             .flops = gb_flops,
                             .bytes = gb_bytes,
                             .scratch = gb_scratch,
                             .gcols = gb_cols},
    [PTO_CLASS_SMONLINE] = {.src = {O(TILE, F32), O(INDEX, I32), O(STATE, F32)},
                            .dst = {OX(PACKED_A, DEF, PANELS, 0, F32),
                                    O(STATE, F32)},
                            .src_if = PTO_TF_ACC,
                            .flops = smonline_flops},
    [PTO_CLASS_SMFINAL] = {.src = {O(TILE, F32), O(STATE, F32)},
                           .dst = {O(TILE, F32), O(ROWVEC, F32)},
                           .flops = smfinal_flops},
    [PTO_CLASS_EXTRACT] = {.src = {O(TILE, ANY)}, .dst = {O(TILE, ANY)}},
    [PTO_CLASS_INSERT] = {.src = {O(TILE, ANY)},
                          .dst = {OX(TILE, DEF, WINDOW, 0, ANY)}},
    [PTO_CLASS_TRANS] = {.src = {O(TILE, ANY)}, .dst = {O(TILE, ANY)}},
    [PTO_CLASS_FILLPAD] = {.inplace = 1,
                           .src = {O(TILE, ANY)},
                           .dst = {OX(TILE, DEF, CAPACITY, PTO_OA_SETS_VALID,
                                      ANY)}},
    [PTO_CLASS_SORT32] = {.inplace = 1,
                          .src = {O(TILE, F32), O(TILE, I32)},
                          .dst = {O(TILE, F32), O(TILE, I32)}},
    [PTO_CLASS_MRGSORT] = {.src = {O(TILE, F32), O(TILE, I32)},
                           .dst = {O(TILE, F32), O(TILE, I32)}},
    [PTO_CLASS_TOPK] = {.src = {O(TILE, F32)},
                        .dst = {O(TILE, F32), O(TILE, I32)},
                        .scratch = topk_scratch},
    [PTO_CLASS_MRGTOPK] = {.src = {O(TILE, F32), O(TILE, I32)},
                           .dst = {O(TILE, F32), O(TILE, I32)}},
};

/* ---- queries ------------------------------------------------------------ */

const pto_insn_info *pto__insn_info(int op) {
  if (op >= 0 && op < PTO_OP_COUNT)
    return &pto__insn_rows[op];
  const pto_custom_op *c = pto__custom_get(op);
  return c ? &c->info : NULL;
}

const char *pto__insn_name(int op) {
  const pto_insn_info *i = pto__insn_info(op);
  return i ? i->name : "?";
}

const char *pto__family_name(pto_insn_family f) {
  static const char *const names[PTO_FAMILY_COUNT] = {
      "memory", "element", "scalar",  "axis",
      "matmul", "move",    "complex", "custom"};
  return (unsigned)f < PTO_FAMILY_COUNT ? names[f] : "?";
}

const char *pto__class_name(pto_insn_class c) {
  static const char *const names[PTO_CLASS_COUNT] = {
#define PTO__CLASS_NAME(name) #name,
      PTO_CLASS_MAP(PTO__CLASS_NAME)
#undef PTO__CLASS_NAME
  };
  return (unsigned)c < PTO_CLASS_COUNT ? names[c] : "?";
}

const pto_insn_facts *pto__class_facts(pto_insn_class c) {
  return (unsigned)c < PTO_CLASS_COUNT ? &pto__class_table[c] : NULL;
}

const pto_insn_facts *pto__insn_facts(int op) {
  const pto_insn_info *i = pto__insn_info(op);
  return i ? &pto__class_table[i->cls] : NULL;
}

int pto__insn_n_src(int op, uint32_t flags) {
  const pto_insn_info *i = pto__insn_info(op);
  if (!i)
    return 0;
  return i->n_src + ((pto__class_table[i->cls].src_if & flags) != 0);
}

pto_operand pto__insn_operand(int op, int is_dst, int r) {
  pto_operand none = {PTO_ROLE_NONE, DEF, PTO_EXT_VALID, 0, 0};
  const pto_insn_info *i = pto__insn_info(op);
  if (!i)
    return none;
  const pto_insn_facts *f = &pto__class_table[i->cls];
  const int n = is_dst ? i->n_dst : i->n_src + (f->src_if != 0);
  if (r < 0 || r >= n || r >= (is_dst ? PTO_MAX_DST : PTO_MAX_SRC))
    return none;
  pto_operand o = is_dst ? f->dst[r] : f->src[r];
  if (o.dtypes & PTO_DT_NUM)
    o.dtypes = (uint16_t)((o.dtypes & ~PTO_DT_NUM) | PTO_DT_F32 |
                          (i->flags & PTO_IF_INT ? PTO_DT_I32 : 0));
  return o;
}

int pto__insn_accumulates(int op, uint32_t flags, int n_src) {
  const pto_insn_info *i = pto__insn_info(op);
  if (!i)
    return 0;
  const pto_insn_facts *f = &pto__class_table[i->cls];
  return n_src > i->n_src && f->dst[0].role == PTO_ROLE_MM_C &&
         pto__facts_acc(f, flags);
}

int pto__insn_copy(void) {
  for (int op = 0; op < PTO_OP_COUNT; op++) {
    const pto_insn_info *i = &pto__insn_rows[op];
    if ((i->flags & PTO_IF_COPY) && pto__class_table[i->cls].g == PTO_GA_NONE &&
        i->n_src == 1 && i->n_dst == 1)
      return op;
  }
  return -1;
}

void pto__shape_of(int op, const pto_targs *a, uint32_t mr, pto_insn_shape *s) {
  *s = (pto_insn_shape){.op = op, .mr = mr};
  const pto_insn_info *i = pto__insn_info(op);
  if (!i || !a)
    return;
  const pto_insn_facts *f = &pto__class_table[i->cls];
  s->n_src = (uint8_t)pto__insn_n_src(op, a->flags);
  s->n_dst = i->n_dst;
  s->flags = a->flags;
  s->imm[0] = a->imm[0];
  s->imm[1] = a->imm[1];
  for (int r = 0; r < s->n_src; r++) {
    s->src[r][0] = a->src[r]->valid_rows;
    s->src[r][1] = a->src[r]->valid_cols;
    s->sdt[r] = a->src[r]->dtype;
  }
  for (int d = 0; d < s->n_dst; d++) {
    s->dst[d][0] = a->dst[d]->valid_rows;
    s->dst[d][1] = a->dst[d]->valid_cols;
    s->ddt[d] = a->dst[d]->dtype;
  }
  if (f->g != PTO_GA_NONE) {
    s->g[0] = a->g.rows;
    s->g[1] = a->g.cols;
    s->gdt = a->g.dtype;
  }
  if (f->g2 != PTO_GA_NONE) {
    s->g2[0] = a->g2.rows;
    s->g2[1] = a->g2.cols;
    s->g2dt = a->g2.dtype;
  }
}

uint64_t pto__insn_flops_of(const pto_insn_shape *s) {
  const pto_insn_facts *f = pto__insn_facts(s->op);
  return f && f->flops ? f->flops(s) : 0;
}
uint64_t pto__insn_bytes_of(const pto_insn_shape *s) {
  const pto_insn_facts *f = pto__insn_facts(s->op);
  return f && f->bytes ? f->bytes(s) : 0;
}
uint64_t pto__insn_scratch_of(const pto_insn_shape *s) {
  const pto_insn_facts *f = pto__insn_facts(s->op);
  return f && f->scratch ? f->scratch(s) : 0;
}
uint64_t pto__insn_gcols_of(const pto_insn_shape *s) {
  const pto_insn_facts *f = pto__insn_facts(s->op);
  return f && f->gcols ? f->gcols(s) : 0;
}

void pto__insn_footprint(const pto_insn_shape *s, pto_core_type core,
                         const uint32_t *cap,
                         uint64_t bytes[PTO_MEM_LEVEL_COUNT]) {
  const pto_mem_level home = core == PTO_CORE_CUBE ? PTO_MEM_L1 : PTO_MEM_UB;
  for (int k = 0; k < s->n_src + s->n_dst; k++) {
    const int is_dst = k >= s->n_src, r = is_dst ? k - s->n_src : k;
    const pto_operand o = pto__insn_operand(s->op, is_dst, r);
    const pto_mem_level l =
        core == PTO_CORE_CUBE && o.level < DEF ? (pto_mem_level)o.level : home;
    const uint32_t *x = cap + 2 * (is_dst ? PTO_MAX_SRC + r : r);
    bytes[l] += pto_tile_bytes(is_dst ? s->ddt[r] : s->sdt[r], x[0], x[1]);
  }
  bytes[home] += pto__insn_scratch_of(s);
}

int pto__insn_may_write(int op, int d, const pto_targs *a, size_t i) {
  const pto_operand o = pto__insn_operand(op, 1, d);
  if (o.role == PTO_ROLE_NONE)
    return 0;
  const pto_tile *t = a->dst[d];
  const uint64_t r = i / t->stride, c = i % t->stride;
  int ext = o.writes;
  const int pack_a = o.role == PTO_ROLE_PACKED_A ||
                     ((o.attr & PTO_OA_PACKABLE) && (a->flags & PTO_TF_PACK_A));
  const int pack_b = o.role == PTO_ROLE_PACKED_B ||
                     ((o.attr & PTO_OA_PACKABLE) && (a->flags & PTO_TF_PACK_B));
  if (ext == PTO_EXT_PANELS && !pack_a && !pack_b)
    ext = PTO_EXT_VALID;
  switch (ext) {
  case PTO_EXT_CAPACITY:
    return r < t->rows && c < t->cols;
  case PTO_EXT_WINDOW: {
    const pto_tile *s0 = a->src[0];
    return r >= (uint64_t)a->imm[0] && r - a->imm[0] < s0->valid_rows &&
           c >= (uint64_t)a->imm[1] && c - a->imm[1] < s0->valid_cols;
  }
  case PTO_EXT_PANELS: { /* panels of w: k-major spans, k in pairs of q */
    const uint64_t w = (uint64_t)(a->imm[0] > 0 ? a->imm[0] : 1),
                   q = pto_dtype_size(t->dtype) == 2 ? 2 : 1;
    const uint64_t span = pack_a ? (uint64_t)w * t->stride : w * t->rows;
    const uint64_t p = i / span, at = i % span;
    const uint32_t across = pack_a ? t->valid_rows : t->valid_cols,
                   along = pack_a ? t->valid_cols : t->valid_rows;
    return p < (across + w - 1) / w && at < up(along, q) * w;
  }
  default:
    return r < t->valid_rows && c < t->valid_cols;
  }
}

uint64_t pto__insn_flops(int op, uint32_t flags, const uint32_t s0[2],
                         const uint32_t s1[2], const uint32_t d[2]) {
  const pto_insn_info *i = pto__insn_info(op);
  if (!i || i->family != PTO_FAMILY_MATMUL)
    return 0;
  pto_insn_shape s = {.op = op, .flags = flags};
  for (int k = 0; k < 2; k++) {
    s.src[0][k] = s0[k];
    s.src[1][k] = s1[k];
    s.dst[0][k] = d[k];
  }
  return pto__insn_flops_of(&s);
}
