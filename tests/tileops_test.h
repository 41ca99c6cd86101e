/* tests/tileops_test.h (internal to the tileops suite): what its files share.
 * The helpers are defined in tests/tileops_test.c, the oracle table cases[]
 * and the generated per-instruction tests in tests/test_tileops.c, the
 * drivers in the test_tileops_<concern>.c file of their instructions. */
#ifndef PTO_TESTS_TILEOPS_TEST_H
#define PTO_TESTS_TILEOPS_TEST_H

#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/isa.h"
#include "pto/pto.h"
#include "tileops/tileops.h"

/* ---- bookkeeping: everything a test allocates is freed by its .fini ---- */

void *keep(void *p);
void free_all(void);

/* ---- random numbers (splitmix64) ----------------------------------------- */

typedef struct rng {
  uint64_t s;
} rng;

rng rng_seed(uint64_t seed);
uint64_t next(rng *r);
uint32_t below(rng *r, uint32_t n);
double uniform(rng *r, double lo, double hi);

/* ---- tiles --------------------------------------------------------------- */

#define SENTINEL 0xa5 /* every byte of a fresh destination */

size_t dsize(pto_dtype dt);
pto_tile *tile_new(pto_dtype dt, uint32_t rows, uint32_t cols, uint32_t vr,
                   uint32_t vc, unsigned char fill);
size_t tile_size(const pto_tile *t);
pto_tile *tile_clone(const pto_tile *t);
void *el(const pto_tile *t, uint32_t r, uint32_t c);
float getf(const pto_tile *t, uint32_t r, uint32_t c);
void setf(pto_tile *t, uint32_t r, uint32_t c, float v);
int32_t geti(const pto_tile *t, uint32_t r, uint32_t c);
void seti(pto_tile *t, uint32_t r, uint32_t c, int32_t v);

/* ---- the oracle's number formats ----------------------------------------- */

double bf16_value(uint16_t h);
double f16_value(uint16_t h);
double value_of(pto_dtype dt, const void *p);
uint16_t round_half(double v, int f16);
int32_t round_i32(double v);
int32_t wrap32(int64_t v);
void store_value(pto_dtype to, void *p, double v);
void convert_value(pto_dtype to, void *p, pto_dtype from, double v);
void o_convert(pto_dtype to, void *dst, pto_dtype from, const void *src);
double ulp_f32(double v);

/* ---- comparing ----------------------------------------------------------- */

int elem_same(pto_dtype dt, const void *a, const void *b);
const char *show(pto_dtype dt, const void *p, char *buf, size_t n);
void expect_tile(const char *ctx, const pto_tile *got, const pto_tile *want,
                 const double *val, const double *tol);
void expect_valid(const char *ctx, const pto_tile *got, const pto_tile *want);
double *dbuf(const pto_tile *t);

/* ---- operand data -------------------------------------------------------- */

enum gen {
  G_F32,   /* [-8, 8], 1/16 specials */
  G_RED,   /* [-8, 8], 1/128 specials (reductions) */
  G_SUM,   /* [-8, 8], sometimes +-0 */
  G_POS,   /* positive over many decades, some 0, negative, inf, NaN */
  G_EXP,   /* [-87, 88], some specials */
  G_SMALL, /* small integers, +-0, some NaN/inf: many ties */
  G_DIV,   /* divisors: often 0 or -1 */
  G_MASK,  /* i32 masks: 0, 1 or anything */
  G_CVT,   /* conversions: ties of every target, huge, tiny, specials */
  G_MM,    /* finite [-2, 2], rounded to the tile's dtype */
  G_SORT,  /* [-4, 4] with many duplicates, +-0, +-inf, NaN */
};

/* f32 values that break things: +-0, +-inf, NaN, subnormals, ties. The
 * size makes a definition of another length a compile error. */
extern const float specials[22];
#define N_SPECIALS (sizeof specials / sizeof specials[0])

void gen_elem(rng *r, pto_dtype dt, int g, void *p);
void fill_valid(rng *r, pto_tile *t, int g);
pto_tile *src_new(rng *r, pto_dtype dt, uint32_t rows, uint32_t cols,
                  uint32_t vr, uint32_t vc, int g);
pto_tile *dst_new(pto_dtype dt, uint32_t rows, uint32_t cols, uint32_t vr,
                  uint32_t vc);
int gen_for(pto_dtype dt);

/* ---- running ------------------------------------------------------------- */

void run_ok(int op, const pto_targs *a, const char *ctx);

typedef struct shape {
  uint32_t rows, cols, vr, vc;
} shape;

extern const shape shapes[5]; /* as specials[] */
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

const char *ctx_of(int op, const char *what, pto_dtype dt, const shape *s);
int op_dtypes(int op, pto_dtype dts[2]);
int op_exact(int op);
uint64_t seed_of(int op, int a, int b, int c);

/* ---- global tensors ------------------------------------------------------ */

/* A global tensor of dtype dt holding a rows x cols window: row-major with
 * padded rows, or column-major (a transposed view), after a few leading
 * elements. */
typedef struct gbuf {
  unsigned char *mem;
  size_t n; /* elements */
  pto_gview g;
} gbuf;

gbuf gbuf_gen(rng *r, pto_dtype dt, int64_t rows, int64_t cols, int colmajor,
              int gen);
void *gat(const pto_gview *g, int64_t r, int64_t c);

/* ---- every table this CPU runs ------------------------------------------- */

/* scalar, avx2, avx512, avx512bf16: arrays per table are this long */
#define ISA_TABLES_MAX 4
typedef struct isa_list {
  const pto_isa_table *t[ISA_TABLES_MAX];
  int n;
} isa_list;

isa_list tables_here(void);

/* ---- operand checks ------------------------------------------------------ */

void expect_reject(int op, const pto_targs *a, int status, const char *needle1,
                   const char *needle2);
void expect_accept(int op, const pto_targs *a);
pto_targs binop_args(pto_tile *d, pto_tile *x, pto_tile *y);

/* ---- the oracle table (test_tileops.c) ----------------------------------- */

typedef double (*o_fbin)(double, double);
typedef int64_t (*o_ibin)(int64_t, int64_t);
typedef double (*o_fun)(double);
typedef int64_t (*o_iun)(int64_t);

double o_max(double x, double y);
double o_min(double x, double y);
int64_t oi_max(int64_t x, int64_t y);
int64_t oi_min(int64_t x, int64_t y);

enum { R_SUM = 1, R_MAX, R_MIN };

typedef struct oracle_case oracle_case;
struct oracle_case {
  void (*drive)(int op, const oracle_case *oc);
  o_fbin fb; /* binary, scalar and expand ops */
  o_ibin ib;
  o_fun fu; /* unary ops */
  o_iun iu;
  int gen0, gen1; /* data of src0 and src1 */
  int red;        /* reductions: R_SUM, R_MAX, R_MIN */
};

/* ---- the drivers: cases[]'s rows ----------------------------------------- */

/* test_tileops_element.c: element-wise, tile-scalar and fills, axis */
void drive_binary(int op, const oracle_case *oc);
void drive_unary(int op, const oracle_case *oc);
void drive_cmp(int op, const oracle_case *oc);
void drive_sel(int op, const oracle_case *oc);
void drive_convert(int op, const oracle_case *oc);
void drive_scalar(int op, const oracle_case *oc);
void drive_fill(int op, const oracle_case *oc);
void drive_trifill(int op, const oracle_case *oc);
void drive_rowred(int op, const oracle_case *oc);
void drive_colred(int op, const oracle_case *oc);
void drive_rowexpand(int op, const oracle_case *oc);
void drive_colexpand(int op, const oracle_case *oc);
void drive_rowexpand2(int op, const oracle_case *oc);
void drive_colexpand2(int op, const oracle_case *oc);
void drive_rowexpsum(int op, const oracle_case *oc);

/* test_tileops_matmul.c */
void drive_matmul(int op, const oracle_case *oc);
void drive_wsum(int op, const oracle_case *oc);
void drive_matmul_ga(int op, const oracle_case *oc);
void drive_matmul_gb(int op, const oracle_case *oc);
/* test_tileops_wsum_g.c */
void drive_wsum_g(int op, const oracle_case *oc);

/* test_tileops_memory.c: moves and memory */
void drive_extract(int op, const oracle_case *oc);
void drive_insert(int op, const oracle_case *oc);
void drive_trans(int op, const oracle_case *oc);
void drive_fillpad(int op, const oracle_case *oc);
void drive_load(int op, const oracle_case *oc);
void drive_store(int op, const oracle_case *oc);
void drive_mulstore(int op, const oracle_case *oc);
void drive_loadmax(int op, const oracle_case *oc);
void drive_loadexpsum(int op, const oracle_case *oc);
void drive_loadsoftmax(int op, const oracle_case *oc);
void drive_gather(int op, const oracle_case *oc);

/* test_tileops_sort.c: sorts and top-k */
void drive_sort32(int op, const oracle_case *oc);
void drive_mrgsort(int op, const oracle_case *oc);
void drive_topk(int op, const oracle_case *oc);
void drive_mrgtopk(int op, const oracle_case *oc);

/* test_tileops_attention.c */
void drive_smonline(int op, const oracle_case *oc);
void drive_smfinal(int op, const oracle_case *oc);

/* ---- matmuls on one given table (test_tileops_matmul.c) ----------------- */

/* Checks a's operands, then runs op on table T; fails the test on either. */
void run_on(const pto_isa_table *T, int op, const pto_targs *a,
            const char *ctx);
/* A matmul operand of logical rows x cols in a new global buffer (*gv),
 * row-major or a transposed view (col_major), loaded by T's TLOAD into a
 * tile of dtype tdt: packed in panels of w along rows (pack 'A') or cols
 * ('B', layout checked against core/isa.def), else plain, or stored
 * transposed when trans. */
pto_tile *operand_tile(const pto_isa_table *T, rng *r, pto_dtype gdt,
                       pto_dtype tdt, uint32_t rows, uint32_t cols,
                       int col_major, char pack, int trans, uint32_t w,
                       pto_gview *gv, const char *ctx);

/* ---- SIMD stress (test_tileops_simd.c) ----------------------------------- */

float nasty_f32(rng *r);
void stress_run(int op, pto_targs *a, int in_place, const char *ctx);

#endif /* PTO_TESTS_TILEOPS_TEST_H */
