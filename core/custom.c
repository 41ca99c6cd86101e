/* Registry of custom tile instructions. Writers serialise on a mutex; readers
 * never lock: a slot is filled before the count that publishes it. */
#include "core/custom.h"

#include "core/error.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

static pto_custom_op ops[PTO_CUSTOM_MAX];
static atomic_int n_ops;
static uv_once_t once = UV_ONCE_INIT;
static uv_mutex_t lock;

static void registry_init(void) {
  if (uv_mutex_init(&lock) != 0)
    abort();
}

const pto_custom_op *pto__custom_get(int id) {
  /* acquire: pairs with the release in register, so the slot is complete. */
  int n = atomic_load_explicit(&n_ops, memory_order_acquire);
  int slot = id - PTO_OP_COUNT;
  return slot >= 0 && slot < n ? &ops[slot] : NULL;
}

static int find_locked(const char *name, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(ops[i].name, name) == 0)
      return PTO_OP_COUNT + i;
  return -1;
}

int pto_custom_op_find(const char *name) {
  if (!name)
    return -1;
  int n = atomic_load_explicit(&n_ops, memory_order_acquire);
  return find_locked(name, n);
}

#define REG "pto_custom_op_register"

pto_status pto_custom_op_register(const pto_custom_op_desc *d, int *id) {
  if (!d || !id)
    return pto__last_error(PTO_EINVAL, REG ": %s is NULL", d ? "id" : "desc");
  if (!d->name || !d->name[0] || strlen(d->name) >= sizeof ops[0].name)
    return pto__last_error(PTO_EINVAL,
                           REG ": a name of 1 to %zu characters is required",
                           sizeof ops[0].name - 1);
  if (!d->fn)
    return pto__last_error(PTO_EINVAL, REG ": '%s' has no function", d->name);
  if (d->n_src < 1 || d->n_src > PTO_MAX_SRC)
    return pto__last_error(PTO_EINVAL,
                           REG ": '%s' has n_src %d, not 1..%d", d->name,
                           d->n_src, PTO_MAX_SRC);
  if (d->core != PTO_CORE_CUBE && d->core != PTO_CORE_VECTOR)
    return pto__last_error(PTO_EINVAL,
                           REG ": '%s' has core type %d, not cube or vector",
                           d->name, (int)d->core);
  if ((unsigned)d->out_dtype >= PTO_DTYPE_COUNT)
    return pto__last_error(PTO_EINVAL, REG ": '%s' has out_dtype %d, not a dtype",
                           d->name, (int)d->out_dtype);
  uv_once(&once, registry_init);
  uv_mutex_lock(&lock);
  /* relaxed: writers are serialised by the mutex. */
  int n = atomic_load_explicit(&n_ops, memory_order_relaxed);
  pto_status st = PTO_OK;
  int taken = find_locked(d->name, n);
  if (taken >= 0) {
    st = pto__last_error(PTO_EINVAL, REG ": '%s' is already registered (id %d)",
                         d->name, taken);
  } else if (n == PTO_CUSTOM_MAX) {
    st = pto__last_error(PTO_ENOMEM,
                         REG ": '%s': the registry is full (%d custom ops)",
                         d->name, PTO_CUSTOM_MAX);
  } else {
    pto_custom_op *op = &ops[n];
    strcpy(op->name, d->name);
    op->desc = *d;
    op->desc.name = op->name;
    op->info.name = op->name;
    op->info.family = PTO_FAMILY_CUSTOM;
    op->info.core = d->core;
    op->info.n_src = (uint8_t)d->n_src;
    op->info.n_dst = 1;
    op->info.flags = 0;
    *id = PTO_OP_COUNT + n;
    /* release: publishes the filled slot to lock-free readers. */
    atomic_store_explicit(&n_ops, n + 1, memory_order_release);
  }
  uv_mutex_unlock(&lock);
  return st;
}
