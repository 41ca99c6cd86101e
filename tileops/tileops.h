/* tileops/tileops.h (internal): per-ISA tables of tile instructions, dispatch
 * and operand checks.
 *
 * BLIS style: pto__isa_scalar (tileops/ref.c) implements every instruction of
 * core/isa.def exactly as its header comment specifies; it is the oracle. An
 * ISA-specific table (avx2, avx512) starts as a copy of it
 * (pto__isa_table_derive) and overrides the entries it speeds up, and must
 * give the same results (bit-exact for PTO_IF_EXACT instructions).
 *
 * Operands. pto__tileop_run does not validate: its operands must have passed
 * pto__tileop_check, which the compiler does once per instruction. Tiles
 * follow include/pto/tileop.h: data PTO_TILE_ALIGN-aligned, stride >= cols
 * with 64-byte aligned rows, 1 <= valid <= capacity on both axes. A
 * destination may share its buffer with a source only as the very same
 * buffer (same data, stride and element size, same valid shape) and only for
 * instructions that compute each element from the sources at the same
 * position: ELEMENT, SCALAR, the row/col expand ops, TMOV, TFILLPAD, TSORT32.
 * Any other overlap is rejected by the check.
 *
 * Semantic details isa.def leaves open, fixed here for every table:
 *  - max/min on f32 (TMAX TMIN TMAXS TMINS TROWMAX ... TCOLMIN
 *    TROWEXPANDMAX) are IEEE 754-2019 maximum/minimum: a NaN operand gives
 *    that NaN, and +0 > -0. ReLU (TRELU, TMOV with PTO_TF_RELU) is
 *    maximum(x, +0): NaN stays NaN, -0 becomes +0. i32 ReLU is max(x, 0).
 *  - The scalar operand a.s is rounded to f32 for f32 tiles, and to i32
 *    (nearest even, saturating, NaN -> 0) for i32 tiles. TEXPANDS and
 *    TFILLPAD store it converted to the destination's dtype (via f32).
 *  - Reductions fold left to right from the first element (sums in f32;
 *    i32 sums wrap). TMATMUL accumulates, for each output, from 0 (or from
 *    dst for TMATMUL_ACC) over k = 0..K-1 in f32, each product rounded to
 *    f32 first (no FMA); bf16/f16 operands are widened to f32 exactly.
 *    That is the reference's order: SIMD tables fuse multiply-adds and sum
 *    in their own order, which is why TMATMUL is PTO_IF_REDUCE (compared
 *    with a tolerance, not bit for bit).
 *  - Conversions (TLOAD TSTORE TGATHER TCVT TMOV) follow core/convert.h:
 *    same dtype copies bits, otherwise through f32. TSTORE with PTO_TF_ACC
 *    adds in i32 (wrapping) when both the tile and the global are i32, else
 *    in f32 (g converted to f32, plus src converted to f32), then converts
 *    the sum to g's dtype.
 *  - TGATHER with PTO_TF_STRICT checks every index before writing, so dst is
 *    untouched when it returns PTO_ERANGE; so does TGATHERELSE, whose dst
 *    may be its src1 (same buffer and valid shape).
 *  - TSORT32/TMRGSORT order: NaN after every number; between numbers, value
 *    descending with -0 == +0; ties by index ascending; equal (value, index)
 *    keep their order (TMRGSORT: the earlier run first). TTOPK and
 *    TMRGTOPK rank in the same order and copy the selected values bit for
 *    bit (a NaN's payload, -0); in their masked mode (imm[1] == 1) -inf
 *    entries are dropped and padding is (-inf, -1). TMRGSORT and TMRGTOPK
 *    assume sorted runs (in the mode's order): on other input a table may
 *    differ from the reference.
 *  - TFILLPAD sets dst's valid region to its capacity.
 *  - TTRI and TCI compute c <= r + imm[0] and imm[0] + c in 64 bits (TCI on
 *    i32 wraps, on f32 rounds to nearest even).
 *
 * Operand rules enforced by pto__tileop_check (status in brackets):
 *  - every src[0..n_src-1] and dst[0..n_dst-1] non-NULL, and g.base for
 *    memory instructions [EINVAL]; tile geometry as above [EINVAL], valid
 *    region empty or beyond capacity [ESHAPE].
 *  - dtypes [EDTYPE]: arithmetic tiles are f32, or i32 when the instruction
 *    has PTO_IF_INT, and all the same dtype except where stated: TCMP dst
 *    i32; TSEL src0 i32; TCVT/TMOV any dtype to any; TEXTRACT TINSERT TTRANS
 *    TFILLPAD any dtype, dst = src; TLOAD TSTORE TGATHER any tile dtype and
 *    any global dtype (TGATHER src0 i32); TMATMUL* src0/src1 f32, bf16 or
 *    f16 each, dst f32; TSORT32/TMRGSORT src0 and dst0 f32, src1 and dst1 i32;
 *    TTOPK src0 f32, TMRGTOPK src0 f32 and src1 i32, both dst0 f32 and dst1
 *    i32.
 *  - shapes [ESHAPE]: sources have dst's valid shape, except rowvec operands
 *    (valid vr x 1) and colvec operands (valid 1 x vc); TROW* reductions give
 *    vr x 1, TCOL* give 1 x vc; TTRANS dst is src transposed; TMATMUL dst is
 *    M x N and A, B agree on K; TEXTRACT's window lies in src0's valid
 *    region and TINSERT's in dst's valid region (offsets >= 0); TFILLPAD
 *    src0's valid region fits dst's capacity; TLOAD/TSTORE g covers the
 *    tile's valid region; TGATHER g.cols >= dst valid cols and src0 holds
 *    exactly dst valid rows indices (TGATHERELSE: and src1 has dst's dtype
 *    and valid shape); TLOADSOFTMAXSTORE's g2 is f32
 *    [EDTYPE], covers dst0's valid region [ESHAPE] and shares no byte with
 *    the span g's window covers [EINVAL].
 *  - immediates [EINVAL]: TCMP imm[0] < PTO_CMP_MODE_COUNT; TMRGSORT
 *    imm[0] >= 1 and imm[1] in 2..4; TTOPK/TMRGTOPK mode imm[1] 0 or 1;
 *    TTOPK imm[0] + src0 valid cols - 1 <= INT32_MAX; TMRGTOPK run length
 *    imm[0] >= 1, at most 4 runs in src0's valid cols, and index offset
 *    per run s an integer in [0, INT32_MAX].
 *  - TTOPK/TMRGTOPK shapes [ESHAPE]: dst0 and dst1 one valid shape with
 *    src0's valid rows, TMRGTOPK src1 of src0's valid shape; in mode 0
 *    dst0's valid cols <= src0's.
 *  - packed matmul operands (core/isa.def): TLOAD takes at most one of
 *    PTO_TF_PACK_A / PTO_TF_PACK_B [EINVAL], TMATMUL* takes PACK_A without
 *    TRANS_A and PACK_B without TRANS_B [EINVAL]; every panel width is in
 *    1..PTO_MM_PANEL_MAX [EINVAL]; the padded panels fit the tile: PACK_A
 *    roundup(valid_rows, w) <= rows, PACK_B roundup(valid_cols, w) <= stride
 *    [ESHAPE].
 *  - custom instructions: dst[0] of the registered out_dtype, n_src sources
 *    of dst's valid shape.
 */
#ifndef PTO_TILEOPS_TILEOPS_H
#define PTO_TILEOPS_TILEOPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/isa.h"

/* One implementation of every built-in instruction, indexed by opcode. */
typedef struct pto_isa_table {
  const char *name; /* "scalar", "avx2", ... as PTO_ISA spells it */
  pto_tileop_fn fn[PTO_OP_COUNT];
  /* The panel widths its TMATMUL is fastest with on packed operands: rows
   * of an A panel (mr) and cols of a B panel (nr), the micro-kernel's
   * register block. Every table runs every width; these are a preference. */
  uint32_t mm_mr, mm_nr;
  /* The matmul engine that runs TMATMUL* on operands of each dtype (NULL
   * for i32): "<isa>-f32" for this table's f32 micro-kernel, which takes
   * bf16 and f16 operands widened to f32 exactly as TLOAD packs them.
   * A table with a native bf16 path (AVX-512 BF16, tileops/
   * mm_avx512bf16.c: a variant of its own in tileops/dispatch.c, chosen at
   * start-up like every table) names it here for PTO_BF16 and keeps its
   * f32 engine for PTO_F32. */
  const char *mm_engine[PTO_DTYPE_COUNT];
  /* 1 for the operand dtypes its engine multiplies as they are
   * (tileops/mm_loops.h's PACKED_NATIVE_BF16 and mm_gather.h's
   * GATHER_NATIVE_BF16): the partitioner packs a matmul operand loaded
   * from a global of that dtype into a tile of it (k in pairs, core/
   * isa.def) when every matmul reading it takes it so, not widened to
   * f32 (pto__mm_native, partitioner/plan.c). */
  uint8_t mm_native[PTO_DTYPE_COUNT];
} pto_isa_table;

/* The panel widths of the active table (pto__isa_active), for the
 * partitioner to pack matmul operands with. */
void pto__mm_panel(uint32_t *mr, uint32_t *nr);
/* Whether the active table's engine takes packed operands of dtype dt as
 * they are (pto_isa_table.mm_native). */
int pto__mm_native(pto_dtype dt);

/* pto_dtype_size, inline: the kernels take a row's address with it once
 * per row and the reference once per element, and the exported function's
 * call cost more than the multiply (the SIMD registers live across it are
 * spilled and reloaded around it). On Zen 3: TSOFTMAXONLINE on a 176 x 128
 * block 17.2 us against 18.5 (best of 300); the tileops-scalar suite 15.8 s
 * against 18.4. */
static inline size_t pto__dtype_bytes(pto_dtype dt) {
  switch (dt) {
#define PTO__DTYPE_BYTES(name, str, size)                                      \
  case PTO_##name:                                                             \
    return size;
    PTO_DTYPE_MAP(PTO__DTYPE_BYTES)
#undef PTO__DTYPE_BYTES
  default:
    return 0;
  }
}

/* Whether cols columns of each row of g lie one after the other: its
 * columns are contiguous, or there is one (a single column's stride does
 * not matter: attention's lse, a column of a [B,S1,H] tensor). The SIMD
 * loads and stores copy such rows whole; any other view goes to the
 * reference, element at a time either way. */
static inline int pto__gview_rows_whole(const pto_gview *g, uint32_t cols) {
  return g->col_stride == 1 || cols <= 1;
}

/* How many consecutive k one lane of a packed panel holds together
 * (layout: core/isa.def, TLOAD): 2 in a 2-byte tile (bf16, f16: the pair
 * a dot-product instruction such as vdpbf16ps reads as one 32-bit unit),
 * else 1. */
static inline uint32_t pto__pack_kgroup(pto_dtype dt) {
  return pto__dtype_bytes(dt) == 2 ? 2 : 1;
}

/* Where logical element (r, c) of a packed operand lives, in elements from
 * its data (layout: core/isa.def, TLOAD). */
static inline size_t pto__pack_a_index(const pto_tile *t, uint32_t w,
                                       uint32_t r, uint32_t c) {
  const uint32_t g = pto__pack_kgroup(t->dtype);
  return (size_t)(r / w) * w * t->stride + (size_t)(c / g) * g * w +
         (size_t)(r % w) * g + c % g;
}
static inline size_t pto__pack_b_index(const pto_tile *t, uint32_t w,
                                       uint32_t r, uint32_t c) {
  const uint32_t g = pto__pack_kgroup(t->dtype);
  return (size_t)(c / w) * w * t->rows + (size_t)(r / g) * g * w +
         (size_t)(c % w) * g + r % g;
}

/* The i-th index of an i32 index tile, row-major over its valid region. */
static inline int32_t pto__index_at(const pto_tile *t, uint32_t i) {
  return ((const int32_t *)t->data)[(size_t)(i / t->valid_cols) * t->stride +
                                    i % t->valid_cols];
}
/* The row of table g that slot t of the index tile idx picks, NULL when
 * its index is outside [0, g->rows) (TMATMUL_GA/GB). */
static inline const unsigned char *pto__table_row(const pto_tile *idx,
                                                  const pto_gview *g,
                                                  uint32_t t) {
  const int32_t i = pto__index_at(idx, t);
  return i >= 0 && i < g->rows
             ? (const unsigned char *)g->base +
                   i * g->row_stride * (int64_t)pto__dtype_bytes(g->dtype)
             : NULL;
}
/* d[0..n) = the n bf16 at s as f32, exactly (a bf16 is the top half of its
 * f32); SSE2 (tileops/pack.c). */
void pto__widen_bf16(float *restrict d, const void *restrict s, uint32_t n);

/* TLOAD with PTO_TF_PACK_A or PTO_TF_PACK_B, fast where the global and the
 * tile are f32 (and through the reference otherwise): the packing the SIMD
 * tables share (tileops/pack.c). Same contract as a table entry. */
int pto__tload_pack(int op, const pto_targs *a);
/* TSTORE of an f32 tile to an f32 global with unit column stride (a matmul
 * result leaving L0C), row by row; the reference for anything else.
 * Bit-exact with the reference, PTO_TF_ACC included. The matmul tables
 * install it only where their table still has the reference's TSTORE. */
int pto__tstore_f32(int op, const pto_targs *a);

/* 1 when (v0, i0) sorts before (v1, i1) in the order of TSORT32, TMRGSORT,
 * TTOPK and TMRGTOPK (tileops.h above): numbers before NaN, value
 * descending (-0 == +0), then index ascending. */
static inline int pto__sorts_before(float v0, int32_t i0, float v1,
                                    int32_t i1) {
  int n0 = v0 != v0, n1 = v1 != v1;
  if (n0 != n1)
    return n1;
  if (!n0 && v0 != v1)
    return v0 > v1;
  return i0 < i1;
}

/* The references of attention's instructions (tileops/ref_attn.c), entries
 * of the scalar table. */
int pto__ref_TSOFTMAXONLINE(int op, const pto_targs *a);
int pto__ref_TSOFTMAXFINAL(int op, const pto_targs *a);
int pto__ref_TMATMUL_GA(int op, const pto_targs *a);
int pto__ref_TMATMUL_GB(int op, const pto_targs *a);
int pto__ref_TMATMUL_RELU_WSUM_G(int op, const pto_targs *a);

/* The reference: every entry set. */
extern const pto_isa_table pto__isa_scalar;

/* How a SIMD kernel whose fast path cannot take its arguments runs the
 * reference instead: pto__isa_scalar's entry for op, the call counted in
 * pto__ref_calls (this thread's), so that a traced run can tell how much of
 * an instruction's time went to the reference (scheduler/exec.c). */
extern _Thread_local uint64_t pto__ref_calls;

/* An instruction whose destination a run's dynamic extents leave
 * non-empty but one of whose sources they empty (tileops/empty.c): 1 when
 * this wrote its result (a reduction's identity, an accumulation's nothing,
 * a selection's padding), 0 when the kernel must run. */
int pto__insn_empty(int op, const pto_targs *a);
int pto__isa_ref(int op, const pto_targs *a);

/* The reference's TTOPK and TMRGTOPK (tileops/topk_ref.c). */
int pto__ref_ttopk(int op, const pto_targs *a);
int pto__ref_tmrgtopk(int op, const pto_targs *a);

/* Makes t a copy of base named name, for an ISA table to override entries. */
void pto__isa_table_derive(pto_isa_table *t, const char *name,
                           const pto_isa_table *base);

/* The x86 tables, each built once (thread-safe) by tileops/tables.c: a copy
 * of the scalar one, then the overrides of the vector instructions
 * (tileops/vec_<isa>.c) and of the matmul instructions (tileops/mm_<isa>.c).
 * Each override file is the only one compiled with its ISA's flags. Call
 * them only where the CPU runs the ISA. */
const pto_isa_table *pto__isa_avx2(void);
const pto_isa_table *pto__isa_avx512(void);
const pto_isa_table *pto__isa_avx512bf16(void);
void pto__vec_avx2(pto_isa_table *t);
void pto__vec_avx512(pto_isa_table *t);
void pto__mm_avx2(pto_isa_table *t);
void pto__mm_avx512(pto_isa_table *t);
/* avx512bf16: the avx512 table with the bf16 engine's kernels
 * (tileops/mm_avx512bf16.c). pto__bf16_gain: the speed of vdpbf16ps over
 * f32 FMAs on this CPU, measured on registers in about 0.3 ms (2 where it
 * issues at the FMA's rate, 1 where at half): whether the table is worth
 * choosing by default. */
void pto__mm_avx512bf16(pto_isa_table *t);
double pto__bf16_gain(void);

/* The table in use, chosen once: the best this CPU runs, or the one
 * PTO_ISA names. Never NULL: when PTO_ISA cannot be honoured it is still the
 * best table, but pto__isa_check fails, and every entry point that resolves
 * instructions (pto_compile, pto_runtime_new, the serial runner) checks
 * first. Safe from any thread. */
const pto_isa_table *pto__isa_active(void);
/* The table the default would choose, whatever PTO_ISA says: what the
 * machine itself does at its best (the calibration's memory probes). */
const pto_isa_table *pto__isa_best(void);

/* 0, or PTO_EISA when PTO_ISA names a table this build lacks or this CPU
 * cannot run, with msg (when not NULL) e.g. "PTO_ISA=avx512: this CPU/OS does
 * not run avx512 (it runs: avx2, scalar)". */
int pto__isa_check(char *msg, size_t msg_size);

/* The choice itself, without the environment or the CPU: want (NULL or ""
 * for the default) against runs, the names of the tables this machine runs,
 * best first, NULL-terminated. Sets *chosen to the table's name and returns
 * 0, or returns PTO_EISA with the message above. For pto__isa_active and
 * for tests that play a CPU without some ISA. */
int pto__isa_resolve(const char *want, const char *const *runs,
                     const char **chosen, char *msg, size_t msg_size);

/* Runs a built-in op through the active table, or a custom op (id >=
 * PTO_OP_COUNT) through its registered function. Returns 0 or a negative
 * pto_status; PTO_EINVAL for an unknown op or a NULL a. Operands must have
 * passed pto__tileop_check. */
int pto__tileop_run(int op, const pto_targs *a);
/* Custom instruction op (id >= PTO_OP_COUNT) through its registered
 * function; PTO_EINVAL when no such instruction is registered. */
int pto__custom_run(int op, const pto_targs *a);

/* Validates op's operands (rules above). Returns 0, or PTO_EINVAL,
 * PTO_ESHAPE or PTO_EDTYPE with a message naming the instruction and the
 * sizes in msg (when msg is not NULL and msg_size > 0), e.g.
 * "TADD: src1 valid 16x32 differs from dst valid 16x33". Never aborts. */
int pto__tileop_check(int op, const pto_targs *a, char *msg, size_t msg_size);

#endif /* PTO_TILEOPS_TILEOPS_H */
