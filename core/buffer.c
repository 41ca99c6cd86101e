/* Memory for tiles, workspaces and run operands: 64-byte aligned, whole
 * transparent huge pages from PTO_HUGE_PAGE up, and faulted in up front
 * when asked, so the first task to touch a page does not pay for it. */
#include "core/buffer.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

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
