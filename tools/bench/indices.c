/* Index sets for the sparse attention (bench/indices.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/harness.h"
#include "bench/indices.h"

/* An invalid index for query i (causal: its last visible key is `last`). */
static int32_t invalid_index(bench_rng *r, int64_t s2, int causal,
                             int64_t last) {
  const int kinds = causal && last + 1 < s2 ? 7 : 6;
  switch (bench_rng_below(r, (uint64_t)kinds)) {
  case 0:
    return -1;
  case 1:
    return INT32_MIN;
  case 2:
    return (int32_t)s2;
  case 3: /* past the keys, up to twice as far (s2 < 2^30) */
    return (int32_t)(s2 + 1 + (int64_t)bench_rng_below(r, (uint64_t)s2));
  case 4:
    return INT32_MAX;
  case 5:
    return -2 - (int32_t)bench_rng_below(r, (uint64_t)1 << 30);
  default: { /* a key, but hidden from this query */
    const int64_t lo = last + 1 < 0 ? 0 : last + 1;
    return (int32_t)(lo + (int64_t)bench_rng_below(r, (uint64_t)(s2 - lo)));
  }
  }
}

int bench_sparse_indices(int32_t *idx, int64_t b, int64_t s1, int64_t s2,
                         int64_t topk, int causal, double invalid_pct,
                         uint64_t seed, uint64_t stream,
                         bench_indices_count *n) {
  unsigned char *mark = calloc((size_t)s2, 1);
  if (!mark)
    return -1;
  memset(n, 0, sizeof *n);
  bench_rng r = bench_rng_new(seed, stream);
  const int64_t rows = b * s1, slots = rows * topk;
  for (int64_t row = 0; row < rows; row++) {
    const int64_t i = row % s1, last = causal ? s2 - s1 + i : s2 - 1;
    const int64_t seen = last < 0 ? 0 : last + 1;
    const int64_t k = seen < topk ? seen : topk;
    int32_t *x = idx + row * topk;
    bench_draw_distinct(&r, seen, k, x, mark);
    for (int64_t t = k; t < topk; t++)
      x[t] = -1;
    n->valid += k;
    n->padding += topk - k;
  }
  free(mark);
  /* selection sampling: slot t is taken with odds need / left, which
   * takes exactly `need` slots, every set of them equally likely */
  double want = round(invalid_pct / 100.0 * (double)slots);
  int64_t need = want < 0 ? 0 : want > (double)slots ? slots : (int64_t)want;
  for (int64_t t = 0, left = slots; t < slots && need > 0; t++, left--) {
    if ((int64_t)bench_rng_below(&r, (uint64_t)left) >= need)
      continue;
    need--;
    const int64_t i = (t / topk) % s1;
    const int32_t old = idx[t];
    idx[t] = invalid_index(&r, s2, causal, causal ? s2 - s1 + i : s2 - 1);
    n->invalid++;
    if (old >= 0)
      n->valid--;
    else
      n->padding--;
  }
  return 0;
}
