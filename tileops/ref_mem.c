/* The scalar reference of the memory instructions TLOAD, TSTORE,
 * TROWEXPANDMULSTORE, TGATHER and TGATHERELSE, and of the complex ones
 * TSORT32, TMRGSORT, TCI, TTRI and the fused loads TLOADROWMAX,
 * TLOADEXPDIFSUM and TLOADSOFTMAXSTORE (core/isa.def): one function per
 * instruction, written to be obviously right, not fast; tileops/ref.c puts
 * them in the scalar table
 * (TTOPK and TMRGTOPK are in tileops/topk_ref.c). Semantics: core/isa.def,
 * plus the details fixed in tileops/tileops.h. Operands have passed
 * pto__tileop_check. Compiled with -ffp-contract=off, as ref.c.
 *
 * In-place use: TSORT32, the one of these tileops.h allows in place, reads
 * each block before writing it. */
#include <stdint.h>
#include <string.h>

#include "core/convert.h"
#include "tileops/ref.h"
#include "tileops/tileops.h"

/* ---- memory ------------------------------------------------------------- */

/* TLOAD packed for TMATMUL (layout: core/isa.def): every valid element at
 * its packed position, then zeros over the padding of the last panel. */
static int load_packed(const pto_targs *a) {
  pto_tile *d = a->dst[0];
  int pack_a = (a->flags & PTO_TF_PACK_A) != 0;
  uint32_t w = (uint32_t)a->imm[0], vr = d->valid_rows, vc = d->valid_cols;
  size_t es = pto__dtype_bytes(d->dtype);
  unsigned char *data = d->data;
  /* padded extent: rows for PACK_A, cols for PACK_B, and k to whole
   * groups (pairs in a 2-byte tile) */
  const uint32_t kg = pto__pack_kgroup(d->dtype);
  uint32_t rows = pack_a ? (vr + w - 1) / w * w : (vr + kg - 1) / kg * kg;
  uint32_t cols = pack_a ? (vc + kg - 1) / kg * kg : (vc + w - 1) / w * w;
  for (uint32_t r = 0; r < rows; r++)
    for (uint32_t c = 0; c < cols; c++) {
      size_t i = pack_a ? pto__pack_a_index(d, w, r, c)
                        : pto__pack_b_index(d, w, r, c);
      if (r < vr && c < vc)
        pto__convert(d->dtype, data + i * es, a->g.dtype, gelem(&a->g, r, c));
      else
        memset(data + i * es, 0, es); /* zero in every dtype */
    }
  return PTO_OK;
}

int pto__ref_TLOAD(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  if (a->flags & (PTO_TF_PACK_A | PTO_TF_PACK_B))
    return load_packed(a);
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++)
      pto__convert(d->dtype, elem(d, r, c), a->g.dtype, gelem(&a->g, r, c));
  return PTO_OK;
}

int pto__ref_TSTORE(int op, const pto_targs *a) {
  (void)op;
  const pto_tile *s = a->src[0];
  const pto_gview *g = &a->g;
  for (uint32_t r = 0; r < s->valid_rows; r++)
    for (uint32_t c = 0; c < s->valid_cols; c++) {
      void *ge = gelem(g, r, c);
      if (!(a->flags & PTO_TF_ACC)) {
        pto__convert(g->dtype, ge, s->dtype, elem(s, r, c));
      } else if (g->dtype == PTO_I32 && s->dtype == PTO_I32) {
        int32_t x;
        memcpy(&x, ge, sizeof x);
        x = i_add(x, ldi(s, r, c));
        memcpy(ge, &x, sizeof x);
      } else {
        float sum =
            pto__to_f32(g->dtype, ge) + pto__to_f32(s->dtype, elem(s, r, c));
        pto__from_f32(g->dtype, ge, sum);
      }
    }
  return PTO_OK;
}

/* g[r][c] = src0[r][c] * src1[r][0], all f32: TROWEXPANDMUL's products
 * written to global instead of a tile. */
int pto__ref_TROWEXPANDMULSTORE(int op, const pto_targs *a) {
  (void)op;
  const pto_tile *x = a->src[0], *v = a->src[1];
  for (uint32_t r = 0; r < x->valid_rows; r++)
    for (uint32_t c = 0; c < x->valid_cols; c++) {
      const float y = f_mul(ldf(x, r, c), ldf(v, r, 0));
      memcpy(gelem(&a->g, r, c), &y, sizeof y);
    }
  return PTO_OK;
}

/* Index r of the gather: element r of src0's valid region, row-major. */
static int32_t gather_index(const pto_tile *idx, uint32_t r) {
  return ldi(idx, r / idx->valid_cols, r % idx->valid_cols);
}

/* The rows a gather writes: one per index, at most dst's valid rows. A
 * load from a window the extents emptied leaves the index tile empty while
 * dst keeps its rows (tiles carry no batch clip): those rows are past the
 * extents, never stored, and their stale indices are not read. */
static uint32_t gather_rows_of(const pto_tile *d, const pto_tile *idx) {
  const uint64_t n = (uint64_t)idx->valid_rows * idx->valid_cols;
  return n < d->valid_rows ? (uint32_t)n : d->valid_rows;
}

int pto__ref_TGATHER(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *idx = a->src[0];
  const pto_gview *g = &a->g;
  const uint32_t rows = gather_rows_of(d, idx);
  if (a->flags & PTO_TF_STRICT)
    for (uint32_t r = 0; r < rows; r++) {
      int32_t i = gather_index(idx, r);
      if ((i < 0 || i >= g->rows) && !(i == -1 && (a->flags & PTO_TF_PAD)))
        return PTO_ERANGE;
    }
  for (uint32_t r = 0; r < rows; r++) {
    int32_t i = gather_index(idx, r);
    for (uint32_t c = 0; c < d->valid_cols; c++)
      if (i < 0 || i >= g->rows) /* a zero row: all-zero bits in every dtype */
        memset(elem(d, r, c), 0, pto__dtype_bytes(d->dtype));
      else
        pto__convert(d->dtype, elem(d, r, c), g->dtype,
                     gelem(g, (uint32_t)i, c));
  }
  return PTO_OK;
}

/* TGATHER, with the rows of index -1 taken from src1 (dst may be src1:
 * each row is read before it is written). */
int pto__ref_TGATHERELSE(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *idx = a->src[0], *other = a->src[1];
  const pto_gview *g = &a->g;
  const uint32_t rows = gather_rows_of(d, idx);
  if (a->flags & PTO_TF_STRICT)
    for (uint32_t r = 0; r < rows; r++) {
      int32_t i = gather_index(idx, r);
      if ((i < 0 || i >= g->rows) && i != -1)
        return PTO_ERANGE;
    }
  for (uint32_t r = 0; r < rows; r++) {
    int32_t i = gather_index(idx, r);
    for (uint32_t c = 0; c < d->valid_cols; c++)
      if (i == -1)
        copy_elem(d, r, c, other, r, c);
      else if (i < 0 || i >= g->rows)
        memset(elem(d, r, c), 0, pto__dtype_bytes(d->dtype));
      else
        pto__convert(d->dtype, elem(d, r, c), g->dtype,
                     gelem(g, (uint32_t)i, c));
  }
  return PTO_OK;
}

/* ---- complex ------------------------------------------------------------ */

int pto__ref_TSORT32(int op, const pto_targs *a) {
  (void)op;
  const pto_tile *sv = a->src[0], *si = a->src[1];
  pto_tile *dv = a->dst[0], *di = a->dst[1];
  for (uint32_t r = 0; r < dv->valid_rows; r++)
    for (uint32_t b = 0; b < dv->valid_cols; b += 32) {
      uint32_t n = dv->valid_cols - b < 32 ? dv->valid_cols - b : 32;
      float v[32];
      int32_t ix[32];
      for (uint32_t k = 0; k < n; k++) { /* read the block before writing */
        v[k] = ldf(sv, r, b + k);
        ix[k] = ldi(si, r, b + k);
      }
      for (uint32_t k = 1; k < n; k++) { /* insertion sort: stable */
        float kv = v[k];
        int32_t ki = ix[k];
        uint32_t j = k;
        for (; j > 0 && pto__sorts_before(kv, ki, v[j - 1], ix[j - 1]); j--) {
          v[j] = v[j - 1];
          ix[j] = ix[j - 1];
        }
        v[j] = kv;
        ix[j] = ki;
      }
      for (uint32_t k = 0; k < n; k++) {
        stf(dv, r, b + k, v[k]);
        sti(di, r, b + k, ix[k]);
      }
    }
  return PTO_OK;
}

int pto__ref_TMRGSORT(int op, const pto_targs *a) {
  (void)op;
  const pto_tile *sv = a->src[0], *si = a->src[1];
  pto_tile *dv = a->dst[0], *di = a->dst[1];
  uint64_t run = (uint64_t)a->imm[0], ways = (uint64_t)a->imm[1];
  uint64_t vc = dv->valid_cols;
  for (uint32_t r = 0; r < dv->valid_rows; r++)
    for (uint64_t g0 = 0; g0 < vc; g0 += run * ways) {
      /* The runs of this group: [head[k], end[k]), possibly short or empty. */
      uint64_t head[4], end[4];
      for (uint64_t k = 0; k < ways; k++) {
        uint64_t lo = g0 + k * run, hi = lo + run;
        head[k] = lo < vc ? lo : vc;
        end[k] = hi < vc ? hi : vc;
      }
      uint64_t out = g0;
      for (;;) { /* take the best head; on a tie the earlier run */
        int best = -1;
        for (uint64_t k = 0; k < ways; k++) {
          if (head[k] == end[k])
            continue;
          if (best < 0 || pto__sorts_before(ldf(sv, r, (uint32_t)head[k]),
                                       ldi(si, r, (uint32_t)head[k]),
                                       ldf(sv, r, (uint32_t)head[best]),
                                       ldi(si, r, (uint32_t)head[best])))
            best = (int)k;
        }
        if (best < 0)
          break;
        stf(dv, r, (uint32_t)out, ldf(sv, r, (uint32_t)head[best]));
        sti(di, r, (uint32_t)out, ldi(si, r, (uint32_t)head[best]));
        out++;
        head[best]++;
      }
    }
  return PTO_OK;
}

int pto__ref_TCI(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++) {
      int64_t v = (int64_t)a->imm[0] + c;
      if (d->dtype == PTO_I32)
        sti(d, r, c, wrap((uint32_t)v));
      else
        stf(d, r, c, (float)v);
    }
  return PTO_OK;
}

int pto__ref_TTRI(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t c = 0; c < d->valid_cols; c++) {
      int one = (int64_t)c <= (int64_t)r + a->imm[0];
      if (d->dtype == PTO_I32)
        sti(d, r, c, one);
      else
        stf(d, r, c, (float)one);
    }
  return PTO_OK;
}

/* TLOAD into dst0, then TROWMAX of dst0 into dst1. */
int pto__ref_TLOADROWMAX(int op, const pto_targs *a) {
  (void)op;
  int st = ref_TLOAD(PTO_OP_TLOAD, a);
  if (st)
    return st;
  pto_targs m = *a;
  m.src[0] = a->dst[0];
  m.dst[0] = a->dst[1];
  m.dst[1] = NULL;
  return ref_TROWMAX(PTO_OP_TROWMAX, &m);
}

/* TLOADROWMAX into dst0 and dst1 (the loaded rows and their maxima), then
 * TROWEXPANDEXPDIFSUM of them in place, which reads each element and each
 * row's max before writing over them. */
int pto__ref_TLOADEXPDIFSUM(int op, const pto_targs *a) {
  (void)op;
  int st = ref_TLOADROWMAX(PTO_OP_TLOADROWMAX, a);
  if (st)
    return st;
  pto_targs e = *a;
  e.src[0] = a->dst[0];
  e.src[1] = a->dst[1];
  return ref_TROWEXPANDEXPDIFSUM(PTO_OP_TROWEXPANDEXPDIFSUM, &e);
}

/* TLOADEXPDIFSUM into dst0 and dst1, then each row's TRECIP quotient of its
 * sum and the TROWEXPANDMULSTORE products into g2. */
int pto__ref_TLOADSOFTMAXSTORE(int op, const pto_targs *a) {
  (void)op;
  int st = ref_TLOADEXPDIFSUM(PTO_OP_TLOADEXPDIFSUM, a);
  if (st)
    return st;
  const pto_tile *u = a->dst[0], *s = a->dst[1];
  for (uint32_t r = 0; r < u->valid_rows; r++) {
    const float inv = f_recip(ldf(s, r, 0));
    for (uint32_t c = 0; c < u->valid_cols; c++) {
      const float y = f_mul(ldf(u, r, c), inv);
      memcpy(gelem(&a->g2, r, c), &y, sizeof y);
    }
  }
  return PTO_OK;
}
