/* core/buffer.h (internal): faulting memory in before it is used
 * (core/buffer.c; pto_buffer_alloc is public, in pto/runtime.h). */
#ifndef PTO_CORE_BUFFER_H
#define PTO_CORE_BUFFER_H

#include <stddef.h>

/* Writes a zero into every 4 KiB page of [p, p + bytes), so the pages are
 * mapped (and placed on the calling thread's NUMA node, the kernel's first
 * touch) now rather than by the first task that writes them. */
void pto__prefault(void *p, size_t bytes);

#endif /* PTO_CORE_BUFFER_H */
