/* tools/bench/indices.h (internal to pto-bench): the index sets a sparse
 * attention reads (pto/attention.h), as the lightning indexer would hand
 * them over, with a chosen share of invalid slots. */
#ifndef PTO_TOOLS_BENCH_INDICES_H
#define PTO_TOOLS_BENCH_INDICES_H

#include <stdint.h>

/* How many slots of each kind bench_sparse_indices wrote. */
typedef struct bench_indices_count {
  int64_t valid;   /* keys the query sees */
  int64_t padding; /* -1 after the keys of a query that sees fewer than topk */
  int64_t invalid; /* slots made invalid by invalid_pct */
} bench_indices_count;

/* Fills idx [b, s1, topk] (int32): row (b, i) holds keys drawn uniformly
 * without repetition from the keys query i sees (all s2; causal: j <=
 * s2 - s1 + i), in random order, then -1 in the slots left when it sees
 * fewer than topk. Then exactly round(invalid_pct % of b*s1*topk) slots,
 * chosen uniformly among all of them (so scattered through the rows and
 * anywhere in a row), are replaced by an invalid index, drawn from -1,
 * INT32_MIN, s2, s2 + a random offset, INT32_MAX and a random negative
 * value, and when causal also a key past the query's causal limit.
 * Deterministic in (seed, stream). s2 < 2^30. 0 and the counts in *n,
 * or -1 when out of memory. */
int bench_sparse_indices(int32_t *idx, int64_t b, int64_t s1, int64_t s2,
                         int64_t topk, int causal, double invalid_pct,
                         uint64_t seed, uint64_t stream,
                         bench_indices_count *n);

#endif /* PTO_TOOLS_BENCH_INDICES_H */
