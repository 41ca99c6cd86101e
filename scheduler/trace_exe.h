/* scheduler/trace_exe.h (internal): what an executable's trace records
 * beyond a task graph's (scheduler/trace_exe.c). */
#ifndef PTO_SCHEDULER_TRACE_EXE_H
#define PTO_SCHEDULER_TRACE_EXE_H

#include "core/exe.h"
#include "scheduler/trace.h"

/* The owner of a trace with this detail is a pto_executable. */
extern const pto_trace_detail pto__exe_trace_detail;

#endif /* PTO_SCHEDULER_TRACE_EXE_H */
