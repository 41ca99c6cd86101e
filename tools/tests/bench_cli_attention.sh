#!/usr/bin/env bash
# `pto-bench attention`'s command line, as a user meets it.
#   bench_cli_attention.sh usage PTO_BENCH  bad input: clear message, exit 2
#                                           or 1
#   bench_cli_attention.sh run PTO_BENCH    tiny cases through every option:
#                                           --json, --save (checked in
#                                           NumPy), --trace, --causal,
#                                           --scale, --invalid, queries with
#                                           no valid key, a missing, a lying
#                                           and a crashing peer
#   bench_cli_attention.sh quick PTO_BENCH  `pto-bench --quick attention`,
#                                           with the peer and with a missing
#                                           interpreter
# Exit 0 passed, 1 failed, 77 skipped (what the part needs is missing).
set -uo pipefail
part=$1
bench=$2
# shellcheck source=bench_cli_lib.sh
. "$(dirname "$0")/bench_cli_lib.sh"

# Small enough for every machine's default tiles and fast under sanitizers.
tiny=(--preset smoke --s1 4 --s2 256 --h 16 --topk 32)

case $part in
usage)
  expect 2 "unknown preset 'huge'" -- attention --preset huge
  expect 2 "presets: smoke small medium real-topk large decode all" -- attention --preset huge
  expect 2 "--invalid needs a number in \[0, 100\], got '101'" -- attention --invalid 101
  expect 2 "--invalid needs a number" -- attention --invalid abc
  expect 2 "--invalid needs a number" -- attention --invalid
  expect 2 "--scale needs a number" -- attention --scale nan
  expect 2 "--dv needs an integer in \[1, " -- attention --dv 0
  expect 2 "--topk needs an integer" -- attention --topk 1.5
  expect 2 "unknown option 'yes'" -- attention --causal yes
  expect 2 "unknown option '--mask'" -- attention --mask causal
  expect 2 "--trace needs a file" -- attention --trace
  expect 1 "dv=600 is more than D=576" -- attention --preset smoke --dv 600 --no-peer
  expect 1 "needs [0-9.]+ GiB of buffers" -- attention --b 4096 --s2 1000000 --no-peer
  expect 1 "--config: .*nonexistent.json" -- attention --config "$tmp/nonexistent.json"
  "$bench" attention --help >"$tmp/out" 2>&1 && grep -q "real-topk" "$tmp/out" &&
    grep -q "PyTorch / PTO" "$tmp/out" && grep -q -- "--invalid PCT" "$tmp/out" &&
    passed=$((passed + 1)) || fail "attention --help lacks the presets, options or how to read the table"
  "$bench" --help >"$tmp/out" 2>&1 && grep -qE "^  attention " "$tmp/out" &&
    passed=$((passed + 1)) || fail "pto-bench --help does not list attention"
  ;;

run)
  # no interpreter: one line says so, PTO alone, exit 0, torch_ms null
  expect 0 "no PyTorch peer" -- --quick --json attention "${tiny[@]}" --python "$tmp/no/python3"
  expect_json "JSON without a peer" 'len(r) == 1 and r[0]["workload"] == "attention" and r[0]["torch_ms"] is None and r[0]["check"] == "ok" and r[0]["pto_ms"] > 0 and r[0]["s2"] == 256 and r[0]["h"] == 16 and r[0]["topk"] == 32 and r[0]["causal"] is False and r[0]["valid_slots"] == 4 * 32 and r[0]["invalid_slots"] == 0 and abs(r[0]["scale"] - 576 ** -0.5) < 1e-6 and abs(r[0]["gflop"] / (2 * 4 * 16 * 32 * 1088e-9) - 1) < 1e-5 and r[0]["peak_gflops"] >= 0 and r[0]["torch_check"] is None'

  # every option, no peer
  expect 0 "swimlane of one traced run" -- --quick attention "${tiny[@]}" --causal --invalid 25 \
    --scale 0.135234 --no-peer --seed 7 --save "$tmp/saved" --trace "$tmp/trace.json"
  grep -qE "^smoke\* .* 0\.1352 yes +25\.0 .* ok$" "$tmp/out" && passed=$((passed + 1)) ||
    fail "no row with the scale, causal and 25 % invalid: $(cat "$tmp/out")"
  expect_saved q kv indices out lse
  expect_meta 'm["workload"]=="attention" and m["scale"]==0.135234 and m["causal"] is True and m["seed"]==7 and m["invalid_pct"]==25 and m["s2"]==256 and m["topk"]==32 and m["dv"]==512 and m["invalid_slots"]==32'

  # GF/s counts the valid slots' work: invalid ones are not computed
  expect 0 "" -- --quick --json attention "${tiny[@]}" --invalid 25 --no-peer
  expect_json "gflop of the valid slots" 'r[0]["invalid_slots"] == 32 and r[0]["valid_slots"] == 96 and abs(r[0]["gflop"] / (2 * 16 * 96 * 1088e-9) - 1) < 1e-5'

  # two presets: one file and directory per preset
  expect_per_preset lse attention --s1 2 --s2 128 --h 8 --topk 16

  # queries with no valid key, through PTO's check: every slot invalid, and
  # causal queries that see no key (S1 > S2)
  expect 0 "" -- --quick attention "${tiny[@]}" --invalid 100 --no-peer --save "$tmp/none"
  expect 0 "" -- --quick attention --preset smoke --s1 8 --s2 4 --h 4 --topk 3 --causal --invalid 20 --no-peer

  peer_python
  # the saved files are NumPy's: what PTO saved checks out in NumPy
  "$py" - "$tmp/saved" "$tmp/none" <<'EOF2' && passed=$((passed + 1)) || fail "NumPy disagrees with the saved run"
import json, sys, numpy as np
d = sys.argv[1]
m = json.load(open(f"{d}/meta.json"))
q, kv = (np.load(f"{d}/{n}.npy").astype(np.float64) for n in ("q", "kv"))
idx, out, lse = (np.load(f"{d}/{n}.npy") for n in ("indices", "out", "lse"))
assert q.shape == (1, 4, 16, 576) and kv.shape == (1, 256, 576)
assert idx.dtype == np.int32 and idx.shape == (1, 4, 32)
assert out.dtype == np.float32 and out.shape == (1, 4, 16, 512) and lse.shape == (1, 4, 16)
S1, S2 = 4, 256
invalid = 0
for i in range(S1):
    last = S2 - S1 + i
    v = [int(j) for j in idx[0, i] if 0 <= j <= last]
    invalid += 32 - len(v)
    assert len(set(v)) == len(v), f"row {i} repeats a key"
    x = m["scale"] * q[0, i] @ kv[0, v].T
    mx = x.max(axis=1, keepdims=True)
    l = mx + np.log(np.exp(x - mx).sum(axis=1, keepdims=True))
    o = np.exp(x - l) @ kv[0, v, :512]
    assert np.allclose(lse[0, i], l[:, 0], rtol=1e-6, atol=1e-6), i
    assert np.allclose(out[0, i], o, rtol=1e-4, atol=1e-5), i
assert invalid == m["invalid_slots"], (invalid, m["invalid_slots"])
# every slot invalid: out 0, lse +inf
d = sys.argv[2]
idx, out, lse = (np.load(f"{d}/{n}.npy") for n in ("indices", "out", "lse"))
assert not ((idx >= 0) & (idx < 256)).any()
assert (out == 0).all() and np.isposinf(lse).all()
EOF2

  # with the peer: both sides checked, times and ratio reported
  expect 0 "checking PyTorch's result" -- --quick --json attention "${tiny[@]}" --causal --invalid 30 --python "$py"
  expect_json "JSON with the peer" 'r[0]["torch_ms"] > 0 and r[0]["ratio"] > 0 and r[0]["check"] == "ok" and r[0]["torch_check"] == "ok" and r[0]["torch_variant"] in ("chunked", "naive") and set(r[0]["torch_variants"]) == {"chunked", "naive"} and r[0]["torch_version"]'
  # PyTorch on queries that see no key, or fewer than topk, or some of their
  # slots invalid: out 0 and lse +inf where none is valid, as PTO's
  expect 0 "checking PyTorch's result" -- --quick attention --preset smoke --s1 8 --s2 4 --h 4 --topk 3 \
    --causal --invalid 20 --python "$py"

  # a peer whose answer is wrong fails the run
  cat >"$tmp/liar.py" <<'EOF2'
import json, sys, numpy as np
d = sys.argv[2]
m = json.load(open(d + "/meta.json"))
np.save(d + "/out.npy", np.zeros((m["b"], m["s1"], m["h"], m["dv"]), np.float32))
np.save(d + "/lse.npy", np.zeros((m["b"], m["s1"], m["h"]), np.float32))
json.dump({"best": "liar", "variants": {"liar": {"times_ms": [1.0], "median_ms": 1.0}}}, open(d + "/result.json", "w"))
EOF2
  expect 1 "WRONG RESULT from PyTorch: row 0 .*head 0: lse 0, expected" -- --quick attention "${tiny[@]}" --python "$py" --peer-script "$tmp/liar.py"
  grep -q "ok, torch WRONG" "$tmp/out" && passed=$((passed + 1)) || fail "the row does not say torch WRONG: $(cat "$tmp/out")"
  # a peer that writes the wrong shape, one that writes nothing, one that crashes
  sed -i 's/m\["h"\]), np.float32))$/m["h"] + 1), np.float32))/' "$tmp/liar.py"
  expect 1 "lse.npy: holds float32 \(1, 4, 17\), expected float32 \(1, 4, 16\)" -- \
    --quick attention "${tiny[@]}" --python "$py" --peer-script "$tmp/liar.py"
  echo 'pass' >"$tmp/silent.py"
  expect 1 "the PyTorch peer wrote no result" -- --quick attention "${tiny[@]}" --python "$py" --peer-script "$tmp/silent.py"
  expect_peer_crash attention "${tiny[@]}"
  ;;

quick)
  quick_part attention "^smoke +1 +16 +1024 +128 +576 +512 +128 .* ok$"
  ;;

*)
  echo "usage: bench_cli_attention.sh usage|run|quick PTO_BENCH" >&2
  exit 2
  ;;
esac
finish
