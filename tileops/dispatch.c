/* Choosing the instruction table and running instructions through it
 * (their operands are checked in tileops/check.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/custom.h"
#include "pto/isa.h"
#include "tileops/tileops.h"

/* ---- tables ------------------------------------------------------------- */

void pto__isa_table_derive(pto_isa_table *t, const char *name,
                           const pto_isa_table *base) {
  *t = *base;
  t->name = name;
}

static const pto_isa_table *scalar_table(void) {
  return &pto__isa_scalar;
}

/* ---- what this CPU and OS run ------------------------------------------- */

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* XCR0: which register state the OS saves on a context switch. CPUID alone
 * says what the CPU has; without the OS saving YMM (bits 1-2) or ZMM
 * (bits 5-7) state, the instructions fault or corrupt registers. */
static uint64_t xcr0(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
    return 0;
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static int avx2_supported(void) {
  unsigned a, b, c, d;
  if ((xcr0() & 0x6) != 0x6 || !__get_cpuid(1, &a, &b, &c, &d) ||
      !(c & bit_FMA) || !(c & bit_F16C) ||
      !__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return 0;
  return (b & bit_AVX2) != 0;
}

static int avx512_supported(void) {
  unsigned a, b, c, d;
  if ((xcr0() & 0xe6) != 0xe6 || !avx2_supported() ||
      !__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return 0;
  unsigned need = bit_AVX512F | bit_AVX512DQ | bit_AVX512BW | bit_AVX512VL;
  return (b & need) == need;
}

/* AVX512_BF16: CPUID leaf 7 sub-leaf 1, EAX bit 5 (the ZMM state is the
 * avx512 table's). */
static int avx512bf16_supported(void) {
  unsigned a, b, c, d;
  return avx512_supported() && __get_cpuid_count(7, 1, &a, &b, &c, &d) &&
         (a & (1u << 5)) != 0;
}

/* The default only where its engine is measured faster than f32 FMAs by a
 * clear margin: on Zen 4 and 5 vdpbf16ps does twice their work at their
 * rate (the probe says about 2); on a Xeon with AMX it issues at half
 * their rate (about 1), and the avx512 table's f32 engine is as fast
 * there without bf16's subnormal flushing. */
static int avx512bf16_faster(void) {
  return pto__bf16_gain() >= 1.3;
}
#endif

/* The instruction sets this build has, best first; the last one runs
 * everywhere. `table` builds its table once (pto__isa_table_derive from the
 * scalar one, then its overrides), `supported` says whether this CPU and
 * OS run it (NULL: always) and `preferred` whether, running, it is the
 * default (NULL: always; otherwise PTO_ISA chooses it). */
typedef struct isa_variant {
  const char *name;
  int (*supported)(void);
  const pto_isa_table *(*table)(void);
  int (*preferred)(void);
} isa_variant;

static const isa_variant variants[] = {
#if defined(__x86_64__) || defined(__i386__)
    {"avx512bf16", avx512bf16_supported, pto__isa_avx512bf16,
     avx512bf16_faster},
    {"avx512", avx512_supported, pto__isa_avx512, NULL},
    {"avx2", avx2_supported, pto__isa_avx2, NULL},
#endif
    {"scalar", NULL, scalar_table, NULL},
};

#define N_VARIANTS (sizeof variants / sizeof variants[0])

static int runs_here(const isa_variant *v) {
  return !v->supported || v->supported();
}

static const isa_variant *variant_named(const char *name) {
  for (size_t i = 0; name && i < N_VARIANTS; i++)
    if (strcmp(variants[i].name, name) == 0)
      return &variants[i];
  return NULL;
}

/* "a, b, c" from a NULL-terminated list (or this build's variants). */
static void join_names(char *buf, size_t size, const char *const *names) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; names ? names[i] != NULL : i < N_VARIANTS; i++) {
    int k = snprintf(buf + n, size - n, "%s%s", i ? ", " : "",
                     names ? names[i] : variants[i].name);
    if (k < 0 || (size_t)k >= size - n)
      return;
    n += (size_t)k;
  }
}

int pto__isa_resolve(const char *want, const char *const *runs,
                     const char **chosen, char *msg, size_t msg_size) {
  if (msg && msg_size)
    msg[0] = '\0';
  if (!want || !want[0]) { /* the default: the best that runs */
    *chosen = runs[0] ? runs[0] : "scalar";
    return PTO_OK;
  }
  for (size_t i = 0; runs[i]; i++)
    if (strcmp(runs[i], want) == 0) {
      *chosen = runs[i];
      return PTO_OK;
    }
  *chosen = NULL;
  if (msg && msg_size) {
    char have[96], run[96];
    join_names(have, sizeof have, NULL);
    join_names(run, sizeof run, runs);
    if (variant_named(want))
      snprintf(msg, msg_size,
               "PTO_ISA=%s: this CPU/OS does not run %s (it runs: %s)", want,
               want, run);
    else
      snprintf(msg, msg_size,
               "PTO_ISA=%s: unknown instruction set (this build has: %s; "
               "this CPU/OS runs: %s)",
               want, have, run);
  }
  return PTO_EISA;
}

/* The choice, made once (uv_once orders these writes before every read). */
static uv_once_t active_once = UV_ONCE_INIT;
static const pto_isa_table *active;
static int active_status;
static char active_msg[256];

/* The default: the first variant that runs here and is preferred. Its
 * `preferred` probes run only when PTO_ISA leaves the choice to it. */
static const char *best_here(void) {
  for (size_t i = 0; i < N_VARIANTS; i++)
    if (runs_here(&variants[i]) &&
        (!variants[i].preferred || variants[i].preferred()))
      return variants[i].name;
  return "scalar";
}

static void choose_active(void) {
  const char *runs[N_VARIANTS + 1];
  size_t n = 0;
  for (size_t i = 0; i < N_VARIANTS; i++)
    if (runs_here(&variants[i]))
      runs[n++] = variants[i].name;
  runs[n] = NULL;
  const char *want = getenv("PTO_ISA"), *name = NULL;
  if (!want || !want[0])
    want = best_here();
  active_status =
      pto__isa_resolve(want, runs, &name, active_msg, sizeof active_msg);
  if (active_status) /* refused: entry points report it; keep a table */
    name = best_here();
  active = variant_named(name)->table();
}

static uv_once_t best_once = UV_ONCE_INIT;
static const pto_isa_table *best;
static void choose_best(void) {
  best = variant_named(best_here())->table();
}
const pto_isa_table *pto__isa_best(void) {
  uv_once(&best_once, choose_best);
  return best;
}

const pto_isa_table *pto__isa_active(void) {
  uv_once(&active_once, choose_active);
  return active;
}

int pto__isa_check(char *msg, size_t msg_size) {
  uv_once(&active_once, choose_active);
  if (msg && msg_size)
    snprintf(msg, msg_size, "%s", active_status ? active_msg : "");
  return active_status;
}

const char *pto_isa_name(void) {
  uv_once(&active_once, choose_active);
  return active_status ? NULL : active->name;
}

int pto_isa_supported(const char *name) {
  const isa_variant *v = variant_named(name);
  return v && runs_here(v);
}

/* ---- run ---------------------------------------------------------------- */

_Thread_local uint64_t pto__ref_calls;

int pto__isa_ref(int op, const pto_targs *a) {
  pto__ref_calls++;
  return pto__isa_scalar.fn[op](op, a);
}

int pto__custom_run(int op, const pto_targs *a) {
  const pto_custom_op *c = pto__custom_get(op);
  if (!c)
    return PTO_EINVAL;
  return c->desc.fn(a->dst[0], a->src, c->desc.n_src, c->desc.user);
}

int pto__tileop_run(int op, const pto_targs *a) {
  if (!a)
    return PTO_EINVAL;
  if (op >= 0 && op < PTO_OP_COUNT)
    return pto__isa_active()->fn[op](op, a);
  return pto__custom_run(op, a);
}
