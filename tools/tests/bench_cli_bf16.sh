#!/usr/bin/env bash
# pto-bench's --dtype bf16, as a user meets it.
#   bench_cli_bf16.sh usage PTO_BENCH  bad --dtype values and the help texts
#   bench_cli_bf16.sh run PTO_BENCH    tiny bf16 cases of indexer, attention
#                                      and gemm: --json's dtype, engine and
#                                      peer fields, --save's bf16 files
#                                      (checked in NumPy), with and without
#                                      the peer, a lying gemm peer, the bf16
#                                      engine's peak, the warning for an
#                                      OPENBLAS_CORETYPE without AVX-512
#   bench_cli_bf16.sh quick PTO_BENCH  `pto-bench --quick --threads 1 gemm
#                                      --dtype bf16`
# Exit 0 passed, 1 failed, 77 skipped (what the part needs is missing).
set -uo pipefail
part=$1
bench=$2
# shellcheck source=bench_cli_lib.sh
. "$(dirname "$0")/bench_cli_lib.sh"

# Small enough for every machine's default tiles and fast under sanitizers.
tiny_ix=(--preset smoke --s1 8 --s2 512 --topk 64 --dtype bf16)
tiny_at=(--preset smoke --s1 4 --s2 256 --h 16 --topk 32 --dtype bf16)

case $part in
usage)
  expect 2 "--dtype: 'f16' is neither f32 nor bf16" -- indexer --dtype f16
  expect 2 "--dtype: '' is neither f32 nor bf16" -- attention --dtype
  expect 2 "--dtype: 'f64' is neither f32 nor bf16" -- gemm --dtype f64
  expect 2 "--python needs a path" -- gemm --dtype bf16 --python
  expect 2 "bad case 'bf16'" -- gemm bf16
  "$bench" gemm --help >"$tmp/out" 2>&1 && grep -q -- "--dtype bf16" "$tmp/out" &&
    grep -q "cblas_sbgemm" "$tmp/out" && grep -q "peer_gflops" "$tmp/out" &&
    passed=$((passed + 1)) || fail "gemm --help lacks --dtype bf16, cblas_sbgemm or peer_gflops"
  for cmd in indexer attention; do
    "$bench" $cmd --help >"$tmp/out" 2>&1 && grep -q -- "--dtype T" "$tmp/out" &&
      grep -q "engine" "$tmp/out" && passed=$((passed + 1)) ||
      fail "$cmd --help lacks --dtype or the engine field"
  done
  ;;

run)
  # bf16 without a peer: the JSON says the dtype and the engine
  expect 0 "no PyTorch peer" -- --quick --json indexer "${tiny_ix[@]}" --python "$tmp/no/python3" \
    --save "$tmp/saved" --trace "$tmp/trace.json"
  # the indexer's matmuls run on the bf16 engine where the table has one
  expect_json "indexer bf16 JSON" 'r[0]["dtype"] == "bf16" and (r[0]["engine"].endswith("-f32") or r[0]["engine"] == "avx512-bf16") and r[0]["check"] == "ok" and r[0]["torch_ms"] is None'
  # --json: the table goes to stderr
  grep -qE "^indexer bf16: .*matmul engine [a-z0-9]+-(f32, bf16 widened|bf16 \(bf16 multiplied as bf16: q.k)" "$tmp/err" && passed=$((passed + 1)) ||
    fail "the headline does not name the dtype and engine: $(grep -m1 "^indexer" "$tmp/err")"
  expect_saved q k w indices values
  expect_meta 'm["dtype"] == "bfloat16" and "bfloat16" in m["inputs"]["q"]'
  expect 0 "" -- --quick --json attention "${tiny_at[@]}" --no-peer
  expect_json "attention bf16 JSON" 'r[0]["dtype"] == "bf16" and (r[0]["engine"].endswith("-f32") or r[0]["engine"] == "avx512-bf16") and r[0]["check"] == "ok"'
  expect 0 "" -- --json --threads 1 --repeats 2 gemm --dtype bf16 --no-peer 64x48x80
  expect_json "gemm bf16 JSON" 'len(r) == 1 and all(k in r[0] for k in ("m", "n", "k", "threads", "dtype", "engine", "pto_gflops", "peer_gflops", "peer", "peak_gflops")) and r[0]["m"] == 64 and r[0]["n"] == 48 and r[0]["k"] == 80 and r[0]["threads"] == 1 and r[0]["dtype"] == "bf16" and (r[0]["engine"].endswith("-f32") or r[0]["engine"] == "avx512-bf16") and r[0]["correct"] and r[0]["rel_err"] <= 1e-5 and r[0]["peer"].startswith("openblas") and r[0]["peer_gflops"] > 0 and r[0]["torch_gflops"] is None and r[0]["sbgemm"] in ("exported", "not exported") and (r[0]["sbgemm_gflops"] is None) == (r[0]["sbgemm"] == "not exported")'
  grep -qE "cblas_sbgemm: (exported|NOT exported by this OpenBLAS)" "$tmp/err" &&
    passed=$((passed + 1)) || fail "the headline does not say whether cblas_sbgemm is there"
  expect 0 "" -- --json --threads 1 --repeats 2 gemm 64x48x80
  expect_json "gemm f32 JSON" 'r[0]["dtype"] == "f32" and r[0]["peer"] == "openblas-sgemm" and r[0]["engine"].endswith("-f32") and "torch_gflops" not in r[0] and 0 < r[0]["ratio_q25"] <= r[0]["ratio"] <= r[0]["ratio_q75"]'
  # the peak is the engine's: vdpbf16ps for the bf16 engine
  expect 0 "" -- --threads 1 --repeats 2 gemm --dtype bf16 --no-peer 64x48x80
  if grep -q "PTO engine avx512-bf16" "$tmp/out"; then
    grep -q "AVX-512 BF16 (vdpbf16ps) peak (the engine's) 1 thr [0-9]" "$tmp/out" &&
      passed=$((passed + 1)) || fail "the bf16 engine's peak is not vdpbf16ps's: $(head -1 "$tmp/out")"
  fi
  # OPENBLAS_CORETYPE naming a core without AVX-512 on an AVX-512 CPU slows
  # the peers: said on stderr, and kept
  if grep -qw avx512f /proc/cpuinfo; then
    OPENBLAS_CORETYPE=Haswell expect 0 "warning: OPENBLAS_CORETYPE=Haswell holds OpenBLAS" -- \
      --threads 1 --repeats 2 gemm 64x48x80
    grep -q "(OPENBLAS_CORETYPE=Haswell)" "$tmp/out" && passed=$((passed + 1)) ||
      fail "OPENBLAS_CORETYPE=Haswell was not kept: $(head -1 "$tmp/out")"
  fi

  peer_python
  # the saved bf16 files are NumPy's uint16 bits of bf16: PTO's top-k of
  # them checks out in NumPy
  "$py" - "$tmp/saved" <<'EOF' && passed=$((passed + 1)) || fail "NumPy disagrees with the saved bf16 run"
import sys, numpy as np
d = sys.argv[1]
def bf16(a):
    assert a.dtype == np.uint16, a.dtype
    return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
q, k = bf16(np.load(f"{d}/q.npy")), bf16(np.load(f"{d}/k.npy"))
w = np.load(f"{d}/w.npy").astype(np.float64)
idx, val = np.load(f"{d}/indices.npy"), np.load(f"{d}/values.npy")
s = np.einsum("bsh,bsht->bst", w, np.maximum(np.einsum("bshd,btd->bsht", q, k), 0))
for i in range(8):
    vis = 512 - 8 + i + 1
    top = np.sort(s[0, i, :vis])[::-1][:64]
    assert np.allclose(val[0, i], top, rtol=1e-5, atol=1e-4), i
EOF
  # with the peer: PyTorch's bf16 matmuls, their results checked
  expect 0 "checking PyTorch's result" -- --quick --json indexer "${tiny_ix[@]}" --python "$py"
  expect_json "indexer bf16 with the peer" 'r[0]["torch_ms"] > 0 and r[0]["torch_check"] == "ok" and r[0]["dtype"] == "bf16"'
  expect 0 "checking PyTorch's result" -- --quick --json attention "${tiny_at[@]}" --causal --invalid 20 --python "$py"
  expect_json "attention bf16 with the peer" 'r[0]["torch_ms"] > 0 and r[0]["torch_check"] == "ok" and r[0]["dtype"] == "bf16"'
  expect 0 "PyTorch" -- --json --threads 1 --repeats 2 gemm --dtype bf16 --python "$py" 64x48x80
  expect_json "gemm bf16 with the peer" 'r[0]["torch_gflops"] > 0 and set(r[0]["torch_variants"]) == {"matmul", "upcast-f32"} and r[0]["torch_variant"] in ("matmul", "upcast-f32") and r[0]["torch_rel_err"] <= 0.1 and r[0]["peer_gflops"] >= max(r[0]["torch_gflops"], r[0]["openblas_gflops"]) and r[0]["peer"] in ("torch-bf16", "torch-widened-f32", "openblas-sgemm-widened", "openblas-sbgemm")'
  # a gemm peer whose C is wrong fails the run
  cat >"$tmp/liar.py" <<'EOF'
import json, sys, numpy as np
d = sys.argv[2]
m = json.load(open(d + "/meta.json"))
np.save(d + "/c.npy", np.ones((m["m"], m["n"]), np.float32))
json.dump({"best": "matmul", "variants": {"matmul": {"times_ms": [1.0], "median_ms": 1.0}}}, open(d + "/result.json", "w"))
EOF
  expect 1 "WRONG RESULT from PyTorch: its C differs" -- --threads 1 --repeats 2 gemm --dtype bf16 \
    --python "$py" --peer-script "$tmp/liar.py" 64x48x80
  grep -q "torch WRONG" "$tmp/out" && passed=$((passed + 1)) || fail "the row does not say torch WRONG: $(cat "$tmp/out")"
  ;;

quick)
  expect 0 "" -- --quick --threads 1 gemm --dtype bf16 --python "$tmp/no/python3"
  grep -qE "^1024x1024x1024 +1 .* avx|^1024x1024x1024 +1 " "$tmp/out" && passed=$((passed + 1)) ||
    fail "no 1024 row: $(cat "$tmp/out")"
  ;;

*)
  echo "usage: bench_cli_bf16.sh usage|run|quick PTO_BENCH" >&2
  exit 2
  ;;
esac
finish
