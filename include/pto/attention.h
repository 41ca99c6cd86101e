/* pto/attention.h: DeepSeek-V3.2's sparse attention (MLA over the top-k
 * keys the lightning indexer picked), built with the public API, and a
 * plain-C reference and checker.
 *
 * For query i of batch b (S1 queries, H heads of dim D = 576: 512 latent
 * + 64 rope) and each of its topk selected keys j = idx[b,i,t] that is
 * valid (0 <= j < S2, and j <= S2 - S1 + i when causal; anything else is
 * skipped, wherever it sits in the row):
 *
 *   x_t[h]   = scale * q[b,i,h,:] . kv[b,j,:]        (one KV head)
 *   lse[b,i,h] = ln sum_t exp(x_t[h])
 *   out[b,i,h,:] = sum_t exp(x_t[h] - lse) * kv[b,j,:dv]   (V = first dv)
 *
 * A query with no valid index gets out 0 and lse +inf.
 *
 *   pto_attention_dims d = {1, 128, 8192, 128, 576, 512, 512};
 *   pto_attention_params prm = pto_attention_params_default();
 *   pto_program *p = pto_attention_program(&d, &prm); // inputs q, kv,
 *                                                     // indices; outputs
 *                                                     // out, lse
 *
 * With prm.dynamic = PTO_ATTENTION_DYN_ALL the same call builds one
 * program for every B <= 1, S1 <= 128 and S2 <= 8192 (H, D, dv and topk
 * stay static): a run binds them (pto_run_bind(run, "S1", 16)) in buffers
 * laid out for those maxima; pto_attention_check_bound checks it.
 */
#ifndef PTO_ATTENTION_H
#define PTO_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "pto/config.h"
#include "pto/export.h"
#include "pto/program.h"
#include "pto/status.h"
#include "pto/types.h"

PTO_EXTERN_C_BEGIN

/* Batch, queries, keys, query heads, head dim, value dim, slots per query. */
typedef struct pto_attention_dims {
  int64_t b, s1, s2, h, d, dv, topk;
} pto_attention_dims;

typedef struct pto_attention_params {
  double scale; /* softmax scale; 0: 1 / sqrt(D) */
  int causal;   /* a key is also valid only if j <= S2 - S1 + i */
  /* {m, n}: heads per task and slots per block of the online softmax;
   * zeros: chosen by the compiler for the machine it compiles for, by
   * pto_attention_tile's rule. A config file's "attention" label
   * overrides win. */
  pto_tile_shape tile;
  /* The dtype of q and kv for pto_attention_program, the reference and
   * the checker: PTO_F32 or PTO_BF16 (as DeepSeek deploys them). The
   * scores, the softmax, out and lse stay f32. */
  pto_dtype dtype;
  /* The dims pto_attention_program declares dynamic (pto_dim_dynamic), an
   * or of PTO_ATTENTION_DYN_* below; 0 (the default): a static program, as
   * before the field existed. A flagged dim is named "B", "S1" or "S2" and
   * its maximum is the dims' b, s1 or s2, so one compile serves every size
   * up to the maxima (H, D, dv and topk are static):
   *   - buffers are laid out for the maxima whatever a run binds (q
   *     [b,s1,H,D], kv [b,s2,D], indices [b,s1,topk], out [b,s1,H,dv], lse
   *     [b,s1,H] of the dims given), and a run reads and writes only the
   *     valid region: query i < S1 of batch b < B is row b * s1 + i, key j
   *     row b * s2 + j of kv; nothing else of out and lse is written;
   *   - a run binds every flagged dim (pto_run_bind(run, "S2", n), 0 to
   *     its maximum; above it is PTO_ERANGE naming the dim, the maximum
   *     and the value); an index at or past the bound S2 is skipped as any
   *     invalid one, and the causal limit S2 - S1 + i is the bound sizes';
   *   - tiles are chosen for the maxima.
   * pto_attention itself follows the dims of its inputs: a flag there only
   * asserts that axis is dynamic (PTO_EINVAL when it is not); with
   * `causal`, a dynamic S1 or S2 must be the dim itself (not a slice or a
   * merge of one: PTO_ENOTSUP). Bits outside PTO_ATTENTION_DYN_ALL are
   * PTO_EINVAL. pto_attention_ref_bound and pto_attention_check_bound
   * check a run at its binding. */
  unsigned dynamic;
} pto_attention_params;

/* Flags of pto_attention_params.dynamic. */
enum {
  PTO_ATTENTION_DYN_B = 1u << 0,  /* dim "B", maximum dims.b */
  PTO_ATTENTION_DYN_S1 = 1u << 1, /* dim "S1", maximum dims.s1 */
  PTO_ATTENTION_DYN_S2 = 1u << 2, /* dim "S2", maximum dims.s2 */
  PTO_ATTENTION_DYN_ALL = 7u
};

/* scale 0 (1 / sqrt(D)), not causal, the tile the compiler's, f32. */
PTO_API pto_attention_params pto_attention_params_default(void);

/* Adds the attention to p: q [B,S1,H,D] and kv [B,S2,D], both f32 or both
 * bf16 (bf16 widened to f32 exactly as the cube loads and gathers it;
 * prm->dtype is not consulted), indices i32 [B,S1,topk], value dim dv. Returns
 * out f32 [B,S1,H,dv] and sets *lse to f32 [B,S1,H]. Its ops are labelled
 * "attention.*" under the current label. NULL on bad input, with the program's
 * sticky error naming the tensors and sizes. */
PTO_API pto_tensor *pto_attention(pto_program *p, pto_tensor *q,
                                  pto_tensor *kv, pto_tensor *indices,
                                  int64_t dv, const pto_attention_params *prm,
                                  pto_tensor **lse);

/* A program "attention" with inputs "q", "kv" (of prm->dtype), "indices"
 * and outputs "out", "lse", static or with the dims prm->dynamic flags
 * dynamic (dims' b, s1, s2 their maxima, in [1, 2^40)). NULL on ENOMEM;
 * check pto_program_status (a bad flag or maximum: PTO_EINVAL,
 * "attention: dynamic dim S1 needs a maximum in [1, 2^40); dims s1 is
 * 0"). */
PTO_API pto_program *pto_attention_program(const pto_attention_dims *d,
                                           const pto_attention_params *prm);

/* The tile for machine m (NULL: the host): all heads per task when their
 * queries and scores fit L0A (else as few head tiles as fit: on a 512 KiB
 * L2 the 128 heads of D = 576 take two), and as many slots per block as
 * the gathered rows' G^T fits in L0B and their V in L1. */
PTO_API pto_tile_shape pto_attention_tile(const pto_machine *m,
                                          const pto_attention_dims *d);

/* GFLOP of one run, counting every slot: 2 * B * S1 * H * topk * (D + dv). */
PTO_API double pto_attention_gflop(const pto_attention_dims *d);

/* ---- plain-C reference (double accumulation) ----------------------------- */

/* q and kv below are arrays of prm->dtype (f32 or bf16), read exactly into
 * double. A bf16 run is checked against its own bf16 inputs, so only the
 * f32 accumulation differs and the f32 tolerances below hold for bf16 too
 * (products of bf16 are exact in f32). */

/* out and lse for query rows [r0, r1) of the B*S1 (row r is batch r / S1,
 * query r % S1); out and lse point at row 0's ([B,S1,H,dv], [B,S1,H]).
 * PTO_EINVAL for bad sizes or pointers, PTO_ENOMEM. */
PTO_API pto_status pto_attention_ref(const pto_attention_dims *d,
                                     const pto_attention_params *prm,
                                     const void *q, const void *kv,
                                     const int32_t *indices, int64_t r0,
                                     int64_t r1, float *out, float *lse);

/* Checks out and lse for query rows [r0, r1) against the reference in
 * double: |out - ref| <= 1e-5 + 1e-4 |ref| and |lse - ref| <= 1e-6 +
 * 1e-6 |ref| (ANCHORS.md's fp32 tolerances), an infinite lse exactly.
 * Returns 0, or -1 with the first failure in msg. */
PTO_API int pto_attention_check(const pto_attention_dims *d,
                                const pto_attention_params *prm, const void *q,
                                const void *kv, const int32_t *indices,
                                const float *out, const float *lse, int64_t r0,
                                int64_t r1, char *msg, size_t msg_size);

/* The reference and the checker for a run of a dynamic program
 * (prm->dynamic) bound to sizes d, in buffers laid out for the maxima m
 * (the dims the program was built with): q, kv, indices, out and lse are
 * the run's buffers ([m->b, m->s1, ...], kv [m->b, m->s2, D]). Rows [r0,
 * r1) are of d's B*S1 (row r is batch r / d->s1, query r % d->s1, at row
 * (r / d->s1) * m->s1 + r % d->s1 of the buffers); valid keys and the
 * causal limit are d's. d->b, d->s1 and d->s2 may be 0 to m's (S2 0: no
 * key is valid); d->h, d->d, d->dv and d->topk must equal m's. Nothing
 * outside those rows is read or written. With m equal to d (or NULL) they
 * are pto_attention_ref and pto_attention_check. PTO_EINVAL / -1 with
 * "bad arguments: ..." for sizes that do not fit m. */
PTO_API pto_status pto_attention_ref_bound(const pto_attention_dims *d,
                                           const pto_attention_dims *m,
                                           const pto_attention_params *prm,
                                           const void *q, const void *kv,
                                           const int32_t *indices, int64_t r0,
                                           int64_t r1, float *out, float *lse);
PTO_API int pto_attention_check_bound(const pto_attention_dims *d,
                                      const pto_attention_dims *m,
                                      const pto_attention_params *prm,
                                      const void *q, const void *kv,
                                      const int32_t *indices, const float *out,
                                      const float *lse, int64_t r0, int64_t r1,
                                      char *msg, size_t msg_size);

PTO_EXTERN_C_END

#endif /* PTO_ATTENTION_H */
