/* tileops/cvt_kernels.h (internal): the conversion rows between any two
 * dtypes and the instructions that go through them: TCVT and TMOV (ReLU on
 * the way) between tiles, TLOAD, TSTORE (accumulating, streaming), TGATHER
 * and TGATHERELSE between global views and tiles (core/isa.def), over the
 * vector primitives of tileops/vec_kernels.h. Included by
 * tileops/vec_avx2.c and tileops/vec_avx512.c right after vec_kernels.h,
 * so it is compiled only
 * with that file's ISA flags; nothing here names an intrinsic. Defines
 * cvt_install(), which overrides the six entries. The memory instructions
 * are here because every row they move goes through cvt_fns or acc_fns,
 * which nothing in vec_kernels.h uses. */
#ifndef PTO_TILEOPS_CVT_KERNELS_H
#define PTO_TILEOPS_CVT_KERNELS_H

/* ---- conversions ------------------------------------------------------------
 * Rows of n elements between any two dtypes (core/convert.h): the same dtype
 * copies bits, i32 -> i32 stays integer, everything else goes through f32;
 * with relu, maximum(x, +0) on the way (in i32 for i32 -> i32). */

/* f32 -> bf16 bits, nearest even; NaN: quiet, sign and top payload kept. */
ALWAYS_INLINE vi f32_to_bf16(vf v) {
  const vi u = vf_bits(v);
  const vi lsb = vi_and(vi_srli(u, 16), vi_set(1));
  const vi rounded = vi_srli(vi_add(vi_add(u, vi_set(0x7fff)), lsb), 16);
  const vi quiet = vi_or(vi_srli(u, 16), vi_set(0x40));
  return vi_blend(vf_cmp(v, v, _CMP_UNORD_Q), rounded, quiet);
}

ALWAYS_INLINE vf load_f32(const int dt, const void *p, uint32_t n) {
  switch (dt) {
  case PTO_F32:
    return ldf(p, n);
  case PTO_I32:
    return vi_to_f(ldi(p, n));
  case PTO_BF16:
    return vi_bits(vi_slli(vi_ld16n(p, n), 16));
  default:
    return vf_ldhn(p, n);
  }
}

ALWAYS_INLINE void store_f32(const int dt, void *p, vf v, uint32_t n) {
  switch (dt) {
  case PTO_F32:
    stf(p, v, n);
    break;
  case PTO_I32:
    sti(p, vf_to_i(v), n);
    break;
  case PTO_BF16:
    vi_st16n(p, f32_to_bf16(v), n);
    break;
  default:
    vf_sthn(p, v, n);
    break;
  }
}

ALWAYS_INLINE size_t dt_size(const int dt) {
  return dt == PTO_BF16 || dt == PTO_F16 ? 2 : 4;
}

typedef void (*row_fn)(void *d, const void *s, uint32_t n);

ALWAYS_INLINE void cvt_row(void *dv, const void *sv, uint32_t vc,
                           const int from, const int to, const int relu) {
  unsigned char *restrict d = dv;
  const unsigned char *restrict s = sv;
  const size_t ds = dt_size(to), ss = dt_size(from);
  if (from == to && !relu && ds == 2) {
#define STEP(c, n)                                                             \
  vi_st16n((uint16_t *)(void *)d + c,                                          \
           vi_ld16n((const uint16_t *)(const void *)s + c, n), n)
    FOR_COLS(vc, STEP);
#undef STEP
  } else if (from == to && !relu) {
#define STEP(c, n)                                                             \
  sti((int32_t *)(void *)d + c, ldi((const int32_t *)(const void *)s + c, n), n)
    FOR_COLS(vc, STEP);
#undef STEP
  } else if (from == PTO_I32 && to == PTO_I32) { /* relu */
#define STEP(c, n)                                                             \
  sti((int32_t *)(void *)d + c,                                                \
      vi_max(ldi((const int32_t *)(const void *)s + c, n), vi_set(0)), n)
    FOR_COLS(vc, STEP);
#undef STEP
  } else {
#define STEP(c, n)                                                             \
  do {                                                                         \
    vf v_ = load_f32(from, s + (c) * ss, n);                                   \
    store_f32(to, d + (c) * ds, relu ? vf_max(v_, vf_set(0.0f)) : v_, n);      \
  } while (0)
    FOR_COLS(vc, STEP);
#undef STEP
  }
}

/* g[c] += s[c] (TSTORE with PTO_TF_ACC): i32 + i32 wraps, else in f32. */
ALWAYS_INLINE void acc_row(void *gv, const void *sv, uint32_t vc, const int sdt,
                           const int gdt) {
  unsigned char *restrict g = gv;
  const unsigned char *restrict s = sv;
  const size_t gs = dt_size(gdt), ss = dt_size(sdt);
  if (gdt == PTO_I32 && sdt == PTO_I32) {
#define STEP(c, n)                                                             \
  sti((int32_t *)(void *)g + c,                                                \
      vi_add(ldi((const int32_t *)(const void *)g + c, n),                     \
             ldi((const int32_t *)(const void *)s + c, n)),                    \
      n)
    FOR_COLS(vc, STEP);
#undef STEP
  } else {
#define STEP(c, n)                                                             \
  store_f32(gdt, g + (c) * gs,                                                 \
            vf_add(load_f32(gdt, g + (c) * gs, n),                             \
                   load_f32(sdt, s + (c) * ss, n)),                            \
            n)
    FOR_COLS(vc, STEP);
#undef STEP
  }
}

/* One function per (from, to, relu) and per (tile, global) accumulation. */
#define DT_PAIRS(X)                                                            \
  X(F32, F32) X(F32, I32) X(F32, BF16) X(F32, F16) X(I32, F32) X(I32, I32)     \
  X(I32, BF16) X(I32, F16) X(BF16, F32) X(BF16, I32) X(BF16, BF16)             \
  X(BF16, F16) X(F16, F32) X(F16, I32) X(F16, BF16) X(F16, F16)

#define DEF_ROW_FNS(F, T)                                                      \
  static void cvt_##F##_##T(void *d, const void *s, uint32_t n) {              \
    cvt_row(d, s, n, PTO_##F, PTO_##T, 0);                                     \
  }                                                                            \
  static void relu_##F##_##T(void *d, const void *s, uint32_t n) {             \
    cvt_row(d, s, n, PTO_##F, PTO_##T, 1);                                     \
  }                                                                            \
  static void acc_##F##_##T(void *g, const void *s, uint32_t n) {              \
    acc_row(g, s, n, PTO_##F, PTO_##T);                                        \
  }
DT_PAIRS(DEF_ROW_FNS)
#undef DEF_ROW_FNS

/* [from][to]; acc: [tile dtype][global dtype]. */
#define CVT_ENTRY(F, T) [PTO_##F][PTO_##T] = cvt_##F##_##T,
#define RELU_ENTRY(F, T) [PTO_##F][PTO_##T] = relu_##F##_##T,
#define ACC_ENTRY(F, T) [PTO_##F][PTO_##T] = acc_##F##_##T,
static const row_fn cvt_fns[4][4] = {DT_PAIRS(CVT_ENTRY)};
static const row_fn relu_fns[4][4] = {DT_PAIRS(RELU_ENTRY)};
static const row_fn acc_fns[4][4] = {DT_PAIRS(ACC_ENTRY)};
#undef CVT_ENTRY
#undef RELU_ENTRY
#undef ACC_ENTRY

/* TCVT, TMOV: row by row, through the (from, to, relu) function. */
static int convert_tile(const pto_targs *a, int relu) {
  pto_tile *d = a->dst[0];
  const pto_tile *s = a->src[0];
  row_fn f = (relu ? relu_fns : cvt_fns)[s->dtype][d->dtype];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    f(row_of(d, r), row_of(s, r), d->valid_cols);
  return PTO_OK;
}

static int vec_TCVT(int op, const pto_targs *a) {
  (void)op;
  return convert_tile(a, 0);
}

static int vec_TMOV(int op, const pto_targs *a) {
  (void)op;
  return convert_tile(a, (a->flags & PTO_TF_RELU) != 0);
}

/* ---- memory -------------------------------------------------------------
 * Global views whose columns are not contiguous (transposed views) go to
 * the scalar reference: element-at-a-time either way; a single column is
 * copied here (pto__gview_rows_whole: attention's lse went to the
 * reference, 12% of TSTORE's time at the smoke preset). */

/* A column of one 32-bit element per row, both sides of one dtype (a
 * [rows, 1] tile of indices or of per-row values): moved by a plain loop,
 * not a row function per element (block-table and index columns of
 * thousands of rows cost a call each). 0 when the move is not one. */
static int copy_column(void *d, size_t dstep, const void *s, size_t sstep,
                       uint32_t rows, uint32_t cols, int dt, int sdt) {
  if (cols != 1 || dt != sdt || dt_size(dt) != 4)
    return 0;
  unsigned char *dp = d;
  const unsigned char *sp = s;
  for (uint32_t r = 0; r < rows; r++, dp += dstep, sp += sstep)
    memcpy(dp, sp, 4);
  return 1;
}

/* Bytes between rows r and r + 1 of a tile and of a global view. */
static inline size_t tile_step(const pto_tile *t) {
  return (size_t)t->stride * pto__dtype_bytes(t->dtype);
}
static inline size_t gview_step(const pto_gview *g) {
  return (size_t)g->row_stride * pto__dtype_bytes(g->dtype);
}

static int vec_TLOAD(int op, const pto_targs *a) {
  const pto_gview *g = &a->g;
  pto_tile *d = a->dst[0];
  if (!pto__gview_rows_whole(g, d->valid_cols))
    return pto__isa_ref(op, a);
  if (d->valid_rows &&
      copy_column(d->data, tile_step(d), g->base, gview_step(g),
                  d->valid_rows, d->valid_cols, d->dtype, g->dtype))
    return PTO_OK;
  row_fn f = cvt_fns[g->dtype][d->dtype];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    f(row_of(d, r), grow(g, r), d->valid_cols);
  return PTO_OK;
}

/* A 32-bit row copied with streaming (non-temporal) stores where the
 * destination is vector-aligned: plain stores up to the first aligned
 * element and for the tail. */
static void stream_row(void *dv, const void *sv, uint32_t vc) {
  int32_t *restrict d = dv;
  const int32_t *restrict s = sv;
  uint32_t c = (uint32_t)(((0u - (uintptr_t)d) % (VL * 4)) / 4);
  if (c > vc || ((uintptr_t)d & 3))
    c = vc;
  if (c)
    cvt_fns[PTO_I32][PTO_I32](d, s, c);
  for (; c + VL <= vc; c += VL) /* one vector per step, aligned stores */
    vi_stream(d + c, vi_ld(s + c));
  if (c < vc)
    cvt_fns[PTO_I32][PTO_I32](d + c, s + c, vc - c);
}

static int vec_TSTORE(int op, const pto_targs *a) {
  const pto_gview *g = &a->g;
  const pto_tile *s = a->src[0];
  if (!pto__gview_rows_whole(g, s->valid_cols))
    return pto__isa_ref(op, a);
  row_fn f = a->flags & PTO_TF_ACC ? acc_fns[s->dtype][g->dtype]
                                   : cvt_fns[s->dtype][g->dtype];
  const int stream = (a->flags & (PTO_TF_STREAM | PTO_TF_ACC)) ==
                         PTO_TF_STREAM &&
                     s->dtype == g->dtype && dt_size(s->dtype) == 4;
  if (stream)
    f = stream_row;
  else if (!(a->flags & PTO_TF_ACC) && s->valid_rows &&
           copy_column(g->base, gview_step(g), s->data, tile_step(s),
                       s->valid_rows, s->valid_cols, g->dtype, s->dtype))
    return PTO_OK;
  for (uint32_t r = 0; r < s->valid_rows; r++)
    f(grow(g, r), row_of(s, r), s->valid_cols);
  if (stream) /* order the streaming stores before the task ends */
    store_fence();
  return PTO_OK;
}

/* The gather's indices, element r of src0's valid region row-major, read
 * in order without a division per row. */
typedef struct gather_ix {
  const pto_tile *t;
  const int32_t *row;
  uint32_t r, c;
} gather_ix;

static inline gather_ix gather_ix_start(const pto_tile *t) {
  return (gather_ix){t, row_of(t, 0), 0, 0};
}

static inline int32_t gather_ix_next(gather_ix *x) {
  const int32_t i = x->row[x->c];
  if (++x->c == x->t->valid_cols && ++x->r < x->t->valid_rows) {
    x->c = 0;
    x->row = row_of(x->t, x->r);
  }
  return i;
}

/* TGATHER (other NULL) and TGATHERELSE (other: src1, whose rows the
 * indices -1 take; dst may be other). */
static int gather_rows(int op, const pto_targs *a, const pto_tile *other) {
  const pto_gview *g = &a->g;
  pto_tile *d = a->dst[0];
  if (!pto__gview_rows_whole(g, d->valid_cols))
    return pto__isa_ref(op, a);
  const pto_tile *ix = a->src[0];
  /* one row per index (an index tile a load left empty: none) */
  const uint64_t n_ix = (uint64_t)ix->valid_rows * ix->valid_cols;
  const uint32_t vr = n_ix < d->valid_rows ? (uint32_t)n_ix : d->valid_rows,
                 vc = d->valid_cols;
  const int pad = other || (a->flags & PTO_TF_PAD);
  if (!vr)
    return PTO_OK;
  if (a->flags & PTO_TF_STRICT) { /* every index before any write */
    gather_ix x = gather_ix_start(ix);
    for (uint32_t r = 0; r < vr; r++) {
      const int32_t i = gather_ix_next(&x);
      if ((i < 0 || i >= g->rows) && !(i == -1 && pad))
        return PTO_ERANGE;
    }
  }
  gather_ix x = gather_ix_start(ix);
  const size_t row_bytes = (size_t)vc * dt_size(d->dtype);
  if (vc == 1 && d->dtype == g->dtype && dt_size(d->dtype) == 4) {
    /* a column of 32-bit values (a block table's entries) */
    unsigned char *dp = d->data;
    const size_t step = tile_step(d);
    for (uint32_t r = 0; r < vr; r++, dp += step) {
      const int32_t i = gather_ix_next(&x);
      if (i == -1 && other)
        memmove(dp, row_of(other, r), 4);
      else if (i < 0 || i >= g->rows)
        memset(dp, 0, 4);
      else
        memcpy(dp, grow(g, i), 4);
    }
    return PTO_OK;
  }
  row_fn f = cvt_fns[g->dtype][d->dtype];
  for (uint32_t r = 0; r < vr; r++) {
    const int32_t i = gather_ix_next(&x);
    if (i == -1 && other) { /* other's row, unless it is this one */
      if (row_of(other, r) != row_of(d, r))
        memmove(row_of(d, r), row_of(other, r), row_bytes);
    } else if (i < 0 || i >= g->rows) { /* a zero row in every dtype */
      memset(row_of(d, r), 0, row_bytes);
    } else {
      f(row_of(d, r), grow(g, i), vc);
    }
  }
  return PTO_OK;
}

static int vec_TGATHER(int op, const pto_targs *a) {
  return gather_rows(op, a, NULL);
}

static int vec_TGATHERELSE(int op, const pto_targs *a) {
  return gather_rows(op, a, a->src[1]);
}

static void cvt_install(pto_isa_table *t) {
  t->fn[PTO_OP_TCVT] = vec_TCVT;
  t->fn[PTO_OP_TMOV] = vec_TMOV;
  t->fn[PTO_OP_TLOAD] = vec_TLOAD;
  t->fn[PTO_OP_TSTORE] = vec_TSTORE;
  t->fn[PTO_OP_TGATHER] = vec_TGATHER;
  t->fn[PTO_OP_TGATHERELSE] = vec_TGATHERELSE;
}

#endif /* PTO_TILEOPS_CVT_KERNELS_H */
