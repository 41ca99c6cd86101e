/* scheduler/runtime.h (internal): workers, ready queues, runs and jobs. */
#ifndef PTO_SCHEDULER_RUNTIME_H
#define PTO_SCHEDULER_RUNTIME_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "core/error.h"
#include "pto/runtime.h"
#include "scheduler/exec.h"

#define PTO_CACHE_LINE 64
#define PTO_STASH 8 /* most ready tasks a worker takes in one pop */

typedef struct pto_spinlock {
  atomic_int v;
} pto_spinlock;

typedef struct pto_run pto_run;
typedef struct pto_worker pto_worker;

typedef struct pto_ready {
  pto_run *run;
  uint32_t task;
  uint64_t prio;
} pto_ready;

/* One ready queue per core type, each on its own cache lines. */
typedef struct pto_rq {
  alignas(PTO_CACHE_LINE) pto_spinlock lock;
  pto_ready *items;
  uint32_t cap, n, head, reserved;
  alignas(PTO_CACHE_LINE) atomic_uint size; /* polled by idle workers */
} pto_rq;

/* What the scheduler runs: tasks with a core type, successor lists (CSR),
 * predecessor counts and optional priorities, plus how to execute one. */
typedef struct pto_job {
  uint32_t n_tasks;
  const uint8_t *core;      /* pto_core_type per task (cube or vector) */
  const uint32_t *succ_off; /* n_tasks + 1 */
  const uint32_t *succ;
  const uint32_t *n_pred;
  const uint64_t *prio; /* NULL: all equal */
  /* tasks this run does not dispatch (NULL: none); their consumers count
   * only the other producers (n_pred is the run's own then) */
  const uint8_t *skip;
  uint32_t n_active;    /* tasks it dispatches: n_tasks less the skipped */
  uint32_t reserve[2];  /* tasks per core type: queue room to reserve */
  int (*exec)(pto_run *run, uint32_t task, pto_worker *w, pto_error *err);
} pto_job;

/* pto_run.count: tasks not yet finished in the high 32 bits, live units in
 * the low 32 (see there). */
#define PTO_RUN_TASK ((uint64_t)1 << 32)
#define PTO_RUN_LIVE(c) ((uint32_t)(c))
#define PTO_RUN_LEFT(c) ((uint32_t)((c) >> 32))

struct pto_run {
  pto_runtime *rt;
  pto_job job;
  atomic_uint *pending; /* unfinished producers per task */
  /* Two counts in one word, so that one atomic step sees both: the tasks
   * not finished yet (high half), and live units (low half), one for every
   * task that is ready (queued, in a worker's stash or kept) or running,
   * at least one for every worker's batch of finished tasks it has not
   * flushed yet (so the tasks left in the high half are exact whenever the
   * low half is 0), plus the units a worker reserved and has not used. A
   * finished task hands its unit to its first newly ready successor, so
   * chains cost no extra atomic. When the live units reach 0 with tasks
   * left, nothing is running or ready and nothing ever will be (a cycle, or
   * a task lost): the run ends with an error instead of waiting forever. */
  alignas(PTO_CACHE_LINE) _Atomic uint64_t count;
  alignas(PTO_CACHE_LINE) atomic_int status;
  atomic_int cancel;
  pto_error err; /* the first failure's message */
  uint64_t start_ns, end_ns;
  /* trace, when the runtime records one: per task, relative to start_ns */
  uint64_t *trace_start, *trace_end;
  uint16_t *trace_worker;
  /* completion: a semaphore for a waiting caller, or an async handle on the
   * caller's loop */
  uv_sem_t done;
  uv_async_t *loop_async;
  /* set (release) by the last worker once uv_async_send has returned, its
   * last touch of the run; the loop's callback waits for it (acquire)
   * before it frees the run and its handle. The eventfd wake-up alone does
   * not order the worker's writes (nor is it visible to TSan), and the
   * callback can run as soon as the handle is marked pending, before the
   * send returns. */
  atomic_int finished;
  void (*finish)(pto_run *run); /* called by the last worker */
  void *owner;                  /* the executable or graph */
  pto_run_cb cb;
  void *user;
};

struct pto_worker {
  alignas(PTO_CACHE_LINE) pto_runtime *rt;
  uint32_t id;
  int serves[2];
  int first_type;
  int group; /* which sleepers[] / wake[] it uses */
  int pinned_pu; /* OS index of its PU, -1 when not pinned */
  struct hwloc_obj *pu; /* the PU it is pinned to, or NULL */
  uv_thread_t thread;
  pto_scratch scratch; /* grown by this worker only */
  /* tasks popped in one batch, run before looking at the queues again */
  uint32_t n_stash, stash_head;
  /* tasks of done_run finished but not yet subtracted from its count, and
   * the live units they leave (pto_run.count) */
  pto_run *done_run;
  uint32_t done_n, done_live;
  pto_ready stash[PTO_STASH];
};

struct pto_runtime {
  pto_machine machine;
  pto_policy policy;
  int trace;
  char *trace_pattern; /* PTO_TRACE: write every run's trace there */
  uint32_t spin_us, yield_us;
  uint32_t n_workers;
  pto_worker *workers;
  pto_rq rq[2];
  struct hwloc_topology *topo;
  /* sleepers wait per group: one group when workers are shared, one per
   * core type when dedicated, so a push wakes a worker that can run it */
  uv_sem_t wake[2];
  /* start-up: workers wait on `start` until they are pinned, fault their
   * scratchpads in, then post `ready` (pto_runtime_new waits for all) */
  uv_sem_t start, ready;
  alignas(PTO_CACHE_LINE) atomic_int sleepers[2];
  alignas(PTO_CACHE_LINE) atomic_int stop;
  atomic_int active_runs;
  pto_error err;
};

/* Starts a run whose job, pending array and completion are set up. */
pto_status pto__run_start(pto_runtime *rt, pto_run *run);

#endif /* PTO_SCHEDULER_RUNTIME_H */
