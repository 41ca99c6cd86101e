/* Memory for tiles, workspaces and run operands: 64-byte aligned, whole
 * transparent huge pages from PTO_HUGE_PAGE up, and faulted in up front
 * when asked, so the first task to touch a page does not pay for it; and
 * a pool that keeps freed executables' workspaces mapped for the next. */
#include "core/buffer.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <uv.h>

#include "pto/runtime.h"

void *pto_buffer_alloc(size_t bytes) {
  if (!bytes || bytes > SIZE_MAX - (PTO_HUGE_PAGE - 1))
    return NULL;
  if (bytes < PTO_HUGE_PAGE)
    return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  bytes = (bytes + PTO_HUGE_PAGE - 1) & ~(PTO_HUGE_PAGE - 1);
  void *p = aligned_alloc(PTO_HUGE_PAGE, bytes);
  if (p) /* only advice: small pages if the kernel has none */
    (void)madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

void pto__prefault(void *p, size_t bytes) {
  /* one write per small page: a huge page faults in whole on its first,
   * and where the kernel gave small pages each gets its own */
  volatile unsigned char *b = p;
  for (size_t i = 0; i < bytes; i += 4096)
    b[i] = 0;
  if (bytes)
    b[bytes - 1] = 0;
}

/* ---- the workspace pool --------------------------------------------------
 * Faulting a workspace in costs what the kernel takes to zero its pages
 * (198 MB of a DSA decode step: 30-500 ms, the most when memory must be
 * compacted into huge pages), and a serving loop that compiles each step
 * would pay it every step. Freed workspaces stay mapped here, newest
 * last, for the next compile that fits in one: at most POOL_MAX of them
 * and a quarter of the machine's memory. */

#define POOL_MAX 8

static struct {
  uv_mutex_t lock;
  void *buf[POOL_MAX];
  size_t cap[POOL_MAX];
  int n;
  size_t total, limit;
} pool;
static uv_once_t pool_once = UV_ONCE_INIT;

static void pool_init(void) {
  if (uv_mutex_init(&pool.lock))
    abort(); /* the OS refused a mutex: nothing here can work */
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  pool.limit = pages > 0 && page > 0 ? (size_t)pages / 4 * (size_t)page
                                     : (size_t)1 << 30;
}

static size_t workspace_cap(size_t bytes) {
  return bytes < PTO_HUGE_PAGE
             ? (bytes + 63) & ~(size_t)63
             : (bytes + PTO_HUGE_PAGE - 1) & ~(PTO_HUGE_PAGE - 1);
}

void *pto__workspace_take(size_t bytes, size_t *cap) {
  *cap = 0;
  if (!bytes || bytes > SIZE_MAX - PTO_HUGE_PAGE)
    return NULL;
  uv_once(&pool_once, pool_init);
  uv_mutex_lock(&pool.lock);
  int best = -1;
  for (int i = 0; i < pool.n; i++)
    if (pool.cap[i] >= bytes && (best < 0 || pool.cap[i] < pool.cap[best]))
      best = i;
  void *p = NULL;
  if (best >= 0) {
    p = pool.buf[best];
    *cap = pool.cap[best];
    pool.total -= pool.cap[best];
    for (int i = best + 1; i < pool.n; i++) {
      pool.buf[i - 1] = pool.buf[i];
      pool.cap[i - 1] = pool.cap[i];
    }
    pool.n--;
  }
  uv_mutex_unlock(&pool.lock);
  if (p)
    return p;
  size_t c = workspace_cap(bytes);
  if (!(p = pto_buffer_alloc(c)))
    return NULL;
  pto__prefault(p, c);
  *cap = c;
  return p;
}

void pto__workspace_give(void *p, size_t cap) {
  if (!p)
    return;
  uv_once(&pool_once, pool_init);
  void *drop[POOL_MAX + 1];
  int n_drop = 0;
  uv_mutex_lock(&pool.lock);
  if (cap > pool.limit) {
    drop[n_drop++] = p;
  } else {
    /* the oldest go first until the newest fits */
    while (pool.n && (pool.n == POOL_MAX || pool.total + cap > pool.limit)) {
      drop[n_drop++] = pool.buf[0];
      pool.total -= pool.cap[0];
      for (int i = 1; i < pool.n; i++) {
        pool.buf[i - 1] = pool.buf[i];
        pool.cap[i - 1] = pool.cap[i];
      }
      pool.n--;
    }
    pool.buf[pool.n] = p;
    pool.cap[pool.n++] = cap;
    pool.total += cap;
  }
  uv_mutex_unlock(&pool.lock);
  for (int i = 0; i < n_drop; i++)
    free(drop[i]);
}
