/* pto-bench gemm's PyTorch peer (bench/gemm_peer.h): the case's A and B
 * written as .npy files into a private directory, the peer script's "gemm"
 * workload run there, its times and C read back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/files.h"
#include "bench/gemm_peer.h"
#include "bench/harness.h"

int bench_gemm_torch(const bench_opts *o, const bench_peer *peer, int64_t m,
                     int64_t n, int64_t k, pto_dtype dt, const void *A,
                     const void *B, int threads, int repeats, float *C,
                     bench_gemm_torch_result *r) {
  memset(r, 0, sizeof *r);
  const bench_dtype bt = dt == PTO_BF16 ? BENCH_BF16 : BENCH_F32;
  const bench_array in[2] = {{"a", bt, 2, {m, k}, A}, {"b", bt, 2, {k, n}, B}};
  const int64_t cs[2] = {m, n};
  char err[1024], path[4096];
  int rc = -1;
  json_t *out = NULL;
  json_t *meta =
      json_pack("{s:s, s:I, s:I, s:I, s:s, s:s}", "workload", "gemm", "m",
                (json_int_t)m, "n", (json_int_t)n, "k", (json_int_t)k, "dtype",
                dt == PTO_BF16 ? "bfloat16" : "float32", "c",
                "[m,n] float32 = a x b, a [m,k] and b [k,n] "
                "row-major (bfloat16 as uint16 bits)");
  char *dir = meta ? bench_tmpdir_new("gemm") : NULL;
  if (!dir)
    goto done;
  if (bench_write_arrays(dir, in, 2, meta, err, sizeof err)) {
    fprintf(stderr, "pto-bench gemm: peer inputs: %s\n", err);
    goto done;
  }
  out = bench_peer_run("gemm", peer, "gemm", dir, threads, repeats, 1,
                       !o->progress);
  if (!out)
    goto done;
  const char *best = json_string_value(json_object_get(out, "best"));
  json_t *vs = json_object_get(out, "variants"), *v;
  const char *name;
  snprintf(r->best, sizeof r->best, "%s", best ? best : "?");
  r->variants = json_object();
  json_object_foreach(vs, name, v) {
    json_t *med = json_object_get(v, "median_ms");
    json_object_set_new(r->variants, name,
                        json_is_number(med) ? json_real(json_number_value(med))
                                            : json_null());
    if (best && !strcmp(name, best) && json_is_number(med))
      r->ms = json_number_value(med);
  }
  if (!(r->ms > 0)) {
    fprintf(stderr, "pto-bench gemm: the peer's result has no time for its "
                    "best variant\n");
    goto done;
  }
  if (bench_path(path, sizeof path, dir, "c.npy") ||
      bench_npy_load_into(path, BENCH_F32, 2, cs, C, err, sizeof err)) {
    fprintf(stderr, "pto-bench gemm: the peer's output: %s\n", err);
    goto done;
  }
  rc = 0;
done:
  if (rc) {
    json_decref(r->variants);
    r->variants = NULL;
  }
  json_decref(out);
  json_decref(meta);
  bench_tmpdir_free(dir);
  return rc;
}
