/* tileops/topk_kernels.h (internal): TTOPK and TMRGTOPK (core/isa.def)
 * over the vector primitives of tileops/vec_kernels.h. Included by
 * tileops/vec_avx2.c and tileops/vec_avx512.c right after vec_kernels.h,
 * so it is compiled only with that file's ISA flags; nothing here names an
 * intrinsic. Defines topk_install(), which overrides the two entries.
 *
 * Both rank by one signed 32-bit key per value (topk_key): larger keys
 * rank first, and equal keys tie on the index. TTOPK (topk_row) never sorts
 * a row: a threshold from a sample of the row's vectors lets one pass of
 * vector compares collect the few candidates that reach it (about k plus
 * 3 sigma), and an MSD radix sort orders just the first k of them, stably
 * (ties stay in column, hence index, order). Rows the sample cannot serve
 * fall back to collecting a short row whole, or to an exact radix select
 * (byte histograms of the whole row). TMRGTOPK merges the heads of its
 * runs by 64-bit keys (value key, then index). Results are the
 * reference's bit for bit. Stack: about 100 KiB (TTOPK's buffers). */
#ifndef PTO_TILEOPS_TOPK_KERNELS_H
#define PTO_TILEOPS_TOPK_KERNELS_H

/* Keys: a value's f32 bits (of v + 0, so -0 is +0) with the magnitude bits
 * flipped for negatives is a signed integer in the value order; -inf is
 * 0x807fffff. Below it: NaN, and below NaN the masked mode's -inf (an
 * excluded entry). */
#define KEY_EXCL INT32_MIN
#define KEY_NAN (INT32_MIN + 1)
#define KEY_SIGN ((int32_t)0x80000000u) /* key ^ KEY_SIGN: unsigned order */

static inline int32_t topk_key(float v, int masked) {
  if (isnan(v))
    return KEY_NAN;
  if (masked && v == -INFINITY)
    return KEY_EXCL;
  const uint32_t u = pto__f32_bits(v + 0.0f);
  return (int32_t)(u ^ ((uint32_t)((int32_t)u >> 31) >> 1));
}

ALWAYS_INLINE vi vi_xor_(vi a, vi b) {
  return vf_bits(vf_xor(vi_bits(a), vi_bits(b)));
}

/* topk_key of each lane of x. */
ALWAYS_INLINE vi topk_keyv(vf x, int masked) {
  const vi u = vf_bits(vf_add(x, vf_set(0.0f)));
  vi k = vi_xor_(u, vi_srli(vi_srai(u, 31), 1));
  k = vi_blend(vf_cmp(x, x, _CMP_UNORD_Q), k, vi_set(KEY_NAN));
  if (masked)
    k = vi_blend(vf_cmp(x, vf_set(-INFINITY), _CMP_EQ_OQ), k, vi_set(KEY_EXCL));
  return k;
}

/* The keys of the row, a vector at a time: k for columns [c, c + n). */
#define FOR_KEYS(xp, vc, masked, c, n, k, BODY)                                \
  for (uint32_t c = 0; c < (vc); c += VL) {                                    \
    const uint32_t n = (vc)-c < VL ? (vc)-c : VL;                              \
    const vi k = topk_keyv(ldf((xp) + c, n), masked);                          \
    BODY                                                                       \
  }

/* The histograms below count each lane l of a vector into copy l % 4 of
 * the bins and sum the copies at the end: a row's keys mostly share their
 * top bytes (one exponent), and a single copy made every increment wait
 * for the last one's store (TTOPK on 70000 keys, k = 4000, where these
 * run, best of 30 in turns on Zen 3: the top byte's pass 57-67 against
 * 83-89 us, the next three 111-154 against 254-272). */
#define TOPK_HISTS 4

/* Histogram of the top byte of every key (unsigned order) that is not
 * excluded; returns how many are not. */
static uint32_t topk_hist_top(const float *xp, uint32_t vc, int masked,
                              uint32_t hist[256], pto_pf *pf) {
  uint32_t h[TOPK_HISTS][257]; /* [256]: excluded entries */
  memset(h, 0, sizeof h);
  int32_t b[VL];
  FOR_KEYS(xp, vc, masked, c, n, k, {
    vi bin = vi_srli(vi_xor_(k, vi_set(KEY_SIGN)), 24);
    if (masked)
      bin = vi_blend(vi_eq(k, vi_set(KEY_EXCL)), bin, vi_set(256));
    vi_st(b, bin);
    for (uint32_t l = 0; l < n; l++)
      h[l % TOPK_HISTS][b[l]]++;
    if (c % (2 * VL) == 0)
      pto__pf_tick(pf);
  })
  for (int d = 0; d < 257; d++)
    for (int j = 1; j < TOPK_HISTS; j++)
      h[0][d] += h[j][d];
  memcpy(hist, h[0], 256 * sizeof *hist);
  return vc - h[0][256];
}

/* Histogram of byte `shift / 8` of the keys (unsigned order) whose bytes
 * above it are `prefix`; shift is 16, 8 or 0. */
static void topk_hist_next(const float *xp, uint32_t vc, int masked,
                           uint32_t prefix, int shift, uint32_t hist[256]) {
  const vi above = vi_set((int32_t)(~0u << (shift + 8)));
  const vi want = vi_set((int32_t)(prefix << (shift + 8)));
  uint32_t h[TOPK_HISTS][256];
  memset(h, 0, sizeof h);
  int32_t u[VL], in[VL];
  FOR_KEYS(xp, vc, masked, c, n, k, {
    const vi uk = vi_xor_(k, vi_set(KEY_SIGN));
    vb m = vi_eq(vi_and(uk, above), want);
    if (masked)
      m = vb_and(m, vb_not(vi_eq(k, vi_set(KEY_EXCL))));
    if (!vb_any(m))
      continue;
    vi_st(u, uk);
    vi_st(in, vb_01(m));
    for (uint32_t l = 0; l < n; l++) /* 0 or 1: no branch per lane */
      h[l % TOPK_HISTS][((uint32_t)u[l] >> shift) & 255] += (uint32_t)in[l];
  })
  for (int d = 0; d < 256; d++)
    hist[d] = h[0][d] + h[1][d] + h[2][d] + h[3][d];
}

/* The digit holding the rem-th largest key of a histogram, and how many
 * of that digit's keys rank among them (in *rem). */
static uint32_t topk_digit(const uint32_t hist[256], uint32_t *rem) {
  uint32_t d = 255;
  for (; d > 0 && hist[d] < *rem; d--)
    *rem -= hist[d];
  return d;
}

/* Sort keys: the key inverted as an unsigned, so ascending sort keys rank
 * first (an excluded entry's is UINT32_MAX). */
static inline uint32_t topk_sk(int32_t k) {
  return ~((uint32_t)k ^ 0x80000000u);
}
/* topk_sk of each lane of k. */
ALWAYS_INLINE vi topk_skv(vi k) {
  return vi_xor_(k, vi_set(0x7fffffff));
}
static inline int32_t topk_sk_key(uint32_t sk) {
  return (int32_t)(~sk ^ 0x80000000u);
}

/* The f32 value whose key is k, for a key of a number (not NaN, not
 * excluded): keys of numbers compare as their values do. */
static inline float topk_key_value(int32_t k) {
  const uint32_t u = (uint32_t)k;
  return pto__f32_from_bits(u ^ ((uint32_t)(k >> 31) >> 1));
}

/* Appends (sort key, column) of the row's keys above ts and of the first
 * `need` keys equal to ts (UINT32_MAX: every one), in column order: with
 * every equal key kept and vi_compress at hand, a vector's hits moved
 * down together (on Zen 3, the indexer's score rows of 8192 with ~1100
 * hits: 4 against 7-12 us a row, the loop over the hits' bits having
 * mispredicted its exit about once a vector); else a set bit of the hits
 * at a time. More than cap: stops, returning cap + 1. *n_valid, when not
 * NULL, gets the entries not excluded. When ts is a number's key, a
 * vector's hits are one compare of its values (x >= the value of ts: -0
 * == +0 and NaN fails, as the keys rank), and only hits get a key. */
static uint32_t topk_collect(const float *xp, uint32_t vc, int masked,
                             int32_t ts, uint32_t need, uint32_t cap,
                             uint32_t *K, int32_t *C, uint32_t *n_valid) {
  const float tf = topk_key_value(ts);
  const int by_value = ts > KEY_NAN && !(masked && tf == -INFINITY);
  const vf tv = vf_set(tf), ninf = vf_set(-INFINITY);
  const vi t = vi_set(ts), excl = vi_set(KEY_EXCL);
  uint32_t m = 0, nv = 0;
  int32_t kk[VL];
#ifdef VI_COMPRESS
  _Alignas(64) int32_t lane[VL];
  for (int l = 0; l < VL; l++)
    lane[l] = l;
  const vi iota = vi_ld(lane);
#endif
  for (uint32_t c = 0; c < vc; c += VL) {
    const uint32_t n = vc - c < VL ? vc - c : VL;
    const unsigned lanes = (1u << n) - 1;
    const vf x = ldf(xp + c, n);
    unsigned hit, ties; /* keys >= ts, and == ts */
    if (by_value) {
      hit = vb_bits(vf_cmp(x, tv, _CMP_GE_OQ)) & lanes;
      ties = need == UINT32_MAX ? 0 : vb_bits(vf_cmp(x, tv, _CMP_EQ_OQ)) & hit;
      if (n_valid)
        nv += (uint32_t)__builtin_popcount(
            vb_bits(vf_cmp(x, ninf, _CMP_NEQ_UQ)) & lanes);
    } else {
      const vi k = topk_keyv(x, masked);
      hit = vb_bits(vb_or(vi_gt(k, t), vi_eq(k, t))) & lanes;
      ties = need == UINT32_MAX ? 0 : vb_bits(vi_eq(k, t)) & hit;
      if (n_valid)
        nv += (uint32_t)__builtin_popcount(vb_bits(vi_gt(k, excl)) & lanes);
      vi_st(kk, k);
    }
    /* every hit kept (all ties are, or the vector has none): no key
     * tested (the exact selection of 4000 of 70000 keys, the bits of its
     * ~0.5 hits a vector looped over before: 33-66 against 60-78 us) */
    if (!ties) {
      const uint32_t nh = (uint32_t)__builtin_popcount(hit);
      if (m + nh > cap)
        return cap + 1;
      const vi sk = topk_skv(by_value ? topk_keyv(x, masked) : vi_ld(kk));
#ifdef VI_COMPRESS
      /* with room for a whole vector: no branch on the hits' lanes (a
       * mispredicted loop exit per vector was most of the pass) */
      if (m + VL <= cap) {
        vi_st((int32_t *)K + m, vi_compress(sk, hit));
        vi_st(C + m, vi_compress(vi_add(vi_set((int32_t)c), iota), hit));
        m += nh;
        continue;
      }
#endif
      vi_st(kk, sk);
      for (; hit; hit &= hit - 1) {
        const unsigned l = (unsigned)__builtin_ctz(hit);
        K[m] = (uint32_t)kk[l];
        C[m++] = (int32_t)(c + l);
      }
      continue;
    }
    for (; hit; hit &= hit - 1) {
      const unsigned l = (unsigned)__builtin_ctz(hit);
      const int32_t k = by_value ? topk_key(xp[c + l], masked) : kk[l];
      if (k == ts && !(need && need--))
        continue;
      if (m == cap)
        return cap + 1;
      K[m] = topk_sk(k);
      C[m++] = (int32_t)(c + l);
    }
  }
  if (n_valid)
    *n_valid = nv;
  return m;
}

/* The rank-th least of n sort keys (1 <= rank <= n), one byte at a time:
 * a histogram of the keys' top bytes, then of the next byte of the keys in
 * the bucket that holds it, compacted into tmp (n entries) so that each
 * pass reads only that bucket. *eq gets how many keys equal to it rank
 * within `rank`, or UINT32_MAX when every key up to it does (a pass found
 * its whole bucket inside). */
static uint32_t topk_kth(const uint32_t *sk, uint32_t n, uint32_t rank,
                         uint32_t *tmp, uint32_t *eq) {
  uint32_t prefix = 0, rem = rank, hist[256];
  const uint32_t *in = sk;
  for (int shift = 24; shift >= 0; shift -= 8) {
    memset(hist, 0, sizeof hist);
    for (uint32_t i = 0; i < n; i++)
      hist[(in[i] >> shift) & 255]++;
    uint32_t d = 0;
    for (; d < 255 && hist[d] < rem; d++)
      rem -= hist[d];
    prefix = prefix << 8 | d;
    if (hist[d] == rem) { /* the whole bucket: up to its largest key */
      *eq = UINT32_MAX;
      return shift ? (prefix << shift) | ((1u << shift) - 1) : prefix;
    }
    if (shift) { /* keep the bucket, branch-free */
      uint32_t m = 0;
      for (uint32_t i = 0; i < n; i++) {
        tmp[m] = in[i];
        m += ((in[i] >> shift) & 255) == d;
      }
      in = tmp;
      n = m;
    }
  }
  *eq = rem;
  return prefix;
}

/* Pairs of the stack buffer a row's candidates are collected in. */
#define TOPK_BUF PTO_TOPK_BUF
/* Most keys a row's sample takes. */
#define TOPK_SAMPLE_MAX 2048u

/* How many of vc keys reach the threshold of a sample of S: the sample's
 * j-th best, j = the expected count e of top-kk keys in it plus 3 sigma
 * (binomial, about sqrt(e)) plus 4, scaled back to the row. */
static uint64_t topk_sample_reach(uint32_t vc, uint32_t kk, uint64_t S,
                                  uint64_t *j) {
  const uint64_t e = (uint64_t)kk * S / vc;
  uint64_t sd = 0;
  while ((sd + 1) * (sd + 1) <= e)
    sd++;
  *j = e + 3 * sd + 4;
  return *j * vc / S;
}

/* A key threshold that about kk + 3 sigma + 4 of the row's keys reach,
 * from a sample of evenly spaced vectors (at most a quarter of the row,
 * grown until the expected candidates fill at most 5/8 of the buffer), or
 * KEY_EXCL when the row is short, the selection large or the sample holds
 * too few entries not excluded. A wrong guess costs time, never results:
 * topk_row counts what the threshold collects. */
static int32_t topk_sample(const float *xp, uint32_t vc, uint32_t kk,
                           int masked) {
  const uint32_t nvec = vc / VL;
  if (nvec < 32)
    return KEY_EXCL;
  uint32_t ns = nvec / 4 < 16 ? nvec / 4 : 16;
  uint64_t j, reach = topk_sample_reach(vc, kk, (uint64_t)ns * VL, &j);
  while (reach > TOPK_BUF * 5 / 8 && 2 * ns <= nvec / 4 &&
         2 * ns * VL <= TOPK_SAMPLE_MAX) {
    ns *= 2;
    reach = topk_sample_reach(vc, kk, (uint64_t)ns * VL, &j);
  }
  const uint32_t S = ns * VL;
  if (j >= S || reach > TOPK_BUF * 3 / 4)
    return KEY_EXCL;
  uint32_t sk[TOPK_SAMPLE_MAX], tmp[TOPK_SAMPLE_MAX];
  for (uint32_t v = 0; v < ns; v++) {
    const vi k =
        topk_keyv(vf_ld(xp + (size_t)((uint64_t)v * nvec / ns) * VL), masked);
    vi_st((int32_t *)(sk + v * VL), topk_skv(k));
  }
  uint32_t eq;
  const uint32_t t = topk_kth(sk, S, (uint32_t)j, tmp, &eq);
  return t == UINT32_MAX ? KEY_EXCL : topk_sk_key(t);
}

/* (K, C) pairs in place by (K, C) ascending: the sort for more pairs than
 * topk_row's buffers hold. Heapsort: no buffer. */
static int topk_pair_less(const uint32_t *K, const int32_t *C, uint32_t i,
                          uint32_t j) {
  return K[i] != K[j] ? K[i] < K[j] : C[i] < C[j];
}
static void topk_heap_sort(uint32_t *K, int32_t *C, uint32_t m) {
  for (uint32_t end = m, start = m / 2;;) {
    uint32_t root;
    if (start > 0) {
      root = --start;
    } else {
      if (end <= 1)
        return;
      end--;
      const uint32_t tk = K[0];
      const int32_t tc = C[0];
      K[0] = K[end];
      C[0] = C[end];
      K[end] = tk;
      C[end] = tc;
      root = 0;
    }
    for (uint32_t child; (child = 2 * root + 1) < end; root = child) {
      if (child + 1 < end && topk_pair_less(K, C, child, child + 1))
        child++;
      if (!topk_pair_less(K, C, root, child))
        break;
      const uint32_t tk = K[root];
      const int32_t tc = C[root];
      K[root] = K[child];
      C[root] = C[child];
      K[child] = tk;
      C[child] = tc;
    }
  }
}

/* Most entries topk_msd orders: its bucket offsets are 16-bit. */
#define TOPK_MSD_MAX PTO_TOPK_MSD_MAX
/* Buckets per pass of topk_msd: 2^11. */
#define TOPK_BUCKET_BITS 11
/* Ranges this short are insertion-sorted. */
#define TOPK_LEAF 32

/* Insertion sort of n entries in place: stable, O(n + inversions). */
static void topk_insertion(uint32_t *bk, int32_t *bc, uint32_t n) {
  for (uint32_t i = 1; i < n; i++) {
    const uint32_t k = bk[i];
    if (bk[i - 1] <= k)
      continue;
    const int32_t c = bc[i];
    uint32_t j = i;
    for (; j > 0 && bk[j - 1] > k; j--) {
      bk[j] = bk[j - 1];
      bc[j] = bc[j - 1];
    }
    bk[j] = k;
    bc[j] = c;
  }
}

/* Orders n (key, column) entries b in place, by key ascending and stably
 * (equal keys keep their order), where only the first `need` positions
 * must be right (1 <= need <= n <= TOPK_MSD_MAX); s is scratch of n
 * entries.
 * MSD radix: the keys minus the least, in about n / 2 buckets (at most
 * 2^11) by their top bits; every entry is scattered to s (a test per
 * entry for the buckets past `need` mispredicted: 6.5-9 against 11-13 us
 * for the indexer's 1100 candidates) and those of the buckets that start
 * before `need` copied back; each
 * bucket of more than TOPK_LEAF entries is ordered the same way, and one
 * insertion sort over them all then orders the short buckets (it moves an
 * entry only within its bucket). A range of equal keys is in order. A
 * level takes at least 4 bits of the keys' spread, 8 KiB of stack. What
 * lies past the first `need` positions is undefined. */
static void topk_msd(uint32_t *bk, int32_t *bc, uint32_t *sk, int32_t *sc,
                     uint32_t n, uint32_t need) {
  uint32_t lo = UINT32_MAX, hi = 0;
  for (uint32_t i = 0; i < n; i++) {
    lo = bk[i] < lo ? bk[i] : lo;
    hi = bk[i] > hi ? bk[i] : hi;
  }
  if (lo == hi)
    return;
  if (n <= TOPK_LEAF) {
    topk_insertion(bk, bc, n);
    return;
  }
  const int log2n = 32 - __builtin_clz(n - 1);
  const int want = log2n - 1 < TOPK_BUCKET_BITS ? log2n - 1 : TOPK_BUCKET_BITS;
  const int bits = 32 - __builtin_clz(hi - lo);
  const int shift = bits > want ? bits - want : 0;
  const uint32_t nb = ((hi - lo) >> shift) + 1;
  uint16_t at[1u << TOPK_BUCKET_BITS], len[1u << TOPK_BUCKET_BITS];
  memset(len, 0, nb * sizeof *len);
  for (uint32_t i = 0; i < n; i++)
    len[(bk[i] - lo) >> shift]++;
  uint32_t last = 0, e = 0; /* buckets [0, last] start before need */
  for (uint32_t b = 0, f = 0; b < nb; b++) {
    at[b] = (uint16_t)f;
    f += len[b];
    if (e < need) {
      e = f;
      last = b;
    }
  }
  for (uint32_t i = 0; i < n; i++) { /* every entry: no branch per entry */
    const uint32_t q = at[(bk[i] - lo) >> shift]++;
    sk[q] = bk[i];
    sc[q] = bc[i];
  }
  memcpy(bk, sk, e * sizeof *bk);
  memcpy(bc, sc, e * sizeof *bc);
  for (uint32_t b = 0; b <= last; b++)
    if (len[b] > TOPK_LEAF) {
      const uint32_t s0 = at[b] - len[b]; /* at[b]: its end now */
      topk_msd(bk + s0, bc + s0, sk + s0, sc + s0, len[b],
               need - s0 < len[b] ? need - s0 : len[b]);
    }
  /* a last bucket ordered above holds only its first need - start right */
  topk_insertion(bk, bc, len[last] > TOPK_LEAF ? need : e);
}

/* m (K, C) pairs (more than topk_row's buffers hold) in place by (K, C)
 * ascending: topk_msd with its second buffer in scr, the instruction's
 * scratch (8 bytes a pair kept: core/isa.c, topk_scratch; the pairs are
 * collected in column order, so its stable order is (K, C)'s), or heapsort
 * beyond TOPK_MSD_MAX or without scratch (NULL). With heapsort alone, the
 * 9000 best of 70000 keys took 1.2 ms a row in pto-bench indexer, 0.63 ms
 * with topk_msd. */
static void topk_sort_many(uint32_t *K, int32_t *C, uint32_t m, void *scr) {
  if (scr && m <= TOPK_MSD_MAX) {
    uint32_t *sk = scr;
    topk_msd(K, C, sk, (int32_t *)(void *)(sk + m), m, m);
  } else {
    topk_heap_sort(K, C, m);
  }
}

/* One row of TTOPK: the row xp[0..vc) into dv[0..kk), di[0..kk). The
 * candidates go to a stack buffer A in column order:
 *  - sampled: those that reach a sampled threshold (one vector pass);
 *  - a short row (at most TOPK_BUF) the sample does not serve: all of it;
 *  - else exactly the m best, the m-th key found by histograms of the
 *    whole row (topk_hist_top, topk_hist_next: up to five passes).
 * topk_msd orders the first m of them (with buffer B) and they are
 * written out. More than TOPK_BUF kept: collected into the
 * destination rows (sort keys in dv's bytes, columns in di) and
 * heap-sorted. Stack: two buffers of TOPK_BUF pairs, 64 KiB. */
static void topk_row(const float *xp, uint32_t vc, uint32_t kk, int masked,
                     int32_t base, float *dv, int32_t *di, pto_pf *pf,
                     void *scr) {
  uint32_t AK[TOPK_BUF], BK[TOPK_BUF], *K = AK;
  int32_t AC[TOPK_BUF], BC[TOPK_BUF], *C = AC;
  uint32_t m = 0, n_valid = vc, cnt = TOPK_BUF + 1;
  const int32_t ts =
      !masked && kk == vc ? KEY_EXCL : topk_sample(xp, vc, kk, masked);
  if (ts != KEY_EXCL) {
    cnt = topk_collect(xp, vc, masked, ts, UINT32_MAX, TOPK_BUF, AK, AC,
                       masked ? &n_valid : NULL);
    m = kk < n_valid ? kk : n_valid;
    if (cnt < m)
      cnt = TOPK_BUF + 1; /* the sample missed */
  }
  if (cnt > TOPK_BUF && vc <= TOPK_BUF) { /* every entry not excluded */
    cnt = topk_collect(xp, vc, masked, KEY_EXCL, 0, TOPK_BUF, AK, AC, NULL);
    m = kk < cnt ? kk : cnt;
  }
  if (cnt > TOPK_BUF) { /* the m-th key, one byte at a time */
    uint32_t hist[256];
    n_valid = topk_hist_top(xp, vc, masked, hist, pf);
    m = kk < n_valid ? kk : n_valid;
    uint32_t rem = 0, prefix = 0; /* (the key KEY_EXCL): all not excluded */
    if (m < n_valid) {
      rem = m;
      prefix = topk_digit(hist, &rem);
      for (int shift = 16; shift >= 0; shift -= 8) {
        topk_hist_next(xp, vc, masked, prefix, shift, hist);
        prefix = prefix << 8 | topk_digit(hist, &rem);
      }
    }
    const int32_t t = (int32_t)(prefix ^ 0x80000000u);
    if (m <= TOPK_BUF) {
      cnt = topk_collect(xp, vc, masked, t, rem, TOPK_BUF, AK, AC, NULL);
    } else {
      K = (uint32_t *)(void *)dv;
      C = di;
      topk_collect(xp, vc, masked, t, rem, m, K, C, NULL);
      topk_sort_many(K, C, m, scr);
    }
  }
  if (m && m <= TOPK_BUF)
    topk_msd(AK, AC, BK, BC, cnt, m); /* K, C are AK, AC */
  /* K, C may be dv, di themselves: read slot j before writing it */
  for (uint32_t j = 0; j < m; j++) {
    const int32_t c = C[j];
    dv[j] = xp[c];
    di[j] = (int32_t)((uint32_t)base + (uint32_t)c);
  }
  for (uint32_t j = m; j < kk; j++) { /* masked mode: padding */
    dv[j] = -INFINITY;
    di[j] = -1;
  }
}

static int vec_TTOPK(int op, const pto_targs *a) {
  (void)op;
  const pto_tile *s = a->src[0];
  pto_tile *dv = a->dst[0], *di = a->dst[1];
  const uint32_t kk = dv->valid_cols;
  void *scr = kk > TOPK_BUF ? pto__targs_scratch(a, 2, 8 * (size_t)kk) : NULL;
  for (uint32_t r = 0; r < dv->valid_rows; r++)
    topk_row(row_of(s, r), s->valid_cols, kk, a->imm[1] == 1, a->imm[0],
             row_of(dv, r), row_of(di, r), a->pf, scr);
  return PTO_OK;
}

/* TMRGTOPK: the runs' heads as 64-bit keys (value key inverted, then the
 * index with its run's offset), the least taken first, on a tie the
 * earlier run. A run ends at its end or, in the masked mode, at its first
 * -inf (sorted runs hold the excluded entries last). */
#define HEAD_DONE UINT64_MAX

static inline uint64_t topk_head(const float *v, const int32_t *x, uint32_t c,
                                 uint32_t end, uint32_t off, int masked) {
  if (c == end)
    return HEAD_DONE;
  const int32_t k = topk_key(v[c], masked);
  if (k == KEY_EXCL)
    return HEAD_DONE;
  return (uint64_t) ~((uint32_t)k ^ 0x80000000u) << 32 |
         (((uint32_t)x[c] + off) ^ 0x80000000u);
}

static int vec_TMRGTOPK(int op, const pto_targs *a) {
  (void)op;
  const pto_tile *sv = a->src[0], *si = a->src[1];
  pto_tile *dv = a->dst[0], *di = a->dst[1];
  const uint32_t vc = sv->valid_cols, kk = dv->valid_cols;
  const uint32_t run = (uint32_t)a->imm[0], off = (uint32_t)a->s;
  const int masked = a->imm[1] == 1;
  for (uint32_t r = 0; r < dv->valid_rows; r++) {
    const float *v = row_of(sv, r);
    const int32_t *x = row_of(si, r);
    float *restrict ov = row_of(dv, r);
    int32_t *restrict ox = row_of(di, r);
    uint32_t at[4], end[4], o[4]; /* run k: [at, end), indices + o */
    uint64_t h[4];
    for (uint32_t k = 0; k < 4; k++) {
      const uint64_t lo = (uint64_t)k * run, hi = lo + run;
      at[k] = (uint32_t)(lo < vc ? lo : vc);
      end[k] = (uint32_t)(hi < vc ? hi : vc);
      o[k] = k * off;
      h[k] = topk_head(v, x, at[k], end[k], o[k], masked);
    }
    uint32_t j = 0;
    for (; j < kk; j++) {
      /* a tournament; `<` keeps the earlier run on a tie */
      const uint32_t w01 = h[1] < h[0], w23 = 2 + (h[3] < h[2]);
      const uint32_t w = h[w23] < h[w01] ? w23 : w01;
      if (h[w] == HEAD_DONE)
        break;
      const uint32_t c = at[w]++;
      ov[j] = v[c];
      ox[j] = (int32_t)((uint32_t)x[c] + o[w]);
      h[w] = topk_head(v, x, at[w], end[w], o[w], masked);
    }
    for (; j < kk; j++) { /* masked mode: padding */
      ov[j] = -INFINITY;
      ox[j] = -1;
    }
  }
  return PTO_OK;
}

static void topk_install(pto_isa_table *t) {
  t->fn[PTO_OP_TTOPK] = vec_TTOPK;
  t->fn[PTO_OP_TMRGTOPK] = vec_TMRGTOPK;
}

#undef FOR_KEYS
#undef HEAD_DONE

#endif /* PTO_TILEOPS_TOPK_KERNELS_H */
