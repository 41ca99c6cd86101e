#!/usr/bin/env python3
"""pto-bench's PyTorch peer: times PyTorch on the inputs pto-bench wrote.

usage: pto_bench_torch.py WORKLOAD DIR [--threads N] [--repeats N]
                          [--warmup N] [--quiet]

DIR holds meta.json (the workload's parameters) and the inputs as .npy
files. Every variant of WORKLOAD is run `warmup` times, then timed `repeats`
times, on `threads` threads (torch.set_num_threads, and the BLAS and
OpenMP libraries' own counts in the environment before torch loads). The
fastest variant's outputs are written back into DIR as .npy files, and
DIR/result.json says what ran:

  {"workload": "indexer", "torch": "1.13.1", "threads": 2,
   "best": "chunked", "outputs": ["indices", "values"],
   "variants": {"chunked": {"times_ms": [...], "median_ms": 12.3},
                "naive": {"skipped": "intermediate of 8.0 GiB"}}}

Run by pto-bench (tools/bench/peer.c), which checks the outputs with the
same checker as PTO's. Exit status 0, or 1 with the reason on stderr.
Workloads: indexer (the lightning indexer with its top-k), attention (the
sparse MLA attention over the indexer's top-k keys), gemm (C = A x B), dsa
(DeepSeek's indexer attention: both prologs, the indexer and the sparse
attention on a paged cache, over consecutive steps; a time is all steps'
total; float32 only), ops (pto-bench ops: several common operators in one
run, each in a directory of its own: see ops_main).

meta.json's "dtype" is "float32" or "bfloat16". bfloat16 inputs come as
'<u2' .npy files (their bits: NumPy has no bfloat16) and are viewed as
torch.bfloat16; the matmuls then run in bf16 (PyTorch's bf16 matmul),
while what the operators keep in f32 (the indexer's weights and head sum,
the attention's softmax) stays f32, and the outputs are f32.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time


# --threads, read before torch loads: the BLAS and OpenMP libraries torch
# loads take their thread counts from the environment when they load, and
# torch.set_num_threads does not reach them all (Debian's torch calls the
# system BLAS, OpenBLAS, whose own pool takes every core: a 1-thread case
# measured its f32 matmul on two cores, 199 GFLOP/s on one core of a 174
# GFLOP/s peak). main's parser takes the option from this one.
THREADS = argparse.ArgumentParser(add_help=False)
THREADS.add_argument("--threads", type=int, default=os.cpu_count())
_threads = THREADS.parse_known_args()[0].threads
if _threads and _threads > 0:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(_threads)

import numpy as np  # noqa: E402 (after the thread counts are set)
import torch  # noqa: E402

# A variant whose intermediate would exceed this is skipped, not run.
MAX_INTERMEDIATE = 4 << 30
# The chunked forms hold this many bytes at a time (the indexer's [rows, H,
# keys] scores, the attention's gathered [rows, topk, D]): well inside the
# last-level cache of one socket, big enough for the matmul to run at its
# rate.
CHUNK_BYTES = 8 << 20


def load_input(d, name, meta):
    """Input `name` of DIR d as a tensor of meta's dtype."""
    a = np.load(os.path.join(d, name + ".npy"))
    if meta.get("dtype") == "bfloat16" and a.dtype == np.uint16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def log(args, msg):
    if not args.quiet:
        print(f"pto-bench {args.workload}: torch: {msg}", file=sys.stderr,
              flush=True)


# ---- the lightning indexer ---------------------------------------------------
#
# q [B,S1,H,D], k [B,S2,D], w [B,S1,H] f32; meta: topk, mask ("none" or
# "causal": query i sees keys j <= S2 - S1 + i). score[b,i,j] =
# sum_h w[b,i,h] * relu(q[b,i,h,:] . k[b,j,:]), -inf where hidden; outputs
# indices [B,S1,topk] int32 and values [B,S1,topk] f32: the topk largest
# visible scores, descending, then -1 / -inf past the visible keys.


def indexer_load(d, meta):
    t = {n: load_input(d, n, meta) for n in ("q", "k", "w")}
    t["topk"] = int(meta["topk"])
    t["causal"] = meta["mask"] == "causal"
    if meta["mask"] not in ("none", "causal"):
        raise ValueError(f"unknown mask {meta['mask']!r}")
    return t


def topk_into(scores, topk, out_v, out_i):
    """The topk largest of each row of scores (-inf: hidden) into out_v,
    out_i (rows x topk, prefilled with -inf / -1)."""
    kk = min(topk, scores.shape[-1])
    if kk == 0:
        return
    v, i = torch.topk(scores, kk, dim=-1, largest=True, sorted=True)
    i = i.to(torch.int32)
    i.masked_fill_(torch.isneginf(v), -1)  # hidden keys are padding
    out_v[..., :kk] = v
    out_i[..., :kk] = i


def causal_hidden(s1, s2, rows, keys, device=None):
    """Mask [len(rows), keys] of the keys hidden from queries `rows`."""
    i = torch.arange(rows.start, rows.stop).unsqueeze(1)
    j = torch.arange(keys).unsqueeze(0)
    return j > (s2 - s1 + i)


def indexer_outputs(t):
    B, S1 = t["q"].shape[:2]
    v = torch.full((B, S1, t["topk"]), -math.inf, dtype=torch.float32)
    i = torch.full((B, S1, t["topk"]), -1, dtype=torch.int32)
    return v, i


def indexer_naive(t):
    """As written from the formula: the whole [B,S1,H,S2] product at once."""
    q, k, w = t["q"], t["k"], t["w"]
    B, S1, H, D = q.shape
    S2 = k.shape[1]
    s = torch.matmul(q.reshape(B, S1 * H, D), k.transpose(1, 2)).float()
    s = s.view(B, S1, H, S2).relu_().mul_(w.unsqueeze(-1))
    scores = s.sum(dim=2)
    del s
    if t["causal"]:
        scores.masked_fill_(causal_hidden(S1, S2, range(S1), S2), -math.inf)
    v, i = indexer_outputs(t)
    topk_into(scores, t["topk"], v, i)
    return {"indices": i, "values": v}


def indexer_chunked(t):
    """Blocks of query rows, so [rows, H, keys] stays within CHUNK_BYTES;
    keys no query of a block sees are not scored; the head reduction is a
    batched (1 x H) . (H x keys) product."""
    q, k, w = t["q"], t["k"], t["w"]
    B, S1, H, D = q.shape
    S2 = k.shape[1]
    rows = max(1, CHUNK_BYTES // (H * S2 * 4))
    v, i = indexer_outputs(t)
    for b in range(B):
        for r0 in range(0, S1, rows):
            r1 = min(S1, r0 + rows)
            n = min(S2, S2 - S1 + r1) if t["causal"] else S2
            if n <= 0:
                continue  # no query of the block sees a key: all padding
            c = r1 - r0
            s = torch.matmul(q[b, r0:r1].reshape(c * H, D),
                             k[b, :n].t()).float()  # bf16: the matmul only
            s = torch.bmm(w[b, r0:r1].unsqueeze(1), s.relu_().view(c, H, n))
            s = s.view(c, n)
            if t["causal"]:
                s.masked_fill_(causal_hidden(S1, S2, range(r0, r1), n),
                               -math.inf)
            topk_into(s, t["topk"], v[b, r0:r1], i[b, r0:r1])
    return {"indices": i, "values": v}


def indexer_naive_bytes(t):
    B, S1, H, _ = t["q"].shape
    return B * S1 * H * t["k"].shape[1] * 4


# ---- the sparse attention (MLA) -------------------------------------------------
#
# q [B,S1,H,D], kv [B,S2,D] f32 (one KV head; V = its first dv columns),
# indices [B,S1,topk] int32; meta: dv, scale, causal. A slot's index j is
# valid when 0 <= j < S2 (and j <= S2 - S1 + i for query i when causal),
# wherever it sits in the row. x = scale * q . kv[j] over the valid slots;
# outputs lse [B,S1,H] = ln sum exp(x) (natural log) and out [B,S1,H,dv] =
# sum exp(x - lse) * kv[j, :dv]; a query with no valid slot gets out 0 and
# lse +inf.


def attention_load(d, meta):
    t = {n: load_input(d, n, meta) for n in ("q", "kv", "indices")}
    t["dv"] = int(meta["dv"])
    t["scale"] = float(meta["scale"])
    t["causal"] = bool(meta["causal"])
    return t


def attention_rows(t, r0, r1):
    """out [r1-r0, H, dv] and lse [r1-r0, H] of query rows [r0, r1) of the
    B*S1: gather, bmm, masked softmax, bmm."""
    q, kv, idx = t["q"], t["kv"], t["indices"]
    B, S1, H, D = q.shape
    S2, T, dv = kv.shape[1], idx.shape[2], t["dv"]
    rows = torch.arange(r0, r1)
    ix = idx.view(B * S1, T)[r0:r1].long()
    valid = (ix >= 0) & (ix < S2)
    if t["causal"]:
        valid &= ix <= (S2 - S1 + rows % S1).unsqueeze(1)
    # invalid slots gather row 0 of their batch, then count for nothing
    flat = torch.where(valid, ix, torch.zeros_like(ix)) + \
        (rows // S1 * S2).unsqueeze(1)
    g = kv.view(B * S2, D).index_select(0, flat.view(-1)).view(-1, T, D)
    # bf16 inputs: both matmuls in bf16, the softmax in f32
    x = torch.bmm(q.view(B * S1, H, D)[r0:r1], g.transpose(1, 2)).float()
    x.mul_(t["scale"]).masked_fill_(~valid.unsqueeze(1), -math.inf)
    lse = torch.logsumexp(x, dim=-1)
    empty = torch.isneginf(lse)  # no valid slot: every x is -inf
    x.sub_(lse.masked_fill(empty, 0).unsqueeze(-1)).exp_()
    out = torch.bmm(x.to(g.dtype), g[:, :, :dv]).float()
    return out, lse.masked_fill_(empty, math.inf)


def attention_naive(t):
    """Every query at once: [B*S1, topk, D] gathered, [B*S1, H, topk]
    scores."""
    B, S1, H, _ = t["q"].shape
    out, lse = attention_rows(t, 0, B * S1)
    return {"out": out.view(B, S1, H, t["dv"]), "lse": lse.view(B, S1, H)}


def attention_chunked(t):
    """Blocks of query rows, so the gathered rows of a block stay within
    CHUNK_BYTES (at least one row)."""
    B, S1, H, D = t["q"].shape
    T, dv = t["indices"].shape[2], t["dv"]
    out = torch.empty(B * S1, H, dv, dtype=torch.float32)
    lse = torch.empty(B * S1, H, dtype=torch.float32)
    step = max(1, CHUNK_BYTES // (T * D * 4))
    for r0 in range(0, B * S1, step):
        r1 = min(B * S1, r0 + step)
        out[r0:r1], lse[r0:r1] = attention_rows(t, r0, r1)
    return {"out": out.view(B, S1, H, dv), "lse": lse.view(B, S1, H)}


def attention_naive_bytes(t):
    B, S1, H, D = t["q"].shape
    T = t["indices"].shape[2]
    return B * S1 * T * (D + H) * 4


# ---- GEMM ----------------------------------------------------------------------
#
# a [M,K], b [K,N] of meta's dtype; output c [M,N] float32 = a x b.


def gemm_load(d, meta):
    return {n: load_input(d, n, meta) for n in ("a", "b")}


def gemm_matmul(t):
    """torch.matmul in the inputs' dtype (bf16: PyTorch's bf16 matmul)."""
    return {"c": torch.matmul(t["a"], t["b"]).float()}


def gemm_upcast(t):
    """bf16 inputs widened to f32 first, then the f32 matmul: what a user
    without a fast bf16 matmul would run (f32 inputs: skipped, the same as
    matmul)."""
    if t["a"].dtype == torch.float32:
        raise RuntimeError("f32 inputs: the same as matmul")
    return {"c": torch.matmul(t["a"].float(), t["b"].float())}


# ---- DeepSeek indexer attention (DSA): the whole chain ---------------------
#
# One invocation runs `steps` consecutive steps (decode: one new token per
# sequence per step; prefill: one step). meta: the dims (d, q_lora, h, nope,
# rope, latent, hi, di, block), topk, scale and steps: [{"n": [...],
# "len": [...]}] per step (sequence b has n[b] new tokens and len[b] after
# them). Inputs: x [S,T,D], cos, sin [S,T,R] per step; the weights (w_dq
# [D,Q], gamma_cq [Q], w_uq_qr [Q,H*(N+R)], w_uk [H,N,L], w_dkv_kr [D,L+R],
# gamma_ckv [L], w_qb [Q,HI*DI], w_k [D,DI], ln_gamma_k, ln_beta_k [DI],
# w_proj [D,HI], hadamard [DI,DI]); the paged caches kv_cache [blocks,BS,
# L+R], k_cache [blocks,BS,DI] and block_table [B,max_blocks] int32. The
# caches hold every position a step reads (0 .. len[b]-n[b]-1: pto-bench
# wrote each step's new rows into them as serving does), and a step reads
# no other position, so every step sees exactly the inputs PTO's did.
# Outputs per step, stacked: out [S,T,H,L], lse [S,T,H], kv_new [S,T,L+R],
# k_new [S,T,DI], indices [S,T,topk] int32 (logical positions, -1 past the
# visible keys). Semantics: include/pto/dsa.h.


def dsa_load(d, meta):
    names = ("x", "cos", "sin", "w_dq", "gamma_cq", "w_uq_qr", "w_uk",
             "w_dkv_kr", "gamma_ckv", "w_qb", "w_k", "ln_gamma_k",
             "ln_beta_k", "w_proj", "hadamard", "kv_cache", "k_cache",
             "block_table")
    t = {n: torch.from_numpy(np.load(os.path.join(d, n + ".npy")))
         for n in names}
    for k in ("d", "q_lora", "h", "nope", "rope", "latent", "hi", "di",
              "block", "topk"):
        t[k] = int(meta[k])
    t["scale"] = float(meta["scale"])
    t["steps"] = [([int(v) for v in s["n"]], [int(v) for v in s["len"]])
                  for s in meta["steps"]]
    # serving (pto-bench dsa --preset serve): every step's tokens in one
    # flat array, step s's at rows t0 .. t0 + sum(n), its sequences rows
    # `seqs` of the block table
    if meta.get("serve"):
        t["serve"] = [([int(v) for v in s["seqs"]], int(s["t0"]))
                      for s in meta["steps"]]
    if t["rope"] % 2 or t["rope"] > t["di"]:
        raise ValueError("rope must be even and at most di")
    return t


def rope(u, c, s):
    """Rotate-half RoPE of u [..., R] with the token's c, s [T, R] (u's
    first dimension is the token)."""
    h = u.shape[-1] // 2
    shape = (c.shape[0],) + (1,) * (u.dim() - 2) + (c.shape[1],)
    rot = torch.cat((-u[..., h:], u[..., :h]), dim=-1)
    return u * c.view(shape) + rot * s.view(shape)


def rms_norm(v, g):
    return v * torch.rsqrt(v.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * g


def dsa_prologs(t, x, c, s):
    """Both prologs over all T tokens at once: batched matmuls, the nope
    part absorbed through w_uk as one bmm over heads."""
    T = x.shape[0]
    H, N, R, L = t["h"], t["nope"], t["rope"], t["latent"]
    HI, DI = t["hi"], t["di"]
    cq = rms_norm(x @ t["w_dq"], t["gamma_cq"])
    qq = (cq @ t["w_uq_qr"]).view(T, H, N + R)
    q_lat = torch.bmm(qq[:, :, :N].transpose(0, 1), t["w_uk"])  # [H,T,L]
    q = torch.cat((q_lat.transpose(0, 1), rope(qq[:, :, N:], c, s)), dim=-1)
    kvr = x @ t["w_dkv_kr"]
    kv_new = torch.cat((rms_norm(kvr[:, :L], t["gamma_ckv"]),
                        rope(kvr[:, L:], c, s)), dim=-1)
    qi = (cq @ t["w_qb"]).view(T, HI, DI)
    qi = torch.cat((rope(qi[:, :, :R], c, s), qi[:, :, R:]), dim=-1)
    q_idx = qi @ t["hadamard"]
    ki = torch.nn.functional.layer_norm(x @ t["w_k"], (DI,), t["ln_gamma_k"],
                                        t["ln_beta_k"], eps=1e-6)
    ki = torch.cat((rope(ki[:, :R], c, s), ki[:, R:]), dim=-1)
    k_new = ki @ t["hadamard"]
    weights = (x @ t["w_proj"]) * (HI ** -0.5 * DI ** -0.5)
    return q, kv_new, q_idx, k_new, weights


def cache_rows(t, b, n):
    """Physical cache rows of positions 0 .. n-1 of sequence b."""
    BS = t["block"]
    p = torch.arange(n)
    return t["block_table"][b].long()[p // BS] * BS + p % BS


def dsa_indexer(t, q_idx, k_new, weights, n, lens, idx_out):
    """Per sequence: its keys gathered through the block table (index_select)
    and its new rows after them; its queries in blocks of rows so [rows, HI,
    keys] stays within CHUNK_BYTES; causal end-aligned; top-k."""
    HI, DI = t["hi"], t["di"]
    kc = t["k_cache"].view(-1, DI)
    tok = 0
    for b in range(len(n)):
        old = lens[b] - n[b]
        keys = torch.cat((kc.index_select(0, cache_rows(t, b, old)),
                          k_new[tok:tok + n[b]]))
        rows = max(1, CHUNK_BYTES // (HI * lens[b] * 4))
        for r0 in range(0, n[b], rows):
            r1 = min(n[b], r0 + rows)
            m = old + r1  # keys the block's last query sees
            cnt = r1 - r0
            sc = torch.matmul(q_idx[tok + r0:tok + r1].reshape(cnt * HI, DI),
                              keys[:m].t())
            sc = torch.bmm(weights[tok + r0:tok + r1].unsqueeze(1),
                           sc.relu_().view(cnt, HI, m)).view(cnt, m)
            # query at position old + i sees keys j <= old + i
            i = torch.arange(r0, r1).unsqueeze(1)
            sc.masked_fill_(torch.arange(m).unsqueeze(0) > old + i,
                            -math.inf)
            v = torch.full((cnt, t["topk"]), -math.inf)
            topk_into(sc, t["topk"], v, idx_out[tok + r0:tok + r1])
        tok += n[b]


def dsa_attention(t, q, kv_new, idx, n, lens):
    """Sparse MLA over the selected logical positions: gather (cache rows
    through the block table, new rows from kv_new) -> bmm -> softmax -> bmm,
    in blocks of tokens so the gathered rows stay within CHUNK_BYTES."""
    T, H, D = q.shape
    L, BS, K = t["latent"], t["block"], idx.shape[1]
    kc = t["kv_cache"].view(-1, D)
    # per token: its sequence's cache length, block table row, first new row
    seq = torch.repeat_interleave(torch.arange(len(n)), torch.tensor(n))
    old = torch.tensor([lens[b] - n[b] for b in range(len(n))])[seq]
    first = (torch.cumsum(torch.tensor(n), 0) - torch.tensor(n))[seq]
    bt = t["block_table"].long()
    out = torch.empty(T, H, L)
    lse = torch.empty(T, H)
    step = max(1, CHUNK_BYTES // (K * D * 4))
    for r0 in range(0, T, step):
        r1 = min(T, r0 + step)
        j = idx[r0:r1].long()
        valid = j >= 0
        j = j.clamp(min=0)
        o = old[r0:r1].unsqueeze(1)
        is_new = j >= o
        jc = torch.where(is_new, torch.zeros_like(j), j)
        phys = bt[seq[r0:r1]].gather(1, jc // BS) * BS + jc % BS
        g = kc.index_select(0, phys.view(-1)).view(r1 - r0, K, D)
        if is_new.any():  # the few slots of new rows, from kv_new
            g[is_new] = kv_new.index_select(
                0, (j - o + first[r0:r1].unsqueeze(1))[is_new])
        x = torch.bmm(q[r0:r1], g.transpose(1, 2))
        x.mul_(t["scale"]).masked_fill_(~valid.unsqueeze(1), -math.inf)
        # softmax with its log-sum-exp from one exp pass
        m = x.amax(dim=-1, keepdim=True)
        empty = torch.isneginf(m)  # no valid slot: every x is -inf
        m.masked_fill_(empty, 0)
        x.sub_(m).exp_()
        sm = x.sum(dim=-1, keepdim=True)
        out[r0:r1] = torch.bmm(x, g[:, :, :L]).div_(sm.clamp(min=1e-38))
        lse[r0:r1] = (m + sm.log()).masked_fill_(empty, math.inf).squeeze(-1)
    return out, lse


def dsa_serve_chain(t):
    """The steps of a serving loop, one after the other, each on its own
    rows and its sequences' block tables; each step's time kept."""
    rows = t["x"].shape[0]
    res = {"out": torch.zeros(rows, t["h"], t["latent"]),
           "lse": torch.zeros(rows, t["h"]),
           "kv_new": torch.zeros(rows, t["latent"] + t["rope"]),
           "k_new": torch.zeros(rows, t["di"]),
           "indices": torch.full((rows, t["topk"]), -1, dtype=torch.int32),
           "_step_ms": []}
    for (n, lens), (seqs, t0) in zip(t["steps"], t["serve"]):
        c0 = time.perf_counter()
        st = dict(t)
        st["block_table"] = t["block_table"][torch.tensor(seqs, dtype=torch.long)]
        r = slice(t0, t0 + sum(n))
        q, kv_new, q_idx, k_new, w = dsa_prologs(st, t["x"][r], t["cos"][r],
                                                 t["sin"][r])
        dsa_indexer(st, q_idx, k_new, w, n, lens, res["indices"][r])
        res["out"][r], res["lse"][r] = dsa_attention(
            st, q, kv_new, res["indices"][r], n, lens)
        res["kv_new"][r] = kv_new
        res["k_new"][r] = k_new
        res["_step_ms"].append((time.perf_counter() - c0) * 1e3)
    return res


def dsa_chain(t):
    if "serve" in t:
        return dsa_serve_chain(t)
    S, T = t["x"].shape[:2]
    res = {"out": torch.empty(S, T, t["h"], t["latent"]),
           "lse": torch.empty(S, T, t["h"]),
           "kv_new": torch.empty(S, T, t["latent"] + t["rope"]),
           "k_new": torch.empty(S, T, t["di"]),
           "indices": torch.full((S, T, t["topk"]), -1, dtype=torch.int32)}
    for st, (n, lens) in enumerate(t["steps"]):
        q, kv_new, q_idx, k_new, w = dsa_prologs(t, t["x"][st], t["cos"][st],
                                                 t["sin"][st])
        res["indices"][st].fill_(-1)
        dsa_indexer(t, q_idx, k_new, w, n, lens, res["indices"][st])
        res["out"][st], res["lse"][st] = dsa_attention(
            t, q, kv_new, res["indices"][st], n, lens)
        res["kv_new"][st] = kv_new
        res["k_new"][st] = k_new
    return res


WORKLOADS = {
    "indexer": {
        "load": indexer_load,
        "outputs": ("indices", "values"),
        # name -> (function, bytes of its largest intermediate or None)
        "variants": {
            "chunked": (indexer_chunked, None),
            "naive": (indexer_naive, indexer_naive_bytes),
        },
    },
    "attention": {
        "load": attention_load,
        "outputs": ("out", "lse"),
        "variants": {
            "naive": (attention_naive, attention_naive_bytes),
            "chunked": (attention_chunked, None),
        },
    },
    "gemm": {
        "load": gemm_load,
        "outputs": ("c",),
        "variants": {
            "matmul": (gemm_matmul, None),
            "upcast-f32": (gemm_upcast, None),
        },
    },
    "dsa": {
        "load": dsa_load,
        "outputs": ("out", "lse", "kv_new", "k_new", "indices"),
        "variants": {"batched": (dsa_chain, None)},
    },
}


# ---- pto-bench ops: common operators -----------------------------------------
#
# DIR/meta.json is {"workload": "ops", "ops": [names]}; operator NAME's
# inputs are in DIR/NAME/ as .npy files with its meta.json ({"op", "dims",
# "outputs"}: tools/bench/ops_defs.c's sizes and output names). Each
# operator's variants are timed in turn, its fastest variant's outputs are
# written into DIR/NAME/, and DIR/result.json holds each operator's "best"
# and "variants" under "ops" (its own "best" is "", as no variant is best
# for all). f32 throughout; PyTorch's natural forms of the same formulas.

F = torch.nn.functional


def ops_load(d, meta):
    t = {n[:-4]: torch.from_numpy(np.load(os.path.join(d, n)))
         for n in os.listdir(d) if n.endswith(".npy")}
    t["dims"] = [int(v) for v in meta["dims"]]
    if "target" in t:  # class indices as cross_entropy takes them
        t["target_long"] = t["target"].view(-1).long()
    return t


def need(name):
    """F.name, or a RuntimeError saying this torch lacks it (skipped)."""
    if not hasattr(F, name):
        raise RuntimeError(f"torch {torch.__version__} has no F.{name}")
    return getattr(F, name)


def rms_norm_f(t):
    x = t["x"]
    return {"y": need("rms_norm")(x, (x.shape[-1],), t["gamma"].view(-1),
                                  eps=1e-6)}


def rms_norm_ops(t):
    x = t["x"]
    return {"y": x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) *
            t["gamma"]}


def layer_norm_f(t):
    x = t["x"]
    return {"y": F.layer_norm(x, (x.shape[-1],), t["gamma"].view(-1),
                              t["beta"].view(-1), eps=1e-5)}


def softmax_f(t):
    return {"y": torch.softmax(t["x"], dim=-1)}


def softmax_ops(t):
    x = t["x"]
    e = (x - x.amax(dim=-1, keepdim=True)).exp_()
    return {"y": e.div_(e.sum(dim=-1, keepdim=True))}


def rope_halves(t):
    x, c, s = t["x"], t["cos"], t["sin"]
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return {"y": torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)}


def rope_rotate_half(t):
    """As Hugging Face writes it: x cos + rotate_half(x) sin, cos and sin
    repeated over both halves."""
    x = t["x"]
    h = x.shape[-1] // 2
    c = torch.cat((t["cos"], t["cos"]), dim=-1)
    s = torch.cat((t["sin"], t["sin"]), dim=-1)
    return {"y": x * c + torch.cat((-x[..., h:], x[..., :h]), dim=-1) * s}


def silu_mlp(t):
    x = t["x"]
    return {"y": (F.silu(x @ t["w1"]) * (x @ t["w3"])) @ t["w2"]}


def silu_mlp_inplace(t):
    x = t["x"]
    a = F.silu(x @ t["w1"], inplace=True).mul_(x @ t["w3"])
    return {"y": a @ t["w2"]}


def gelu_mlp(t):
    return {"y": F.gelu(t["x"] @ t["w1"], approximate="tanh") @ t["w2"]}


def attention_masked(t):
    q, k, v = t["q"], t["k"], t["v"]
    S, D = q.shape[-2:]
    s = torch.matmul(q, k.transpose(-1, -2)).mul_(D ** -0.5)
    s.masked_fill_(torch.ones(S, S, dtype=torch.bool).triu_(1), -math.inf)
    return {"out": torch.matmul(torch.softmax(s, dim=-1), v)}


def attention_sdpa(t):
    return {"out": need("scaled_dot_product_attention")(
        t["q"], t["k"], t["v"], is_causal=True)}


def moe_router(t):
    p = torch.softmax(t["x"] @ t["wr"], dim=-1)
    v, i = torch.topk(p, t["dims"][3], dim=-1, largest=True, sorted=True)
    return {"weights": v, "experts": i.to(torch.int32)}


def cross_entropy_f(t):
    loss = F.cross_entropy(t["logits"], t["target_long"], reduction="none")
    return {"loss": loss.view(-1, 1)}


def cross_entropy_ops(t):
    x = t["logits"]
    return {"loss": torch.logsumexp(x, dim=-1, keepdim=True) -
            x.gather(1, t["target_long"].view(-1, 1))}


OPS = {
    "rms-norm": {"F.rms_norm": rms_norm_f, "composition": rms_norm_ops},
    "layer-norm": {"F.layer_norm": layer_norm_f},
    "softmax": {"torch.softmax": softmax_f, "composition": softmax_ops},
    "rope": {"halves": rope_halves, "rotate_half": rope_rotate_half},
    "silu-mlp": {"matmul": silu_mlp, "in-place": silu_mlp_inplace},
    "gelu-mlp": {"matmul": gelu_mlp},
    "attention": {"sdpa": attention_sdpa, "masked_fill": attention_masked},
    "flash": {"sdpa": attention_sdpa, "masked_fill": attention_masked},
    "flash-expert": {"sdpa": attention_sdpa, "masked_fill": attention_masked},
    "moe-router": {"topk": moe_router},
    "cross-entropy": {"F.cross_entropy": cross_entropy_f,
                      "logsumexp": cross_entropy_ops},
}


def ops_main(args):
    with open(os.path.join(args.dir, "meta.json")) as f:
        names = json.load(f)["ops"]
    results = {}
    for name in names:
        if name not in OPS:
            print(f"pto_bench_torch: ops: unknown operator {name!r}",
                  file=sys.stderr)
            return 1
        d = os.path.join(args.dir, name)
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        wl = {"variants": {v: (fn, None) for v, fn in OPS[name].items()}}
        variants, best, out = run_variants(args, wl, ops_load(d, meta),
                                           name + ": ")
        results[name] = {"best": best, "variants": variants}
        if best is None:
            continue  # pto-bench says the operator has no PyTorch result
        for n in meta["outputs"]:
            np.save(os.path.join(d, n + ".npy"),
                    np.ascontiguousarray(out[n].contiguous().numpy()))
        del out
    result = {"workload": "ops", "torch": torch.__version__,
              "threads": torch.get_num_threads(), "best": "", "variants": {},
              "ops": results}
    with open(os.path.join(args.dir, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 0


# ---- the driver ----------------------------------------------------------------


def run_variants(args, wl, inputs, what):
    """Every variant of wl on inputs: `warmup` runs, then `repeats` timed;
    returns {name: times or why skipped}, the fastest's name and outputs."""
    variants, best, best_out = {}, None, None
    with torch.no_grad():
        for name, (fn, size) in wl["variants"].items():
            if size and size(inputs) > MAX_INTERMEDIATE:
                why = f"intermediate of {size(inputs) / (1 << 30):.1f} GiB"
                variants[name] = {"skipped": why}
                log(args, f"{what}{name}: skipped ({why})")
                continue
            log(args, f"{what}{name}: {args.warmup} warm-up + {args.repeats} "
                      f"runs on {torch.get_num_threads()} threads")
            try:
                for _ in range(args.warmup):
                    out = fn(inputs)
                times, steps = [], []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    out = fn(inputs)
                    times.append((time.perf_counter() - t0) * 1e3)
                    if "_step_ms" in out:  # a serving loop's steps
                        steps.append(out["_step_ms"])
            except (RuntimeError, MemoryError) as e:
                variants[name] = {"skipped": str(e).splitlines()[0]}
                log(args, f"{what}{name}: failed: {variants[name]['skipped']}")
                continue
            med = statistics.median(times)
            variants[name] = {"times_ms": times, "median_ms": med}
            if steps:  # each step's median over the repeats
                variants[name]["step_ms"] = [statistics.median(v)
                                             for v in zip(*steps)]
            log(args, f"{what}{name}: median {med:.2f} ms")
            if best is None or med < variants[best]["median_ms"]:
                best, best_out = name, out
    return variants, best, best_out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 parents=[THREADS])
    ap.add_argument("workload", choices=sorted(list(WORKLOADS) + ["ops"]))
    ap.add_argument("dir")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(max(1, args.threads))
    if args.workload == "ops":
        return ops_main(args)
    wl = WORKLOADS[args.workload]
    with open(os.path.join(args.dir, "meta.json")) as f:
        meta = json.load(f)
    inputs = wl["load"](args.dir, meta)

    variants, best, best_out = run_variants(args, wl, inputs, "")
    if best is None:
        print(f"pto_bench_torch: {args.workload}: no variant ran",
              file=sys.stderr)
        return 1
    for n in wl["outputs"]:
        np.save(os.path.join(args.dir, n + ".npy"),
                np.ascontiguousarray(best_out[n].numpy()))
    result = {"workload": args.workload, "torch": torch.__version__,
              "threads": torch.get_num_threads(), "best": best,
              "outputs": list(wl["outputs"]), "variants": variants}
    with open(os.path.join(args.dir, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
