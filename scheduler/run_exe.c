/* Runs of compiled executables: a run binds an executable to buffers and
 * owns what one execution needs (its workspace, pending counts, trace and
 * error), so any number of runs of one executable execute at once, on any
 * runtimes and threads; an executable is never changed by running it.
 * Synchronous and asynchronous (completion on the caller's libuv loop)
 * executions, on the runtime or serially; and the executable-level calls,
 * each on a run of its own. */
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "core/dims.h"
#include "scheduler/runtime.h"
#include "scheduler/trace.h"
#include "scheduler/trace_exe.h"
#include "pto/isa.h"
#include "tileops/tileops.h"

/* Per-executable scheduler state: the job arrays (immutable once built,
 * shared by every run), and for the executable-level calls the last traced
 * run's trace and the executable's error record, under `lock`. */
typedef struct exe_sched {
  uint8_t *core;
  uint32_t *succ_off, *n_pred;
  uint64_t *prio;
  uint32_t *inst_off; /* task t's first instruction counter, two each */
  /* with dynamic dims, what the skip pass of every binding reads: per
   * task its facts and its clips from clips + skip[t].first */
  pto_skip_task *skip;
  uint64_t *skip_first;
  pto_skip_clip *clips;
  uv_mutex_t lock;
  pto_trace last;
} exe_sched;

static void exe_sched_free(void *p) {
  exe_sched *s = p;
  if (!s)
    return;
  free(s->core);
  free(s->succ_off);
  free(s->n_pred);
  free(s->prio);
  free(s->inst_off);
  free(s->skip);
  free(s->skip_first);
  free(s->clips);
  pto__trace_free(&s->last);
  uv_mutex_destroy(&s->lock);
  free(s);
}

static exe_sched *exe_sched_build(const pto_executable *e) {
  exe_sched *s = calloc(1, sizeof *s);
  uint32_t n = e->n_tasks;
  if (!s)
    return NULL;
  if (uv_mutex_init(&s->lock)) {
    free(s);
    return NULL;
  }
  s->core = malloc(n + 1);
  s->succ_off = malloc((n + 1) * sizeof *s->succ_off);
  s->n_pred = malloc((n + 1) * sizeof *s->n_pred);
  s->prio = malloc((n + 1) * sizeof *s->prio);
  s->inst_off = malloc((n + 1) * sizeof *s->inst_off);
  if (!s->core || !s->succ_off || !s->n_pred || !s->prio || !s->inst_off) {
    exe_sched_free(s);
    return NULL;
  }
  uint32_t k = 0;
  for (uint32_t t = 0; t < n; t++) {
    /* memory-only tasks run on vector cores */
    s->core[t] = e->tasks[t].core == PTO_CORE_CUBE ? PTO_CORE_CUBE
                                                   : PTO_CORE_VECTOR;
    s->succ_off[t] = e->tasks[t].succ;
    s->n_pred[t] = e->tasks[t].n_pred;
    s->prio[t] = e->tasks[t].path;
    s->inst_off[t] = k;
    k += 2 * e->progs[e->tasks[t].prog].n_insts;
  }
  s->succ_off[n] = e->n_edges;
  s->inst_off[n] = k;
  if (e->prog->n_dims) {
    s->skip = malloc((n + 1) * sizeof *s->skip);
    s->skip_first = malloc((n + 1) * sizeof *s->skip_first);
    uint64_t w = 0;
    for (uint32_t t = 0; s->skip && s->skip_first && t < n; t++) {
      s->skip_first[t] = w;
      w += pto__skip_facts(e, t, &s->skip[t], NULL);
    }
    s->clips = s->skip && s->skip_first
                   ? malloc((w + 1) * sizeof *s->clips)
                   : NULL;
    if (!s->clips) {
      exe_sched_free(s);
      return NULL;
    }
    for (uint32_t t = 0; t < n; t++)
      pto__skip_facts(e, t, &s->skip[t], s->clips + s->skip_first[t]);
  }
  return s;
}

/* The executable's scheduler state, built by the first run to need it:
 * whichever thread publishes first wins, the others free their copy. */
static exe_sched *exe_sched_get(const pto_executable *ce) {
  pto_executable *e = (pto_executable *)(uintptr_t)ce; /* a cache */
  /* acquire: pairs with the release of the publishing exchange */
  void *s = atomic_load_explicit(&e->sched, memory_order_acquire);
  if (s)
    return s;
  exe_sched *mine = exe_sched_build(e);
  if (!mine)
    return NULL;
  void *none = NULL;
  if (atomic_compare_exchange_strong_explicit(&e->sched, &none, mine,
                                              memory_order_acq_rel,
                                              memory_order_acquire)) {
    e->sched_free = exe_sched_free; /* read only by pto_executable_free */
    return mine;
  }
  exe_sched_free(mine);
  return none;
}

static const char *exe_label(const void *owner, uint32_t t) {
  return ((const pto_executable *)owner)->tasks[t].label;
}

static const char *exe_program(const void *owner, uint32_t t) {
  const pto_executable *e = owner;
  return e->progs[e->tasks[t].prog].name;
}

/* ---- runs ------------------------------------------------------------------ */

typedef struct exe_run {
  pto_run run; /* first: the scheduler's view of the execution */
  const pto_executable *e;
  exe_sched *s;
  unsigned char **base;
  void *workspace;
  size_t workspace_cap;
  uint64_t *inst_ns; /* a traced execution's ns per task instruction */
  pto_trace trace;   /* the last traced execution's */
  pto_error err;     /* the last failed call's message */
  /* the extents of the executable's dynamic dims (bound: bit i per dim),
   * and what they make of the job: the tasks skipped and the producers
   * each task still waits for */
  int64_t ext[PTO_DIMS_MAX];
  uint64_t bound;
  uint8_t *skip;
  uint32_t *n_pred;
  /* skip and n_pred hold the job at the binding (pto_run_prepare), with
   * these counts: the active tasks, per core type */
  int prepared;
  uint32_t active, reserve[2];
  /* made by an executable-level call: its error and trace go to the
   * executable, and the call frees it */
  int transient;
  atomic_int busy; /* 1 from the start of an execution to its end */
} exe_run;

static void exe_finish(pto_run *run);

/* r when run is a run of an executable (a task graph's has another finish),
 * else NULL. */
static exe_run *exe_run_of(const pto_run *run) {
  return run && run->finish == exe_finish ? (exe_run *)(uintptr_t)run : NULL;
}

static void exe_run_free(exe_run *r) {
  if (!r)
    return;
  free(r->run.pending);
  free(r->run.trace_start);
  free(r->run.trace_end);
  free(r->run.trace_worker);
  free(r->inst_ns);
  free(r->base);
  free(r->skip);
  free(r->n_pred);
  pto__trace_free(&r->trace);
  pto__workspace_give(r->workspace, r->workspace_cap);
  free(r);
}

static pto_status exe_run_make(const pto_executable *e, int transient,
                               exe_run **out, pto_error *err) {
  *out = NULL;
  /* local memory was planned for the machine's matmul panels: other ones
   * than this table packs would overrun the planned tiles */
  uint32_t mr, nr;
  pto__mm_panel(&mr, &nr);
  const uint32_t *pl = e->machine.panel;
  if (pl[0] && pl[1] && (pl[0] != mr || pl[1] != nr))
    return pto__error_set(err, PTO_EISA,
                          "run: the executable was planned for machine '%s', "
                          "whose cube packs matmul operands in panels of "
                          "%ux%u; this CPU's instruction table (%s) packs "
                          "%ux%u: it is for pto_simulate, compile for this "
                          "host to run it",
                          e->machine.name, pl[0], pl[1], pto_isa_name(), mr,
                          nr);
  exe_sched *s = exe_sched_get(e);
  exe_run *r = s ? calloc(1, sizeof *r) : NULL;
  if (!r)
    return pto__error_set(err, PTO_ENOMEM, "run: out of memory");
  r->run.finish = exe_finish;
  r->e = e;
  r->s = s;
  r->transient = transient;
  r->run.owner = (void *)(uintptr_t)e;
  r->base = malloc((e->n_storages + 1) * sizeof *r->base);
  r->run.pending = malloc((e->n_tasks + 1) * sizeof *r->run.pending);
  const int n_dims = e->prog->n_dims;
  if (n_dims) {
    r->skip = calloc(e->n_tasks + 1, 1);
    r->n_pred = malloc((e->n_tasks + 1) * sizeof *r->n_pred);
    if (!r->skip || !r->n_pred) {
      exe_run_free(r);
      return pto__error_set(err, PTO_ENOMEM, "run: out of memory");
    }
  }
  /* the executable-level calls run at the maxima */
  for (int i = 0; transient && i < n_dims; i++)
    r->ext[i] = e->prog->dims[i].max;
  if (transient)
    r->bound = n_dims == 64 ? ~(uint64_t)0 : ((uint64_t)1 << n_dims) - 1;
  if (e->workspace_bytes) /* mapped now, not by the first tasks */
    r->workspace = pto__workspace_take((size_t)e->workspace_bytes,
                                       &r->workspace_cap);
  if (!r->base || !r->run.pending || (e->workspace_bytes && !r->workspace)) {
    exe_run_free(r);
    return pto__error_set(err, PTO_ENOMEM,
                          "run: out of memory (a %llu-byte workspace)",
                          (unsigned long long)e->workspace_bytes);
  }
  *out = r;
  return PTO_OK;
}

pto_status pto_run_new(const pto_executable *e, pto_run **run) {
  if (!run)
    return pto__last_error(PTO_EINVAL, "pto_run_new: run is NULL (pass the "
                                       "address of a pto_run * to receive "
                                       "the run)");
  *run = NULL;
  if (!e)
    return pto__last_error(PTO_EINVAL, "pto_run_new: the executable is NULL");
  exe_run *r;
  pto_error err;
  pto_status st = exe_run_make(e, 0, &r, &err);
  if (st)
    return pto__last_error(st, "%s", err.msg);
  *run = &r->run;
  return PTO_OK;
}

void pto_run_free(pto_run *run) {
  exe_run *r = exe_run_of(run);
  if (!r)
    return;
  /* acquire: pairs with the release that ends an execution */
  while (atomic_load_explicit(&r->busy, memory_order_acquire))
    uv_sleep(1);
  exe_run_free(r);
}

const char *pto_run_error(const pto_run *run) {
  const exe_run *r = exe_run_of(run);
  return r ? r->err.msg : "run is NULL";
}

const pto_executable *pto_run_executable(const pto_run *run) {
  const exe_run *r = exe_run_of(run);
  return r ? r->e : NULL;
}

pto_status pto_run_bind(pto_run *run, const char *dim, int64_t value) {
  exe_run *r = exe_run_of(run);
  if (!r)
    return pto__last_error(PTO_EINVAL, "pto_run_bind: the run is NULL");
  const pto_program *p = r->e->prog;
  const int i = pto_program_find_dim(p, dim);
  if (i < 0)
    return pto__error_set(&r->err, PTO_ENOTFOUND,
                          "bind: executable of '%s' has no dim '%s' (it has "
                          "%d)",
                          p->name, dim ? dim : "(null)", p->n_dims);
  return pto_run_bind_index(run, i, value);
}

pto_status pto_run_bind_index(pto_run *run, int i, int64_t value) {
  exe_run *r = exe_run_of(run);
  if (!r)
    return pto__last_error(PTO_EINVAL, "pto_run_bind_index: the run is NULL");
  const pto_program *p = r->e->prog;
  if (i < 0 || i >= p->n_dims)
    return pto__error_set(&r->err, PTO_ENOTFOUND,
                          "bind: dim %d is not one of the executable's %d", i,
                          p->n_dims);
  if (value < 0 || value > p->dims[i].max)
    return pto__error_set(&r->err, PTO_ERANGE,
                          "bind: dim '%s' = %" PRId64 " is outside [0, %" PRId64
                          "] (its maximum)",
                          p->dims[i].name, value, p->dims[i].max);
  if (atomic_load_explicit(&r->busy, memory_order_acquire))
    return pto__error_set(&r->err, PTO_ESTATE,
                          "bind: the run is executing");
  if (!(r->bound >> i & 1) || r->ext[i] != value)
    r->prepared = 0;
  r->ext[i] = value;
  r->bound |= (uint64_t)1 << i;
  return PTO_OK;
}

int64_t pto_run_dim(const pto_run *run, const char *dim) {
  const exe_run *r = exe_run_of(run);
  if (!r)
    return -1;
  const int i = pto_program_find_dim(r->e->prog, dim);
  return i >= 0 && (r->bound >> i & 1) ? r->ext[i] : -1;
}

/* The job at r's extents: which tasks have nothing to do (every store of
 * every instance empty), and how many of its producers each other task
 * waits for. A skipped task's consumers do not wait for it: it writes
 * nothing, and every dependency is a read of what a producer wrote, so
 * whatever else they read comes from tasks they wait for directly. The
 * pass runs once per binding: executions at the same extents reuse it. */
static pto_status exe_bind_job(exe_run *r) {
  const pto_executable *e = r->e;
  const pto_program *p = e->prog;
  if (!r->prepared) { /* the binding changed since the last pass */
    for (int i = 0; i < p->n_dims; i++)
      if (!(r->bound >> i & 1))
        return pto__error_set(&r->err, PTO_EINVAL,
                              "run: dim '%s' (maximum %" PRId64
                              ") is not bound (pto_run_bind)",
                              p->dims[i].name, p->dims[i].max);
    pto_status st = pto__dims_check(p, r->ext, &r->err);
    if (st)
      return st;
    r->active = r->reserve[0] = r->reserve[1] = 0;
    for (uint32_t t = 0; t < e->n_tasks; t++) {
      const uint8_t skip = (uint8_t)pto__task_skip(
          e, t, &r->s->skip[t], r->s->clips + r->s->skip_first[t], r->ext);
      r->skip[t] = skip;
      r->n_pred[t] = 0;
      r->active += !skip;
      r->reserve[r->s->core[t]] += !skip;
    }
    /* from the compact arrays only: a binding's pass reads no task */
    const uint32_t *off = r->s->succ_off;
    for (uint32_t t = 0; t < e->n_tasks; t++)
      if (!r->skip[t])
        for (uint32_t k = off[t]; k < off[t + 1]; k++)
          r->n_pred[e->succ[k]]++;
    r->prepared = 1;
  }
  pto_job *j = &r->run.job;
  j->skip = r->skip;
  j->n_pred = r->n_pred;
  j->n_active = r->active;
  j->reserve[0] = r->reserve[0];
  j->reserve[1] = r->reserve[1];
  return PTO_OK;
}

pto_status pto_run_prepare(pto_run *run) {
  exe_run *r = exe_run_of(run);
  if (!r)
    return pto__last_error(PTO_EINVAL, "pto_run_prepare: the run is NULL");
  if (atomic_load_explicit(&r->busy, memory_order_acquire))
    return pto__error_set(&r->err, PTO_ESTATE, "prepare: the run is executing");
  return r->skip ? exe_bind_job(r) : PTO_OK;
}

/* ---- one execution ---------------------------------------------------------- */

static int exe_exec(pto_run *run, uint32_t t, pto_worker *w, pto_error *err) {
  exe_run *r = (exe_run *)run;
  const pto_executable *e = r->e;
  pto_status st =
      pto__scratch_reserve(&w->scratch, &e->progs[e->tasks[t].prog]);
  if (st)
    return pto__error_set(err, st, "task %u: worker %u is out of memory", t,
                          w->id);
  /* the next task of the worker's batch, if it is of this run */
  uint32_t next = PTO_NO_TASK;
  if (w->n_stash && w->stash[w->stash_head].run == run)
    next = w->stash[w->stash_head].task;
  uint64_t *inst_ns = NULL;
  if (r->inst_ns) /* this task's counters: written by this worker only */
    inst_ns = r->inst_ns + r->s->inst_off[t];
  return pto__task_exec(e, t, next, &w->scratch, r->base,
                        r->skip ? r->ext : NULL, inst_ns, err);
}

/* Called by the last worker: the status, the error and the trace go to
 * the run (a transient one's to its executable, by its caller). */
static void exe_finish(pto_run *run) {
  exe_run *r = (exe_run *)run;
  int st = atomic_load_explicit(&run->status, memory_order_acquire);
  if (!st && atomic_load_explicit(&run->cancel, memory_order_acquire)) {
    st = PTO_ECANCELED;
    atomic_store(&run->status, st);
    pto__error_set(&run->err, PTO_ECANCELED, "run canceled");
  }
  if (st)
    r->err = run->err;
  if (run->trace_start) {
    pto__trace_take(&r->trace, run, r->e, exe_label, exe_program);
    r->trace.detail = &pto__exe_trace_detail;
    r->trace.inst_ns = r->inst_ns;
    r->trace.inst_off = r->s->inst_off;
    r->inst_ns = NULL;
    if (run->rt->trace_pattern) /* PTO_TRACE */
      pto__trace_write_env(&r->trace, run->rt->trace_pattern);
  }
}

/* Claims r for one execution: ESTATE while it is executing. */
static pto_status exe_claim(exe_run *r) {
  int idle = 0;
  /* acquire: pairs with the release that ended the last execution */
  if (!atomic_compare_exchange_strong_explicit(&r->busy, &idle, 1,
                                               memory_order_acquire,
                                               memory_order_relaxed))
    return pto__error_set(&r->err, PTO_ESTATE,
                          "run: this run is executing; make another run of "
                          "the executable (pto_run_new) to run it twice at "
                          "once");
  pto__error_clear(&r->err);
  return PTO_OK;
}

static void exe_release(exe_run *r) {
  /* release: this execution's effects happen-before the next claim */
  atomic_store_explicit(&r->busy, 0, memory_order_release);
}

/* Binds the buffers and sets up the job of one execution of claimed r on
 * rt (tracing when rt records traces). */
static pto_status exe_prepare(exe_run *r, pto_runtime *rt,
                              const void *const *inputs,
                              void *const *outputs) {
  const pto_executable *e = r->e;
  exe_sched *s = r->s;
  if (((!inputs && e->n_inputs) || !outputs) ||
      pto__bind(e, r->workspace, inputs, outputs, r->base))
    return pto__error_set(&r->err, PTO_EINVAL,
                          "run: %u input and %u output buffers are required, "
                          "none of them NULL",
                          e->n_inputs, e->n_outputs);
  pto_run *run = &r->run;
  free(run->trace_start);
  free(run->trace_end);
  free(run->trace_worker);
  free(r->inst_ns);
  run->trace_start = run->trace_end = NULL;
  run->trace_worker = NULL;
  r->inst_ns = NULL;
  if (rt->trace) {
    run->trace_start = calloc(e->n_tasks + 1, sizeof *run->trace_start);
    run->trace_end = calloc(e->n_tasks + 1, sizeof *run->trace_end);
    run->trace_worker = calloc(e->n_tasks + 1, sizeof *run->trace_worker);
    r->inst_ns = calloc(s->inst_off[e->n_tasks] + 1, sizeof *r->inst_ns);
    if (!run->trace_start || !run->trace_end || !run->trace_worker ||
        !r->inst_ns)
      return pto__error_set(&r->err, PTO_ENOMEM,
                            "run: out of memory for the trace");
  }
  pto_job *j = &run->job;
  memset(j, 0, sizeof *j);
  j->n_tasks = e->n_tasks;
  j->core = s->core;
  j->succ_off = s->succ_off;
  j->succ = e->succ;
  j->n_pred = s->n_pred;
  j->prio = s->prio;
  for (uint32_t t = 0; t < e->n_tasks; t++)
    j->reserve[s->core[t]]++;
  j->n_active = e->n_tasks;
  j->exec = exe_exec;
  pto_status st;
  if (r->skip && (st = exe_bind_job(r)))
    return st;
  run->loop_async = NULL;
  run->cb = NULL;
  run->user = NULL;
  atomic_store_explicit(&run->finished, 0, memory_order_relaxed);
  pto__error_clear(&run->err);
  return PTO_OK;
}

static pto_status exe_exec_sync(exe_run *r, pto_runtime *rt,
                                const void *const *inputs,
                                void *const *outputs) {
  if (!rt)
    return pto__error_set(&r->err, PTO_EINVAL, "run: the runtime is NULL");
  pto_status st = exe_claim(r);
  if (st)
    return st;
  if ((st = exe_prepare(r, rt, inputs, outputs)))
    goto out;
  if (uv_sem_init(&r->run.done, 0)) {
    st = pto__error_set(&r->err, PTO_ENOMEM, "run: no semaphore");
    goto out;
  }
  if ((st = pto__run_start(rt, &r->run))) {
    pto__error_set(&r->err, st, "%s", rt->err.msg);
    uv_sem_destroy(&r->run.done);
    goto out;
  }
  uv_sem_wait(&r->run.done);
  uv_sem_destroy(&r->run.done);
  st = (pto_status)atomic_load_explicit(&r->run.status, memory_order_acquire);
out:
  exe_release(r);
  return st;
}

pto_status pto_run_exec(pto_runtime *rt, pto_run *run,
                        const void *const *inputs, void *const *outputs) {
  exe_run *r = exe_run_of(run);
  if (!r)
    return pto__last_error(PTO_EINVAL, "pto_run_exec: the run is NULL");
  return exe_exec_sync(r, rt, inputs, outputs);
}

/* ---- serial execution ------------------------------------------------------- */

/* Every task on the calling thread in a topological order (Kahn's algorithm
 * over the successor lists): compiled programs checked end to end without
 * the parallel runtime. */
static pto_status exe_exec_serial(exe_run *r, const void *const *inputs,
                                  void *const *outputs) {
  const pto_executable *e = r->e;
  char isa_msg[256];
  if (pto__isa_check(isa_msg, sizeof isa_msg))
    return pto__error_set(&r->err, PTO_EISA, "run: %s", isa_msg);
  pto_status st = exe_claim(r);
  if (st)
    return st;
  if (r->skip && (st = exe_bind_job(r)))
    goto out;
  pto_scratch s;
  uint32_t *queue = malloc((e->n_tasks + 1) * sizeof *queue);
  if (!queue || pto__scratch_init(&s, e)) {
    free(queue);
    st = pto__error_set(&r->err, PTO_ENOMEM, "run: out of memory");
    goto out;
  }
  if ((!inputs && e->n_inputs) || !outputs ||
      pto__bind(e, r->workspace, inputs, outputs, r->base)) {
    st = pto__error_set(&r->err, PTO_EINVAL,
                        "run: %u input and %u output buffers are required, "
                        "none of them NULL",
                        e->n_inputs, e->n_outputs);
    goto done;
  }
  atomic_uint *pending = r->run.pending;
  uint32_t head = 0, tail = 0;
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    atomic_store_explicit(&pending[t], e->tasks[t].n_pred,
                          memory_order_relaxed);
    if (!e->tasks[t].n_pred)
      queue[tail++] = t;
  }
  while (head < tail) {
    uint32_t t = queue[head++];
    /* a skipped task runs nothing, its consumers are readied as usual */
    st = r->skip && r->skip[t]
             ? PTO_OK
             : pto__task_exec(e, t, head < tail ? queue[head] : PTO_NO_TASK,
                              &s, r->base, r->skip ? r->ext : NULL, NULL,
                              &r->err);
    if (st)
      goto done;
    const pto_task *task = &e->tasks[t];
    for (uint32_t k = 0; k < task->n_succ; k++) {
      uint32_t v = e->succ[task->succ + k];
      if (atomic_fetch_sub_explicit(&pending[v], 1, memory_order_relaxed) ==
          1)
        queue[tail++] = v;
    }
  }
  if (tail != e->n_tasks) /* a cycle: a compiler bug, never user input */
    st = pto__error_set(&r->err, PTO_ESTATE,
                        "run: %u of %u tasks never became ready",
                        e->n_tasks - tail, e->n_tasks);
done:
  pto__scratch_free(&s);
  free(queue);
out:
  exe_release(r);
  return st;
}

pto_status pto_run_exec_serial(pto_run *run, const void *const *inputs,
                               void *const *outputs) {
  exe_run *r = exe_run_of(run);
  if (!r)
    return pto__last_error(PTO_EINVAL,
                           "pto_run_exec_serial: the run is NULL");
  return exe_exec_serial(r, inputs, outputs);
}

/* ---- the executable-level calls: each on a transient run ----------------- */

/* A transient run's error and trace become its executable's. */
static void exe_publish(exe_run *r, pto_status st) {
  exe_sched *s = r->s;
  uv_mutex_lock(&s->lock);
  pto_error *err = pto__exe_err(r->e);
  if (st)
    *err = r->err;
  else
    pto__error_clear(err);
  if (r->trace.start) { /* the executable keeps its last traced run's */
    pto__trace_free(&s->last);
    s->last = r->trace;
    memset(&r->trace, 0, sizeof r->trace);
  }
  uv_mutex_unlock(&s->lock);
}

/* A transient run of e, or a status with e's error set. */
static pto_status exe_transient(const pto_executable *e, exe_run **r) {
  pto_error err;
  pto_status st = exe_run_make(e, 1, r, &err);
  if (st) {
    exe_sched *s = atomic_load_explicit(&((pto_executable *)(uintptr_t)e)->sched,
                                        memory_order_acquire);
    if (s)
      uv_mutex_lock(&s->lock);
    *pto__exe_err(e) = err;
    if (s)
      uv_mutex_unlock(&s->lock);
  }
  return st;
}

pto_status pto_runtime_run(pto_runtime *rt, pto_executable *e,
                           const void *const *inputs, void *const *outputs) {
  if (!e)
    return rt ? pto__error_set(&rt->err, PTO_EINVAL,
                               "run: the executable is NULL")
              : pto__last_error(PTO_EINVAL,
                                "run: the runtime and the executable are NULL");
  exe_run *r;
  pto_status st = exe_transient(e, &r);
  if (st)
    return st;
  st = exe_exec_sync(r, rt, inputs, outputs);
  exe_publish(r, st);
  exe_run_free(r);
  return st;
}

pto_status pto_executable_run_serial(pto_executable *e,
                                     const void *const *inputs,
                                     void *const *outputs) {
  if (!e)
    return pto__last_error(PTO_EINVAL,
                           "pto_executable_run_serial: the executable is NULL");
  exe_run *r;
  pto_status st = exe_transient(e, &r);
  if (st)
    return st;
  st = exe_exec_serial(r, inputs, outputs);
  exe_publish(r, st);
  exe_run_free(r);
  return st;
}

/* ---- asynchronous executions ------------------------------------------------ */

static void async_closed(uv_handle_t *h) {
  free(h);
}

static void async_done(uv_async_t *a) {
  exe_run *r = a->data;
  /* acquire: pairs with run_finish's release (see pto_run.finished); the
   * worker is inside uv_async_send, a few instructions from the store */
  while (!atomic_load_explicit(&r->run.finished, memory_order_acquire))
    sched_yield();
  pto_status st =
      (pto_status)atomic_load_explicit(&r->run.status, memory_order_acquire);
  pto_run_cb cb = r->run.cb;
  void *user = r->run.user;
  const int transient = r->transient;
  r->run.loop_async = NULL;
  uv_close((uv_handle_t *)a, async_closed);
  if (transient)
    exe_publish(r, st);
  exe_release(r); /* the callback may run it again, or free it */
  if (cb)
    cb(&r->run, st, user);
  if (transient)
    exe_run_free(r);
}

static pto_status exe_submit(exe_run *r, pto_runtime *rt,
                             const void *const *inputs, void *const *outputs,
                             void *loop, pto_run_cb cb, void *user) {
  if (!rt)
    return pto__error_set(&r->err, PTO_EINVAL, "run: the runtime is NULL");
  if (!loop || !cb)
    return pto__error_set(&r->err, PTO_EINVAL,
                          "submit: a loop and a callback are required");
  pto_status st = exe_claim(r);
  if (st)
    return st;
  if ((st = exe_prepare(r, rt, inputs, outputs)))
    goto fail;
  uv_async_t *a = malloc(sizeof *a);
  if (!a || uv_async_init(loop, a, async_done)) {
    free(a);
    st = pto__error_set(&r->err, PTO_ENOMEM, "submit: no async handle");
    goto fail;
  }
  a->data = r;
  r->run.loop_async = a;
  r->run.cb = cb;
  r->run.user = user;
  if ((st = pto__run_start(rt, &r->run))) {
    pto__error_set(&r->err, st, "%s", rt->err.msg);
    r->run.loop_async = NULL;
    uv_close((uv_handle_t *)a, async_closed);
    goto fail;
  }
  return PTO_OK;
fail:
  exe_release(r);
  return st;
}

pto_status pto_run_submit(pto_runtime *rt, pto_run *run,
                          const void *const *inputs, void *const *outputs,
                          void *loop, pto_run_cb cb, void *user) {
  exe_run *r = exe_run_of(run);
  if (!r)
    return pto__last_error(PTO_EINVAL, "pto_run_submit: the run is NULL");
  return exe_submit(r, rt, inputs, outputs, loop, cb, user);
}

pto_status pto_runtime_submit(pto_runtime *rt, pto_executable *e,
                              const void *const *inputs, void *const *outputs,
                              void *loop, pto_run_cb cb, void *user,
                              pto_run **run) {
  if (run)
    *run = NULL;
  if (!loop || !cb || !e) {
    const char *msg = !e ? "submit: the executable is NULL"
                         : "submit: a loop and a callback are required";
    return e    ? pto__error_set(pto__exe_err(e), PTO_EINVAL, "%s", msg)
           : rt ? pto__error_set(&rt->err, PTO_EINVAL, "%s", msg)
                : pto__last_error(PTO_EINVAL, "%s", msg);
  }
  exe_run *r;
  pto_status st = exe_transient(e, &r);
  if (st)
    return st;
  if (run)
    *run = &r->run;
  if ((st = exe_submit(r, rt, inputs, outputs, loop, cb, user))) {
    if (run)
      *run = NULL;
    exe_publish(r, st);
    exe_run_free(r);
  }
  return st;
}

void pto_run_cancel(pto_run *run) {
  if (run) /* release: seen by workers before their next task */
    atomic_store_explicit(&run->cancel, 1, memory_order_release);
}

/* ---- traces ----------------------------------------------------------------- */

/* ENOTFOUND, saying why there is no trace. */
static pto_status no_trace(pto_error *err, const char *call) {
  return pto__error_set(err, PTO_ENOTFOUND,
                        "%s: no traced run has finished (runs record a "
                        "trace when the runtime is made with params.trace "
                        "set)",
                        call);
}

/* Writes t to path (or its summary to out) for call, errors into err. */
static pto_status trace_out(const pto_trace *t, const char *path, FILE *out,
                            pto_error *err, const char *call) {
  if (!t || !t->start)
    return no_trace(err, call);
  if (path)
    return pto__trace_write_path(t, path, err);
  pto_status st = pto__trace_summary(t, out);
  return st ? pto__error_set(err, st, "%s: %s", call, pto_strerror(st)) : st;
}

/* The executable's last traced run, under its lock. */
static pto_status exe_trace_out(const pto_executable *e, const char *path,
                                FILE *out, const char *call) {
  pto_error *err = pto__exe_err(e);
  exe_sched *s = atomic_load_explicit(&((pto_executable *)(uintptr_t)e)->sched,
                                      memory_order_acquire);
  if (!s)
    return no_trace(err, call);
  uv_mutex_lock(&s->lock);
  pto_status st = trace_out(&s->last, path, out, err, call);
  uv_mutex_unlock(&s->lock);
  return st;
}

pto_status pto_executable_write_trace(const pto_executable *e,
                                      const char *path) {
  if (!e)
    return pto__last_error(PTO_EINVAL,
                           "pto_executable_write_trace: the executable is NULL");
  if (!path)
    return pto__error_set(pto__exe_err(e), PTO_EINVAL,
                          "write_trace: path is NULL");
  return exe_trace_out(e, path, NULL, "write_trace");
}

pto_status pto_executable_trace_summary(const pto_executable *e, FILE *out) {
  if (!e)
    return pto__last_error(PTO_EINVAL,
                           "pto_executable_trace_summary: the executable is "
                           "NULL");
  if (!out)
    return pto__error_set(pto__exe_err(e), PTO_EINVAL,
                          "trace_summary: out is NULL");
  return exe_trace_out(e, NULL, out, "trace_summary");
}

/* A run's trace is read only while it is not executing. */
static pto_status run_trace_out(const pto_run *run, const char *path,
                                FILE *out, const char *call) {
  exe_run *r = exe_run_of(run);
  if (!r)
    return pto__last_error(PTO_EINVAL, "pto_run_%s: the run is NULL", call);
  if (!path && !out)
    return pto__error_set(&r->err, PTO_EINVAL, "%s: %s is NULL", call,
                          !strcmp(call, "write_trace") ? "path" : "out");
  if (atomic_load_explicit(&r->busy, memory_order_acquire))
    return pto__error_set(&r->err, PTO_ESTATE, "%s: the run is executing",
                          call);
  return trace_out(&r->trace, path, out, &r->err, call);
}

pto_status pto_run_write_trace(const pto_run *run, const char *path) {
  return run_trace_out(run, path, NULL, "write_trace");
}

pto_status pto_run_trace_summary(const pto_run *run, FILE *out) {
  return run_trace_out(run, NULL, out, "trace_summary");
}
