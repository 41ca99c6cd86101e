/* tileops/sort_kernels.h (internal): TSORT32 and TMRGSORT (core/isa.def)
 * over the vector primitives of tileops/vec_kernels.h, the 64-bit sort
 * keys (KL, vk, vp, kb) among them. Included by tileops/vec_avx2.c and
 * tileops/vec_avx512.c right after vec_kernels.h, so it is compiled only
 * with that file's ISA flags; nothing here names an intrinsic. Defines
 * sort_install(), which overrides the two entries.
 *
 * Both sort (value, index) pairs by one unsigned 64-bit key: the value's
 * class in the high half (descending value, -0 == +0, every NaN after every
 * number) and the index (ascending) in the low half. Keys never reach
 * SENTINEL, which pads short vectors. Equal keys (equal values with equal
 * indices) are the only ties; both instructions keep those in input order. */
#ifndef PTO_TILEOPS_SORT_KERNELS_H
#define PTO_TILEOPS_SORT_KERNELS_H

#define SENTINEL UINT64_MAX

static inline uint64_t sort_key(float v, int32_t ix) {
  uint32_t u = pto__f32_bits(v), hi;
  if (isnan(v)) {
    hi = 0xfffffffeu;
  } else {
    if (u == 0x80000000u) /* -0 sorts as +0 */
      u = 0;
    /* u as an order-preserving unsigned (negatives flipped), inverted so
     * that larger values come first: at most 0xff800000 (-inf). */
    hi = ~(u & 0x80000000u ? ~u : u | 0x80000000u);
  }
  return (uint64_t)hi << 32 | ((uint32_t)ix ^ 0x80000000u);
}

/* TSORT32: each block of up to 32 is placed by rank: element i goes to the
 * number of elements whose key is smaller, or equal and earlier. KL keys
 * per compare, 32 / KL compares per element. */
static int vec_TSORT32(int op, const pto_targs *a) {
  (void)op;
  const pto_tile *sv = a->src[0], *si = a->src[1];
  pto_tile *dv = a->dst[0], *di = a->dst[1];
  const uint32_t vr = dv->valid_rows, vc = dv->valid_cols;
  for (uint32_t r = 0; r < vr; r++) {
    const float *sp = row_of(sv, r);
    const int32_t *xp = row_of(si, r);
    float *restrict ov = row_of(dv, r);
    int32_t *restrict ox = row_of(di, r);
    for (uint32_t b = 0; b < vc; b += 32) {
      const uint32_t n = vc - b < 32 ? vc - b : 32;
      uint64_t key[32];
      float v[32];
      int32_t x[32];
      for (uint32_t k = 0; k < 32; k++) { /* read the block before writing */
        v[k] = k < n ? sp[b + k] : 0.0f;
        x[k] = k < n ? xp[b + k] : 0;
        key[k] = k < n ? sort_key(v[k], x[k]) : SENTINEL;
      }
      uint32_t rank[32];
      for (uint32_t i = 0; i < n; i++) {
        const vk ki = vk_set(key[i]);
        unsigned cnt = 0;
        for (uint32_t j = 0; j < 32; j += KL) {
          const uint32_t before = i > j ? (i - j < KL ? i - j : KL) : 0;
          const vk kj = vk_ld(key + j);
          cnt += kb_count(
              kb_or(vk_lt(kj, ki), kb_and(vk_eq(kj, ki), kfirst(before))));
        }
        rank[i] = cnt;
      }
      for (uint32_t i = 0; i < n; i++) {
        ov[b + rank[i]] = v[i];
        ox[b + rank[i]] = x[i];
      }
    }
  }
  return PTO_OK;
}

/* TMRGSORT merges with bitonic networks over KL-key vectors, streaming
 * (Chhugani et al., VLDB 2008): a merger holds the KL largest keys seen so
 * far; each step merges them with the next KL keys of whichever input has
 * the smaller head, emits the KL smallest and keeps the rest. 3 and 4 ways
 * are a tree of 2-way mergers. Payloads are column positions, so values and
 * indices are copied bit for bit. A group whose merged keys hold a tie is
 * merged again by the scalar algorithm, which orders ties as the
 * reference does. */

/* Compare-exchange of lanes l and l ^ D: the lower lane takes the smaller. */
#define MERGE_STAGE(k, p, D)                                                   \
  do {                                                                         \
    const vk s_ = vk_swap(k, D);                                               \
    const vp q_ = vp_swap(p, D);                                               \
    const kb keep_ = kb_or(kb_and(vk_le(k, s_), kb_low(D)),                    \
                           kb_andnot(kb_low(D), vk_ge(k, s_)));                \
    k = vk_blend(keep_, s_, k);                                                \
    p = vp_blend(keep_, q_, p);                                                \
  } while (0)

/* Sorts a bitonic sequence of KL keys. */
ALWAYS_INLINE void bitonic_clean(vk *k, vp *p) {
  vk kk = *k;
  vp pp = *p;
#if KL == 8
  MERGE_STAGE(kk, pp, 4);
#endif
  MERGE_STAGE(kk, pp, 2);
  MERGE_STAGE(kk, pp, 1);
  *k = kk;
  *p = pp;
}

/* a and b ascending -> lo (KL smallest, ascending), hi (the rest). */
ALWAYS_INLINE void merge2(vk a, vp pa, vk b, vp pb, vk *lo, vp *plo, vk *hi,
                          vp *phi) {
  b = vk_rev(b);
  pb = vp_rev(pb);
  const kb m = vk_le(a, b);
  vk l = vk_blend(m, b, a), h = vk_blend(m, a, b);
  vp pl = vp_blend(m, pb, pa), ph = vp_blend(m, pa, pb);
  bitonic_clean(&l, &pl);
  bitonic_clean(&h, &ph);
  *lo = l;
  *plo = pl;
  *hi = h;
  *phi = ph;
}

/* A stream of ascending keys, KL at a time, padded with SENTINEL forever:
 * a run of the source row (leaf) or a merger of two streams. blk is the
 * next block, computed ahead so that head (its first key) can be compared. */
typedef struct kstream {
  vk blk, hi;
  vp pos, phi;
  uint64_t head;
  const float *v; /* leaf: the row, and the run's columns [at, end) */
  const int32_t *x;
  uint32_t at, end;
  struct kstream *a, *b; /* merger */
} kstream;

static void ks_next(kstream *s) {
  if (!s->a) { /* leaf */
    uint64_t key[KL];
    uint32_t pos[KL];
    for (uint32_t l = 0; l < KL; l++) {
      const uint32_t c = s->at + l;
      key[l] = c < s->end ? sort_key(s->v[c], s->x[c]) : SENTINEL;
      pos[l] = c;
    }
    s->at = s->at + KL < s->end ? s->at + KL : s->end;
    s->blk = vk_ld(key);
    s->pos = vp_ld(pos);
    s->head = key[0];
    return;
  }
  kstream *in = s->a->head <= s->b->head ? s->a : s->b;
  vk lo;
  vp plo;
  merge2(in->blk, in->pos, s->hi, s->phi, &lo, &plo, &s->hi, &s->phi);
  ks_next(in);
  s->blk = lo;
  s->pos = plo;
  s->head = vk_first(lo);
}

static void ks_leaf(kstream *s, const float *v, const int32_t *x, uint32_t at,
                    uint32_t end) {
  memset(s, 0, sizeof *s);
  s->v = v;
  s->x = x;
  s->at = at;
  s->end = end;
  ks_next(s);
}

static void ks_merger(kstream *s, kstream *a, kstream *b) {
  memset(s, 0, sizeof *s);
  s->a = a;
  s->b = b;
  vk lo;
  vp plo;
  merge2(a->blk, a->pos, b->blk, b->pos, &lo, &plo, &s->hi, &s->phi);
  ks_next(a);
  ks_next(b);
  s->blk = lo;
  s->pos = plo;
  s->head = vk_first(lo);
}

/* The reference's merge of one group, for groups with tied keys: take the
 * best head; on a tie the earlier run. */
static void merge_scalar(const float *v, const int32_t *x, float *ov,
                         int32_t *ox, uint32_t g0, uint32_t run, uint32_t ways,
                         uint32_t vc) {
  uint32_t head[4], end[4];
  for (uint32_t k = 0; k < ways; k++) {
    const uint64_t lo = (uint64_t)g0 + (uint64_t)k * run, hi = lo + run;
    head[k] = (uint32_t)(lo < vc ? lo : vc);
    end[k] = (uint32_t)(hi < vc ? hi : vc);
  }
  for (uint32_t out = g0;; out++) {
    int best = -1;
    uint64_t bk = 0;
    for (uint32_t k = 0; k < ways; k++)
      if (head[k] < end[k]) {
        const uint64_t kk = sort_key(v[head[k]], x[head[k]]);
        if (best < 0 || kk < bk) {
          best = (int)k;
          bk = kk;
        }
      }
    if (best < 0)
      return;
    ov[out] = v[head[best]];
    ox[out] = x[head[best]];
    head[best]++;
  }
}

static int vec_TMRGSORT(int op, const pto_targs *a) {
  (void)op;
  const pto_tile *sv = a->src[0], *si = a->src[1];
  pto_tile *dv = a->dst[0], *di = a->dst[1];
  const uint32_t vr = dv->valid_rows, vc = dv->valid_cols;
  const uint32_t ways = (uint32_t)a->imm[1];
  const uint64_t run = (uint64_t)a->imm[0], group = run * ways;
  for (uint32_t r = 0; r < vr; r++) {
    const float *v = row_of(sv, r);
    const int32_t *x = row_of(si, r);
    float *restrict ov = row_of(dv, r);
    int32_t *restrict ox = row_of(di, r);
    for (uint64_t g0 = 0; g0 < vc; g0 += group) {
      const uint32_t n = (uint32_t)(vc - g0 < group ? vc - g0 : group);
      kstream leaf[4], mid[3], *top;
      for (uint32_t k = 0; k < ways; k++) {
        const uint64_t lo = g0 + k * run, hi = lo + run;
        ks_leaf(&leaf[k], v, x, (uint32_t)(lo < vc ? lo : vc),
                (uint32_t)(hi < vc ? hi : vc));
      }
      if (ways == 2) {
        ks_merger(&mid[0], &leaf[0], &leaf[1]);
        top = &mid[0];
      } else {
        ks_merger(&mid[0], &leaf[0], &leaf[1]);
        if (ways == 4)
          ks_merger(&mid[1], &leaf[2], &leaf[3]);
        ks_merger(&mid[2], &mid[0], ways == 4 ? &mid[1] : &leaf[2]);
        top = &mid[2];
      }
      uint64_t prev = 0;
      int tie = 0;
      for (uint32_t done = 0; done < n; done += KL) {
        uint64_t key[KL];
        uint32_t pos[KL];
        vk_st(key, top->blk);
        vp_st(pos, top->pos);
        const uint32_t m = n - done < KL ? n - done : KL;
        for (uint32_t l = 0; l < m; l++) {
          tie |= (done + l > 0) & (key[l] == prev);
          prev = key[l];
          ov[g0 + done + l] = v[pos[l]];
          ox[g0 + done + l] = x[pos[l]];
        }
        if (done + KL < n)
          ks_next(top);
      }
      if (tie)
        merge_scalar(v, x, ov, ox, (uint32_t)g0, (uint32_t)run, ways, vc);
    }
  }
  return PTO_OK;
}

static void sort_install(pto_isa_table *t) {
  t->fn[PTO_OP_TSORT32] = vec_TSORT32;
  t->fn[PTO_OP_TMRGSORT] = vec_TMRGSORT;
}

#endif /* PTO_TILEOPS_SORT_KERNELS_H */
