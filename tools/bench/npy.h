/* tools/bench/npy.h (internal to pto-bench): NumPy's .npy files, so the
 * harness and a Python peer exchange arrays, and a run's inputs and outputs
 * can be saved for anyone to check. C order, little-endian, the dtypes the
 * benchmarks use. Writes version 1.0 (header padded to 64 bytes, as NumPy
 * writes it); reads versions 1.0, 2.0 and 3.0. No dependency but libc. */
#ifndef PTO_TOOLS_BENCH_NPY_H
#define PTO_TOOLS_BENCH_NPY_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_NPY_MAX_DIMS 8

typedef enum bench_dtype {
  BENCH_F32, /* '<f4' */
  BENCH_I32, /* '<i4' */
  BENCH_F64, /* '<f8' */
  BENCH_I64, /* '<i8' */
  /* bf16 as its 16 bits, '<u2' (NumPy has no bfloat16; a reader views
   * them as bfloat16: torch's .view(torch.bfloat16)); meta.json says so */
  BENCH_BF16,
  BENCH_DTYPE_COUNT
} bench_dtype;

/* "float32", "int32", ...; "?" out of range. */
const char *bench_dtype_name(bench_dtype t);
size_t bench_dtype_size(bench_dtype t);

/* An array read from a file: data is malloc'd (free with bench_npy_free). */
typedef struct bench_npy {
  bench_dtype dtype;
  int ndim;
  int64_t shape[BENCH_NPY_MAX_DIMS];
  size_t count; /* product of shape (1 for ndim 0) */
  void *data;
} bench_npy;

/* Writes data (count = product of shape, C order) to path. 0, or -1 with
 * the reason in err ("q.npy: No space left on device"). */
int bench_npy_save(const char *path, bench_dtype t, int ndim,
                   const int64_t *shape, const void *data, char *err,
                   size_t err_size);

/* Reads path whole. 0, or -1 with the reason in err ("values.npy: dtype
 * '>f4' is big-endian"); on failure *a holds nothing to free. */
int bench_npy_load(const char *path, bench_npy *a, char *err, size_t err_size);

/* Reads path into data, which holds count = product of shape elements of
 * type t; fails (err names the file, what it holds and what was expected)
 * unless the file's dtype and shape are exactly t and shape. */
int bench_npy_load_into(const char *path, bench_dtype t, int ndim,
                        const int64_t *shape, void *data, char *err,
                        size_t err_size);

void bench_npy_free(bench_npy *a); /* NULL or an empty one: no-op */

/* "(1, 128, 512)" into buf. */
void bench_npy_shape_str(int ndim, const int64_t *shape, char *buf,
                         size_t size);

#endif /* PTO_TOOLS_BENCH_NPY_H */
