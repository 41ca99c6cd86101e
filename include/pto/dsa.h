/* pto/dsa.h: DeepSeek-V3.2's indexer attention ("DSA") as one graph: the
 * MLA prolog, the indexer prolog, the lightning indexer with its top-k
 * (pto/indexer.h) and the sparse MLA attention (pto/attention.h), on a
 * paged KV cache, built with the public API; and a plain-C reference of
 * the whole chain and a checker.
 *
 * One step processes T new tokens of B sequences: sequence b has n[b] new
 * tokens and length len[b] after appending them, so its new tokens sit at
 * positions len[b]-n[b] .. len[b]-1 and its caches hold its positions
 * 0 .. len[b]-n[b]-1. Tokens are ordered by sequence, then position. The
 * counts are build-time parameters: a step with other counts needs a new
 * program.
 *
 * Inputs (f32 unless said; pto_dsa_input_name gives the program's names):
 *   x [T,D], cos, sin [T,R]                the token's rotary table row
 *   w_dq [D,Q], gamma_cq [Q], w_uq_qr [Q,H*(N+R)]  head h: N nope, R rope
 *   w_uk [H,N,L], w_dkv_kr [D,L+R], gamma_ckv [L]
 *   w_qb [Q,HI*DI], w_k [D,DI], ln_gamma_k, ln_beta_k [DI], w_proj [D,HI]
 *   hadamard [DI,DI]                       used as given: v . hadamard
 *   kv_cache [blocks,BS,L+R], k_cache [blocks,BS,DI]   read-only
 *   block_table i32 [B,max_blocks]   position p of sequence b is row
 *                                    (block_table[b][p/BS], p%BS)
 *
 * Per token t (RMSNorm(v,g) = v / sqrt(mean(v^2) + 1e-6) * g; LayerNorm
 * with the population variance and eps 1e-6; RoPE in the rotate-half form
 * u'[i] = u[i] c[i] - u[i+R/2] s[i] for i < R/2, u[i] c[i] + u[i-R/2] s[i]
 * after, with c = cos[t], s = sin[t]):
 *   c_q = RMSNorm(x.w_dq, gamma_cq); qq = c_q.w_uq_qr; per head h
 *   q[t,h] = concat(qq[h,:N].w_uk[h], RoPE(qq[h,N:]))           [T,H,L+R]
 *   kv_new[t] = concat(RMSNorm(kvr[:L], gamma_ckv), RoPE(kvr[L:])),
 *     kvr = x.w_dkv_kr                                             [T,L+R]
 *   q_idx[t,h] = (RoPE on the first R dims of (c_q.w_qb)[h]).hadamard
 *   k_new[t] = (RoPE on the first R dims of LayerNorm(x.w_k)).hadamard
 *   weights[t] = x.w_proj * HI^-0.5 * DI^-0.5
 * A sequence's keys are its cache rows (through the block table) followed
 * by its new rows. The indexer scores each new token against them, causal
 * end-aligned, and keeps the top-k logical positions (pto_indexer's order:
 * score descending, index ascending, then -1); the sparse attention
 * (pto_attention's semantics, the given scale) reads the selected
 * positions: j < len[b]-n[b] from kv_cache, else row j-(len[b]-n[b]) of
 * the sequence's kv_new.
 *
 * Outputs: out [T,H,L], lse [T,H], kv_new [T,L+R], k_new [T,DI], indices
 * i32 [T,topk]. The caches stay read-only: the application writes kv_new
 * and k_new at the tokens' slots after the step.
 *
 *   pto_dsa_dims d = pto_dsa_dims_default();
 *   int64_t n[2] = {1, 1}, len[2] = {8192, 9000};
 *   pto_dsa_step s = {2, n, len, 160, 80};
 *   pto_dsa_params prm = pto_dsa_params_default();
 *   pto_program *p = pto_dsa_program(&d, &s, &prm);
 *
 * Every op is labelled under "mla_prolog", "indexer_prolog", "indexer" or
 * "attention" (the last two as pto_indexer and pto_attention label them).
 */
#ifndef PTO_DSA_H
#define PTO_DSA_H

#include <stddef.h>
#include <stdint.h>

#include "pto/export.h"
#include "pto/program.h"
#include "pto/status.h"
#include "pto/types.h"

PTO_EXTERN_C_BEGIN

/* Model sizes: hidden, q LoRA rank, heads, nope and rope dims, latent dim,
 * index heads and dim, cache block (tokens). */
typedef struct pto_dsa_dims {
  int64_t d, q_lora, h, nope, rope, latent, hi, di, block;
} pto_dsa_dims;

/* DeepSeek-V3.2's: D 7168, Q 1536, H 128, N 128, R 64, L 512, HI 64,
 * DI 128, BS 128. */
PTO_API pto_dsa_dims pto_dsa_dims_default(void);

/* One step: b sequences, n[b] new tokens and len[b] tokens after them
 * (1 <= n[b] <= len[b]); each cache has `blocks` physical blocks and the
 * block table max_blocks columns (max_blocks * BS >= every len[b]). The
 * arrays are read during the call only. */
typedef struct pto_dsa_step {
  int64_t b;
  const int64_t *n, *len;
  int64_t blocks, max_blocks;
} pto_dsa_step;

/* Total new tokens T (sum of n), or -1 for a bad step. */
PTO_API int64_t pto_dsa_tokens(const pto_dsa_step *s);

typedef struct pto_dsa_params {
  int64_t topk; /* >= 1; 2048 */
  double scale; /* the attention's softmax scale; 0.135234 */
  /* Tile shapes per stage; zeros: chosen for the host (the prologs' and
   * the attention's by the compiler, for the machine it compiles for;
   * the indexer's when the program is built). mla_prolog and
   * indexer_prolog apply to their matmuls (cube) and norms (vector);
   * indexer_qk / indexer_topk / attention are pto_indexer's qk_tile,
   * topk_tile and pto_attention's tile. A config file's label overrides
   * win over all of them. */
  pto_tile_shape mla_prolog, indexer_prolog, indexer_qk, indexer_topk,
      attention;
} pto_dsa_params;

/* topk 2048, scale 0.135234, tiles chosen for the host. */
PTO_API pto_dsa_params pto_dsa_params_default(void);

/* The program's inputs and outputs, in declaration order. */
typedef enum pto_dsa_input {
  PTO_DSA_X,
  PTO_DSA_COS,
  PTO_DSA_SIN,
  PTO_DSA_W_DQ,
  PTO_DSA_GAMMA_CQ,
  PTO_DSA_W_UQ_QR,
  PTO_DSA_W_UK,
  PTO_DSA_W_DKV_KR,
  PTO_DSA_GAMMA_CKV,
  PTO_DSA_W_QB,
  PTO_DSA_W_K,
  PTO_DSA_LN_GAMMA_K,
  PTO_DSA_LN_BETA_K,
  PTO_DSA_W_PROJ,
  PTO_DSA_HADAMARD,
  PTO_DSA_KV_CACHE,
  PTO_DSA_K_CACHE,
  PTO_DSA_BLOCK_TABLE,
  PTO_DSA_INPUT_COUNT
} pto_dsa_input;

typedef enum pto_dsa_output {
  PTO_DSA_OUT,
  PTO_DSA_LSE,
  PTO_DSA_KV_NEW,
  PTO_DSA_K_NEW,
  PTO_DSA_INDICES,
  PTO_DSA_OUTPUT_COUNT
} pto_dsa_output;

/* "x", "cos", ... "block_table"; "out", "lse", "kv_new", "k_new",
 * "indices"; NULL out of range. */
PTO_API const char *pto_dsa_input_name(int i);
PTO_API const char *pto_dsa_output_name(int i);

/* Shape of input / output i for d and s into shape (PTO_MAX_DIMS); its
 * ndim, or -1 for a bad index, dims or step. Dtype: i32 for block_table
 * and indices, f32 otherwise. */
PTO_API int pto_dsa_input_shape(const pto_dsa_dims *d, const pto_dsa_step *s,
                                int i, int64_t *shape);
PTO_API int pto_dsa_output_shape(const pto_dsa_dims *d, const pto_dsa_step *s,
                                 const pto_dsa_params *prm, int i,
                                 int64_t *shape);

/* The chain's tensors in an application's program: in[i] is input i
 * (pto_dsa_input order), out[i] receives output i (pto_dsa_output order;
 * all NULL on failure). Checks every tensor's shape and dtype against d
 * and s. PTO_OK, or the program's sticky error naming the tensors and
 * sizes (pto_program_error). */
PTO_API pto_status pto_dsa(pto_program *p, const pto_dsa_dims *d,
                           const pto_dsa_step *s, const pto_dsa_params *prm,
                           pto_tensor *const *in, pto_tensor **out);

/* A program "dsa" with the inputs and outputs above, named as
 * pto_dsa_input_name / pto_dsa_output_name. NULL on ENOMEM; check
 * pto_program_status. */
PTO_API pto_program *pto_dsa_program(const pto_dsa_dims *d,
                                     const pto_dsa_step *s,
                                     const pto_dsa_params *prm);

/* ---- serving: one program for every step ------------------------------ */

/* A step's counts are build-time parameters of pto_dsa_program, so each
 * decode step of a server would compile anew. pto_dsa_serve_program builds
 * the chain once for any step within these maxima, as dynamic dims
 * (pto_dim_dynamic): "T" the step's new tokens, and per slot k "n<k>" its
 * new tokens and "len<k>" its length after them. A step puts its
 * sequences in slots 0 .. b-1 and binds the rest to 0: nothing of an
 * empty slot runs. */
#define PTO_DSA_SERVE_SLOTS_MAX 16
typedef struct pto_dsa_serve {
  int64_t slots;      /* sequences a step may hold, 1..16 */
  int64_t max_tokens; /* T: new tokens of a step, all slots together */
  int64_t max_new;    /* n: new tokens of one sequence in a step */
  int64_t max_len;    /* len: a sequence's length after a step */
  int64_t blocks, max_blocks; /* the caches' blocks, a table row's */
  /* slots 0 .. prefill_slots-1 take up to max_new new tokens, the others
   * one (decoding): a server prefills few sequences a step, and a slot's
   * work is compiled for its maximum. 0: every slot takes max_new. */
  int64_t prefill_slots;
} pto_dsa_serve;

/* Inputs: pto_dsa_program's, with x, cos and sin [T, .] and block_table
 * [slots, max_blocks] (slot k's row), then "seq" i32 [slots, 2]: per slot,
 * the row of its first token among the step's T and its cached tokens
 * (len - n). Outputs: "kv_new" [T, L+R], "k_new" [T, DI], then per slot k
 * "out.<k>" [n<k>, H, L], "lse.<k>" [n<k>, H] and "indices.<k>" [n<k>,
 * topk]; buffers laid out for the maxima (a slot's n<k> rows of its
 * maximum: max_new, or 1 in a decoding slot). The slots' outputs are in
 * token order when the step's sequences are: a buffer of the step's rows
 * holds them all, slot k's at its first row (plus max_new rows past the
 * end for the layout of the last ones; nothing past n<k> is written).
 * Its results are pto_dsa_program's for the step, within pto_dsa_check's
 * tolerances (one attention over the cached and new positions together,
 * where pto_dsa merges two). NULL on ENOMEM; check pto_program_status. */
PTO_API pto_program *pto_dsa_serve_program(const pto_dsa_dims *d,
                                           const pto_dsa_serve *s,
                                           const pto_dsa_params *prm);

struct pto_run;
/* Binds run (of an executable of pto_dsa_serve_program(d, s, ...)) to
 * step: its dims, every slot past step->b empty; and fills seq (i32
 * [slots, 2], the input). PTO_EINVAL (PTO_ERANGE for a sequence past the
 * maxima) for a step that does not fit, with msg saying which count. */
PTO_API pto_status pto_dsa_serve_bind(struct pto_run *run,
                                      const pto_dsa_dims *d,
                                      const pto_dsa_serve *s,
                                      const pto_dsa_step *step, int32_t *seq,
                                      char *msg, size_t size);

/* GFLOP of one step, counting the work the chain needs: the prologs'
 * matmuls, 2 * HI * DI per visible (token, key) pair of the indexer, and
 * 2 * H * (L+R + L) per selected key (min(topk, visible)) of the
 * attention. -1 for bad input. */
PTO_API double pto_dsa_gflop(const pto_dsa_dims *d, const pto_dsa_step *s,
                             const pto_dsa_params *prm);

/* ---- context parallel: one step over the ranks of a comm ---------------- */

struct pto_comm;
struct pto_runtime;

/* Where the caches' blocks live: logical block j of sequence b is block
 * block[b * max_blocks + j] of rank owner[b * max_blocks + j]'s caches.
 * Both tables are the same on every rank (entries past a sequence's
 * cached positions are not read). */
typedef struct pto_dsa_cp_layout {
  const int32_t *owner, *block;
} pto_dsa_cp_layout;

/* One rank's share of a step, in milliseconds: compiling its programs (the
 * ones no earlier step of the session had), running them, blocked in the
 * all-gathers, merging on the host, and the whole call; the bytes this
 * rank sent and received. */
typedef struct pto_dsa_cp_stats {
  double compile_ms, compute_ms, comm_ms, merge_ms, step_ms;
  uint64_t comm_bytes;
  int64_t cached_rows, selected_rows; /* this rank's keys and attended rows */
  int compiles;                       /* programs compiled for the step */
} pto_dsa_cp_stats;

/* A context-parallel session: the comm c's ranks and the runtime rt that
 * runs this rank's programs (NULL: one of the host's defaults, owned by
 * the session; c and rt outlive it). It keeps the executables of the last
 * steps' programs, so a decode step whose shapes an earlier one had (its
 * sequences' lengths grow within blocks) compiles nothing. */
typedef struct pto_dsa_cp pto_dsa_cp;
PTO_API pto_status pto_dsa_cp_new(struct pto_comm *c, struct pto_runtime *rt,
                                  pto_dsa_cp **out);
PTO_API void pto_dsa_cp_free(pto_dsa_cp *cp); /* NULL is a no-op */

/* pto_dsa's step across the ranks of comm c (pto/comm.h), context
 * parallel: each rank holds only its blocks of the KV and index-key caches
 * (in[PTO_DSA_KV_CACHE] [s->blocks, BS, L+R] and in[PTO_DSA_K_CACHE]
 * [s->blocks, BS, DI] are this rank's, s->blocks may be 0 with both NULL;
 * in[PTO_DSA_BLOCK_TABLE] is not read: layout says where blocks live).
 * Every rank runs the prologs for all T tokens with its share of the heads
 * (q's heads and q_idx's index heads split evenly over the ranks, so each
 * rank streams its share of the heads' weights; the rest is replicated),
 * and an all-gather gives every rank all heads. Each then scores its own
 * cached keys (and, on the rank owning block (len-n)/BS, the sequence's new
 * keys) with the lightning indexer and keeps a local top-k of (score,
 * global position); an all-gather and a stable merge (score descending,
 * then lowest position) give every rank the global top-k, the one rank's
 * (TopK(A u B) = TopK(TopK A u TopK B)); each rank attends over the
 * selected rows it holds, and a second all-gather merges the partial (out,
 * lse) pairs by their lse. Every rank returns all outputs (out[i] in
 * pto_dsa_output order, dense row-major), equal to pto_dsa's within
 * pto_dsa_check's tolerances. Every rank of the session's comm calls it
 * with the same step. The ranks first agree on the step (dims,
 * counts, params and layout: a mismatch is PTO_EINVAL on every rank,
 * naming the ranks) and on every rank's local checks (a block outside a
 * rank's caches names the rank, sequence and block). st (may be NULL)
 * receives the timings. A failed collective is PTO_ETIMEDOUT or
 * PTO_ECOMM within the comm's bound. Message in msg. */
PTO_API pto_status pto_dsa_cp_step(pto_dsa_cp *cp, const pto_dsa_dims *d,
                                   const pto_dsa_step *s,
                                   const pto_dsa_params *prm,
                                   const pto_dsa_cp_layout *layout,
                                   const void *const *in, void *const *out,
                                   pto_dsa_cp_stats *st, char *msg,
                                   size_t msg_size);

/* ---- plain-C reference (double accumulation) ----------------------------- */

/* The whole chain in plain C: in[i] and out[i] dense row-major buffers in
 * the order above (block_table and indices int32). The prologs run in
 * double, each of their results (q, kv_new, q_idx, k_new, weights)
 * rounded to f32 once; the indexer and the attention are pto_indexer_ref
 * and pto_attention_ref over the sequence's keys (its cache rows through
 * the block table, then its new rows). PTO_EINVAL for bad dims, step, params or
 * pointers (a block table entry outside [0, blocks) among a sequence's used
 * blocks included), PTO_ENOMEM. */
PTO_API pto_status pto_dsa_ref(const pto_dsa_dims *d, const pto_dsa_step *s,
                               const pto_dsa_params *prm, const void *const *in,
                               void *const *out);

/* Checks outputs of any implementation against the reference, so that a
 * near-tie in the top-k may resolve either way:
 *   - kv_new and k_new against the reference's: |a - r| <= 1e-4 (1 +
 *     max |r| of the row) (f32 prologs over D = 7168 terms);
 *   - indices with pto_indexer_check on the reference's q_idx, keys and
 *     weights: each row's indices (those before its -1 padding, which
 *     must start at min(topk, visible)) as a set, with a tolerance of
 *     1e-4 of the row's scale at the threshold; their order is free (the
 *     attention does not depend on it);
 *   - out and lse against pto_attention_ref run on the reference's q and
 *     keys with the implementation's own indices. The prologs' f32
 *     rounding moves a logit by up to about dx = 1e-5 * scale * sum|q| *
 *     max|kv| (the head's q, the row's selected keys), so: |lse - r| <=
 *     1e-5 + 1e-5 |r| + dx, |out - r| <= 1e-5 + 1e-4 |r| + 2 dx max|v|; an
 *     infinite lse exactly.
 * The tolerances are wider than a single operator's (ANCHORS.md) because
 * the chain feeds f32 prolog results into the indexer and the attention.
 * It runs the reference prologs and, per sequence, the indexer's scores of
 * the chosen keys and the attention: minutes at DeepSeek-V3.2's sizes for
 * a 512-token prefill. Returns 0, -1 with the first failure in msg
 * ("indices: sequence 1: row 0 ..."), or a negative status for bad input
 * or ENOMEM (with msg). */
PTO_API int pto_dsa_check(const pto_dsa_dims *d, const pto_dsa_step *s,
                          const pto_dsa_params *prm, const void *const *in,
                          const void *const *out, char *msg, size_t msg_size);

/* The same for the outputs of tokens [t0, t1) of the step only (0 <= t0 <=
 * t1 <= T, else PTO_EINVAL): their kv_new, k_new, indices, out and lse
 * rows. It computes the reference queries of those tokens and the keys of
 * their sequences' new tokens, so disjoint ranges checked on several
 * threads cost about what one pto_dsa_check does, split between them. */
PTO_API int pto_dsa_check_tokens(const pto_dsa_dims *d, const pto_dsa_step *s,
                                 const pto_dsa_params *prm,
                                 const void *const *in, const void *const *out,
                                 int64_t t0, int64_t t1, char *msg,
                                 size_t msg_size);

PTO_EXTERN_C_END

#endif /* PTO_DSA_H */
