/* tools/bench/files.h (internal to pto-bench): the directories a benchmark
 * exchanges files through: a private temporary directory for a peer, a
 * --save directory for anyone to check a run, and writing a set of named
 * arrays (.npy) plus meta.json into either. */
#ifndef PTO_TOOLS_BENCH_FILES_H
#define PTO_TOOLS_BENCH_FILES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/npy.h"

/* A fresh private directory $TMPDIR/pto-bench-<tag>-XXXXXX (TMPDIR unset:
 * /tmp); malloc'd path, or NULL after printing why on stderr. */
char *bench_tmpdir_new(const char *tag);
/* Removes what bench_tmpdir_new made: the directory and the plain files in
 * it (nothing else: it never follows links or descends), then frees path.
 * NULL is a no-op. */
void bench_tmpdir_free(char *path);

/* mkdir -p: 0, or -1 with the reason in err. */
int bench_mkdirs(const char *path, char *err, size_t err_size);

/* "dir/name" into buf (truncation is an error: -1). */
int bench_path(char *buf, size_t size, const char *dir, const char *name);

/* A named array to write, "q" for dir/q.npy. */
typedef struct bench_array {
  const char *name;
  bench_dtype dtype;
  int ndim;
  int64_t shape[BENCH_NPY_MAX_DIMS];
  const void *data;
} bench_array;

/* How many elements a holds: the product of its shape. */
size_t bench_array_count(const bench_array *a);

/* Writes every array as dir/<name>.npy and meta (when not NULL) as
 * dir/meta.json, creating dir. 0, or -1 with the reason in err. */
int bench_write_arrays(const char *dir, const bench_array *arrays, size_t n,
                       const json_t *meta, char *err, size_t err_size);

#endif /* PTO_TOOLS_BENCH_FILES_H */
