/* core/buffer.h (internal): memory faulted in before it is used, and the
 * pool of workspaces (core/buffer.c; pto_buffer_alloc is public, in
 * pto/runtime.h). */
#ifndef PTO_CORE_BUFFER_H
#define PTO_CORE_BUFFER_H

#include <stddef.h>

/* Writes a zero into every 4 KiB page of [p, p + bytes), so the pages are
 * mapped (and placed on the calling thread's NUMA node, the kernel's first
 * touch) now rather than by the first task that writes them. */
void pto__prefault(void *p, size_t bytes);

/* A workspace of at least `bytes` bytes, every page mapped: the smallest
 * pooled one that fits, else a new pto_buffer_alloc faulted in. *cap gets
 * its size, which pto__workspace_give takes back. NULL (and *cap 0) for 0
 * bytes or when memory is short. Thread-safe. Contents are undefined. */
void *pto__workspace_take(size_t bytes, size_t *cap);
/* Returns a workspace from pto__workspace_take to the pool (which frees the
 * oldest beyond 8 buffers or a quarter of the machine's memory). NULL is a
 * no-op. Thread-safe. */
void pto__workspace_give(void *p, size_t cap);

#endif /* PTO_CORE_BUFFER_H */
