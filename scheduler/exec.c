/* Running a task: its program's instructions over the worker's scratchpads
 * and the task's global windows. */
#include "scheduler/exec.h"

#include "core/buffer.h"
#include "core/prefetch.h"
#include "pto/runtime.h"
#include "tileops/tileops.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The scratchpads of a worker live in one region of whole huge pages
 * (pto_buffer_alloc): a cube program's L0C alone spans an L2's worth of
 * 4 KiB pages, and the kernels sweep it every k slice, so on small pages
 * the C block loads miss the first-level TLB and the hardware walks pages
 * the whole time. Level l starts at a 64-byte boundary. Contents do not
 * survive a regrow (tiles live for one task). */
static pto_status scratch_map(pto_scratch *s, const uint64_t *size) {
  uint64_t at[PTO_MEM_LEVEL_COUNT], total = 0;
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++) {
    at[l] = total;
    total += (size[l] + 63) & ~(uint64_t)63;
  }
  /* at least one huge page, however little the levels need */
  unsigned char *region =
      total ? pto_buffer_alloc(total < PTO_HUGE_PAGE ? PTO_HUGE_PAGE : total)
            : NULL;
  if (total && !region)
    return PTO_ENOMEM;
  free(s->region);
  s->region = region;
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++) {
    s->size[l] = size[l];
    s->level[l] = size[l] ? region + at[l] : NULL;
  }
  return PTO_OK;
}

pto_status pto__scratch_prepare(pto_scratch *s,
                                const uint64_t size[PTO_MEM_LEVEL_COUNT]) {
  uint64_t total = 0;
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    total += (size[l] + 63) & ~(uint64_t)63;
  if (!total)
    return PTO_OK;
  if (scratch_map(s, size))
    return PTO_ENOMEM;
  pto__prefault(s->region, total);
  return PTO_OK;
}

pto_status pto__scratch_init(pto_scratch *s, const pto_executable *e) {
  memset(s, 0, sizeof *s);
  uint64_t size[PTO_MEM_LEVEL_COUNT] = {0};
  for (uint32_t q = 0; q < e->n_progs; q++) {
    for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
      if (e->progs[q].mem[l] > size[l])
        size[l] = e->progs[q].mem[l];
    if (e->progs[q].n_tiles > s->cap_tiles)
      s->cap_tiles = e->progs[q].n_tiles;
  }
  if (scratch_map(s, size))
    goto fail;
  s->tiles = malloc((s->cap_tiles + 1) * sizeof *s->tiles);
  if (!s->tiles)
    goto fail;
  return PTO_OK;
fail:
  pto__scratch_free(s);
  return PTO_ENOMEM;
}

void pto__scratch_free(pto_scratch *s) {
  free(s->region);
  free(s->tiles);
  memset(s, 0, sizeof *s);
}

pto_status pto__bind(const pto_executable *e, void *workspace,
                     const void *const *inputs, void *const *outputs,
                     unsigned char **base) {
  for (uint32_t k = 0; k < e->n_storages; k++) {
    const pto_storage *s = &e->storages[k];
    switch (s->kind) {
    case PTO_STORAGE_INPUT:
      base[k] = (unsigned char *)(uintptr_t)inputs[s->index];
      break;
    case PTO_STORAGE_OUTPUT:
      base[k] = outputs[s->index];
      break;
    case PTO_STORAGE_WORKSPACE:
      base[k] = (unsigned char *)workspace + s->offset;
      break;
    default:
      base[k] = NULL;
      break;
    }
    if (s->kind != PTO_STORAGE_NONE && s->kind != PTO_STORAGE_WORKSPACE &&
        !base[k])
      return PTO_EINVAL;
  }
  return PTO_OK;
}

/* Extent n clipped by dim d1 - 1 (0: static) for a tile at o[0] along it,
 * o[1] elements per unit of the dim. */
static inline int64_t clipped(int64_t n, uint8_t d1, const int64_t *o,
                              const int64_t *ext) {
  if (!d1)
    return n;
  const int64_t left = ext[d1 - 1] * o[1] - o[0];
  return left <= 0 ? 0 : left < n ? left : n;
}

/* The global window of slot l of a task's program, clipped by the run's
 * extents ext (NULL: none) with the instance's offsets clip (4 per slot,
 * after 2 per tile). */
static void slot_view(const pto_cprog *pr, int32_t l, const pto_targ *args,
                      unsigned char *const *base, const int64_t *ext,
                      const int64_t *clip, pto_gview *g) {
  const pto_pslot *sl = &pr->slots[l];
  const pto_targ *ga = &args[l];
  g->base = base[ga->storage] + ga->offset * (int64_t)pto_dtype_size(sl->dtype);
  g->dtype = sl->dtype;
  g->rows = sl->rows;
  g->cols = sl->cols;
  g->row_stride = sl->rs;
  g->col_stride = sl->cs;
  if (ext && clip) {
    const int64_t *o = clip + 4 * pr->n_tiles + 8 * l;
    g->rows = clipped(g->rows, sl->cr, o, ext);
    g->cols = clipped(g->cols, sl->cc, o + 2, ext);
    if (!clipped(1, sl->cb[0], o + 4, ext) ||
        !clipped(1, sl->cb[1], o + 6, ext))
      g->rows = 0; /* a batch past its extent */
  }
}

/* Whether slot sl of an instance with clip offsets o (its 8 words) has
 * nothing inside the extents. */
static inline int slot_empty(const pto_pslot *sl, const int64_t *o,
                             const int64_t *ext) {
  return !clipped(sl->rows, sl->cr, o, ext) ||
         !clipped(sl->cols, sl->cc, o + 2, ext) ||
         !clipped(1, sl->cb[0], o + 4, ext) ||
         !clipped(1, sl->cb[1], o + 6, ext);
}

/* Whether the run's extents leave nothing of instance inst of task t to
 * write: every window a store writes is empty. */
int pto__task_instance_empty(const pto_executable *e, uint32_t t,
                             uint32_t inst, const int64_t *ext) {
  const pto_task *task = &e->tasks[t];
  const pto_cprog *pr = &e->progs[task->prog];
  if (!pr->clipped || !ext)
    return 0;
  const int64_t *clip = e->clip + task->clip + inst * PTO_CLIP_WORDS(pr);
  for (uint32_t l = 0; l < pr->n_slots; l++)
    if (pr->slots[l].written &&
        !slot_empty(&pr->slots[l], clip + 4 * pr->n_tiles + 8 * l, ext))
      return 0;
  return 1;
}

uint32_t pto__skip_facts(const pto_executable *e, uint32_t t,
                         pto_skip_task *st, pto_skip_clip *c) {
  const pto_task *task = &e->tasks[t];
  const pto_cprog *pr = &e->progs[task->prog];
  *st = (pto_skip_task){.n_inst = task->n_inst, .always = !pr->clipped};
  /* a window it writes that no extent clips: it always runs */
  for (uint32_t l = 0; !st->always && l < pr->n_slots; l++) {
    const pto_pslot *sl = &pr->slots[l];
    st->always = sl->written && !(sl->cr | sl->cc | sl->cb[0] | sl->cb[1]);
  }
  uint32_t n = 0;
  for (uint32_t l = 0, w = 0; !st->always && l < pr->n_slots; l++) {
    const pto_pslot *sl = &pr->slots[l];
    if (!sl->written)
      continue;
    const uint8_t d1[4] = {sl->cr, sl->cc, sl->cb[0], sl->cb[1]};
    for (int k = 0; k < 4; k++) {
      if (!d1[k])
        continue;
      pto_skip_clip x = {.d1 = d1[k], .slot = (uint16_t)w};
      for (uint32_t i = 0; i < task->n_inst; i++) {
        const int64_t *o = e->clip + task->clip + i * PTO_CLIP_WORDS(pr) +
                           4 * pr->n_tiles + 8 * l + 2 * k;
        if (!i)
          x.off0 = x.min_off = o[0], x.mul0 = x.mul = o[1];
        else if (o[1] != x.mul)
          x.mul = 0; /* no common multiplier: no bound */
        else if (o[0] < x.min_off)
          x.min_off = o[0];
      }
      if (c)
        c[n] = x;
      n++;
    }
    w++;
  }
  st->n = n;
  return n;
}

int pto__task_skip(const pto_executable *e, uint32_t t,
                   const pto_skip_task *st, const pto_skip_clip *c,
                   const int64_t *ext) {
  if (st->always || !ext)
    return 0;
  /* live when a window its first instance writes is inside every extent
   * that clips it (c holds each written slot's clips together) */
  for (uint32_t i = 0; i < st->n;) {
    const uint16_t w = c[i].slot;
    int in = 1;
    for (; i < st->n && c[i].slot == w; i++)
      in &= ext[c[i].d1 - 1] * c[i].mul0 - c[i].off0 > 0;
    if (in)
      return 0;
  }
  if (st->n_inst == 1)
    return 1;
  /* empty when every window it writes is past an extent in all its
   * instances at once (the common case of a task wholly past one) */
  int all = 1;
  for (uint32_t i = 0; i < st->n && all;) {
    const uint16_t w = c[i].slot;
    int past = 0;
    for (; i < st->n && c[i].slot == w; i++)
      past |= c[i].mul && ext[c[i].d1 - 1] * c[i].mul - c[i].min_off <= 0;
    all = past;
  }
  if (all)
    return 1;
  for (uint32_t k = 1; k < st->n_inst; k++)
    if (!pto__task_instance_empty(e, t, k, ext))
      return 0;
  return 1;
}

/* Fills ahead with the windows of the loads starting at instruction j of
 * pr, up to the first instruction that is not a load; how many. */
static uint32_t loads_from(const pto_cprog *pr, uint32_t j,
                           const pto_targ *args, unsigned char *const *base,
                           pto_gview *ahead) {
  uint32_t n = 0;
  for (; j < pr->n_insts && n < PTO_AHEAD_MAX; j++) {
    const pto_pinst *pj = &pr->insts[j];
    if (!pto__insn_loads(pj->op) || pj->slot < 0)
      break;
    slot_view(pr, pj->slot, args, base, NULL, NULL, &ahead[n++]);
  }
  return n;
}

uint32_t pto__loads_ahead(const pto_cprog *pr, uint32_t i,
                          const pto_targ *args, const pto_cprog *nx_pr,
                          const pto_targ *nx_args, unsigned char *const *base,
                          pto_gview *ahead) {
  if (pr->core != PTO_CORE_CUBE || pr->insts[i].slot >= 0)
    return 0;
  uint32_t n = loads_from(pr, i + 1, args, base, ahead);
  if (n || !nx_pr)
    return n;
  for (uint32_t j = i + 1; j < pr->n_insts; j++)
    if (pr->insts[j].slot < 0) /* not the instance's last computation */
      return 0;
  return loads_from(nx_pr, 0, nx_args, base, ahead);
}

/* Software prefetch of the next instance's loads. A task's instances run in
 * order, and a worker often knows the task it runs next (a batch it popped),
 * so while instance i computes on its local tiles (when DRAM would
 * otherwise sit idle) the executor already knows the global windows the next
 * instance will TLOAD. Its lines go into a plan (core/prefetch.h) that the
 * instructions of instance i draw from as they loop, and that the executor
 * issues in slices before each instruction, so everything is in flight by
 * the end of the instance. Windows read along columns (col_stride != 1) are
 * left to the TLOAD itself, and so is an instance whose loads exceed
 * PF_MAX_BYTES (they would evict the scratchpads they are meant to feed). */
#define PF_MAX_BYTES (256u * 1024u)

static void pf_init(pto_pf *pf, const pto_cprog *pr, const pto_targ *args,
                    unsigned char *const *base) {
  pto__pf_clear(pf);
  int64_t bytes = 0;
  for (uint32_t i = 0; i < pr->n_insts; i++) {
    const pto_pinst *pi = &pr->insts[i];
    if (!pto__insn_loads(pi->op) || pi->slot < 0)
      continue;
    const pto_pslot *sl = &pr->slots[pi->slot];
    const int64_t es = (int64_t)pto_dtype_size(sl->dtype);
    if (sl->cs != 1 || sl->rows <= 0 || sl->cols <= 0)
      continue;
    const pto_targ *g = &args[pi->slot];
    /* an instruction that fetches each row after the first itself
     * (TLOADEXPDIFSUM, TLOADSOFTMAXSTORE; tileops/softmax_kernels.h): only
     * its first row here */
    const int64_t rows =
        pto__insn_info(pi->op)->flags & PTO_IF_ROW_AHEAD ? 1 : sl->rows;
    if (pto__pf_add(pf, base[g->storage] + g->offset * es, sl->cols * es,
                    sl->rs * es, rows))
      bytes += rows * sl->cols * es;
  }
  if (bytes > (int64_t)PF_MAX_BYTES)
    pf->n = 0, pf->lines = 0;
}

/* The monotonic clock (a vDSO read, ~20 ns) for timing instructions. */
static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether pi's entry point is the scalar reference's own (a table with no
 * SIMD version of the instruction, or the scalar table itself). */
static int on_reference(const pto_pinst *pi) {
  return pi->op >= 0 && pi->op < PTO_OP_COUNT &&
         pi->fn == pto__isa_scalar.fn[pi->op];
}

/* pto__task_exec's body, inlined twice: with inst_ns NULL (a constant, so
 * the untraced copy has no clock read and no test for one) and not. */
static inline __attribute__((always_inline)) pto_status
task_exec(const pto_executable *e, uint32_t t, uint32_t next, pto_scratch *s,
          unsigned char *const *base, const int64_t *ext, uint64_t *inst_ns,
          pto_error *err) {
  const pto_task *task = &e->tasks[t];
  const pto_cprog *pr = &e->progs[task->prog];
  const int clip_it = ext && pr->clipped;
  pto_tile *tiles = s->tiles;
  for (uint32_t i = 0; i < pr->n_tiles; i++) {
    const pto_ptile *pt = &pr->tiles[i];
    pto_tile *tl = &tiles[i];
    tl->data = s->level[pt->level] + pt->offset;
    tl->dtype = pt->dtype;
    tl->rows = pt->rows;
    tl->cols = pt->cols;
    tl->stride = pt->stride;
    tl->valid_rows = pt->vrows;
    tl->valid_cols = pt->vcols;
  }
  pto_gview ahead[PTO_AHEAD_MAX];
  pto_pf pf = {.n = 0};
  for (uint32_t inst = 0; inst < task->n_inst; inst++) {
    const pto_targ *args = e->args + task->args + inst * pr->n_slots;
    const int64_t *clip =
        clip_it ? e->clip + task->clip + inst * PTO_CLIP_WORDS(pr) : NULL;
    /* (a task of one instance runs only when the binding's skip pass
     * found it live: no need to test it again) */
    if (clip && task->n_inst > 1 &&
        pto__task_instance_empty(e, t, inst, ext)) {
      /* an instance past the extents (a batch past its extent in a task
       * whose other instances run) runs nothing: its tiles would hold
       * what an earlier run left, and a check on them would fail */
      s->prefetched += (uint64_t)pf.done;
      pto__pf_clear(&pf);
      continue;
    }
    if (clip) { /* this instance's valid regions at the run's extents */
      for (uint32_t i = 0; i < pr->n_tiles; i++) {
        const pto_ptile *pt = &pr->tiles[i];
        tiles[i].valid_rows =
            (uint32_t)clipped(pt->vrows, pt->cr, clip + 4 * i, ext);
        tiles[i].valid_cols =
            (uint32_t)clipped(pt->vcols, pt->cc, clip + 4 * i + 2, ext);
      }
    }
    const pto_cprog *nx_pr = NULL; /* the next instance, if known */
    const pto_targ *nx_args = NULL;
    if (inst + 1 < task->n_inst)
      nx_pr = pr, nx_args = args + pr->n_slots;
    else if (next != PTO_NO_TASK)
      nx_pr = &e->progs[e->tasks[next].prog],
      nx_args = e->args + e->tasks[next].args;
    s->prefetched += (uint64_t)pf.done;
    if (nx_pr)
      pf_init(&pf, nx_pr, nx_args, base);
    else
      pf.n = 0, pf.lines = pf.done = 0;
    for (uint32_t i = 0; i < pr->n_insts; i++) {
      const pto_pinst *pi = &pr->insts[i];
      if (pf.done < pf.lines) /* what the instructions so far left */
        pto__pf_advance(&pf, pf.lines * (int64_t)i / pr->n_insts);
      pto_targs a;
      a.pf = pf.lines ? &pf : NULL;
      for (int d = 0; d < pi->n_dst; d++)
        a.dst[d] = &tiles[pi->dst[d]];
      for (int r = 0; r < pi->n_src; r++)
        a.src[r] = &tiles[pi->src[r]];
      if (pi->slot >= 0)
        slot_view(pr, pi->slot, args, base, ext, clip, &a.g);
      if (pi->slot2 >= 0)
        slot_view(pr, pi->slot2, args, base, ext, clip, &a.g2);
      a.s = pi->s;
      a.imm[0] = pi->imm[0];
      a.imm[1] = pi->imm[1];
      a.flags = pi->flags;
      if (ext && pi->it.sign)
        a.imm[1] += (int32_t)(pi->it.sign *
                              (pto__dref_len(pi->it.r, pi->it.len, ext) -
                               pi->it.base));
      if (ext && (pi->st[0].sign || pi->st[1].sign))
        for (int k = 0; k < 2; k++)
          a.s = pto__sterm_apply(a.s, &pi->st[k], ext);
      if (clip) {
        /* a load from a window the extents emptied (a batch past its
         * extent: tiles carry no batch clip) loads an empty tile, and
         * what it feeds sees nothing, a fused store writing nothing */
        if (pto__insn_loads(pi->op) && (!a.g.rows || !a.g.cols))
          a.dst[0]->valid_rows = 0;
        /* nothing to do where the extents empty what it writes; where they
         * empty only what it reads, its result needs no kernel */
        int empty = pi->n_dst ? 1 : !a.g.rows || !a.g.cols;
        for (int d = 0; d < pi->n_dst; d++)
          empty &= !a.dst[d]->valid_rows || !a.dst[d]->valid_cols;
        if (!pi->n_dst && pi->n_src)
          empty |= !a.src[0]->valid_rows || !a.src[0]->valid_cols;
        if (empty)
          continue;
        if (pto__insn_empty(pi->op, &a))
          continue;
      }
      a.ahead = ahead;
      a.n_ahead =
          pto__loads_ahead(pr, i, args, nx_pr, nx_args, base, ahead);
      const uint64_t t0 = inst_ns ? now_ns() : 0,
                     refs = inst_ns ? pto__ref_calls : 0;
      int rc = pi->fn(pi->op, &a);
      if (inst_ns) {
        const uint64_t dt = now_ns() - t0;
        inst_ns[i] += dt;
        if (pto__ref_calls != refs || on_reference(pi))
          inst_ns[pr->n_insts + i] += dt;
      }
      if (rc < 0) {
        char why[PTO_ERROR_MSG];
        pto__insn_failure(e, pr, i, tiles, args, rc, why, sizeof why);
        return pto__error_set(
            err, (pto_status)rc,
            "task %u (program %s, label '%s'): instruction %u %s failed: %s",
            t, pr->name, task->label, i, pto__insn_name(pi->op), why);
      }
    }
    pto__pf_advance(&pf, pf.lines);
  }
  s->prefetched += (uint64_t)pf.done;
  return PTO_OK;
}

pto_status pto__task_exec(const pto_executable *e, uint32_t t, uint32_t next,
                          pto_scratch *s, unsigned char *const *base,
                          const int64_t *ext, uint64_t *inst_ns,
                          pto_error *err) {
  if (inst_ns)
    return task_exec(e, t, next, s, base, ext, inst_ns, err);
  return task_exec(e, t, next, s, base, ext, NULL, err);
}

pto_status pto__scratch_reserve(pto_scratch *s, const pto_cprog *pr) {
  uint64_t size[PTO_MEM_LEVEL_COUNT];
  int grow = 0;
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++) {
    size[l] = pr->mem[l] > s->size[l] ? pr->mem[l] : s->size[l];
    grow |= size[l] != s->size[l];
  }
  if (grow && scratch_map(s, size))
    return PTO_ENOMEM;
  if (pr->n_tiles > s->cap_tiles) {
    pto_tile *t = realloc(s->tiles, pr->n_tiles * sizeof *t);
    if (!t)
      return PTO_ENOMEM;
    s->tiles = t;
    s->cap_tiles = pr->n_tiles;
  }
  return PTO_OK;
}
