/* pto/runtime.h: the MPMD runtime. Worker threads, each pinned to one
 * processing unit and serving the core type(s) its machine gives it, run
 * tasks as soon as their producers are done: no barrier anywhere, different
 * workers run different programs at the same time. */
#ifndef PTO_RUNTIME_H
#define PTO_RUNTIME_H

#include <stdint.h>
#include <stdio.h>

#include "pto/config.h"
#include "pto/executable.h"
#include "pto/export.h"
#include "pto/status.h"

PTO_EXTERN_C_BEGIN

typedef struct pto_runtime pto_runtime;

/* Scheduling policies (the "policy" knob). */
typedef enum pto_policy {
  PTO_POLICY_FIFO,          /* ready order */
  PTO_POLICY_CRITICAL_PATH, /* longest remaining path first (default) */
  PTO_POLICY_LOCALITY,      /* most recently readied first (depth first) */
  PTO_POLICY_COUNT
} pto_policy;

PTO_API const char *pto_policy_name(pto_policy p);

typedef struct pto_runtime_params {
  /* Workers per core type and whether they are shared; NULL: the host's
   * (one worker per core this process may run on, serving both core types).
   * A machine with more than four workers per processing unit of this host
   * is refused. */
  const pto_machine *machine;
  pto_policy policy;
  /* Pin each worker to one processing unit (hwloc) of the CPUs the thread
   * calling pto_runtime_new may run on (taskset, cgroup cpusets), one per
   * core before any core gets a second, wrapping round when there are more
   * workers than processing units. A worker whose pinning fails runs
   * unpinned (see pto_runtime_worker_pu). */
  int pin;
  uint32_t spin_us;   /* spin this long for work before backing off */
  uint32_t yield_us;  /* then yield this long before sleeping */
  int trace;          /* record a trace of every run */
} pto_runtime_params;

/* host machine, critical-path, pinned, spin 200 us, yield 2000 us, no trace.
 * Critical path is the default because a dependency graph finishes no
 * sooner than its longest chain: starting that chain first is what removes
 * the tails swimlanes show (FIFO suits flat graphs of equal tasks). */
PTO_API pto_runtime_params pto_runtime_params_default(void);
/* The defaults with c's machine and global "policy" knob (c must outlive
 * pto_runtime_new, which copies what it needs). */
PTO_API pto_runtime_params pto_runtime_params_from_config(const pto_config *c);

PTO_API pto_status pto_runtime_new(const pto_runtime_params *params,
                                   pto_runtime **rt);
/* Waits for runs in flight, then stops the workers. NULL is a no-op. */
PTO_API void pto_runtime_free(pto_runtime *rt);
/* The message of the last failed call on rt ("" if none). With rt NULL:
 * why the calling thread's last pto_runtime_new failed (e.g. PTO_EISA:
 * "runtime: PTO_ISA=avx512: this CPU/OS does not run avx512 (it runs: avx2,
 * scalar)"), or "runtime is NULL". */
PTO_API const char *pto_runtime_error(const pto_runtime *rt);
PTO_API uint32_t pto_runtime_num_workers(const pto_runtime *rt);
/* The OS index of the processing unit worker is pinned to (as taskset and
 * /proc/cpuinfo number them); -1 when it is not pinned (params.pin 0, hwloc
 * unavailable or binding failed), rt is NULL or there is no such worker. */
PTO_API int pto_runtime_worker_pu(const pto_runtime *rt, uint32_t worker);

/* ---- runs of compiled executables -------------------------------------- */

/* A run binds an executable to buffers and owns what one execution needs:
 * its workspace (taken mapped from a pool when the run is made, so its
 * first execution faults nothing in), its trace and its error. Running
 * never changes an executable: any number of runs of one executable may
 * execute at once, on one runtime or several, from any threads. One run
 * executes once at a time (PTO_ESTATE while it is executing) and may
 * execute again and again; it must be freed before its executable. */
typedef struct pto_run pto_run;
typedef void (*pto_run_cb)(pto_run *run, pto_status status, void *user);

/* A new run of e. PTO_EINVAL for NULL arguments, PTO_ENOMEM (the
 * workspace's size in pto_last_error) when memory is short. */
PTO_API pto_status pto_run_new(const pto_executable *e, pto_run **run);
/* Waits for an execution in flight, then frees the run. NULL is a no-op. */
PTO_API void pto_run_free(pto_run *run);
/* The message of the run's last failed call or execution ("" if none; an
 * execution clears it when it starts): a failing task's names the task,
 * program and label. */
PTO_API const char *pto_run_error(const pto_run *run);
PTO_API const pto_executable *pto_run_executable(const pto_run *run);

/* Binds dynamic dim `dim` of run's executable (pto_dim_dynamic) to value,
 * for its executions from now on: PTO_ENOTFOUND for a dim it does not
 * have, PTO_ERANGE for a value outside [0, its maximum] (naming the dim,
 * the maximum and the value; 0 is an empty batch: nothing of it runs),
 * PTO_ESTATE while it executes. An execution
 * needs every dim bound, and the equalities its ops recorded to hold
 * (PTO_ESHAPE naming the op and both sides); then it dispatches only the
 * tasks with something inside the extents, and clips the tiles that cross
 * them. The executable-level calls run at the maxima. Buffers are laid out
 * for the maxima whatever the binding. */
PTO_API pto_status pto_run_bind(pto_run *run, const char *dim, int64_t value);
/* The same by the dim's index (pto_executable_num_dims). */
PTO_API pto_status pto_run_bind_index(pto_run *run, int i, int64_t value);
/* What dim is bound to, or -1. */
PTO_API int64_t pto_run_dim(const pto_run *run, const char *dim);
/* Checks the binding (every dim bound, the ops' equalities) and sizes the
 * run's job to it: which tasks have something inside the extents and what
 * each waits for, one pass over the tasks. An execution does this itself
 * when the binding changed since the last pass (re-binding the same values
 * keeps it); call this to pay for it apart, and to learn of a bad binding
 * before executing. A static executable's run: PTO_OK, nothing to do. */
PTO_API pto_status pto_run_prepare(pto_run *run);

/* Executes run on rt with the given buffers (dense row-major, in
 * declaration order) and waits. A failing task ends the execution with its
 * status. */
PTO_API pto_status pto_run_exec(pto_runtime *rt, pto_run *run,
                                const void *const *inputs,
                                void *const *outputs);
/* Every task of run on the calling thread, in a topological order. */
PTO_API pto_status pto_run_exec_serial(pto_run *run,
                                       const void *const *inputs,
                                       void *const *outputs);
/* Starts run on rt and returns at once. When it ends, cb is called on the
 * thread running `loop` (a uv_loop_t *, which must outlive the execution;
 * call this from that thread); the run is free to execute again (or to be
 * freed) from within cb. */
PTO_API pto_status pto_run_submit(pto_runtime *rt, pto_run *run,
                                  const void *const *inputs,
                                  void *const *outputs, void *loop,
                                  pto_run_cb cb, void *user);
/* Tasks not yet started are skipped; the execution ends with
 * PTO_ECANCELED. */
PTO_API void pto_run_cancel(pto_run *run);

/* The executable-level calls below each execute e on a run of their own,
 * made and freed by the call (its workspace from the pool: after the first
 * call, a warm one); a failure's message goes to pto_executable_error(e).
 * They too may run e several times at once; then read each call's status,
 * since e's message is the last one written. */

/* Runs e with the given buffers and waits. A failing task ends the run with
 * its status; pto_executable_error(e) names the task, program and label. */
PTO_API pto_status pto_runtime_run(pto_runtime *rt, pto_executable *e,
                                   const void *const *inputs,
                                   void *const *outputs);

/* Memory for run operands (free it with free()): 64-byte aligned, and from
 * PTO_HUGE_PAGE bytes up rounded to whole huge pages, aligned on one and
 * advised as transparent huge pages, so the kernels sweeping it do not walk
 * 4 KiB pages (the workers' scratchpads live in such a buffer). NULL when
 * bytes is 0 or too large, or memory is short. */
#define PTO_HUGE_PAGE ((size_t)2 << 20)
PTO_API void *pto_buffer_alloc(size_t bytes);

/* Starts e and returns at once. When the run ends, cb is called on the
 * thread running `loop` (a uv_loop_t *, which must outlive the run); call
 * this from that thread. The run handle (*run, when run is not NULL) is
 * valid until cb returns, for pto_run_cancel. */
PTO_API pto_status pto_runtime_submit(pto_runtime *rt, pto_executable *e,
                                      const void *const *inputs,
                                      void *const *outputs, void *loop,
                                      pto_run_cb cb, void *user,
                                      pto_run **run);

/* ---- task graphs of user callbacks ------------------------------------- */

/* The scheduler on its own: tasks are C callbacks with dependencies. */
typedef struct pto_graph pto_graph;
typedef int (*pto_task_fn)(void *arg); /* 0 or a negative status */

PTO_API pto_graph *pto_graph_new(void); /* NULL on ENOMEM */
PTO_API void pto_graph_free(pto_graph *g);
/* Adds a task; returns its id (>= 0) or a negative status. */
PTO_API int64_t pto_graph_add(pto_graph *g, pto_core_type core,
                              pto_task_fn fn, void *arg);
/* `after` runs once `before` has finished. Ids must exist and differ. */
PTO_API pto_status pto_graph_depend(pto_graph *g, int64_t before,
                                    int64_t after);
/* Runs the graph and waits; a cycle is refused before anything runs. */
PTO_API pto_status pto_runtime_run_graph(pto_runtime *rt, pto_graph *g);
PTO_API const char *pto_graph_error(const pto_graph *g);

/* ---- traces --------------------------------------------------------------- */

/* With params.trace set, or PTO_TRACE in the environment when the runtime
 * was created, every run records each task's worker, start and end
 * (libuv's high-resolution clock) and, for an executable, the time of each
 * instruction of each task (a monotonic clock read around every call);
 * a run keeps its last execution's trace (pto_run_write_trace), an
 * executable the last one of its executable-level calls (pto_runtime_run,
 * pto_runtime_submit), and a graph its last run's. Write it as Chrome
 * trace-event JSON (Perfetto loads it: one lane per worker, one box per
 * task with its label, program, producers, tile windows and ns per
 * instruction opcode; PTO's metadata under the key "pto": workload,
 * effective config, tile shapes, programs, workers) for pto-trace, or as a
 * text summary (makespan, busy fraction per worker and core type, time per
 * label and per label and instruction, critical path versus makespan).
 * ENOTFOUND when no traced run has finished, EIO when the file cannot be
 * written; the message goes to pto_executable_error(e) or
 * pto_graph_error(g).
 * PTO_TRACE=FILE writes every run's trace to FILE, or to a pattern with %p
 * (process id) and %n (run number in the process): trace-%p-%n.json; an
 * empty value, another % escape or a directory that cannot be written
 * makes pto_runtime_new fail with PTO_ECONFIG. */
PTO_API pto_status pto_executable_write_trace(const pto_executable *e,
                                              const char *path);
/* The same for a run's last execution (PTO_ESTATE while it executes; the
 * message goes to pto_run_error). */
PTO_API pto_status pto_run_write_trace(const pto_run *run, const char *path);
PTO_API pto_status pto_run_trace_summary(const pto_run *run, FILE *out);
PTO_API pto_status pto_executable_trace_summary(const pto_executable *e,
                                                FILE *out);
PTO_API pto_status pto_graph_write_trace(const pto_graph *g, const char *path);
PTO_API pto_status pto_graph_trace_summary(const pto_graph *g, FILE *out);

PTO_EXTERN_C_END

#endif /* PTO_RUNTIME_H */
