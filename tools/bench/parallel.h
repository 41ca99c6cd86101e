/* tools/bench/parallel.h (internal to pto-bench): work over rows spread on
 * threads, for checks that recompute a result in double precision (slow at
 * the large sizes) with progress on stderr. */
#ifndef PTO_TOOLS_BENCH_PARALLEL_H
#define PTO_TOOLS_BENCH_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

/* Does rows [r0, r1); 0, or nonzero with a message in msg. */
typedef int (*bench_rows_fn)(void *ctx, int64_t r0, int64_t r1, char *msg,
                             size_t msg_size);

/* Calls fn over [0, rows) in chunks of `chunk` rows (0: about 8 per
 * thread) taken in turn by `threads` threads (the caller is one of them),
 * and stops handing out chunks at the first failure. With progress set,
 * prints "pto-bench: <progress>: N% (R of ROWS rows)" on stderr at most every
 * two seconds. 0, or -1 with the first failure's message in msg (the one
 * with the lowest row when several fail at once). */
int bench_parallel_rows(int threads, int64_t rows, int64_t chunk,
                        bench_rows_fn fn, void *ctx, const char *progress,
                        char *msg, size_t msg_size);

#endif /* PTO_TOOLS_BENCH_PARALLEL_H */
