/* core/arena.h (internal): a bump allocator; everything is freed at once. */
#ifndef PTO_CORE_ARENA_H
#define PTO_CORE_ARENA_H

#include <stddef.h>

typedef struct pto_arena_chunk pto_arena_chunk;

typedef struct pto_arena {
  pto_arena_chunk *head;
  size_t used, cap; /* within head */
  size_t total;     /* bytes handed out, for reports */
} pto_arena;

void pto__arena_init(pto_arena *a);
void pto__arena_free(pto_arena *a);
/* Zeroed, aligned to `align` (a power of two <= 64); NULL on ENOMEM. */
void *pto__arena_alloc(pto_arena *a, size_t size, size_t align);
char *pto__arena_strdup(pto_arena *a, const char *s);
/* Grows *arr (n elements of `elem` bytes, capacity *cap) to hold one more.
 * Uses realloc (not the arena); returns 0 or -1 on ENOMEM. */
int pto__grow(void **arr, size_t elem, unsigned *cap, unsigned need);

#endif /* PTO_CORE_ARENA_H */
