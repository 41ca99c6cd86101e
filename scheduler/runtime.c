/* The MPMD runtime: pinned workers, per-core-type ready queues and atomic
 * dependency counters. A finishing worker decrements its task's consumers,
 * keeps one newly ready task of a type it serves for itself (its data is warm
 * in this core's cache) and queues the rest. Idle workers spin, then yield,
 * then sleep on a semaphore; a push wakes a sleeper only when there is one,
 * so while work flows nobody pays for a wake-up. */
#include "scheduler/runtime.h"

#include <hwloc.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "scheduler/trace.h"
#include "tileops/tileops.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

const char *pto_policy_name(pto_policy p) {
  static const char *const names[PTO_POLICY_COUNT] = {"fifo", "critical-path",
                                                      "locality"};
  return (unsigned)p < PTO_POLICY_COUNT ? names[p] : "?";
}

pto_runtime_params pto_runtime_params_default(void) {
  pto_runtime_params p;
  memset(&p, 0, sizeof p);
  p.policy = PTO_POLICY_CRITICAL_PATH;
  p.pin = 1;
  p.spin_us = 200;
  p.yield_us = 2000;
  return p;
}

pto_runtime_params pto_runtime_params_from_config(const pto_config *c) {
  pto_runtime_params p = pto_runtime_params_default();
  if (c) {
    p.machine = pto_config_machine(c);
    p.policy = (pto_policy)pto_config_knob(c, NULL, PTO_KNOB_POLICY);
  }
  return p;
}

/* ---- ready queues ------------------------------------------------------- */

static void lock(pto_spinlock *l) {
  /* acquire: the queue's contents written by the last holder are visible */
  while (atomic_exchange_explicit(&l->v, 1, memory_order_acquire))
    while (atomic_load_explicit(&l->v, memory_order_relaxed))
      cpu_relax();
}

static void unlock(pto_spinlock *l) {
  /* release: publishes this holder's writes to the next one */
  atomic_store_explicit(&l->v, 0, memory_order_release);
}

/* A binary max-heap on prio (critical path), a ring (fifo) or a stack
 * (locality), under one spinlock. Capacity is reserved before a run starts,
 * so a push never allocates. */
static int rq_reserve(pto_rq *q, uint32_t more) {
  lock(&q->lock);
  uint32_t need = q->reserved + more;
  int rc = 0;
  if (need > q->cap) {
    uint32_t cap = q->cap ? q->cap : 1024;
    while (cap < need)
      cap *= 2;
    pto_ready *items = malloc((size_t)cap * sizeof *items);
    if (!items) {
      rc = -1;
    } else {
      /* unroll the ring into the new buffer */
      for (uint32_t i = 0; i < q->n; i++)
        items[i] = q->items[(q->head + i) & (q->cap - 1)];
      free(q->items);
      q->items = items;
      q->cap = cap;
      q->head = 0;
    }
  }
  if (!rc)
    q->reserved = need;
  unlock(&q->lock);
  return rc;
}

static void rq_release(pto_rq *q, uint32_t n) {
  lock(&q->lock);
  q->reserved -= n;
  unlock(&q->lock);
}

static void heap_up(pto_ready *h, uint32_t i) {
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (h[p].prio >= h[i].prio)
      break;
    pto_ready t = h[p];
    h[p] = h[i];
    h[i] = t;
    i = p;
  }
}

static void heap_down(pto_ready *h, uint32_t n, uint32_t i) {
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && h[l].prio > h[m].prio)
      m = l;
    if (r < n && h[r].prio > h[m].prio)
      m = r;
    if (m == i)
      return;
    pto_ready t = h[m];
    h[m] = h[i];
    h[i] = t;
    i = m;
  }
}

/* Inserts under the lock: ring tail, stack top or heap. */
static void rq_insert_locked(pto_rq *q, pto_policy pol, pto_ready it) {
  if (pol == PTO_POLICY_FIFO) {
    q->items[(q->head + q->n) & (q->cap - 1)] = it;
  } else {
    q->items[q->n] = it;
    if (pol == PTO_POLICY_CRITICAL_PATH)
      heap_up(q->items, q->n);
  }
  q->n++;
}

/* The size a push publishes is what a worker about to sleep checks after
 * counting itself a sleeper, while the pusher checks the sleepers after
 * publishing the size (wake_one): the two must not both miss the other.
 * seq_cst: a relaxed store may still sit in the store buffer when the
 * pusher reads no sleeper and the sleeper reads the old size, and then
 * the task waits with its worker asleep (x86 lets a load pass an earlier
 * store to another address). */
static void rq_publish_size(pto_rq *q) {
  atomic_store_explicit(&q->size, q->n, memory_order_seq_cst);
}

static void rq_push(pto_rq *q, pto_policy pol, pto_ready it) {
  lock(&q->lock);
  rq_insert_locked(q, pol, it);
  rq_publish_size(q);
  unlock(&q->lock);
}

/* Pushes the ready roots of a run in one critical section. */
static void rq_push_roots(pto_rq *q, pto_policy pol, pto_run *run, int core) {
  const pto_job *j = &run->job;
  lock(&q->lock);
  for (uint32_t t = 0; t < j->n_tasks; t++) {
    if (j->n_pred[t] || j->core[t] != core || (j->skip && j->skip[t]))
      continue;
    pto_ready it = {run, t, j->prio ? j->prio[t] : 0};
    rq_insert_locked(q, pol, it);
  }
  rq_publish_size(q);
  unlock(&q->lock);
}

/* Takes one item under the lock (the queue is not empty). */
static pto_ready rq_take_locked(pto_rq *q, pto_policy pol) {
  pto_ready it;
  if (pol == PTO_POLICY_FIFO) {
    it = q->items[q->head];
    q->head = (q->head + 1) & (q->cap - 1);
  } else if (pol == PTO_POLICY_LOCALITY) {
    it = q->items[q->n - 1];
  } else {
    it = q->items[0];
    q->items[0] = q->items[q->n - 1];
    heap_down(q->items, q->n - 1, 0);
  }
  q->n--;
  return it;
}

/* Pops up to max items in policy order (out[0] first). More than one only
 * while the queue holds many ready tasks per worker: one lock round trip
 * then serves a batch, and no worker can be left idle holding a stash at
 * the end of a run. Returns how many. */
static uint32_t rq_pop(pto_rq *q, pto_policy pol, uint32_t workers,
                       pto_ready *out, uint32_t max) {
  if (!atomic_load_explicit(&q->size, memory_order_relaxed))
    return 0;
  lock(&q->lock);
  uint32_t k = q->n / (8 * workers);
  k = k < 1 ? 1 : k > max ? max : k;
  k = k > q->n ? q->n : k;
  for (uint32_t i = 0; i < k; i++)
    out[i] = rq_take_locked(q, pol);
  atomic_store_explicit(&q->size, q->n, memory_order_relaxed);
  unlock(&q->lock);
  return k;
}

/* ---- waking --------------------------------------------------------------- */

/* Wakes one sleeping worker that can run a task of core type c. */
static void wake_one(pto_runtime *rt, int c) {
  int g = rt->machine.shared ? 0 : c;
  /* seq_cst pairs with the sleeper's increment-then-recheck: either it sees
   * the pushed task or this sees it counted and posts */
  int s = atomic_load(&rt->sleepers[g]);
  while (s > 0) {
    if (atomic_compare_exchange_weak(&rt->sleepers[g], &s, s - 1)) {
      uv_sem_post(&rt->wake[g]);
      return;
    }
  }
}

static int queues_empty(pto_runtime *rt, const pto_worker *w) {
  for (int c = 0; c < 2; c++)
    if (w->serves[c] && atomic_load(&rt->rq[c].size))
      return 0;
  return 1;
}

/* ---- completing tasks ------------------------------------------------------ */

static void run_finish(pto_run *run) {
  pto_runtime *rt = run->rt;
  run->end_ns = uv_hrtime();
  if (run->finish)
    run->finish(run);
  rq_release(&rt->rq[0], run->job.reserve[0]);
  rq_release(&rt->rq[1], run->job.reserve[1]);
  /* release: the run's results happen-before whoever waits on it */
  atomic_fetch_sub_explicit(&rt->active_runs, 1, memory_order_release);
  if (run->loop_async) {
    uv_async_send(run->loop_async);
    /* release, and the last touch of run: the loop may free it now */
    atomic_store_explicit(&run->finished, 1, memory_order_release);
  }
  else
    uv_sem_post(&run->done);
}

static void run_fail(pto_run *run, int status, const pto_error *err) {
  int expect = 0;
  /* acq_rel: the first failure wins and its message is published with it */
  if (atomic_compare_exchange_strong_explicit(&run->status, &expect, status,
                                              memory_order_acq_rel,
                                              memory_order_acquire))
    run->err = *err;
}

/* Ends a run that can make no progress: tasks are left, yet none is ready
 * or running. Names a few of the tasks that wait. */
static void run_stall(pto_run *run, uint32_t left) {
  const pto_job *j = &run->job;
  char waiting[128] = "";
  size_t n = 0;
  for (uint32_t t = 0, shown = 0; t < j->n_tasks && shown < 4; t++) {
    unsigned p = atomic_load_explicit(&run->pending[t], memory_order_relaxed);
    if (!p || (j->skip && j->skip[t]))
      continue;
    n += (size_t)snprintf(waiting + n, sizeof waiting - n, "%s%u (%u)",
                          shown++ ? ", " : "", t, p);
    if (n >= sizeof waiting)
      break;
  }
  pto_error err;
  pto__error_set(&err, PTO_ESTATE,
                 "run: no task can make progress: %u of %u tasks left, none "
                 "ready or running (a cycle in the task graph?); waiting "
                 "tasks (unfinished producers): %s",
                 left, j->n_active, waiting);
  run_fail(run, PTO_ESTATE, &err);
  run_finish(run);
}

/* Publishes the tasks this worker finished since its last flush (all of
 * one run) and returns the live units they left. Called before it runs a
 * task of another run and before it goes idle, so a run is never left
 * waiting on a busy worker's count. The flush that finishes the last task
 * ends the run; one that leaves tasks but no live unit ends it too. */
static void flush_done(pto_worker *w) {
  uint32_t k = w->done_n;
  if (!k)
    return;
  pto_run *run = w->done_run;
  uint64_t sub = (uint64_t)k * PTO_RUN_TASK + w->done_live;
  w->done_n = w->done_live = 0;
  w->done_run = NULL;
  /* acq_rel: the last flush sees every task's effects, and releases this
   * worker's */
  uint64_t now =
      atomic_fetch_sub_explicit(&run->count, sub, memory_order_acq_rel) - sub;
  if (!PTO_RUN_LEFT(now))
    run_finish(run);
  else if (!PTO_RUN_LIVE(now))
    run_stall(run, PTO_RUN_LEFT(now));
}

/* Finishes task t of run: decrements its consumers; returns one newly ready
 * task the worker may run next (or no task). t's live unit goes to its
 * first newly ready successor, except for the first task of a batch: its
 * unit stays with the batch until the flush, so a run never looks idle
 * while a worker holds finished tasks it has not counted yet. More units
 * are reserved (pto_run.count) before any further successor is published;
 * what is left over is returned at the flush. */
static int complete(pto_worker *w, pto_run *run, uint32_t t, pto_ready *keep) {
  pto_runtime *rt = w->rt;
  const pto_job *j = &run->job;
  int kept = 0;
  /* counted locally: one shared decrement per batch, not per task */
  if (w->done_run != run)
    flush_done(w);
  uint32_t first = !w->done_n, units = !first;
  for (uint32_t k = j->succ_off[t]; k < j->succ_off[t + 1]; k++) {
    uint32_t v = j->succ[k];
    /* acq_rel: the producer's writes are visible to whoever runs v */
    if (atomic_fetch_sub_explicit(&run->pending[v], 1, memory_order_acq_rel) !=
        1)
      continue;
    if (j->skip && j->skip[v]) /* not dispatched: it has nothing to do */
      continue;
    if (!units) {
      /* at most the successors left to visit, 64 at a time; relaxed: v's
       * queue lock orders this before whatever its runner subtracts */
      uint32_t more = j->succ_off[t + 1] - k < 64 ? j->succ_off[t + 1] - k : 64;
      atomic_fetch_add_explicit(&run->count, more, memory_order_relaxed);
      units = more;
    }
    units--;
    pto_ready it = {run, v, j->prio ? j->prio[v] : 0};
    int c = j->core[v];
    if (!kept && w->serves[c]) {
      *keep = it;
      kept = 1;
    } else {
      rq_push(&rt->rq[c], rt->policy, it);
      wake_one(rt, c);
    }
  }
  w->done_run = run;
  w->done_n++;
  w->done_live += units + first;
  return kept;
}

static void execute(pto_worker *w, pto_ready it) {
  pto_run *run = it.run;
  if (w->done_run != run)
    flush_done(w);
  uint64_t t0 = 0;
  int traced = run->trace_start != NULL;
  if (traced)
    t0 = uv_hrtime();
  /* relaxed: a stale read only runs one more task before the skip */
  if (!atomic_load_explicit(&run->status, memory_order_relaxed) &&
      !atomic_load_explicit(&run->cancel, memory_order_relaxed)) {
    pto_error err;
    err.status = PTO_OK;
    err.msg[0] = '\0';
    int rc = run->job.exec(run, it.task, w, &err);
    if (rc < 0)
      run_fail(run, rc, &err);
  }
  if (traced) {
    run->trace_start[it.task] = t0 - run->start_ns;
    run->trace_end[it.task] = uv_hrtime() - run->start_ns;
    run->trace_worker[it.task] = (uint16_t)w->id;
  }
}

/* ---- workers -------------------------------------------------------------- */

static int find_work(pto_runtime *rt, pto_worker *w, pto_ready *it) {
  if (w->n_stash) { /* stashed in pop order: take from the front */
    *it = w->stash[w->stash_head++];
    w->n_stash--;
    return 1;
  }
  /* the worker's first type first: dedicated workers serve one type */
  for (int i = 0; i < 2; i++) {
    int c = (w->first_type + i) & 1;
    uint32_t got;
    if (w->serves[c] && (got = rq_pop(&rt->rq[c], rt->policy, rt->n_workers,
                                      w->stash, PTO_STASH))) {
      *it = w->stash[0];
      w->stash_head = 1;
      w->n_stash = got - 1;
      return 1;
    }
  }
  return 0;
}

/* Scratchpads at most this large are mapped and faulted in when a worker
 * starts; a machine declaring more (a made-up one) grows them lazily. */
#define PTO_PREFAULT_MAX ((uint64_t)256 << 20)

/* A worker's first steps, once pinned: its scratchpads, sized to the local
 * memories of the core types it serves, bound to its PU's NUMA node and
 * faulted in from its own thread, so the first tasks of the first run do
 * not fault them in one page at a time (6 of a matmul's first run's
 * 6.2 ms, against 1.1 ms for the next). */
static void worker_prepare(pto_worker *w) {
  pto_runtime *rt = w->rt;
  uint64_t size[PTO_MEM_LEVEL_COUNT] = {0}, total = 0;
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++) {
    pto_core_type c = pto_mem_level_core((pto_mem_level)l);
    if (c < PTO_CORE_MEMORY && w->serves[c])
      size[l] = rt->machine.mem[l];
    total += size[l];
  }
  if (!total || total > PTO_PREFAULT_MAX)
    return;
  if (pto__scratch_prepare(&w->scratch, size))
    return; /* out of memory now: the tasks will say so */
  if (rt->topo && w->pu && w->pu->nodeset)
    (void)hwloc_set_area_membind(rt->topo, w->scratch.region, total,
                                 w->pu->nodeset, HWLOC_MEMBIND_BIND,
                                 HWLOC_MEMBIND_BYNODESET |
                                     HWLOC_MEMBIND_MIGRATE);
}

static void worker_main(void *arg) {
  pto_worker *w = arg;
  pto_runtime *rt = w->rt;
  pto_ready it;
  uv_sem_wait(&rt->start);
  if (!atomic_load_explicit(&rt->stop, memory_order_acquire))
    worker_prepare(w);
  uv_sem_post(&rt->ready);
  for (;;) {
    int have = find_work(rt, w, &it);
    if (!have) {
      flush_done(w);
      /* spin, then yield, then sleep */
      uint64_t t0 = uv_hrtime();
      uint64_t spin = (uint64_t)rt->spin_us * 1000,
               yield = spin + (uint64_t)rt->yield_us * 1000;
      for (uint32_t n = 0;; n++) {
        if (atomic_load_explicit(&rt->stop, memory_order_acquire))
          return;
        if ((w->n_stash || !queues_empty(rt, w)) && find_work(rt, w, &it)) {
          have = 1;
          break;
        }
        uint64_t dt = (n & 63) ? 0 : uv_hrtime() - t0;
        if (dt < spin) {
          cpu_relax();
          continue;
        }
        if (dt < yield) {
          sched_yield();
          continue;
        }
        int g = w->group;
        atomic_fetch_add(&rt->sleepers[g], 1); /* seq_cst: see wake_one */
        if (!queues_empty(rt, w) ||
            atomic_load_explicit(&rt->stop, memory_order_acquire)) {
          /* work (or stop) arrived: take back the count unless a pusher
           * already did, in which case absorb its post */
          int s = atomic_load(&rt->sleepers[g]);
          int undone = 0;
          while (s > 0 && !undone)
            undone = atomic_compare_exchange_weak(&rt->sleepers[g], &s, s - 1);
          if (!undone)
            uv_sem_wait(&rt->wake[g]);
        } else {
          uv_sem_wait(&rt->wake[g]);
        }
        t0 = uv_hrtime();
        n = 0;
      }
    }
    /* run it and whatever it keeps ready for us */
    for (;;) {
      execute(w, it);
      pto_run *run = it.run;
      if (!complete(w, run, it.task, &it))
        break;
    }
  }
}

/* ---- pinning ------------------------------------------------------------- */

/* The PUs of the calling thread's CPU set in the order workers take them:
 * one of every core with a PU in the set, then a second of every core, and
 * so on, so no two workers share a core (its FMA units and L2) while one is
 * free; PUs in no core (hwloc found none) follow in logical order. Returns
 * how many, in *out (malloc'ed), or 0 when hwloc cannot tell. */
static unsigned pu_order(hwloc_topology_t topo, hwloc_obj_t **out) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc(), left = hwloc_bitmap_alloc(),
                 mine = hwloc_bitmap_alloc();
  hwloc_obj_t *pus = NULL;
  unsigned n = 0;
  int max = 0;
  if (set && left && mine && !pto__thread_cpuset(topo, set) &&
      !hwloc_bitmap_copy(left, set))
    max = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_PU);
  if (max > 0 && (pus = malloc((size_t)max * sizeof *pus))) {
    hwloc_obj_t core, pu;
    /* round r: the r-th PU in the set of each core, cores in logical order */
    for (int r = 0, more = 1; more; r++) {
      more = 0;
      core = NULL;
      while ((core = hwloc_get_next_obj_covering_cpuset_by_type(
                  topo, set, HWLOC_OBJ_CORE, core))) {
        hwloc_bitmap_and(mine, core->cpuset, set);
        pu = hwloc_get_obj_inside_cpuset_by_type(topo, mine, HWLOC_OBJ_PU,
                                                 (unsigned)r);
        if (pu && n < (unsigned)max) {
          pus[n++] = pu;
          hwloc_bitmap_andnot(left, left, pu->cpuset);
          more = 1;
        }
      }
    }
    pu = NULL;
    while (n < (unsigned)max && (pu = hwloc_get_next_obj_inside_cpuset_by_type(
                                     topo, left, HWLOC_OBJ_PU, pu)))
      pus[n++] = pu;
  }
  hwloc_bitmap_free(set);
  hwloc_bitmap_free(left);
  hwloc_bitmap_free(mine);
  *out = pus;
  return n;
}

/* Binds w's thread to pu from the creating thread, so whether it worked is
 * known when pto_runtime_new returns; a worker left unpinned still works. */
static void pin(pto_runtime *rt, pto_worker *w, hwloc_obj_t pu) {
  if (hwloc_set_thread_cpubind(rt->topo, w->thread, pu->cpuset, 0) == 0) {
    w->pinned_pu = (int)pu->os_index;
    w->pu = pu;
  }
}

/* ---- runtime -------------------------------------------------------------- */

/* The message of the calling thread's last failed pto_runtime_new, which
 * has no runtime to keep it in (pto_runtime_error(NULL) returns it). */
static _Thread_local char new_error[PTO_ERROR_MSG];

/* A failed pto_runtime_new's message: for pto_runtime_error(NULL) and
 * pto_last_error(). */
__attribute__((format(printf, 2, 3))) static pto_status
new_fail(pto_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(new_error, sizeof new_error, fmt, ap);
  va_end(ap);
  return pto__last_error(st, "%s", new_error);
}

pto_status pto_runtime_new(const pto_runtime_params *params,
                           pto_runtime **out) {
  new_error[0] = '\0';
  if (!out)
    return new_fail(PTO_EINVAL, "runtime: rt is NULL (pass the address of a "
                                "pto_runtime * to receive the runtime)");
  *out = NULL;
  char isa_msg[256];
  if (pto__isa_check(isa_msg, sizeof isa_msg))
    return new_fail(PTO_EISA, "runtime: %s", isa_msg);
  pto_runtime_params p = params ? *params : pto_runtime_params_default();
  if ((unsigned)p.policy >= PTO_POLICY_COUNT)
    return new_fail(PTO_EINVAL,
                    "runtime: unknown policy %d (expected 0..%d: fifo, "
                    "critical-path, locality)",
                    (int)p.policy, PTO_POLICY_COUNT - 1);
  pto_runtime *rt = calloc(1, sizeof *rt);
  if (!rt)
    return new_fail(PTO_ENOMEM, "runtime: out of memory");
  char env_msg[PTO_ERROR_MSG - 16];
  pto_status st = pto__trace_env(&rt->trace_pattern, env_msg, sizeof env_msg);
  if (st) {
    pto__error_set(&rt->err, st, "runtime: %s", env_msg);
    goto fail_machine;
  }
  if (p.machine) {
    rt->machine = *p.machine;
  } else if ((st = pto_machine_host(&rt->machine))) {
    pto__error_set(&rt->err, st, "runtime: %s", pto_last_error());
    goto fail_machine;
  }
  rt->policy = p.policy;
  rt->spin_us = p.spin_us;
  rt->yield_us = p.yield_us;
  rt->trace = p.trace || rt->trace_pattern;
  if (hwloc_topology_init(&rt->topo) == 0 && hwloc_topology_load(rt->topo)) {
    hwloc_topology_destroy(rt->topo);
    rt->topo = NULL;
  }
  int n_pu = rt->topo ? hwloc_get_nbobjs_by_type(rt->topo, HWLOC_OBJ_PU) : 0;
  const pto_machine *m = &rt->machine;
  uint32_t n = m->shared ? m->workers[PTO_CORE_VECTOR]
                         : m->workers[PTO_CORE_CUBE] + m->workers[PTO_CORE_VECTOR];
  st = PTO_ECONFIG;
  if (n == 0 || (m->shared && m->workers[0] != m->workers[1])) {
    pto__error_set(&rt->err, st, "runtime: machine '%s' has no workers",
                   m->name);
    goto fail_workers;
  }
  if (n_pu > 0 && n > (uint32_t)n_pu * 4) {
    pto__error_set(&rt->err, st,
                   "runtime: machine '%s' wants %u workers; this host has %d "
                   "processing units (plan for it with pto_compile instead)",
                   m->name, n, n_pu);
    goto fail_workers;
  }
  rt->n_workers = n;
  rt->workers = calloc(n, sizeof *rt->workers);
  st = pto__error_set(&rt->err, PTO_ENOMEM,
                      "runtime: out of memory for %u workers", n);
  if (!rt->workers || uv_sem_init(&rt->wake[0], 0))
    goto fail_workers;
  if (uv_sem_init(&rt->wake[1], 0)) {
    uv_sem_destroy(&rt->wake[0]);
    goto fail_workers;
  }
  if (uv_sem_init(&rt->start, 0)) {
    uv_sem_destroy(&rt->wake[0]);
    uv_sem_destroy(&rt->wake[1]);
    goto fail_workers;
  }
  if (uv_sem_init(&rt->ready, 0)) {
    uv_sem_destroy(&rt->start);
    uv_sem_destroy(&rt->wake[0]);
    uv_sem_destroy(&rt->wake[1]);
    goto fail_workers;
  }
  pto__error_clear(&rt->err);
  for (uint32_t i = 0; i < n; i++) {
    pto_worker *w = &rt->workers[i];
    w->rt = rt;
    w->id = i;
    w->pinned_pu = -1;
    if (m->shared) {
      w->serves[0] = w->serves[1] = 1;
      w->first_type = (int)(i & 1);
      w->group = 0;
    } else {
      int c = i < m->workers[PTO_CORE_CUBE] ? PTO_CORE_CUBE : PTO_CORE_VECTOR;
      w->serves[c] = 1;
      w->first_type = c;
      w->group = c;
    }
  }
  /* every worker's PU, decided up front: worker i takes pus[i % n_pus] */
  hwloc_obj_t *pus = NULL;
  unsigned n_pus = p.pin && rt->topo ? pu_order(rt->topo, &pus) : 0;
  for (uint32_t i = 0; i < n; i++) {
    if (uv_thread_create(&rt->workers[i].thread, worker_main,
                         &rt->workers[i])) {
      st = PTO_ENOMEM;
      pto__error_set(&rt->err, st, "runtime: cannot start worker %u", i);
      atomic_store(&rt->stop, 1);
      for (uint32_t k = 0; k < n; k++) {
        uv_sem_post(&rt->start);
        uv_sem_post(&rt->wake[0]);
        uv_sem_post(&rt->wake[1]);
      }
      for (uint32_t k = 0; k < i; k++)
        uv_thread_join(&rt->workers[k].thread);
      free(pus);
      goto fail_threads;
    }
    if (n_pus)
      pin(rt, &rt->workers[i], pus[i % n_pus]);
  }
  free(pus);
  /* pinned: let the workers fault their scratchpads in, each on its own
   * core, and wait until they have */
  for (uint32_t i = 0; i < n; i++)
    uv_sem_post(&rt->start);
  for (uint32_t i = 0; i < n; i++)
    uv_sem_wait(&rt->ready);
  *out = rt;
  return PTO_OK;

fail_threads:
  uv_sem_destroy(&rt->start);
  uv_sem_destroy(&rt->ready);
  uv_sem_destroy(&rt->wake[0]);
  uv_sem_destroy(&rt->wake[1]);
fail_workers:
  free(rt->workers);
  if (rt->topo)
    hwloc_topology_destroy(rt->topo);
fail_machine:
  new_fail(st, "%s", rt->err.msg);
  free(rt->trace_pattern);
  free(rt);
  return st;
}

void pto_runtime_free(pto_runtime *rt) {
  if (!rt)
    return;
  /* acquire: pairs with run_finish's release */
  while (atomic_load_explicit(&rt->active_runs, memory_order_acquire))
    uv_sleep(1);
  atomic_store_explicit(&rt->stop, 1, memory_order_release);
  for (uint32_t i = 0; i < rt->n_workers; i++) {
    uv_sem_post(&rt->wake[0]);
    uv_sem_post(&rt->wake[1]);
  }
  for (uint32_t i = 0; i < rt->n_workers; i++)
    uv_thread_join(&rt->workers[i].thread);
  for (uint32_t i = 0; i < rt->n_workers; i++)
    pto__scratch_free(&rt->workers[i].scratch);
  uv_sem_destroy(&rt->start);
  uv_sem_destroy(&rt->ready);
  uv_sem_destroy(&rt->wake[0]);
  uv_sem_destroy(&rt->wake[1]);
  for (int c = 0; c < 2; c++)
    free(rt->rq[c].items);
  free(rt->workers);
  if (rt->topo)
    hwloc_topology_destroy(rt->topo);
  free(rt->trace_pattern);
  free(rt);
}

const char *pto_runtime_error(const pto_runtime *rt) {
  if (rt)
    return rt->err.msg;
  return new_error[0] ? new_error : "runtime is NULL";
}

uint32_t pto_runtime_num_workers(const pto_runtime *rt) {
  return rt ? rt->n_workers : 0;
}

int pto_runtime_worker_pu(const pto_runtime *rt, uint32_t worker) {
  return rt && worker < rt->n_workers ? rt->workers[worker].pinned_pu : -1;
}

/* ---- starting runs ---------------------------------------------------------- */

pto_status pto__run_start(pto_runtime *rt, pto_run *run) {
  const pto_job *j = &run->job;
  run->rt = rt;
  atomic_store_explicit(&run->status, 0, memory_order_relaxed);
  atomic_store_explicit(&run->cancel, 0, memory_order_relaxed);
  /* a type nobody serves would never run: refuse up front */
  for (uint32_t t = 0; t < j->n_tasks; t++) {
    int c = j->core[t];
    int served = 0;
    for (uint32_t i = 0; i < rt->n_workers && !served; i++)
      served = rt->workers[i].serves[c];
    if (!served)
      return pto__error_set(&rt->err, PTO_ECONFIG,
                            "runtime: task %u needs a %s worker; machine '%s' "
                            "has none",
                            t, pto_core_type_name((pto_core_type)c),
                            rt->machine.name);
  }
  if (rq_reserve(&rt->rq[0], j->reserve[0]))
    return pto__error_set(&rt->err, PTO_ENOMEM,
                          "runtime: out of memory for the ready queues");
  if (rq_reserve(&rt->rq[1], j->reserve[1])) {
    rq_release(&rt->rq[0], j->reserve[0]);
    return pto__error_set(&rt->err, PTO_ENOMEM,
                          "runtime: out of memory for the ready queues");
  }
  /* one live unit per root (pto_run.count) */
  uint32_t roots = 0;
  for (uint32_t t = 0; t < j->n_tasks; t++)
    roots += !j->n_pred[t] && !(j->skip && j->skip[t]);
  /* relaxed: published to workers by the queue lock of the first push */
  atomic_store_explicit(&run->count, j->n_active * PTO_RUN_TASK + roots,
                        memory_order_relaxed);
  atomic_fetch_add_explicit(&rt->active_runs, 1, memory_order_relaxed);
  run->start_ns = uv_hrtime();
  for (uint32_t t = 0; t < j->n_tasks; t++)
    atomic_store_explicit(&run->pending[t], j->n_pred[t], memory_order_relaxed);
  if (j->n_active == 0) {
    run_finish(run);
    return PTO_OK;
  }
  if (!roots) { /* every task waits on another: nothing can ever start */
    run_stall(run, j->n_active);
    return PTO_OK;
  }
  for (int c = 0; c < 2; c++)
    if (j->reserve[c])
      rq_push_roots(&rt->rq[c], rt->policy, run, c);
  for (uint32_t i = 0; i < rt->n_workers; i++)
    for (int c = 0; c < 2; c++)
      if (j->reserve[c])
        wake_one(rt, c);
  return PTO_OK;
}
