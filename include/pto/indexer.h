/* pto/indexer.h: DeepSeek-V3.2's lightning indexer with its top-k, built
 * with the public API, and a plain-C reference and checker.
 *
 * For each query token i of batch b, every key token j is scored
 *
 *   s[b,i,j] = sum_h w[b,i,h] * ReLU(q[b,i,h,:] . k[b,j,:])
 *
 * (H index heads of dim D per query, one key head shared by all of them;
 * the weights carry every scale already), -inf where the mask hides key j
 * from query i. The outputs are, per query, the topk largest visible
 * scores ordered by (score descending, index ascending) and their key
 * indices, then -inf / -1 in the slots past the number of visible keys (a
 * row with fewer visible keys than topk, or none, is normal input).
 *
 *   pto_indexer_dims d = {1, 128, 8192, 64, 128};
 *   pto_indexer_params prm = pto_indexer_params_default();
 *   prm.topk = 512;
 *   pto_program *p = pto_indexer_program(&d, &prm);   // inputs q, k, w
 *   pto_executable *e;                                // outputs indices,
 *   pto_compile(p, NULL, &e);                         // values
 *
 * With prm.dynamic = PTO_INDEXER_DYN_ALL the same call builds one program
 * for every B <= 1, S1 <= 128 and S2 <= 8192: a run binds them
 * (pto_run_bind(run, "S2", 5000)) and reads and writes buffers laid out
 * for those maxima; pto_indexer_check_bound checks it at its binding.
 */
#ifndef PTO_INDEXER_H
#define PTO_INDEXER_H

#include <stddef.h>
#include <stdint.h>

#include "pto/config.h"
#include "pto/export.h"
#include "pto/program.h"
#include "pto/status.h"
#include "pto/types.h"

PTO_EXTERN_C_BEGIN

/* Sizes: batch, queries, keys, index heads, head dim. */
typedef struct pto_indexer_dims {
  int64_t b, s1, s2, h, d;
} pto_indexer_dims;

typedef struct pto_indexer_params {
  int64_t topk;       /* >= 1; may exceed s2 (the rest is padding) */
  pto_mask_mode mask; /* PTO_MASK_CAUSAL: j <= s2 - s1 + i */
  /* The score's cube tile (cube_m query rows x heads, cube_n keys) and the
   * top-k's vector tile (vec_rows queries, vec_cols keys per partial
   * selection); zeros: chosen for the host machine. A config file's label
   * overrides ("indexer.qk", "indexer.topk") win over both. */
  pto_tile_shape qk_tile, topk_tile;
  /* How many of a query block's key tiles one task computes, the block's
   * q packed once for all of them (the l1_reuse knob of "indexer.qk",
   * which a config's label setting overrides); 0: equal runs of a block's
   * key tiles, enough for sixteen tasks per worker of the host. */
  int64_t qk_reuse;
  /* The dtype of q and k for pto_indexer_program, the reference and the
   * checker: PTO_F32 or PTO_BF16 (as DeepSeek deploys them). w, the
   * scores, their top-k and the values stay f32. */
  pto_dtype dtype;
  /* The dims pto_indexer_program declares dynamic (pto_dim_dynamic), an or
   * of PTO_INDEXER_DYN_* below; 0 (the default): a static program, as
   * before the field existed. A flagged dim is named "B", "S1" or "S2" and
   * its maximum is the dims' b, s1 or s2, so one compile serves every size
   * up to the maxima:
   *   - buffers are laid out for the maxima whatever a run binds (q
   *     [b,s1,H,D], k [b,s2,D], w [b,s1,H], indices and values
   *     [b,s1,topk] of the dims given), and a run reads and writes only
   *     the valid region: query i < S1 of batch b < B is row b * s1 + i,
   *     key j < S2 row b * s2 + j; nothing else of the outputs is written;
   *   - a run binds every flagged dim (pto_run_bind(run, "S1", n), 0 to
   *     its maximum; above it is PTO_ERANGE naming the dim, the maximum
   *     and the value); the causal mask follows the bound S1 and S2;
   *   - tiles and the reuse knob are chosen for the maxima.
   * pto_indexer itself follows the dims of its inputs: a flag there only
   * asserts that axis is dynamic (PTO_EINVAL when it is not). Bits
   * outside PTO_INDEXER_DYN_ALL are PTO_EINVAL. pto_indexer_ref_bound and
   * pto_indexer_check_bound check a run at its binding. */
  unsigned dynamic;
} pto_indexer_params;

/* Flags of pto_indexer_params.dynamic. */
enum {
  PTO_INDEXER_DYN_B = 1u << 0,  /* dim "B", maximum dims.b */
  PTO_INDEXER_DYN_S1 = 1u << 1, /* dim "S1", maximum dims.s1 */
  PTO_INDEXER_DYN_S2 = 1u << 2, /* dim "S2", maximum dims.s2 */
  PTO_INDEXER_DYN_ALL = 7u
};

/* topk 2048 (DeepSeek-V3.2's), causal, tiles chosen for the host, f32. */
PTO_API pto_indexer_params pto_indexer_params_default(void);

/* Adds the indexer to p: q [B,S1,H,D] and k [B,S2,D], both f32 or both
 * bf16 (bf16 is widened to f32 exactly as the cube packs it: products
 * exact, sums in f32; prm->dtype is not consulted), w f32 [B,S1,H].
 * Returns the values f32 [B,S1,topk] and sets *indices to the indices i32
 * [B,S1,topk]. Its ops are labelled "indexer.*" under the current label.
 * NULL on bad input, with the program's sticky error naming the tensors and
 * sizes (pto_program_error). */
PTO_API pto_tensor *pto_indexer(pto_program *p, pto_tensor *q, pto_tensor *k,
                                pto_tensor *w, const pto_indexer_params *prm,
                                pto_tensor **indices);

/* A program "indexer" with inputs "q", "k" (of prm->dtype), "w" and
 * outputs "indices", "values", as above, static or with the dims
 * prm->dynamic flags dynamic (dims' b, s1, s2 their maxima, in [1, 2^40)).
 * NULL on ENOMEM; check pto_program_status (a bad flag or maximum:
 * PTO_EINVAL, "indexer: dynamic dim S2 needs a maximum in [1, 2^40); dims
 * s2 is 0"). */
PTO_API pto_program *pto_indexer_program(const pto_indexer_dims *d,
                                         const pto_indexer_params *prm);

/* The score's cube tile for machine m (NULL: the host): whole queries'
 * heads by as many keys as its L0A and L0B hold (pto_matmul_relu_wsum's
 * tile: m rows of q, n keys), fewer keys (down to four panels) when the
 * case would otherwise have under two tiles per cube worker. */
PTO_API pto_tile_shape pto_indexer_qk_tile(const pto_machine *m,
                                           const pto_indexer_dims *d);

/* The top-k's vector tile for machine m (NULL: the host): whole rows of S2
 * scores when one row's block and the topk values and indices it keeps fit
 * the UB (one selection per row, no merge), else the widest power-of-two
 * block that fits, whose selections a tree of merges combines; up to 4
 * rows per unit. */
PTO_API pto_tile_shape pto_indexer_topk_tile(const pto_machine *m,
                                             const pto_indexer_dims *d,
                                             int64_t topk);

/* GFLOP of one run: 2 * H * D per visible (query, key) pair. */
PTO_API double pto_indexer_gflop(const pto_indexer_dims *d,
                                 const pto_indexer_params *prm);

/* Keys query i of a batch sees: min(s2, max(0, s2 - s1 + i + 1)) when
 * causal, s2 otherwise. */
PTO_API int64_t pto_indexer_visible(const pto_indexer_dims *d,
                                    pto_mask_mode mask, int64_t i);

/* ---- plain-C reference (double accumulation) ----------------------------- */

/* q and k below are arrays of prm->dtype (f32 or bf16), read exactly into
 * double; w is f32. A bf16 run is checked against its own bf16 inputs, so
 * the rounding of the inputs is not an error: only the f32 accumulation
 * is, and the f32 tolerance (rtol 1e-5) holds for bf16 too. */

/* The outputs for query rows [r0, r1) of the B*S1 rows (row r is batch
 * r / S1, query r % S1); indices and values point at row 0's outputs
 * ([B,S1,topk] dense). Scores are computed in double and rounded once to
 * f32; ties rank by index. PTO_EINVAL for bad sizes or NULL pointers,
 * PTO_ENOMEM. */
PTO_API pto_status pto_indexer_ref(const pto_indexer_dims *d,
                                   const pto_indexer_params *prm, const void *q,
                                   const void *k, const float *w, int64_t r0,
                                   int64_t r1, int32_t *indices, float *values);

/* Checks outputs (from any implementation) for query rows [r0, r1) against
 * scores recomputed in double, as sets with a tolerance at the threshold,
 * so that near-ties may resolve either way. Per row, with kth the
 * min(topk, visible)-th largest reference score and eps = rtol * the row's
 * scale (the largest sum_h |w| |q.k| over its visible keys):
 *   - exactly min(topk, visible) slots hold an index, the rest -1 / -inf;
 *   - indices are distinct, visible keys, and values descend;
 *   - every value is within eps of its key's reference score;
 *   - every selected key's reference score >= kth - eps, and every
 *     unselected visible key's <= kth + eps.
 * Returns 0, or -1 with the first failure in msg ("row 5 (b 0, i 5): slot
 * 3 holds key 17, not visible"). rtol <= 0 uses 1e-5. */
PTO_API int pto_indexer_check(const pto_indexer_dims *d,
                              const pto_indexer_params *prm, const void *q,
                              const void *k, const float *w,
                              const int32_t *indices, const float *values,
                              int64_t r0, int64_t r1, double rtol, char *msg,
                              size_t msg_size);

/* The reference and the checker for a run of a dynamic program
 * (prm->dynamic) bound to sizes d, in buffers laid out for the maxima m
 * (the dims the program was built with): q, k, w, indices and values are
 * the run's buffers, [m->b, m->s1, ...] and [m->b, m->s2, D]. Rows [r0, r1)
 * are of d's B*S1 (row r is batch r / d->s1, query r % d->s1, at row
 * (r / d->s1) * m->s1 + r % d->s1 of the buffers); the mask and the keys
 * are d's. d->b, d->s1 and d->s2 may be 0 to m's (0: nothing to do, or
 * every slot padding); d->h and d->d must equal m's. Nothing outside those
 * rows is read or written. With m equal to d (or NULL) they are
 * pto_indexer_ref and pto_indexer_check. PTO_EINVAL / -1 with "bad
 * arguments: ..." for sizes that do not fit m. */
PTO_API pto_status pto_indexer_ref_bound(const pto_indexer_dims *d,
                                         const pto_indexer_dims *m,
                                         const pto_indexer_params *prm,
                                         const void *q, const void *k,
                                         const float *w, int64_t r0, int64_t r1,
                                         int32_t *indices, float *values);
PTO_API int pto_indexer_check_bound(const pto_indexer_dims *d,
                                    const pto_indexer_dims *m,
                                    const pto_indexer_params *prm,
                                    const void *q, const void *k,
                                    const float *w, const int32_t *indices,
                                    const float *values, int64_t r0, int64_t r1,
                                    double rtol, char *msg, size_t msg_size);

PTO_EXTERN_C_END

#endif /* PTO_INDEXER_H */
