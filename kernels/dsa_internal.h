/* Internal to kernels/dsa*.c: what the DSA chain's files share. */
#ifndef PTO_KERNELS_DSA_INTERNAL_H
#define PTO_KERNELS_DSA_INTERNAL_H

#include "pto/dsa.h"
#include "pto/pto.h"

/* ---- small graph helpers of the chain's files ---------------------------- */

/* Rows [r0, r0+n) of t along its first axis (a view). */
static inline pto_tensor *pto__dsa_rows(pto_program *p, pto_tensor *t,
                                        int64_t r0, int64_t n) {
  int64_t lo[PTO_MAX_DIMS] = {0}, hi[PTO_MAX_DIMS];
  const int nd = pto_tensor_ndim(t);
  for (int a = 0; a < nd; a++)
    hi[a] = pto_tensor_dim(t, a);
  lo[0] = r0;
  hi[0] = r0 + n;
  return pto_slice(p, t, lo, hi);
}

/* t with a leading axis of 1. */
static inline pto_tensor *pto__dsa_batch1(pto_program *p, pto_tensor *t) {
  int64_t sh[PTO_MAX_DIMS] = {1};
  const int nd = pto_tensor_ndim(t);
  for (int a = 0; a < nd; a++)
    sh[a + 1] = pto_tensor_dim(t, a);
  return pto_reshape(p, t, nd + 1, sh);
}

/* t without its leading axis of 1. */
static inline pto_tensor *pto__dsa_unbatch(pto_program *p, pto_tensor *t) {
  int64_t sh[PTO_MAX_DIMS];
  const int nd = pto_tensor_ndim(t);
  for (int a = 1; a < nd; a++)
    sh[a - 1] = pto_tensor_dim(t, a);
  return pto_reshape(p, t, nd - 1, sh);
}

/* A scope whose vector tile the compiler chooses for the machine it
 * compiles for (the chain's long, thin index and key tensors get whole
 * rows, not the default 32 x 128's thousands of tasks of a few
 * microseconds; a size fixed here fit the host and not the Ascend
 * profile's 192 KiB UB). */
static inline void pto__dsa_push_vec(pto_program *p) {
  pto_program_push_tile(p, NULL);
  pto_program_auto_vec_tile(p);
}

/* The prologs' results in a program. */
typedef struct pto__dsa_prolog {
  pto_tensor *q;       /* f32 [T,H,L+R] */
  pto_tensor *kv_new;  /* f32 [T,L+R] */
  pto_tensor *q_idx;   /* f32 [T,HI,DI] */
  pto_tensor *k_new;   /* f32 [T,DI] */
  pto_tensor *weights; /* f32 [T,HI] */
} pto__dsa_prolog;

/* Adds the MLA prolog (labels "mla_prolog.*") and the indexer prolog
 * ("indexer_prolog.*") to p for T tokens, the inputs already checked. */
void pto__dsa_prologs(pto_program *p, const pto_dsa_dims *d, int64_t T,
                      const pto_dsa_params *prm, pto_tensor *const *in,
                      pto__dsa_prolog *out);

/* The same for heads [heads[0], heads[1]) of q and index heads [heads[2],
 * heads[3]) of q_idx only (both ranges non-empty): out->q is [T, h1-h0,
 * L+R] and out->q_idx [T, i1-i0, DI], the weights and keys whole. The
 * context-parallel step splits the heads' weights over the ranks so. */
void pto__dsa_prologs_heads(pto_program *p, const pto_dsa_dims *d, int64_t T,
                            const pto_dsa_params *prm, pto_tensor *const *in,
                            const int64_t *heads, pto__dsa_prolog *out);

/* The same in plain C, accumulating in double and rounding each result to
 * f32 once, for tokens [t0, t1) (buffers sized for all T tokens, written
 * at the tokens' rows); with q NULL only the keys (kv_new, k_new), which
 * is 15 times cheaper. PTO_ENOMEM. */
pto_status pto__dsa_prologs_ref(const pto_dsa_dims *d, int64_t t0, int64_t t1,
                                const void *const *in, float *q, float *kv_new,
                                float *q_idx, float *k_new, float *weights);

/* Two attentions' results (out [.., H, L], lse [.., H]) over disjoint
 * slots merged by their lse: weights e = exp(lse - max) (0 for a side with
 * no valid slot, lse +inf), out = (e_a out_a + e_b out_b) / (e_a + e_b),
 * lse = max + ln(e_a + e_b); both empty: 0, +inf. */
pto_tensor *pto__dsa_merge(pto_program *p, pto_tensor *oa, pto_tensor *la,
                           pto_tensor *ob, pto_tensor *lb, pto_tensor **lse);

/* 1 when d, s and prm describe a valid step; otherwise 0 and why in msg. */
int pto__dsa_valid(const pto_dsa_dims *d, const pto_dsa_step *s,
                   const pto_dsa_params *prm, char *msg, size_t size);

#endif /* PTO_KERNELS_DSA_INTERNAL_H */
