/* tileops/ref.h (internal): what the two files of the scalar reference,
 * tileops/ref.c and tileops/ref_mem.c, share: element access, the scalar
 * semantics of the elements, and the instructions each defines for the
 * other or for the table (pto__isa_scalar, in ref.c). Included by those two
 * only, which are compiled with -ffp-contract=off. */
#ifndef PTO_TILEOPS_REF_H
#define PTO_TILEOPS_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tileops/tileops.h"

/* ---- element access ----------------------------------------------------- */

static inline size_t at(const pto_tile *t, uint32_t r, uint32_t c) {
  return (size_t)r * t->stride + c;
}

static inline float ldf(const pto_tile *t, uint32_t r, uint32_t c) {
  return ((const float *)t->data)[at(t, r, c)];
}
static inline void stf(pto_tile *t, uint32_t r, uint32_t c, float v) {
  ((float *)t->data)[at(t, r, c)] = v;
}
static inline int32_t ldi(const pto_tile *t, uint32_t r, uint32_t c) {
  return ((const int32_t *)t->data)[at(t, r, c)];
}
static inline void sti(pto_tile *t, uint32_t r, uint32_t c, int32_t v) {
  ((int32_t *)t->data)[at(t, r, c)] = v;
}

/* Address of element (r, c) of a tile of any dtype. */
static inline void *elem(const pto_tile *t, uint32_t r, uint32_t c) {
  return (unsigned char *)t->data + at(t, r, c) * pto__dtype_bytes(t->dtype);
}

/* Copies element (sr, sc) of s to (dr, dc) of d; same dtype. */
static inline void copy_elem(pto_tile *d, uint32_t dr, uint32_t dc,
                             const pto_tile *s, uint32_t sr, uint32_t sc) {
  memmove(elem(d, dr, dc), elem(s, sr, sc), pto__dtype_bytes(d->dtype));
}

/* Element (r, c) of a global view. */
static inline void *gelem(const pto_gview *g, uint32_t r, uint32_t c) {
  int64_t off = (int64_t)r * g->row_stride + (int64_t)c * g->col_stride;
  return (unsigned char *)g->base + off * (int64_t)pto__dtype_bytes(g->dtype);
}

/* ---- scalar semantics --------------------------------------------------- */

/* i32 arithmetic is done on uint32_t (mod 2^32) and read back as i32. */
static inline int32_t wrap(uint32_t u) {
  int32_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}

static inline float f_add(float x, float y) {
  return x + y;
}
static inline float f_sub(float x, float y) {
  return x - y;
}
static inline float f_mul(float x, float y) {
  return x * y;
}
static inline float f_div(float x, float y) {
  return x / y;
}
/* IEEE 754-2019 maximum/minimum: NaN propagates, +0 > -0. */
static inline float f_max(float x, float y) {
  if (isnan(x))
    return x;
  if (isnan(y))
    return y;
  if (x == y) /* equal, or +0 and -0 */
    return signbit(x) ? y : x;
  return x > y ? x : y;
}
static inline float f_min(float x, float y) {
  if (isnan(x))
    return x;
  if (isnan(y))
    return y;
  if (x == y)
    return signbit(x) ? x : y;
  return x < y ? x : y;
}
static inline float f_expdif(float x, float y) {
  return expf(x - y);
}

static inline int32_t i_add(int32_t x, int32_t y) {
  return wrap((uint32_t)x + (uint32_t)y);
}
static inline int32_t i_sub(int32_t x, int32_t y) {
  return wrap((uint32_t)x - (uint32_t)y);
}
static inline int32_t i_mul(int32_t x, int32_t y) {
  return wrap((uint32_t)x * (uint32_t)y);
}
static inline int32_t i_div(int32_t x, int32_t y) {
  if (y == 0)
    return 0;
  if (x == INT32_MIN && y == -1) /* 2^31 wraps to INT32_MIN */
    return INT32_MIN;
  return x / y; /* truncates */
}
static inline int32_t i_max(int32_t x, int32_t y) {
  return x > y ? x : y;
}
static inline int32_t i_min(int32_t x, int32_t y) {
  return x < y ? x : y;
}

static inline float f_exp(float x) {
  return expf(x);
}
static inline float f_log(float x) {
  return logf(x);
}
static inline float f_sqrt(float x) {
  return sqrtf(x);
}
static inline float f_rsqrt(float x) {
  return 1.0f / sqrtf(x);
}
static inline float f_recip(float x) {
  return 1.0f / x;
}
static inline float f_relu(float x) {
  return f_max(x, 0.0f);
}
static inline float f_abs(float x) {
  return fabsf(x);
}
static inline float f_neg(float x) {
  return -x;
}

static inline int32_t i_relu(int32_t x) {
  return x > 0 ? x : 0;
}
static inline int32_t i_abs(int32_t x) {
  return x < 0 ? wrap(0u - (uint32_t)x) : x;
}
static inline int32_t i_neg(int32_t x) {
  return wrap(0u - (uint32_t)x);
}

typedef float (*f_binop)(float, float);
typedef int32_t (*i_binop)(int32_t, int32_t);
typedef float (*f_unop)(float);
typedef int32_t (*i_unop)(int32_t);

/* ---- instructions across the two files ---------------------------------- */

/* tileops/ref.c's, run by the fused loads of tileops/ref_mem.c */
int pto__ref_TROWMAX(int op, const pto_targs *a);
int pto__ref_TROWEXPANDEXPDIFSUM(int op, const pto_targs *a);

/* tileops/ref_mem.c's: the memory instructions, then the complex ones */
int pto__ref_TLOAD(int op, const pto_targs *a);
int pto__ref_TSTORE(int op, const pto_targs *a);
int pto__ref_TROWEXPANDMULSTORE(int op, const pto_targs *a);
int pto__ref_TGATHER(int op, const pto_targs *a);
int pto__ref_TGATHERELSE(int op, const pto_targs *a);
int pto__ref_TSORT32(int op, const pto_targs *a);
int pto__ref_TMRGSORT(int op, const pto_targs *a);
int pto__ref_TCI(int op, const pto_targs *a);
int pto__ref_TTRI(int op, const pto_targs *a);
int pto__ref_TLOADROWMAX(int op, const pto_targs *a);
int pto__ref_TLOADEXPDIFSUM(int op, const pto_targs *a);
int pto__ref_TLOADSOFTMAXSTORE(int op, const pto_targs *a);

/* Each under the ref_<NAME> name the table and the other instructions use. */
#define ref_TROWMAX pto__ref_TROWMAX
#define ref_TROWEXPANDEXPDIFSUM pto__ref_TROWEXPANDEXPDIFSUM
#define ref_TLOAD pto__ref_TLOAD
#define ref_TSTORE pto__ref_TSTORE
#define ref_TROWEXPANDMULSTORE pto__ref_TROWEXPANDMULSTORE
#define ref_TGATHER pto__ref_TGATHER
#define ref_TGATHERELSE pto__ref_TGATHERELSE
#define ref_TSORT32 pto__ref_TSORT32
#define ref_TMRGSORT pto__ref_TMRGSORT
#define ref_TCI pto__ref_TCI
#define ref_TTRI pto__ref_TTRI
#define ref_TLOADROWMAX pto__ref_TLOADROWMAX
#define ref_TLOADEXPDIFSUM pto__ref_TLOADEXPDIFSUM
#define ref_TLOADSOFTMAXSTORE pto__ref_TLOADSOFTMAXSTORE

#endif /* PTO_TILEOPS_REF_H */
