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
  int n;               /* windows */
  int cur;             /* window being prefetched, its row and line */
  int64_t row, line;
  int64_t lines, done; /* lines planned (an upper bound until the plan
                          runs out, then exact) and issued so far */
} pto_pf;

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
