/* Bump allocator: chunks of at least 64 KiB, freed together. */
#include "core/arena.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_CHUNK (64u * 1024u)
#define ARENA_ALIGN 64u

struct pto_arena_chunk {
  pto_arena_chunk *next;
  size_t cap;
  _Alignas(64) unsigned char data[];
};

void pto__arena_init(pto_arena *a) { memset(a, 0, sizeof *a); }

void pto__arena_free(pto_arena *a) {
  pto_arena_chunk *c = a->head;
  while (c) {
    pto_arena_chunk *next = c->next;
    free(c);
    c = next;
  }
  pto__arena_init(a);
}

void *pto__arena_alloc(pto_arena *a, size_t size, size_t align) {
  assert(align && align <= ARENA_ALIGN && (align & (align - 1)) == 0);
  size_t at = (a->used + align - 1) & ~(align - 1);
  if (!a->head || at + size > a->cap) {
    size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
    pto_arena_chunk *c = aligned_alloc(ARENA_ALIGN,
        (sizeof *c + cap + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1));
    if (!c)
      return NULL;
    c->next = a->head;
    c->cap = cap;
    a->head = c;
    a->cap = cap;
    at = 0;
  }
  void *p = a->head->data + at;
  a->used = at + size;
  a->total += size;
  memset(p, 0, size);
  return p;
}

char *pto__arena_strdup(pto_arena *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = pto__arena_alloc(a, n, 1);
  if (d)
    memcpy(d, s, n);
  return d;
}

int pto__grow(void **arr, size_t elem, unsigned *cap, unsigned need) {
  if (need <= *cap)
    return 0;
  unsigned ncap = *cap ? *cap : 16;
  while (ncap < need) {
    if (ncap > UINT32_MAX / 2)
      return -1;
    ncap *= 2;
  }
  void *n = realloc(*arr, (size_t)ncap * elem);
  if (!n)
    return -1;
  *arr = n;
  *cap = ncap;
  return 0;
}
