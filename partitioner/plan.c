/* A subgraph's program: its instructions over local tiles and global
 * slots, matmul operands packed, accumulators copied where they are shared,
 * and the liveness-based plan of every local-memory level. Step 3 of
 * partitioner/partition.c; its canonical form is what step 4 compares. */
#include <assert.h>
#include <string.h>

#include "partitioner/part.h"
#include "tileops/tileops.h"

/* Where a cube or vector program's tiles live by default; matmul operands
 * are moved to L0A/L0B/L0C once their uses are known. */
static pto_mem_level level_for(pto_core_type core) {
  return core == PTO_CORE_CUBE ? PTO_MEM_L1 : PTO_MEM_UB;
}

typedef struct interval {
  uint64_t off, size;
  uint32_t end; /* last use (instruction index) */
  uint8_t level;
} interval;

/* A role's mark in pack_operands: the tile keeps its global's dtype. */
#define NATIVE 0x80

/* Source r's (destination d's) role, level and attributes as the table
 * declares them (core/isa.h). */
static pto_operand src_of(const pto_pinst *pi, int r) {
  return pto__insn_operand(pi->op, 0, r);
}
static pto_operand dst_of(const pto_pinst *pi, int d) {
  return pto__insn_operand(pi->op, 1, d);
}

/* Whether role is a matmul's packed-or-not operand, and which. */
static int is_mm_operand(pto_operand o) {
  return o.role == PTO_ROLE_MM_A || o.role == PTO_ROLE_MM_B;
}

/* The dtype a packed operand t keeps when its engine multiplies it as it
 * is (pto__mm_native: AVX-512 BF16's bf16): the global's of the load that
 * defines it (a PTO_OA_PACKABLE destination), else PTO_DTYPE_COUNT
 * (widened to f32, as every engine takes it). */
static pto_dtype native_dtype(const pto_cprog *pr, const uint32_t *def,
                              uint32_t t) {
  if (def[t] == PTO_NONE ||
      !(dst_of(&pr->insts[def[t]], 0).attr & PTO_OA_PACKABLE))
    return PTO_DTYPE_COUNT;
  const pto_dtype dt = pr->slots[pr->insts[def[t]].slot].dtype;
  return pto__mm_native(dt) ? dt : PTO_DTYPE_COUNT;
}

/* Whether matmul pi multiplies its packed operands as they are when they
 * are NATIVE: when every operand its table row lists as native
 * (pto_insn_facts.native: both of TMATMUL's; TMATMUL_GA's packed operand
 * and the table whose rows it reads in place) is, all of one dtype. */
static int runs_native(const pto_cprog *pr, const uint8_t *role,
                       const uint32_t *def, const pto_pinst *pi) {
  const uint32_t want = pto__insn_facts(pi->op)->native;
  pto_dtype dt = PTO_DTYPE_COUNT;
  int any = 0;
  for (int r = 0; r < 2 && r < pi->n_src; r++) {
    if (!(want & (1u << r)))
      continue;
    const uint16_t t = pi->src[r];
    if (!(role[t] & NATIVE) || (any && native_dtype(pr, def, t) != dt))
      return 0;
    dt = native_dtype(pr, def, t);
    any = 1;
  }
  if (any && (want & PTO_NATIVE_G) &&
      (pi->slot < 0 || pr->slots[pi->slot].dtype != dt))
    return 0;
  return any;
}

/* Whether pi reads a matmul operand (PTO_ROLE_MM_A or MM_B) among its
 * first two sources. */
static int reads_mm_operand(const pto_pinst *pi) {
  return is_mm_operand(src_of(pi, 0)) || is_mm_operand(src_of(pi, 1));
}

/* Marks NATIVE the packed operands (roles ra, rb) that keep their global's
 * dtype, packed in k pairs: every matmul that reads the tile runs native
 * with it (runs_native). Any other reader, or a partner that cannot,
 * widens it; widening one operand can widen its other partners, so until
 * nothing changes. */
static void keep_native(const pto_cprog *pr, uint8_t *role, const uint32_t *def,
                        uint8_t ra, uint8_t rb) {
  int any = 0;
  for (uint32_t t = 0; t < pr->n_tiles; t++)
    if ((role[t] == ra || role[t] == rb) &&
        native_dtype(pr, def, t) != PTO_DTYPE_COUNT) {
      role[t] |= NATIVE;
      any = 1;
    }
  for (int changed = any; changed;) {
    changed = 0;
    for (uint32_t k = 0; k < pr->n_insts; k++) {
      const pto_pinst *pi = &pr->insts[k];
      if (!reads_mm_operand(pi) || runs_native(pr, role, def, pi))
        continue;
      for (int r = 0; r < pi->n_src && r < 2; r++)
        if (role[pi->src[r]] & NATIVE) {
          role[pi->src[r]] &= (uint8_t)~NATIVE;
          changed = 1;
        }
    }
  }
}

/* Packs matmul operands (PTO_TF_PACK_A / PTO_TF_PACK_B, core/isa.def): a
 * tile that a load defines (a PTO_OA_PACKABLE destination) and that only
 * matmuls read, always as the same untransposed operand (PTO_ROLE_MM_A or
 * MM_B), is loaded packed in panels of the machine's widths (its own, or
 * the active table's micro-kernel's: pto__machine_panel), and the matmuls
 * are told so; a destination born
 * packed (PTO_ROLE_PACKED_A, PACKED_B) only needs its panel width.
 * The tile grows to whole panels: rows up to a multiple of mr for A, cols
 * up to a multiple of nr for B; iv[t].size follows. */
void pto__machine_panel(const pto_machine *m, uint32_t *mr, uint32_t *nr) {
  if (m && m->panel[0] && m->panel[1]) {
    *mr = m->panel[0];
    *nr = m->panel[1];
    return;
  }
  pto__mm_panel(mr, nr);
}

static void pack_operands(pto_cprog *pr, const pto_machine *m, interval *iv,
                          uint8_t *role, uint32_t *def) {
  enum { UNSEEN, ROLE_A, ROLE_B, NOT_PACKED };
  for (uint32_t t = 0; t < pr->n_tiles; t++) {
    role[t] = UNSEEN;
    def[t] = PTO_NONE;
  }
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    /* a load packs when told; a born-packed destination only needs its
     * panel width */
    for (int d = 0; d < pi->n_dst; d++) {
      const pto_operand o = dst_of(pi, d);
      if ((o.attr & PTO_OA_PACKABLE) && def[pi->dst[d]] == PTO_NONE)
        def[pi->dst[d]] = k;
      if (o.role == PTO_ROLE_PACKED_A || o.role == PTO_ROLE_PACKED_B)
        def[pi->dst[d]] = k;
    }
    for (int r = 0; r < pi->n_src; r++) {
      const int rl = src_of(pi, r).role;
      uint32_t want = NOT_PACKED;
      if (rl == PTO_ROLE_MM_A && !(pi->flags & PTO_TF_TRANS_A))
        want = ROLE_A;
      if (rl == PTO_ROLE_MM_B && !(pi->flags & PTO_TF_TRANS_B))
        want = ROLE_B;
      uint8_t *have = &role[pi->src[r]];
      *have = *have == UNSEEN || *have == want ? (uint8_t)want : NOT_PACKED;
    }
  }
  keep_native(pr, role, def, ROLE_A, ROLE_B);
  uint32_t mr, nr;
  pto__machine_panel(m, &mr, &nr);
  for (uint32_t t = 0; t < pr->n_tiles; t++) {
    if ((role[t] & ~NATIVE) != ROLE_A && (role[t] & ~NATIVE) != ROLE_B)
      continue;
    if (def[t] == PTO_NONE)
      continue;
    int is_a = (role[t] & ~NATIVE) == ROLE_A;
    uint32_t w = is_a ? mr : nr, flag = is_a ? PTO_TF_PACK_A : PTO_TF_PACK_B;
    pto_ptile *pt = &pr->tiles[t];
    if (role[t] & NATIVE) { /* k in pairs: K rounds up to even */
      pt->dtype = native_dtype(pr, def, t);
      if (is_a)
        pt->cols = (pt->cols + 1) / 2 * 2;
      else
        pt->rows = (pt->rows + 1) / 2 * 2;
      role[t] &= (uint8_t)~NATIVE;
    }
    if (is_a)
      pt->rows = (pt->rows + w - 1) / w * w;
    else
      pt->cols = (pt->cols + w - 1) / w * w;
    pt->stride = pto_tile_stride(pt->dtype, pt->cols);
    iv[t].size = pto_tile_bytes(pt->dtype, pt->rows, pt->cols);
    pto_pinst *d = &pr->insts[def[t]];
    int j = 0; /* which of d's destinations t is */
    while (j + 1 < d->n_dst && d->dst[j] != t)
      j++;
    const pto_operand o = dst_of(d, j);
    /* born packed, always for the role the tiler reads them in */
    assert((o.attr & PTO_OA_PACKABLE) ||
           o.role == (is_a ? PTO_ROLE_PACKED_A : PTO_ROLE_PACKED_B));
    if (o.attr & PTO_OA_PACKABLE)
      d->flags |= flag;
    d->imm[0] = (int32_t)w;
  }
  /* the matmuls reading packed tiles, in one pass: a pass per tile made
   * this quadratic, seconds for a subgraph of 10^4 k-slices */
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    pto_pinst *pi = &pr->insts[k];
    for (int r = 0; r < 2 && r < pi->n_src; r++) {
      const uint32_t t = pi->src[r];
      const pto_operand o = src_of(pi, r);
      const int is_a = o.role == PTO_ROLE_MM_A;
      if (!is_mm_operand(o) || def[t] == PTO_NONE ||
          role[t] != (is_a ? ROLE_A : ROLE_B))
        continue;
      pi->flags |= is_a ? PTO_TF_PACK_A : PTO_TF_PACK_B;
      pi->imm[is_a ? 0 : 1] = (int32_t)(is_a ? mr : nr);
    }
  }
}

/* A matmul that accumulates (pto_insn_facts.acc_if: TMATMUL_ACC, and
 * TMATMUL_GB with PTO_TF_ACC) does it in place: its destination takes its
 * accumulator's buffer. That is only right when the
 * accumulator dies there, as a plain (unpacked) tile read by nothing else:
 * a window loaded once for several readers (two loads of one window share
 * one tile), a forwarded tile other units read too, or an accumulator that
 * is also this matmul's A or B. For any other accumulator a TMOV first
 * copies it into a tile of its own, which the matmul then accumulates
 * into, and every other reader keeps the value it expects. Instructions
 * move up to make room; tiles are added at the end. Returns the number of
 * copies made (pr->n_insts and n_tiles grow). */
static uint32_t copy_shared_accumulators(pto_cprog *pr, interval *iv,
                                         uint32_t *val_of_tile) {
  const int copy = pto__insn_copy();
  uint32_t n_copies = 0;
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    if (!pto__insn_accumulates(pi->op, pi->flags, pi->n_src))
      continue;
    uint32_t c = pi->src[2];
    n_copies += iv[c].end > k || c == pi->src[0] || c == pi->src[1];
  }
  if (!n_copies)
    return 0;
  for (uint32_t k = pr->n_insts, j = pr->n_insts + n_copies; k-- > 0;) {
    pto_pinst pi = pr->insts[k];
    pr->insts[--j] = pi;
    if (!pto__insn_accumulates(pi.op, pi.flags, pi.n_src))
      continue;
    uint32_t c = pi.src[2];
    if (!(iv[c].end > k || c == pi.src[0] || c == pi.src[1]))
      continue;
    uint32_t t = pr->n_tiles++;
    pr->tiles[t] = pr->tiles[c];
    val_of_tile[t] = val_of_tile[c];
    iv[t] = iv[c];
    pr->insts[j].src[2] = (uint16_t)t;
    pto_pinst *mv = &pr->insts[--j];
    memset(mv, 0, sizeof *mv);
    mv->op = copy;
    mv->n_src = mv->n_dst = 1;
    mv->src[0] = (uint16_t)c;
    mv->dst[0] = (uint16_t)t;
    mv->slot = mv->slot2 = -1;
  }
  pr->n_insts += n_copies;
  return n_copies;
}

/* The first position in live[0..n), sorted by level, then offset, then
 * tile id, whose tile does not come before (level, off, id): tile id's
 * own place, or with off and id 0 the level's first tile. */
static uint32_t live_find(const interval *iv, const uint32_t *live, uint32_t n,
                          uint8_t level, uint64_t off, uint32_t id) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    const interval *m = &iv[live[mid]];
    if (m->level != level ? m->level < level
        : m->off != off   ? m->off < off
                          : live[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Liveness-based placement, instruction by instruction: a tile dies after
 * its last use; a defined tile takes its accumulator's place (in place) or
 * the lowest offset, among 0 and the ends of the level's live tiles, that
 * overlaps none of them (first fit). live[] holds the live tiles sorted by
 * level and offset, so a fit is one pass over the level's tiles up to the
 * first that starts past it. head[k] lists, through next[], the tiles whose
 * last use is instruction k. (A scan of every live tile per instruction,
 * and passes over them until nothing moved, took 25 s to plan a fuzzed
 * program of ~2,000 live tiles.) Sets iv[].off and pr->mem[]. */
static void place_tiles(pto_cprog *pr, interval *iv, const uint32_t *acc_of,
                        uint8_t *placed, uint32_t *live, uint32_t *head,
                        uint32_t *next) {
  for (uint32_t k = 0; k < pr->n_insts; k++)
    head[k] = PTO_NONE;
  uint32_t n_live = 0;
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    for (uint32_t t = k ? head[k - 1] : PTO_NONE; t != PTO_NONE; t = next[t]) {
      const uint32_t j = live_find(iv, live, n_live, iv[t].level, iv[t].off, t);
      memmove(live + j, live + j + 1, (n_live - j - 1) * sizeof *live);
      n_live--;
    }
    for (int d = 0; d < pi->n_dst; d++) {
      const uint32_t t = pi->dst[d];
      if (placed[t])
        continue;
      placed[t] = 1;
      if (acc_of[t] != PTO_NONE) { /* in place, at its accumulator */
        const uint32_t acc = acc_of[t];
        iv[t].off = iv[acc].off;
        iv[t].size = iv[acc].size;
        iv[t].level = iv[acc].level;
        pr->tiles[t].level = iv[acc].level;
        if (iv[t].end < iv[acc].end)
          iv[t].end = iv[acc].end;
      } else {
        uint64_t off = 0;
        for (uint32_t j = live_find(iv, live, n_live, iv[t].level, 0, 0);
             j < n_live && iv[live[j]].level == iv[t].level; j++) {
          const interval *o = &iv[live[j]];
          if (o->off >= off + iv[t].size)
            break; /* it and every later one start past the fit */
          if (off < o->off + o->size)
            off = (o->off + o->size + PTO_TILE_ALIGN - 1) &
                  ~(uint64_t)(PTO_TILE_ALIGN - 1);
        }
        iv[t].off = off;
        const uint64_t top = off + iv[t].size;
        if (top > pr->mem[iv[t].level])
          pr->mem[iv[t].level] = top;
      }
      const uint32_t j = live_find(iv, live, n_live, iv[t].level, iv[t].off, t);
      memmove(live + j + 1, live + j, (n_live - j) * sizeof *live);
      live[j] = t;
      n_live++;
      next[t] = head[iv[t].end];
      head[iv[t].end] = t;
    }
  }
}

void pto__plan_shape(const pto_cprog *pr, const pto_pinst *pi, uint32_t mr,
                     pto_insn_shape *sh) {
  *sh = (pto_insn_shape){.op = pi->op,
                         .n_src = pi->n_src,
                         .n_dst = pi->n_dst,
                         .flags = pi->flags,
                         .imm = {pi->imm[0], pi->imm[1]},
                         .mr = mr};
  for (int r = 0; r < pi->n_src; r++) {
    const pto_ptile *pt = &pr->tiles[pi->src[r]];
    sh->src[r][0] = pt->vrows;
    sh->src[r][1] = pt->vcols;
    sh->sdt[r] = pt->dtype;
  }
  for (int d = 0; d < pi->n_dst; d++) {
    const pto_ptile *pt = &pr->tiles[pi->dst[d]];
    sh->dst[d][0] = pt->vrows;
    sh->dst[d][1] = pt->vcols;
    sh->ddt[d] = pt->dtype;
  }
  for (int i = 0; i < 2; i++) {
    const int32_t l = i ? pi->slot2 : pi->slot;
    if (l < 0)
      continue;
    int64_t *g = i ? sh->g2 : sh->g;
    g[0] = pr->slots[l].rows;
    g[1] = pr->slots[l].cols;
    *(i ? &sh->g2dt : &sh->gdt) = pr->slots[l].dtype;
  }
}

/* The scratch the table declares for the built-in instructions
 * (pto_insn_facts.scratch, for the active table's panels): one region at
 * the top of the program's level, as large as the largest (one instruction
 * runs at a time), given to each that needs it as a tile after its
 * destinations, with PTO_TF_SCRATCH: the kernel's pointer (core/isa.h,
 * pto__targs_scratch). Only where the level still has room: without it
 * the kernel does what it did without the heap (a smaller path, or the
 * reference), so a program that fits without its scratch still compiles. */
static void reserve_scratch(pto_cprog *pr, const pto_machine *m) {
  uint32_t mr, nr;
  pto__machine_panel(m, &mr, &nr);
  uint64_t most = 0;
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    if (pto__insn_info(pi->op)->family == PTO_FAMILY_CUSTOM)
      continue;
    pto_insn_shape sh;
    pto__plan_shape(pr, pi, mr, &sh);
    const uint64_t b = pto__insn_scratch_of(&sh);
    most = b > most ? b : most;
  }
  const pto_mem_level l = level_for(pr->core);
  const uint64_t at = (pr->mem[l] + PTO_TILE_ALIGN - 1) &
                      ~(uint64_t)(PTO_TILE_ALIGN - 1),
                 rows = (most + PTO_TILE_ALIGN - 1) / PTO_TILE_ALIGN;
  if (!most || at + rows * PTO_TILE_ALIGN > m->mem[l] ||
      pr->n_tiles >= UINT16_MAX || rows > UINT32_MAX)
    return;
  const uint32_t t = pr->n_tiles++;
  pto_ptile *pt = &pr->tiles[t]; /* rows of 64 bytes: 16 i32 */
  *pt = (pto_ptile){.dtype = PTO_I32,
                    .level = (uint8_t)l,
                    .rows = (uint32_t)rows,
                    .cols = PTO_TILE_ALIGN / 4,
                    .stride = PTO_TILE_ALIGN / 4,
                    .vrows = (uint32_t)rows,
                    .vcols = PTO_TILE_ALIGN / 4,
                    .offset = at};
  pr->mem[l] = at + rows * PTO_TILE_ALIGN;
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    pto_pinst *pi = &pr->insts[k];
    if (pto__insn_info(pi->op)->family == PTO_FAMILY_CUSTOM)
      continue;
    pto_insn_shape sh;
    pto__plan_shape(pr, pi, mr, &sh);
    if (!pto__insn_scratch_of(&sh))
      continue;
    assert(pi->n_dst < PTO_MAX_DST);
    pi->dst[pi->n_dst++] = (uint16_t)t;
    pi->flags |= PTO_TF_SCRATCH;
  }
}

/* Builds the program for sg: tiles, slots, instructions, and the liveness
 * based local-memory plan. Returns PTO_ECAPACITY (with *lvl and *need) when a
 * level overflows. */
pto_status pto__plan_program(part *s, const sgraph *sg, uint32_t *alias,
                             pto_core_type core, cbuild *b, pto_mem_level *lvl,
                             uint64_t *need) {
  const pto_tgraph *tg = s->tg;
  pto_cprog *pr = &b->prog;
  memset(pr, 0, sizeof *pr);
  pr->core = core;
  /* room for a copy before every instruction (copy_shared_accumulators) */
  pr->insts = calloc(2 * sg->n_insts + 1, sizeof *pr->insts);
  pr->tiles = calloc(3 * sg->n_insts + 1, sizeof *pr->tiles);
  pr->slots = calloc(sg->n_insts + 1, sizeof *pr->slots);
  b->slot_inst = calloc(sg->n_insts + 1, sizeof *b->slot_inst);
  b->val_of_tile = calloc(3 * sg->n_insts + 1, sizeof *b->val_of_tile);
  /* the working arrays, per tile (at most 3 per instruction) */
  const size_t nt = 3 * (size_t)sg->n_insts + 1;
  const size_t bytes = nt * (sizeof(interval) + 5 * sizeof(uint32_t) + 2);
  if (bytes > s->plan_tmp_cap) {
    free(s->plan_tmp);
    s->plan_tmp = malloc(bytes);
    s->plan_tmp_cap = s->plan_tmp ? bytes : 0;
  }
  if (!pr->insts || !pr->tiles || !pr->slots || !b->slot_inst ||
      !b->val_of_tile || !s->plan_tmp)
    return PTO_ENOMEM;
  interval *iv = s->plan_tmp;
  uint32_t *acc_of = (uint32_t *)(iv + nt); /* in place -> its accumulator */
  uint32_t *live = acc_of + nt, *def = live + nt, *dying = def + nt;
  uint8_t *placed = (uint8_t *)(dying + 2 * nt), *role = placed + nt;
  /* instructions, tiles (one per distinct value), slots */
  for (uint32_t k = 0; k < sg->n_insts; k++) {
    const pto_tinst *in = &tg->insts[sg->insts[k]];
    pto_pinst *pi = &pr->insts[pr->n_insts++];
    pi->op = in->op;
    pi->s = in->s;
    pi->st[0] = in->st[0];
    pi->st[1] = in->st[1];
    pi->it = in->it;
    pi->imm[0] = in->imm[0];
    pi->imm[1] = in->imm[1];
    pi->flags = in->flags;
    pi->slot = pi->slot2 = -1;
    pi->n_src = in->n_src;
    pi->n_dst = in->n_dst;
    if (pto__insn_info(in->op)->flags & PTO_IF_GLOBAL) {
      pto_pslot *sl = &pr->slots[pr->n_slots];
      sl->dtype = in->g.dtype;
      sl->rows = in->g.rows;
      sl->cols = in->g.cols;
      sl->rs = in->g.rs;
      sl->cs = in->g.cs;
      sl->cr = in->g.cr.d1;
      sl->cc = in->g.cc.d1;
      sl->cb[0] = in->g.cb[0].d1;
      sl->cb[1] = in->g.cb[1].d1;
      pr->clipped |= sl->cr | sl->cc | sl->cb[0] | sl->cb[1];
      b->slot_inst[pr->n_slots] = sg->insts[k];
      pi->slot = (int32_t)pr->n_slots++;
    }
    for (int r = 0; r < in->n_src + in->n_dst; r++) {
      int is_dst = r >= in->n_src;
      uint32_t v =
          resolve(s, alias, is_dst ? in->dst[r - in->n_src] : in->src[r]);
      uint32_t t = b->tile_of_val[v];
      if (t == PTO_NONE) {
        const pto_tval *tv = &tg->vals[v];
        t = pr->n_tiles++;
        b->tile_of_val[v] = t;
        pto_ptile *pt = &pr->tiles[t];
        pt->dtype = tv->dtype;
        pt->rows = tv->rows;
        pt->cols = tv->cols;
        pt->stride = pto_tile_stride(tv->dtype, tv->cols);
        pt->vrows = tv->vrows;
        pt->vcols = tv->vcols;
        pt->cr = tv->cr.d1;
        pt->cc = tv->cc.d1;
        pr->clipped |= pt->cr | pt->cc;
        b->val_of_tile[t] = v;
        pt->level = (uint8_t)level_for(core);
        iv[t] = (interval){0};
        iv[t].size = pto_tile_bytes(tv->dtype, tv->rows, tv->cols);
        iv[t].level = pt->level;
      }
      iv[t].end = k;
      if (is_dst)
        pi->dst[r - in->n_src] = (uint16_t)t;
      else
        pi->src[r] = (uint16_t)t;
    }
  }
  if (copy_shared_accumulators(pr, iv, b->val_of_tile))
    for (uint32_t k = 0; k < pr->n_insts; k++) { /* last uses moved */
      const pto_pinst *pi = &pr->insts[k];
      for (int r = 0; r < pi->n_src; r++)
        iv[pi->src[r]].end = k;
      for (int d = 0; d < pi->n_dst; d++)
        iv[pi->dst[d]].end = k;
    }
  if (pr->n_tiles > UINT16_MAX) {
    *need = pr->n_tiles;
    return PTO_ERANGE; /* reported by the caller */
  }
  /* packing sees the accumulator as a third operand, never packed */
  if (core == PTO_CORE_CUBE)
    pack_operands(pr, s->m, iv, role, def);
  /* every accumulator now dies at its matmul: the destination takes
   * its buffer (placed below) and the instruction its two operands (and
   * its row scale, moved up to the third source) */
  for (uint32_t t = 0; t < pr->n_tiles; t++) {
    acc_of[t] = PTO_NONE;
    placed[t] = 0;
  }
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    pto_pinst *pi = &pr->insts[k];
    if (pto__insn_accumulates(pi->op, pi->flags, pi->n_src)) {
      acc_of[pi->dst[0]] = pi->src[2];
      pi->src[2] = pi->src[3];
      pi->n_src--;
    }
  }
  /* a tile's level follows its use, not its definition: the operands of a
   * matmul live in L0A/L0B and its accumulator in L0C (the levels the
   * table gives its operands), even though a load defined them */
  for (uint32_t k = 0; core == PTO_CORE_CUBE && k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    for (int r = 0; r < pi->n_src; r++) {
      const pto_operand o = src_of(pi, r);
      if (o.level < PTO_MEM_LEVEL_COUNT)
        pr->tiles[pi->src[r]].level = o.level;
    }
    for (int d = 0; d < pi->n_dst; d++) {
      const pto_operand o = dst_of(pi, d);
      if (o.level < PTO_MEM_LEVEL_COUNT)
        pr->tiles[pi->dst[d]].level = o.level;
    }
  }
  for (uint32_t t = 0; t < pr->n_tiles; t++)
    iv[t].level = pr->tiles[t].level;
  place_tiles(pr, iv, acc_of, placed, live, dying, dying + nt);
  pto_status st = PTO_OK;
  for (uint32_t t = 0; t < pr->n_tiles; t++)
    pr->tiles[t].offset = iv[t].off;
  /* custom instructions may need scratch beyond their operands */
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const pto_insn_info *info = pto__insn_info(pr->insts[k].op);
    if (info->family != PTO_FAMILY_CUSTOM)
      continue;
    pto_insn_shape sh = {.op = pr->insts[k].op};
    pr->mem[level_for(core)] += pto__insn_scratch_of(&sh);
  }
  reserve_scratch(pr, s->m);
  for (int l = 0; st == PTO_OK && l < PTO_MEM_LEVEL_COUNT; l++)
    if (pr->mem[l] > s->m->mem[l]) {
      *lvl = (pto_mem_level)l;
      *need = pr->mem[l];
      st = PTO_ECAPACITY;
    }
  /* resolve entry points */
  const pto_isa_table *isa = pto__isa_active();
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const int op = pr->insts[k].op;
    pr->insts[k].fn = pto__insn_info(op)->family == PTO_FAMILY_CUSTOM
                          ? pto__tileop_run
                          : isa->fn[op];
  }
  return st;
}

void pto__plan_free(cbuild *b) {
  free(b->prog.insts);
  free(b->prog.tiles);
  free(b->prog.slots);
  free(b->slot_inst);
  free(b->val_of_tile);
}

/* Canonical bytes of a program: everything but where its tiles are. */
size_t pto__plan_canon(const pto_cprog *pr, unsigned char *buf) {
  size_t n = 0;
#define PUT(x)                                                                 \
  do {                                                                         \
    if (buf)                                                                   \
      memcpy(buf + n, &(x), sizeof(x));                                        \
    n += sizeof(x);                                                            \
  } while (0)
  PUT(pr->core);
  PUT(pr->n_insts);
  PUT(pr->n_tiles);
  PUT(pr->n_slots);
  for (uint32_t k = 0; k < pr->n_insts; k++) {
    const pto_pinst *pi = &pr->insts[k];
    PUT(pi->op);
    PUT(pi->n_src);
    PUT(pi->n_dst);
    PUT(pi->src);
    PUT(pi->dst);
    PUT(pi->slot);
    PUT(pi->slot2);
    PUT(pi->s);
    for (int j = 0; j < 2; j++) { /* field by field: no padding bytes */
      PUT(pi->st[j].r.dim);
      PUT(pi->st[j].r.off);
      PUT(pi->st[j].r.mul);
      PUT(pi->st[j].len);
      PUT(pi->st[j].base);
      PUT(pi->st[j].sign);
      PUT(pi->st[j].recip);
    }
    PUT(pi->it.r.dim);
    PUT(pi->it.r.off);
    PUT(pi->it.r.mul);
    PUT(pi->it.len);
    PUT(pi->it.base);
    PUT(pi->it.sign);
    PUT(pi->imm);
    PUT(pi->flags);
  }
  for (uint32_t t = 0; t < pr->n_tiles; t++) {
    const pto_ptile *pt = &pr->tiles[t];
    PUT(pt->dtype);
    PUT(pt->level);
    PUT(pt->rows);
    PUT(pt->cols);
    PUT(pt->vrows);
    PUT(pt->vcols);
    PUT(pt->offset);
    PUT(pt->cr);
    PUT(pt->cc);
  }
  for (uint32_t l = 0; l < pr->n_slots; l++) {
    const pto_pslot *sl = &pr->slots[l];
    PUT(sl->dtype);
    PUT(sl->rows);
    PUT(sl->cols);
    PUT(sl->rs);
    PUT(sl->cs);
    PUT(sl->cr);
    PUT(sl->cc);
    PUT(sl->cb);
  }
#undef PUT
  return n;
}
