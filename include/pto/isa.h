/* pto/isa.h: which implementation of the tile instructions runs.
 *
 * Every build has the scalar reference; x86-64 builds also have "avx2",
 * "avx512" and "avx512bf16" tables (the last is avx512 with a bf16 matmul
 * engine on vdpbf16ps, the default only where a probe at start-up
 * measures that instruction clearly faster than f32 FMAs). The best one
 * this CPU and OS run is chosen once per process, unless the environment
 * variable PTO_ISA names one (scalar|avx2|avx512|avx512bf16): then that
 * one is used, and when it is unknown or
 * this machine cannot run it nothing falls back silently: pto_compile,
 * pto_runtime_new and pto_executable_run_serial fail with PTO_EISA and a
 * message naming the variable, its value and what this machine runs (read
 * it with pto_program_error, pto_runtime_error(NULL) or
 * pto_executable_error). */
#ifndef PTO_ISA_H
#define PTO_ISA_H

#include "pto/export.h"

PTO_EXTERN_C_BEGIN

/* The active table's name ("scalar", "avx2", "avx512", "avx512bf16"), or
 * NULL when
 * PTO_ISA asks for one that is unknown or not supported here. */
PTO_API const char *pto_isa_name(void);

/* 1 when this build has the table `name` and this CPU and OS run it. */
PTO_API int pto_isa_supported(const char *name);

PTO_EXTERN_C_END

#endif /* PTO_ISA_H */
