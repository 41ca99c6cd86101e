/* Running compiled executables on the runtime: synchronously, or
 * asynchronously with completion on the caller's libuv loop. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/runtime.h"
#include "scheduler/trace.h"
#include "scheduler/trace_exe.h"

/* Per-executable scheduler state: the job arrays, built on first run. */
typedef struct exe_sched {
  uint8_t *core;
  uint32_t *succ_off, *n_pred;
  uint64_t *prio;
  uint32_t *inst_off; /* traced runs: task t's first instruction counter */
  atomic_int running;
  pto_trace trace; /* the last traced run */
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
  pto__trace_free(&s->trace);
  free(s);
}

static exe_sched *exe_sched_get(pto_executable *e) {
  if (e->sched)
    return e->sched;
  exe_sched *s = calloc(1, sizeof *s);
  uint32_t n = e->n_tasks;
  if (!s)
    return NULL;
  s->core = malloc(n + 1);
  s->succ_off = malloc((n + 1) * sizeof *s->succ_off);
  s->n_pred = malloc((n + 1) * sizeof *s->n_pred);
  s->prio = malloc((n + 1) * sizeof *s->prio);
  if (!s->core || !s->succ_off || !s->n_pred || !s->prio) {
    exe_sched_free(s);
    return NULL;
  }
  for (uint32_t t = 0; t < n; t++) {
    /* memory-only tasks run on vector cores */
    s->core[t] = e->tasks[t].core == PTO_CORE_CUBE ? PTO_CORE_CUBE
                                                   : PTO_CORE_VECTOR;
    s->succ_off[t] = e->tasks[t].succ;
    s->n_pred[t] = e->tasks[t].n_pred;
    s->prio[t] = e->tasks[t].path;
  }
  s->succ_off[n] = e->n_edges;
  e->sched = s;
  e->sched_free = exe_sched_free;
  return s;
}

static const char *exe_label(const void *owner, uint32_t t) {
  return ((const pto_executable *)owner)->tasks[t].label;
}

static const char *exe_program(const void *owner, uint32_t t) {
  const pto_executable *e = owner;
  return e->progs[e->tasks[t].prog].name;
}

typedef struct exe_run {
  pto_run run;
  pto_executable *e;
  unsigned char **base;
  uint64_t *inst_ns; /* traced runs: ns per task instruction, twice */
} exe_run;

/* Where each task's instruction counters start in a traced run's inst_ns
 * (built on the first traced run): two per instruction of its program, as
 * pto__task_exec takes them; the total in *n. */
static int inst_offsets(const pto_executable *e, exe_sched *s, uint32_t *n) {
  if (!s->inst_off) {
    s->inst_off = malloc((e->n_tasks + 1) * sizeof *s->inst_off);
    if (!s->inst_off)
      return -1;
    uint32_t k = 0;
    for (uint32_t t = 0; t < e->n_tasks; t++) {
      s->inst_off[t] = k;
      k += 2 * e->progs[e->tasks[t].prog].n_insts;
    }
    s->inst_off[e->n_tasks] = k;
  }
  *n = s->inst_off[e->n_tasks];
  return 0;
}

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
    inst_ns = r->inst_ns + ((exe_sched *)e->sched)->inst_off[t];
  return pto__task_exec(e, t, next, &w->scratch, r->base, inst_ns, err);
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
  free(r);
}

/* Called by the last worker: status, error and trace go to the
 * executable, which is then free for the next run. */
static void exe_finish(pto_run *run) {
  exe_run *r = (exe_run *)run;
  pto_executable *e = r->e;
  exe_sched *s = e->sched;
  int st = atomic_load_explicit(&run->status, memory_order_acquire);
  if (!st && atomic_load_explicit(&run->cancel, memory_order_acquire)) {
    st = PTO_ECANCELED;
    atomic_store(&run->status, st);
    pto__error_set(&run->err, PTO_ECANCELED, "run canceled");
  }
  if (st)
    e->err = run->err;
  if (run->trace_start) {
    pto__trace_take(&s->trace, run, e, exe_label, exe_program);
    s->trace.detail = &pto__exe_trace_detail;
    s->trace.inst_ns = r->inst_ns;
    s->trace.inst_off = s->inst_off;
    r->inst_ns = NULL;
    if (run->rt->trace_pattern) /* PTO_TRACE: before the next run of e */
      pto__trace_write_env(&s->trace, run->rt->trace_pattern);
  }
  /* release: the next run of e sees this one's effects */
  atomic_store_explicit(&s->running, 0, memory_order_release);
}

static pto_status exe_run_new(pto_runtime *rt, pto_executable *e,
                              const void *const *inputs, void *const *outputs,
                              exe_run **out) {
  *out = NULL;
  if (!e)
    return rt ? pto__error_set(&rt->err, PTO_EINVAL,
                               "run: the executable is NULL")
              : pto__last_error(PTO_EINVAL,
                                "run: the runtime and the executable are NULL");
  pto__error_clear(&e->err);
  if (!rt)
    return pto__error_set(&e->err, PTO_EINVAL, "run: the runtime is NULL");
  exe_sched *s = exe_sched_get(e);
  if (!s)
    return pto__error_set(&e->err, PTO_ENOMEM, "run: out of memory");
  int idle = 0;
  /* acquire: pairs with exe_finish's release */
  if (!atomic_compare_exchange_strong_explicit(&s->running, &idle, 1,
                                               memory_order_acquire,
                                               memory_order_relaxed))
    return pto__error_set(&e->err, PTO_ESTATE,
                          "run: the executable is already running; compile "
                          "it twice to run it twice at once");
  exe_run *r = calloc(1, sizeof *r);
  pto_status st = PTO_ENOMEM;
  if (!r)
    goto fail;
  r->e = e;
  r->run.owner = e;
  r->run.finish = exe_finish;
  r->base = malloc((e->n_storages + 1) * sizeof *r->base);
  r->run.pending = malloc((e->n_tasks + 1) * sizeof *r->run.pending);
  if (!r->base || !r->run.pending)
    goto fail;
  if (rt->trace) {
    r->run.trace_start = calloc(e->n_tasks + 1, sizeof *r->run.trace_start);
    r->run.trace_end = calloc(e->n_tasks + 1, sizeof *r->run.trace_end);
    r->run.trace_worker = calloc(e->n_tasks + 1, sizeof *r->run.trace_worker);
    uint32_t n_inst = 0;
    if (!r->run.trace_start || !r->run.trace_end || !r->run.trace_worker ||
        inst_offsets(e, s, &n_inst) ||
        !(r->inst_ns = calloc(n_inst + 1, sizeof *r->inst_ns)))
      goto fail;
  }
  if (((!inputs && e->n_inputs) || !outputs) ||
      pto__bind(e, inputs, outputs, r->base)) {
    st = pto__error_set(&e->err, PTO_EINVAL,
                        "run: %u input and %u output buffers are required, "
                        "none of them NULL",
                        e->n_inputs, e->n_outputs);
    goto fail;
  }
  pto_job *j = &r->run.job;
  j->n_tasks = e->n_tasks;
  j->core = s->core;
  j->succ_off = s->succ_off;
  j->succ = e->succ;
  j->n_pred = s->n_pred;
  j->prio = s->prio;
  for (uint32_t t = 0; t < e->n_tasks; t++)
    j->reserve[s->core[t]]++;
  j->exec = exe_exec;
  *out = r;
  return PTO_OK;
fail:
  if (st == PTO_ENOMEM)
    pto__error_set(&e->err, st, "run: out of memory");
  exe_run_free(r);
  atomic_store_explicit(&s->running, 0, memory_order_release);
  return st;
}

pto_status pto_runtime_run(pto_runtime *rt, pto_executable *e,
                           const void *const *inputs, void *const *outputs) {
  exe_run *r;
  pto_status st = exe_run_new(rt, e, inputs, outputs, &r);
  if (st)
    return st;
  if (uv_sem_init(&r->run.done, 0)) {
    exe_sched *s = e->sched;
    exe_run_free(r);
    atomic_store_explicit(&s->running, 0, memory_order_release);
    return pto__error_set(&e->err, PTO_ENOMEM, "run: no semaphore");
  }
  st = pto__run_start(rt, &r->run);
  if (st) {
    exe_sched *s = e->sched;
    pto__error_set(&e->err, st, "%s", rt->err.msg);
    uv_sem_destroy(&r->run.done);
    exe_run_free(r);
    atomic_store_explicit(&s->running, 0, memory_order_release);
    return st;
  }
  uv_sem_wait(&r->run.done);
  uv_sem_destroy(&r->run.done);
  st = (pto_status)atomic_load_explicit(&r->run.status, memory_order_acquire);
  exe_run_free(r);
  return st;
}

/* ---- asynchronous runs ---------------------------------------------------- */

static void async_closed(uv_handle_t *h) {
  exe_run *r = h->data;
  free(h);
  exe_run_free(r);
}

static void async_done(uv_async_t *a) {
  exe_run *r = a->data;
  /* acquire: pairs with run_finish's release (see pto_run.finished); the
   * worker is inside uv_async_send, a few instructions from the store */
  while (!atomic_load_explicit(&r->run.finished, memory_order_acquire))
    sched_yield();
  pto_status st =
      (pto_status)atomic_load_explicit(&r->run.status, memory_order_acquire);
  if (r->run.cb)
    r->run.cb(&r->run, st, r->run.user);
  uv_close((uv_handle_t *)a, async_closed);
}

pto_status pto_runtime_submit(pto_runtime *rt, pto_executable *e,
                              const void *const *inputs, void *const *outputs,
                              void *loop, pto_run_cb cb, void *user,
                              pto_run **run) {
  if (run)
    *run = NULL;
  if (!loop || !cb) {
    const char *msg = "submit: a loop and a callback are required";
    return e    ? pto__error_set(&e->err, PTO_EINVAL, "%s", msg)
           : rt ? pto__error_set(&rt->err, PTO_EINVAL, "%s", msg)
                : pto__last_error(PTO_EINVAL, "%s", msg);
  }
  exe_run *r;
  pto_status st = exe_run_new(rt, e, inputs, outputs, &r);
  if (st)
    return st;
  exe_sched *s = e->sched;
  uv_async_t *a = malloc(sizeof *a);
  if (!a || uv_async_init(loop, a, async_done)) {
    free(a);
    exe_run_free(r);
    atomic_store_explicit(&s->running, 0, memory_order_release);
    return pto__error_set(&e->err, PTO_ENOMEM, "submit: no async handle");
  }
  a->data = r;
  r->run.loop_async = a;
  r->run.cb = cb;
  r->run.user = user;
  if (run)
    *run = &r->run;
  st = pto__run_start(rt, &r->run);
  if (st) {
    pto__error_set(&e->err, st, "%s", rt->err.msg);
    r->run.cb = NULL; /* not started: no callback */
    if (run)
      *run = NULL;
    uv_close((uv_handle_t *)a, async_closed);
    atomic_store_explicit(&s->running, 0, memory_order_release);
  }
  return st;
}

void pto_run_cancel(pto_run *run) {
  if (run) /* release: seen by workers before their next task */
    atomic_store_explicit(&run->cancel, 1, memory_order_release);
}

/* ---- traces ----------------------------------------------------------------- */

static const pto_trace *exe_trace(const pto_executable *e) {
  const exe_sched *s = e ? e->sched : NULL;
  return s && s->trace.start ? &s->trace : NULL;
}

/* ENOTFOUND, saying why there is no trace. */
static pto_status no_trace(pto_error *err, const char *call) {
  return pto__error_set(err, PTO_ENOTFOUND,
                        "%s: no traced run has finished (runs record a "
                        "trace when the runtime is made with params.trace "
                        "set)",
                        call);
}

pto_status pto_executable_write_trace(const pto_executable *e,
                                      const char *path) {
  if (!e)
    return pto__last_error(PTO_EINVAL,
                           "pto_executable_write_trace: the executable is NULL");
  pto_error *err = pto__exe_err(e);
  if (!path)
    return pto__error_set(err, PTO_EINVAL, "write_trace: path is NULL");
  const pto_trace *t = exe_trace(e);
  return t ? pto__trace_write_path(t, path, err) : no_trace(err, "write_trace");
}

pto_status pto_executable_trace_summary(const pto_executable *e, FILE *out) {
  if (!e)
    return pto__last_error(PTO_EINVAL,
                           "pto_executable_trace_summary: the executable is "
                           "NULL");
  pto_error *err = pto__exe_err(e);
  if (!out)
    return pto__error_set(err, PTO_EINVAL, "trace_summary: out is NULL");
  const pto_trace *t = exe_trace(e);
  if (!t)
    return no_trace(err, "trace_summary");
  pto_status st = pto__trace_summary(t, out);
  return st ? pto__error_set(err, st, "trace_summary: %s", pto_strerror(st))
            : st;
}
