/* The simulator (pto/sim.h): an executable's task graph replayed on a
 * described machine in simulated time, with the runtime's policies
 * (scheduler/runtime.c): per-core-type ready queues in the policy's order,
 * roots pushed in task order, a finishing worker keeping its first newly
 * ready successor of a type it serves and pushing the rest, idle workers
 * popping batches into a stash, a shared worker trying its first type
 * first. A task's box lasts the runtime's per-task costs plus its
 * instructions' costs (core/cost.h) over its instances; its global bytes
 * come from the level a cache model says they are in, and the tasks
 * streaming from the last-level cache or DRAM at one time share its
 * bandwidth (a fluid model: between two events every running task
 * advances at a constant rate, the bandwidth each level gives a core the
 * largest that the running tasks' demands fit). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cost.h"
#include "core/exe.h"
#include "scheduler/runtime.h"
#include "scheduler/trace.h"
#include "scheduler/trace_exe.h"
#include "tileops/tileops.h"

/* ---- the static part: what each program's instructions cost ---------------- */

typedef struct sim_insn {
  double fit;  /* ns of a call, its global data in the core's cache */
  double t0;   /* the call's fixed ns (the memory side of its max) */
  double mem_x; /* its memory time's multiplier (pto_cost_terms) */
  double mrow;  /* its cost per contiguous run, or < 0 (pto_cost_terms) */
  double dram_x; /* its DRAM multiplier, or 0 (pto_cost_terms) */
  double drow;   /* ns per row it walks at its DRAM share (drow_ns) */
  double walk;   /* the rows it walks per call (the row term's feature) */
  double gb[2];        /* global bytes per call through slot and slot2 */
  uint8_t part[2];     /* pto_gpart */
  uint8_t write[2];    /* writes the view */
  uint8_t stream;      /* PTO_TF_STREAM: stores around the caches */
  uint32_t rows[2], cols[2]; /* the window it touches, per view */
  double runs[2]; /* its contiguous runs per call (rows of a strided
                     window, rows gathered; 1 for a dense one) */
} sim_insn;

typedef struct sim_prog {
  sim_insn *in; /* n_insts */
  uint64_t local; /* local bytes it plans */
} sim_prog;

/* ---- the cache model ----------------------------------------------------------- */

#define CHUNK_SHIFT 10 /* 1 KiB */

typedef struct chunk {
  uint64_t l2, llc; /* the toucher's and the global byte clocks then */
  uint16_t worker;  /* last toucher + 1; 0: none this run */
  uint8_t dram;     /* written around the caches: in DRAM only */
} chunk;

enum { LV_L2, LV_LLC, LV_DRAM, LV_COUNT };

typedef struct cache {
  /* per region: each input and output storage its own, the workspace one
   * (index n_storages) that every workspace storage lies in at its
   * offset, so storages that share its bytes share their chunks */
  chunk **c;
  uint64_t *n;    /* chunks per region */
  uint32_t *region; /* per storage */
  uint64_t *base;   /* per storage: its byte offset in its region */
  uint64_t *clk;  /* per worker: bytes it touched */
  uint64_t gclk;  /* bytes every worker touched */
  double l2_cap, llc_cap;
  int warm; /* untouched data starts in the last-level cache */
} cache;

/* The level of chunk c for worker w, without touching it. */
static int chunk_level(const cache *k, const chunk *c, uint32_t w) {
  if (c->dram)
    return LV_DRAM;
  if (c->worker == w + 1 && (double)(k->clk[w] - c->l2) <= k->l2_cap)
    return LV_L2;
  if (c->worker && (double)(k->gclk - c->llc) <= k->llc_cap)
    return LV_LLC;
  if (!c->worker && k->warm)
    return LV_LLC;
  return LV_DRAM;
}

/* Worker w touches bytes [a, b) of storage s (reads, or writes: around the
 * caches with stream); adds the bytes per level to lv, scaled by frac
 * (bytes moved per byte of span). */
static void touch(cache *k, uint32_t s, uint64_t a, uint64_t b, uint32_t w,
                  int write, int stream, double frac, double lv[LV_COUNT]) {
  if (b <= a || !k->n[s])
    return;
  uint64_t c0 = a >> CHUNK_SHIFT, c1 = (b - 1) >> CHUNK_SHIFT;
  if (c1 >= k->n[s])
    c1 = k->n[s] - 1;
  if (c0 > c1)
    return;
  for (uint64_t i = c0; i <= c1; i++) {
    chunk *c = &k->c[s][i];
    const uint64_t lo = i << CHUNK_SHIFT, hi = lo + ((uint64_t)1 << CHUNK_SHIFT);
    const double part =
        (double)((b < hi ? b : hi) - (a > lo ? a : lo)) * frac;
    const int l = write && stream ? LV_DRAM : chunk_level(k, c, w);
    lv[l] += part;
    if (write && stream) {
      c->dram = 1;
      c->worker = (uint16_t)(w + 1);
    } else {
      c->dram = 0;
      c->worker = (uint16_t)(w + 1);
      c->l2 = k->clk[w];
      c->llc = k->gclk;
    }
  }
}

/* The level shares of a table read by index over [a, b) of storage s,
 * sampled (the rows an index picks are known only at run time). */
static void sample(const cache *k, uint32_t s, uint64_t a, uint64_t b,
                   uint32_t w, double bytes, double lv[LV_COUNT]) {
  if (!k->n[s] || b <= a) {
    lv[k->warm ? LV_LLC : LV_DRAM] += bytes;
    return;
  }
  uint64_t c0 = a >> CHUNK_SHIFT, c1 = (b - 1) >> CHUNK_SHIFT;
  if (c1 >= k->n[s])
    c1 = k->n[s] - 1;
  const uint64_t n = c1 - c0 + 1, step = n > 64 ? n / 64 : 1;
  double cnt[LV_COUNT] = {0, 0, 0}, tot = 0;
  for (uint64_t i = c0; i <= c1; i += step) {
    cnt[chunk_level(k, &k->c[s][i], w)]++;
    tot++;
  }
  for (int l = 0; l < LV_COUNT; l++)
    lv[l] += bytes * cnt[l] / tot;
}

/* ---- the dynamic part ------------------------------------------------------------ */

/* An instruction's calls in a task: how many, the ns of one with its
 * data in the core's cache, its fixed ns, and per call the bytes and the
 * contiguous runs it reads from the LLC and DRAM (a stream store's bytes
 * scaled to DRAM reads at the store bandwidth) */
typedef struct piece {
  double n, fit, t0, b[2], r[2], mem_x, mrow; /* mrow < 0: the levels' */
  /* per call: DRAM bytes but stream stores', and those stores and the
   * plain stores' write-backs as the DRAM reads that take as long at the
   * store rate */
  double bd, bnt;
  double dram_x; /* 0: mem_x */
  double dr;     /* per call: its rows' ns at its DRAM share (drow_ns) */
} piece;

typedef struct running {
  uint32_t task;
  int phase;    /* 0: the dispatch gap before its box; 1: its box */
  double delay; /* phase 0: ns left */
  double rem;   /* phase 1: fraction of its box left */
  double c0;    /* the box's fixed ns */
  piece *pc;
  uint32_t n_pc;
  double bytes[2]; /* LLC and DRAM bytes of the box */
  double box;      /* phase 1: its ns at the bandwidth it gets now */
} running;

typedef struct qitem {
  uint32_t task;
  uint64_t prio;
} qitem;

typedef struct queue {
  qitem *it;
  uint32_t head, n, cap; /* cap a power of two (the ring) */
} queue;

typedef struct sworker {
  int serves[2], first;
  int busy; /* has a running task */
  running r;
  qitem stash[PTO_STASH];
  uint32_t stash_head, n_stash;
  int keep; /* a kept task to start next */
  uint32_t kept;
  uint32_t last; /* the last task it ran, or UINT32_MAX */
} sworker;

typedef struct sim {
  const pto_executable *e;
  const pto_profile *p;
  pto_policy policy;
  uint32_t n_workers;
  sworker *w;
  sim_prog *prog;
  uint8_t *core;
  uint32_t *pending;
  queue q[2];
  cache k;
  double now;
  double *start, *end;
  uint16_t *on;
  uint64_t *inst_ns; /* per task, two per instruction (trace) */
  uint32_t *inst_off;
  double lv_bytes[LV_COUNT];
  double footprint; /* bytes of every input, output and the workspace */
  pto_error *err;
} sim;

/* The runtime's heap (scheduler/runtime.c), so that equal priorities come
 * out in its order. */
static void heap_up(qitem *h, uint32_t i) {
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (h[p].prio >= h[i].prio)
      break;
    qitem t = h[p];
    h[p] = h[i];
    h[i] = t;
    i = p;
  }
}

static void heap_down(qitem *h, uint32_t n, uint32_t i) {
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && h[l].prio > h[m].prio)
      m = l;
    if (r < n && h[r].prio > h[m].prio)
      m = r;
    if (m == i)
      return;
    qitem t = h[m];
    h[m] = h[i];
    h[i] = t;
    i = m;
  }
}

static void q_push(queue *q, pto_policy pol, qitem it) {
  if (pol == PTO_POLICY_FIFO) {
    q->it[(q->head + q->n) & (q->cap - 1)] = it;
  } else {
    q->it[q->n] = it;
    if (pol == PTO_POLICY_CRITICAL_PATH)
      heap_up(q->it, q->n);
  }
  q->n++;
}

static qitem q_take(queue *q, pto_policy pol) {
  qitem it;
  if (pol == PTO_POLICY_FIFO) {
    it = q->it[q->head];
    q->head = (q->head + 1) & (q->cap - 1);
  } else if (pol == PTO_POLICY_LOCALITY) {
    it = q->it[q->n - 1];
  } else {
    it = q->it[0];
    q->it[0] = q->it[q->n - 1];
    heap_down(q->it, q->n - 1, 0);
  }
  q->n--;
  return it;
}

/* As the runtime's rq_pop: a batch while the queue holds many per worker. */
static uint32_t q_pop(sim *s, queue *q, qitem *out) {
  if (!q->n)
    return 0;
  uint32_t k = q->n / (8 * s->n_workers);
  k = k < 1 ? 1 : k > PTO_STASH ? PTO_STASH : k;
  k = k > q->n ? q->n : k;
  for (uint32_t i = 0; i < k; i++)
    out[i] = q_take(q, s->policy);
  return k;
}

static int find_work(sim *s, sworker *w, uint32_t *task) {
  if (w->n_stash) {
    *task = w->stash[w->stash_head++].task;
    w->n_stash--;
    return 1;
  }
  for (int i = 0; i < 2; i++) {
    int c = (w->first + i) & 1;
    uint32_t got;
    if (w->serves[c] && (got = q_pop(s, &s->q[c], w->stash))) {
      *task = w->stash[0].task;
      w->stash_head = 1;
      w->n_stash = got - 1;
      return 1;
    }
  }
  return 0;
}

/* The window rows x cols at element offset off of slot l (its strides) as
 * byte spans, one per row (one for the whole when its rows are dense),
 * touched or sampled. */
static void window(sim *s, uint32_t w, const pto_cprog *pr, int32_t l,
                   const pto_targ *args, uint32_t rows, uint32_t cols,
                   double bytes, int write, int stream, int by_index,
                   double lv[LV_COUNT]) {
  const pto_pslot *sl = &pr->slots[l];
  const pto_targ *ga = &args[l];
  const uint64_t es = pto_dtype_size(sl->dtype);
  if (!rows || !cols || bytes <= 0 || ga->storage >= s->e->n_storages)
    return;
  const int64_t rs = sl->rs, cs = sl->cs;
  const int64_t first = ga->offset;
  const int64_t row_span = ((int64_t)cols - 1) * cs + 1;
  int64_t lo = first, hi = first + ((int64_t)rows - 1) * rs + row_span;
  if (rs < 0 || cs < 0) { /* a reversed view: its extent either way */
    lo = first + (rs < 0 ? ((int64_t)rows - 1) * rs : 0) +
         (cs < 0 ? ((int64_t)cols - 1) * cs : 0);
    hi = lo + llabs(rs) * ((int64_t)rows - 1) + llabs(cs) * (cols - 1) + 1;
  }
  if (lo < 0)
    lo = 0;
  const uint32_t rg = s->k.region[ga->storage];
  const uint64_t base = s->k.base[ga->storage];
  const uint64_t a = base + (uint64_t)lo * es, b = base + (uint64_t)hi * es;
  if (by_index) {
    sample(&s->k, rg, a, b, w, bytes, lv);
    return;
  }
  if (rows == 1 || rs == row_span || rs < 0 || cs < 0 || cs > 1 ||
      (uint64_t)rs * es <= ((uint64_t)1 << CHUNK_SHIFT)) {
    touch(&s->k, rg, a, b, w, write, stream, bytes / (double)(b - a), lv);
  } else {
    const double per = bytes / rows / ((double)row_span * es);
    for (uint32_t r = 0; r < rows; r++) {
      const uint64_t ra = base + (uint64_t)(first + (int64_t)r * rs) * es;
      touch(&s->k, rg, ra, ra + (uint64_t)row_span * es, w, write, stream,
            per, lv);
    }
  }
  s->k.clk[w] += (uint64_t)bytes;
  s->k.gclk += (uint64_t)bytes;
}

/* The pieces of task t on worker w: per instruction, its calls over the
 * task's instances and the levels its bytes come from (the cache model
 * touched as it goes). */
static void task_pieces(sim *s, uint32_t t, uint32_t w, running *r) {
  const pto_executable *e = s->e;
  const pto_task *task = &e->tasks[t];
  const pto_cprog *pr = &e->progs[task->prog];
  const sim_prog *sp = &s->prog[task->prog];
  const pto_sim_runtime *rt = &s->p->rt;
  r->n_pc = pr->n_insts;
  r->c0 = rt->task_ns + rt->instance_ns * task->n_inst +
          rt->call_ns * (double)task->n_inst * pr->n_insts;
  r->bytes[0] = r->bytes[1] = 0;
  s->k.l2_cap = s->p->l2.bytes - (double)sp->local;
  if (s->k.l2_cap < s->p->l2.bytes / 4)
    s->k.l2_cap = s->p->l2.bytes / 4;
  for (uint32_t i = 0; i < pr->n_insts; i++) {
    const sim_insn *si = &sp->in[i];
    piece *pc = &r->pc[i];
    double lv[LV_COUNT] = {0, 0, 0};
    double runs[LV_COUNT] = {0, 0, 0}, nt = 0, wb = 0;
    for (uint32_t in = 0; in < task->n_inst; in++) {
      const pto_targ *args = e->args + task->args + in * pr->n_slots;
      for (int v = 0; v < 2; v++) {
        const int32_t l = pto__pinst_slot(&pr->insts[i], v);
        if (l < 0 || si->gb[v] <= 0)
          continue;
        double got[LV_COUNT] = {0, 0, 0};
        const int stream = si->stream && si->write[v];
        window(s, w, pr, l, args, si->rows[v], si->cols[v], si->gb[v],
               si->write[v], stream, si->part[v] == PTO_GP_ROWS, got);
        const double sum = got[0] + got[1] + got[2];
        for (int k = 0; k < LV_COUNT; k++) {
          lv[k] += got[k];
          if (sum > 0)
            runs[k] += si->runs[v] * got[k] / sum;
        }
        if (stream)
          nt += got[LV_DRAM];
        else if (si->write[v])
          wb += got[LV_DRAM];
      }
    }
    const double n = task->n_inst;
    const pto_mem_tier *dram = &s->p->dram;
    /* stream stores as the DRAM reads that take as long; a plain store to
     * lines in no cache reads them for ownership (its DRAM bytes, as the
     * calibration timed them one call at a time) and, as the data that
     * pushed them out will push them out again, writes them back at the
     * store rate: a cost its calibration's isolated calls never saw (a
     * 164 MB workspace written at 8.6 GB/s where its calls alone made
     * 22) */
    const double wr = dram->core_bw / dram->store_bw;
    const double dram_eq = lv[LV_DRAM] + nt * (wr - 1) + wb * wr;
    pc->n = n;
    pc->fit = si->fit;
    pc->t0 = si->t0;
    pc->mem_x = si->mem_x;
    pc->mrow = si->mrow;
    pc->dram_x = si->dram_x;
    const double all = lv[LV_L2] + lv[LV_LLC] + lv[LV_DRAM];
    pc->dr = all > 0 ? si->drow * si->walk * lv[LV_DRAM] / all : 0;
    pc->bd = (lv[LV_DRAM] - nt) / n;
    pc->bnt = (nt + wb) * wr / n;
    pc->b[0] = lv[LV_LLC] / n;
    pc->b[1] = dram_eq / n;
    pc->r[0] = runs[LV_LLC] / n;
    pc->r[1] = runs[LV_DRAM] / n;
    r->bytes[0] += lv[LV_LLC];
    r->bytes[1] += lv[LV_DRAM] + wb; /* what the level moves */
    for (int l = 0; l < LV_COUNT; l++)
      s->lv_bytes[l] += lv[l];
  }
}

/* A call's ns at per-core bandwidths bw (LLC, DRAM) and row costs rn: its
 * work or its memory, the longer. */
static inline double call_ns(const piece *p, const double bw[2],
                             const double rn[2]) {
  const double rows = p->mrow >= 0 ? (p->r[0] + p->r[1]) * p->mrow
                                    : p->r[0] * rn[0] + p->r[1] * rn[1];
  const double dram =
      ((p->dram_x > 0 ? p->dram_x : p->mem_x) * p->bd + p->bnt) / bw[1];
  const double m = p->t0 + rows + p->dr + p->mem_x * p->b[0] / bw[0] + dram;
  return p->fit > m ? p->fit : m;
}

/* The box of r at per-core bandwidths bw (LLC, DRAM), ns. */
static double box_ns(const running *r, const double bw[2], const double rn[2]) {
  double t = r->c0;
  for (uint32_t i = 0; i < r->n_pc; i++)
    t += r->pc[i].n * call_ns(&r->pc[i], bw, rn);
  return t;
}

/* The per-core bandwidths of the two shared levels while the running
 * boxes stream at once: the core's own where their demands fit the
 * level's total, else the largest that makes them fit (bisection, each
 * level in turn with the other's fixed). */
static void shares(sim *s, double bw[2]) {
  const pto_mem_tier *tier[2] = {&s->p->llc, &s->p->dram};
  const double rn[2] = {s->p->llc.row_ns, s->p->dram.row_ns};
  bw[0] = tier[0]->core_bw;
  bw[1] = tier[1]->core_bw;
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->n_workers; i++)
    n += s->w[i].busy && s->w[i].r.phase == 1 &&
         (s->w[i].r.bytes[0] > 0 || s->w[i].r.bytes[1] > 0);
  if (n < 2 && tier[0]->total_bw >= tier[0]->core_bw &&
      tier[1]->total_bw >= tier[1]->core_bw)
    return;
  for (int round = 0; round < 3; round++)
    for (int l = 0; l < 2; l++) {
      double lo = tier[l]->total_bw / (n ? n : 1), hi = tier[l]->core_bw;
      if (lo > hi)
        lo = hi;
      for (int it = 0; it < 80; it++) {
        const double mid = it ? 0.5 * (lo + hi) : hi;
        bw[l] = mid;
        double demand = 0;
        for (uint32_t i = 0; i < s->n_workers; i++) {
          const running *r = &s->w[i].r;
          if (s->w[i].busy && r->phase == 1 && r->bytes[l] > 0)
            demand += r->bytes[l] / box_ns(r, bw, rn);
        }
        if (!it) {
          if (demand <= tier[l]->total_bw)
            break; /* the core's own bandwidth fits */
          continue;
        }
        if (demand > tier[l]->total_bw)
          hi = mid;
        else
          lo = mid;
        if (hi - lo < 1e-12 * hi) {
          bw[l] = lo;
          break;
        }
        bw[l] = lo;
      }
    }
}

static void start_task(sim *s, uint32_t wi, uint32_t t, double delay) {
  sworker *w = &s->w[wi];
  w->busy = 1;
  w->r.task = t;
  w->r.phase = 0;
  w->r.delay = delay;
  w->r.rem = 1;
}

/* Task t of worker wi ended at s->now: its consumers' counts drop; the
 * first newly ready one of a type it serves is kept, the others queued
 * (as scheduler/runtime.c's complete). */
static void finish_task(sim *s, uint32_t wi) {
  sworker *w = &s->w[wi];
  const uint32_t t = w->r.task;
  const pto_task *task = &s->e->tasks[t];
  s->end[t] = s->now;
  w->busy = 0;
  w->last = t;
  for (uint32_t k = 0; k < task->n_succ; k++) {
    const uint32_t v = s->e->succ[task->succ + k];
    if (--s->pending[v])
      continue;
    const int c = s->core[v];
    qitem it = {v, s->e->tasks[v].path};
    if (!w->keep && w->serves[c]) {
      w->keep = 1;
      w->kept = v;
    } else {
      q_push(&s->q[c], s->policy, it);
    }
  }
}

static pto_status prepare(sim *s) {
  const pto_executable *e = s->e;
  const pto_profile *p = s->p;
  uint32_t mr, nr; /* the panels the executable was planned with */
  pto__mm_panel(&mr, &nr);
  if (e->machine.panel[0] && e->machine.panel[1]) {
    mr = e->machine.panel[0];
    nr = e->machine.panel[1];
  }
  s->prog = calloc(e->n_progs + 1, sizeof *s->prog);
  if (!s->prog)
    return pto__error_set(s->err, PTO_ENOMEM, "simulate: out of memory");
  for (uint32_t q = 0; q < e->n_progs; q++) {
    const pto_cprog *pr = &e->progs[q];
    sim_prog *sp = &s->prog[q];
    for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
      sp->local += pr->mem[l];
    sp->in = calloc(pr->n_insts + 1, sizeof *sp->in);
    if (!sp->in)
      return pto__error_set(s->err, PTO_ENOMEM, "simulate: out of memory");
    const pto_core_type core =
        pr->core == PTO_CORE_CUBE ? PTO_CORE_CUBE : PTO_CORE_VECTOR;
    for (uint32_t i = 0; i < pr->n_insts; i++) {
      const pto_pinst *pi = &pr->insts[i];
      pto_insn_shape sh;
      pto__cost_shape(pr, pi, &sh);
      sh.mr = mr; /* the panels its matmuls pad rows to */
      pto_cost_feat f;
      pto__cost_features(&sh, p->l1, p->l2.bytes, &f);
      pto_cost_terms buf;
      const pto_cost_terms *c = pto__profile_cost(
          p, core, pi->op, pto__cost_pack(&sh), pto__cost_dtype(&sh), &buf);
      if (!c)
        return pto__error_set(
            s->err, PTO_ECONFIG,
            "simulate: profile '%s' has no cost for instruction %s (program "
            "%s, %s core): give costs.any.insns.%s",
            p->name, pto__insn_name(pi->op), pr->name,
            pto_core_type_name(core), pto__insn_name(pi->op));
      sim_insn *si = &sp->in[i];
      const uint32_t mask = pto__class_cost(pto__insn_info(pi->op)->cls);
      for (int k = 0; k < PTO_COST_TERMS; k++)
        if (mask & PTO_COST_BIT(k))
          si->fit += c->ns[k] * f.x[k];
      si->t0 = c->ns[PTO_COST_CALL];
      si->mem_x = c->mem_x > 0 ? c->mem_x : 1;
      si->mrow = c->mrow_ns;
      si->dram_x = c->dram_x;
      si->drow = c->drow_ns;
      si->walk = f.x[PTO_COST_ROW];
      const pto_insn_facts *fa = pto__insn_facts(pi->op);
      for (int v = 0; v < 2; v++) {
        const int32_t l = pto__pinst_slot(pi, v);
        if (l < 0)
          continue;
        const uint8_t acc = v ? fa->g2 : fa->g, part = v ? fa->g2part : fa->gpart;
        si->gb[v] = f.gbytes[v];
        si->part[v] = part;
        si->write[v] = acc == PTO_GA_WRITE;
        const pto_pslot *sl = &pr->slots[l];
        uint32_t rows = 0, cols = 0;
        if (part == PTO_GP_DST0 && sh.n_dst) {
          rows = sh.dst[0][0];
          cols = sh.dst[0][1];
        } else if (part == PTO_GP_SRC0 && sh.n_src) {
          rows = sh.src[0][0];
          cols = sh.src[0][1];
        } else {
          rows = (uint32_t)sl->rows;
          cols = (uint32_t)sl->cols;
        }
        si->rows[v] = rows;
        si->cols[v] = cols;
        /* its contiguous runs: the rows an index picks; the rows of a
         * strided window; one for a dense one */
        const double es = (double)pto_dtype_size(sl->dtype);
        if (part == PTO_GP_ROWS) {
          const double gc = (double)pto__insn_gcols_of(&sh);
          si->runs[v] = gc > 0 ? f.gbytes[v] / (gc * es) : rows;
        } else {
          const int dense = rows <= 1 || (sl->cs == 1 && sl->rs == (int64_t)cols);
          si->runs[v] = dense ? 1 : rows;
        }
      }
      si->stream = (pi->flags & PTO_TF_STREAM) != 0;
    }
  }
  /* the cache: chunks of every input and output, and of the workspace */
  cache *k = &s->k;
  const uint32_t ns = e->n_storages;
  k->c = calloc(ns + 1, sizeof *k->c);
  k->n = calloc(ns + 1, sizeof *k->n);
  k->region = calloc(ns + 1, sizeof *k->region);
  k->base = calloc(ns + 1, sizeof *k->base);
  k->clk = calloc(s->n_workers, sizeof *k->clk);
  if (!k->c || !k->n || !k->region || !k->base || !k->clk)
    return pto__error_set(s->err, PTO_ENOMEM, "simulate: out of memory");
  for (uint32_t i = 0; i <= ns; i++) {
    uint64_t bytes = e->workspace_bytes;
    if (i < ns) {
      const pto_storage *st = &e->storages[i];
      k->region[i] = i;
      if (st->kind == PTO_STORAGE_WORKSPACE) {
        k->region[i] = ns;
        k->base[i] = st->offset;
        continue;
      }
      bytes = st->kind == PTO_STORAGE_NONE ? 0 : st->bytes;
    }
    if (!bytes)
      continue;
    k->n[i] = (bytes + ((uint64_t)1 << CHUNK_SHIFT) - 1) >> CHUNK_SHIFT;
    k->c[i] = calloc(k->n[i], sizeof **k->c);
    if (!k->c[i])
      return pto__error_set(s->err, PTO_ENOMEM,
                            "simulate: out of memory for the cache model");
    s->footprint += (double)bytes;
  }
  k->llc_cap = p->llc.bytes;
  return PTO_OK;
}

static void sim_free(sim *s) {
  if (s->prog)
    for (uint32_t q = 0; q < s->e->n_progs; q++)
      free(s->prog[q].in);
  free(s->prog);
  if (s->k.c)
    for (uint32_t i = 0; i <= s->e->n_storages; i++)
      free(s->k.c[i]);
  free(s->k.c);
  free(s->k.n);
  free(s->k.region);
  free(s->k.base);
  free(s->k.clk);
  if (s->w)
    for (uint32_t i = 0; i < s->n_workers; i++)
      free(s->w[i].r.pc);
  free(s->w);
  free(s->core);
  free(s->pending);
  free(s->q[0].it);
  free(s->q[1].it);
  free(s->start);
  free(s->end);
  free(s->on);
  free(s->inst_ns);
  free(s->inst_off);
}

/* Starts, on every free worker (those that just finished first: they keep
 * a task or pop at once; then the idle ones, in id order), what it runs
 * next. */
static void dispatch(sim *s, const uint8_t *just) {
  const pto_sim_runtime *rt = &s->p->rt;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < s->n_workers; i++) {
      sworker *w = &s->w[i];
      if (w->busy || (pass == 0) != (just[i] != 0))
        continue;
      uint32_t t;
      if (w->keep) {
        w->keep = 0;
        start_task(s, i, w->kept, rt->dispatch_ns);
      } else if (find_work(s, w, &t)) {
        start_task(s, i, t, pass == 0 ? rt->dispatch_ns : rt->handoff_ns);
      }
    }
}

/* The box of task t ends; its instructions' simulated ns into the trace's
 * counters, in proportion to their solo cost. */
static void record_ops(sim *s, const running *r, double box) {
  const uint32_t t = r->task;
  uint64_t *ns = s->inst_ns + s->inst_off[t];
  const double bw[2] = {s->p->llc.core_bw, s->p->dram.core_bw},
               rn[2] = {s->p->llc.row_ns, s->p->dram.row_ns};
  double solo = 0;
  for (uint32_t i = 0; i < r->n_pc; i++)
    solo += r->pc[i].n * call_ns(&r->pc[i], bw, rn);
  const double scale = solo > 0 ? (box - r->c0) / solo : 0;
  for (uint32_t i = 0; i < r->n_pc; i++)
    ns[i] = (uint64_t)llround(r->pc[i].n * call_ns(&r->pc[i], bw, rn) * scale);
}

/* One run from time 0: the queues, counts and workers afresh; the cache
 * model as the last run (if any) left it. */
static pto_status run(sim *s) {
  const pto_executable *e = s->e;
  const uint32_t n = e->n_tasks;
  uint8_t *just = calloc(s->n_workers + 1, 1);
  if (!just)
    return pto__error_set(s->err, PTO_ENOMEM, "simulate: out of memory");
  for (uint32_t t = 0; t < n; t++)
    s->pending[t] = e->tasks[t].n_pred;
  for (int c = 0; c < 2; c++)
    s->q[c].head = s->q[c].n = 0;
  for (uint32_t i = 0; i < s->n_workers; i++) {
    sworker *w = &s->w[i];
    w->busy = w->keep = 0;
    w->n_stash = w->stash_head = 0;
  }
  for (int l = 0; l < LV_COUNT; l++)
    s->lv_bytes[l] = 0;
  for (int c = 0; c < 2; c++) {
    for (uint32_t t = 0; t < n; t++)
      if (!s->pending[t] && s->core[t] == c)
        q_push(&s->q[c], s->policy, (qitem){t, e->tasks[t].path});
  }
  uint32_t done = 0;
  s->now = 0;
  dispatch(s, just);
  while (done < n) {
    /* rates: the dispatch gaps run at 1 ns per ns, the boxes at their
     * speed under the bandwidth they get */
    double bw[2];
    const double rn[2] = {s->p->llc.row_ns, s->p->dram.row_ns};
    shares(s, bw);
    double dt = INFINITY;
    int any = 0;
    for (uint32_t i = 0; i < s->n_workers; i++) {
      sworker *w = &s->w[i];
      if (!w->busy)
        continue;
      any = 1;
      if (w->r.phase == 0) {
        dt = w->r.delay < dt ? w->r.delay : dt;
      } else {
        w->r.box = box_ns(&w->r, bw, rn);
        const double left = w->r.rem * w->r.box;
        dt = left < dt ? left : dt;
      }
    }
    if (!any) {
      free(just);
      return pto__error_set(s->err, PTO_ESTATE,
                            "simulate: %u of %u tasks can never start (a "
                            "cycle, or a core type without workers)",
                            n - done, n);
    }
    s->now += dt;
    memset(just, 0, s->n_workers);
    for (uint32_t i = 0; i < s->n_workers; i++) {
      sworker *w = &s->w[i];
      if (!w->busy)
        continue;
      running *r = &w->r;
      if (r->phase == 0) {
        r->delay -= dt;
        if (r->delay <= 1e-9) { /* its box begins: where its data is now */
          r->phase = 1;
          r->rem = 1;
          s->start[r->task] = s->now;
          s->on[r->task] = (uint16_t)i;
          task_pieces(s, r->task, i, r);
        }
      } else {
        const double left = r->rem * r->box - dt;
        r->rem = r->box > 0 ? left / r->box : 0;
        if (left <= 1e-6) {
          record_ops(s, r, s->now - s->start[r->task]);
          finish_task(s, i);
          just[i] = 1;
          done++;
        }
      }
    }
    dispatch(s, just);
  }
  free(just);
  return PTO_OK;
}

/* ---- the trace ------------------------------------------------------------------- */

static const char *sim_label(const void *owner, uint32_t t) {
  return ((const pto_executable *)owner)->tasks[t].label;
}

static const char *sim_program(const void *owner, uint32_t t) {
  const pto_executable *e = owner;
  return e->progs[e->tasks[t].prog].name;
}

static pto_status write_trace(sim *s, const pto_sim_params *prm,
                              double makespan) {
  const pto_executable *e = s->e;
  const uint32_t n = e->n_tasks;
  pto_trace t;
  memset(&t, 0, sizeof t);
  t.n_tasks = n;
  t.n_workers = s->n_workers;
  t.makespan_ns = (uint64_t)llround(makespan);
  t.start = malloc((n + 1) * sizeof *t.start);
  t.end = malloc((n + 1) * sizeof *t.end);
  t.worker = malloc((n + 1) * sizeof *t.worker);
  t.worker_serves = malloc(s->n_workers + 1);
  t.worker_pu = malloc((s->n_workers + 1) * sizeof *t.worker_pu);
  uint32_t *succ_off = malloc((n + 1) * sizeof *succ_off);
  uint32_t *succ = malloc((e->n_edges + 1) * sizeof *succ);
  pto_status st = PTO_OK;
  if (!t.start || !t.end || !t.worker || !t.worker_serves || !t.worker_pu ||
      !succ_off || !succ) {
    st = pto__error_set(s->err, PTO_ENOMEM, "simulate: out of memory");
    goto done;
  }
  uint32_t at = 0;
  for (uint32_t i = 0; i < n; i++) {
    t.start[i] = (uint64_t)llround(s->start[i]);
    t.end[i] = (uint64_t)llround(s->end[i]);
    if (t.end[i] < t.start[i])
      t.end[i] = t.start[i];
    t.worker[i] = s->on[i];
    succ_off[i] = at;
    for (uint32_t k = 0; k < e->tasks[i].n_succ; k++)
      succ[at++] = e->succ[e->tasks[i].succ + k];
  }
  succ_off[n] = at;
  for (uint32_t w = 0; w < s->n_workers; w++) {
    t.worker_serves[w] =
        (uint8_t)(s->w[w].serves[0] | (s->w[w].serves[1] << 1));
    t.worker_pu[w] = -1;
  }
  t.core = s->core;
  t.succ_off = succ_off;
  t.succ = succ;
  t.owner = e;
  t.label_of = sim_label;
  t.program_of = sim_program;
  /* "sim:<profile>", cut to the field (a profile name has 31 chars) */
  memcpy(t.machine, "sim:", 4);
  snprintf(t.machine + 4, sizeof t.machine - 4, "%.27s", s->p->name);
  t.detail = &pto__exe_trace_detail;
  t.inst_ns = s->inst_ns;
  t.inst_off = s->inst_off;
  json_t *mj = json_pack("{ss ss sb}", "profile", s->p->name, "policy",
                         pto_policy_name(s->policy), "cold", prm->cold != 0);
  char *meta = mj ? json_dumps(mj, JSON_COMPACT) : NULL;
  json_decref(mj);
  if (!meta) {
    st = pto__error_set(s->err, PTO_ENOMEM, "simulate: out of memory");
    goto done;
  }
  t.sim = meta;
  if (prm->trace_file) {
    st = pto__trace_write_json(&t, prm->trace_file);
    if (st)
      pto__error_set(s->err, st, "simulate: cannot write the trace");
  }
  if (!st && prm->trace_path)
    st = pto__trace_write_path(&t, prm->trace_path, s->err);
  free(meta);
done:
  t.inst_ns = NULL; /* s owns them */
  pto__trace_free(&t);
  free(succ_off);
  free(succ);
  return st;
}

/* ---- the call ---------------------------------------------------------------------- */

pto_sim_params pto_sim_params_default(void) {
  pto_sim_params p;
  memset(&p, 0, sizeof p);
  p.policy = PTO_POLICY_CRITICAL_PATH;
  return p;
}

pto_status pto_simulate(const pto_executable *e, const pto_sim_params *prm,
                        pto_sim_result *r) {
  if (!e || !prm || !r)
    return pto__last_error(PTO_EINVAL, "simulate: NULL argument");
  pto_error *err = pto__exe_err(e);
  memset(r, 0, sizeof *r);
  if (!prm->profile)
    return pto__error_set(err, PTO_EINVAL, "simulate: no profile");
  if ((unsigned)prm->policy >= PTO_POLICY_COUNT)
    return pto__error_set(err, PTO_EINVAL, "simulate: unknown policy %d",
                          (int)prm->policy);
  const pto_machine *m = prm->machine ? prm->machine : &e->machine;
  sim s;
  memset(&s, 0, sizeof s);
  s.e = e;
  s.p = prm->profile;
  s.policy = prm->policy;
  s.err = err;
  s.n_workers = m->shared ? m->workers[PTO_CORE_VECTOR]
                          : m->workers[PTO_CORE_CUBE] + m->workers[PTO_CORE_VECTOR];
  const uint32_t n = e->n_tasks;
  pto_status st = PTO_OK;
  if (!s.n_workers || s.n_workers > 65535 ||
      (m->shared && m->workers[0] != m->workers[1]))
    return pto__error_set(err, PTO_ECONFIG,
                          "simulate: machine '%s' has no workers (or more "
                          "than 65535)",
                          m->name);
  s.w = calloc(s.n_workers, sizeof *s.w);
  s.core = malloc(n + 1);
  s.pending = malloc((n + 1) * sizeof *s.pending);
  s.start = calloc(n + 1, sizeof *s.start);
  s.end = calloc(n + 1, sizeof *s.end);
  s.on = calloc(n + 1, sizeof *s.on);
  s.inst_off = malloc((n + 1) * sizeof *s.inst_off);
  uint32_t cap = 1;
  while (cap < n + 1)
    cap *= 2;
  s.q[0].it = malloc(cap * sizeof *s.q[0].it);
  s.q[1].it = malloc(cap * sizeof *s.q[1].it);
  s.q[0].cap = s.q[1].cap = cap;
  if (!s.w || !s.core || !s.pending || !s.start || !s.end || !s.on ||
      !s.inst_off || !s.q[0].it || !s.q[1].it) {
    st = pto__error_set(err, PTO_ENOMEM, "simulate: out of memory");
    goto done;
  }
  uint32_t max_insts = 1, k = 0;
  for (uint32_t t = 0; t < n; t++) {
    const pto_task *task = &e->tasks[t];
    s.core[t] = task->core == PTO_CORE_CUBE ? PTO_CORE_CUBE : PTO_CORE_VECTOR;
    s.inst_off[t] = k;
    const uint32_t ni = e->progs[task->prog].n_insts;
    k += 2 * ni;
    max_insts = ni > max_insts ? ni : max_insts;
  }
  s.inst_off[n] = k;
  s.inst_ns = calloc(k + 1, sizeof *s.inst_ns);
  if (!s.inst_ns) {
    st = pto__error_set(err, PTO_ENOMEM, "simulate: out of memory");
    goto done;
  }
  int served[2] = {0, 0};
  for (uint32_t i = 0; i < s.n_workers; i++) {
    sworker *w = &s.w[i];
    if (m->shared) {
      w->serves[0] = w->serves[1] = 1;
      w->first = (int)(i & 1);
    } else {
      const int c = i < m->workers[PTO_CORE_CUBE] ? PTO_CORE_CUBE
                                                  : PTO_CORE_VECTOR;
      w->serves[c] = 1;
      w->first = c;
    }
    served[0] |= w->serves[0];
    served[1] |= w->serves[1];
    w->last = UINT32_MAX;
    if (!(w->r.pc = calloc(max_insts, sizeof *w->r.pc))) {
      st = pto__error_set(err, PTO_ENOMEM, "simulate: out of memory");
      goto done;
    }
  }
  for (uint32_t t = 0; t < n; t++)
    if (!served[s.core[t]]) {
      st = pto__error_set(err, PTO_ECONFIG,
                          "simulate: task %u needs a %s worker; machine '%s' "
                          "has none",
                          t, pto_core_type_name((pto_core_type)s.core[t]),
                          m->name);
      goto done;
    }
  if ((st = prepare(&s)))
    goto done;
  /* warm: the run after an untimed one, as a benchmark times it (what
   * fits stays in the workers' L2s and the last-level cache) */
  s.k.warm = !prm->cold && s.footprint <= s.p->llc.bytes;
  if (!prm->cold && (st = run(&s)))
    goto done;
  if ((st = run(&s)))
    goto done;
  double makespan = 0, busy = 0;
  for (uint32_t t = 0; t < n; t++) {
    makespan = s.end[t] > makespan ? s.end[t] : makespan;
    const double box = s.end[t] - s.start[t];
    busy += box;
    r->work_ns[s.core[t]] += box;
  }
  /* the longest chain of boxes, in a topological order (join tasks come
   * after the tasks they join, yet feed earlier ones) */
  double *path = calloc(n + 1, sizeof *path), cp = 0;
  uint32_t *order = malloc((n + 1) * sizeof *order);
  if (!path || !order) {
    free(path);
    free(order);
    st = pto__error_set(err, PTO_ENOMEM, "simulate: out of memory");
    goto done;
  }
  uint32_t head = 0, tail = 0;
  for (uint32_t t = 0; t < n; t++) {
    s.pending[t] = e->tasks[t].n_pred;
    if (!s.pending[t])
      order[tail++] = t;
  }
  while (head < tail) {
    const uint32_t t = order[head++];
    path[t] += s.end[t] - s.start[t];
    cp = path[t] > cp ? path[t] : cp;
    for (uint32_t j = 0; j < e->tasks[t].n_succ; j++) {
      const uint32_t v = e->succ[e->tasks[t].succ + j];
      if (path[t] > path[v])
        path[v] = path[t];
      if (!--s.pending[v])
        order[tail++] = v;
    }
  }
  free(order);
  free(path);
  r->makespan_ns = makespan;
  r->tasks = n;
  r->workers = s.n_workers;
  r->busy_ns = busy;
  r->critical_path_ns = cp;
  r->l2_bytes = s.lv_bytes[LV_L2];
  r->llc_bytes = s.lv_bytes[LV_LLC];
  r->dram_bytes = s.lv_bytes[LV_DRAM];
  if (prm->trace_file || prm->trace_path)
    st = write_trace(&s, prm, makespan);
done:
  sim_free(&s);
  return st;
}
