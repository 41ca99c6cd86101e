/* core/prefetch.h (internal): a plan of cache lines to prefetch, issued a
 * few at a time. The executor (scheduler/exec.c) fills one per task instance
 * with the global windows the next instance will load; tile instructions
 * that loop over many vectors take one line from it now and then
 * (pto_targs.pf), so the prefetches are spread over the computation instead
 * of issued in bursts that stall on the core's miss buffers, and the
 * executor issues whatever is left on its own schedule. */
#ifndef PTO_CORE_PREFETCH_H
#define PTO_CORE_PREFETCH_H

#include <stdint.h>

#define PTO_PF_WINDOWS 8
#define PTO_PF_LINE 64

typedef struct pto_pf_window { /* rows of row_bytes, rs_bytes apart */
  const unsigned char *p;
  int64_t row_bytes, rs_bytes, rows;
} pto_pf_window;

typedef struct pto_pf {
  pto_pf_window w[PTO_PF_WINDOWS];
  int n;   /* windows */
  int cur; /* window being prefetched, its row and line */
  int64_t row, line;
  int64_t lines, done; /* lines planned (an upper bound until the plan
                          runs out, then exact) and issued so far */
} pto_pf;

/* An empty plan. */
static inline void pto__pf_clear(pto_pf *pf) {
  pf->n = pf->cur = 0;
  pf->lines = pf->done = pf->row = pf->line = 0;
}

/* Adds `rows` rows of row_bytes at p, rs_bytes apart, to the plan; 0 when
 * the plan already holds PTO_PF_WINDOWS windows. */
static inline int pto__pf_add(pto_pf *pf, const void *p, int64_t row_bytes,
                              int64_t rs_bytes, int64_t rows) {
  if (pf->n == PTO_PF_WINDOWS)
    return 0;
  pto_pf_window *w = &pf->w[pf->n++];
  w->p = (const unsigned char *)p;
  w->row_bytes = row_bytes;
  w->rs_bytes = rs_bytes;
  w->rows = rows;
  /* lines per row, counting a row that starts mid-line once per line */
  pf->lines += rows * ((row_bytes + 2 * PTO_PF_LINE - 2) / PTO_PF_LINE);
  return 1;
}

/* Issues lines until `upto` have been issued or the plan is done. */
static inline void pto__pf_advance(pto_pf *pf, int64_t upto) {
  while (pf->done < upto) {
    if (pf->cur == pf->n) {
      pf->lines = pf->done;
      return;
    }
    const pto_pf_window *w = &pf->w[pf->cur];
    const unsigned char *row = w->p + pf->row * w->rs_bytes;
    const uintptr_t first = (uintptr_t)row & ~(uintptr_t)(PTO_PF_LINE - 1);
    const uintptr_t at = first + (uintptr_t)pf->line * PTO_PF_LINE;
    if (at > (uintptr_t)(row + w->row_bytes - 1)) {
      pf->line = 0;
      if (++pf->row == w->rows) {
        pf->row = 0;
        pf->cur++;
      }
      continue;
    }
    __builtin_prefetch((const void *)at, 0, 2);
    pf->line++;
    pf->done++;
  }
}

/* One more line, if any: called by kernels every few vectors. */
static inline void pto__pf_tick(pto_pf *pf) {
  if (pf && pf->done < pf->lines)
    pto__pf_advance(pf, pf->done + 1);
}

#endif /* PTO_CORE_PREFETCH_H */
