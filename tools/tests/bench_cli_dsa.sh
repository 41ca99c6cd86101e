#!/usr/bin/env bash
# `pto-bench dsa`'s command line, as a user meets it.
#   bench_cli_dsa.sh usage PTO_BENCH  bad input: clear message, exit 2 or 1
#   bench_cli_dsa.sh run PTO_BENCH    the smoke preset through every option:
#                                     --json, --save (checked in NumPy: the
#                                     cache writes between steps, a block
#                                     table out of order), --trace (the
#                                     barrier run's stages in order, the
#                                     dynamic run's swimlane), a
#                                     config's own stages, a missing, a
#                                     lying and a crashing peer
#   bench_cli_dsa.sh quick PTO_BENCH  `pto-bench --quick dsa`, with the peer
#                                     and with a missing interpreter
# Exit 0 passed, 1 failed, 77 skipped (what the part needs is missing).
set -uo pipefail
part=$1
bench=$2
# shellcheck source=bench_cli_lib.sh
. "$(dirname "$0")/bench_cli_lib.sh"

case $part in
usage)
  expect 2 "unknown preset 'huge'" -- dsa --preset huge
  expect 2 "presets: smoke decode prefill all" -- dsa --preset huge
  expect 2 "--steps needs an integer in \[1, 64\], got '0'" -- dsa --steps 0
  expect 2 "--small needs an integer in \[0, 1\], got '2'" -- dsa --small 2
  expect 2 "--topk needs an integer" -- dsa --topk x
  expect 2 "--scale needs a number" -- dsa --scale nan
  expect 2 "--scale needs a number" -- dsa --scale
  expect 2 "unknown option '--stages'" -- dsa --stages 4
  expect 2 "--preset decode,serve: a serving preset runs alone" -- dsa --preset decode,serve
  expect 2 "--slots needs an integer in \[1, 16\], got '17'" -- dsa --preset serve --slots 17
  expect 1 "serve: needs prefill <= prefill-max" -- dsa --preset serve --prefill 300 --no-peer
  expect 2 "--trace needs a file" -- dsa --trace
  expect 1 "smoke: needs n <= len <= len-max, got n=10 len=9 len-max=37" -- dsa --preset smoke --n 10 --no-peer
  expect 1 "needs n <= len <= len-max, got n=2 len=9 len-max=5" -- dsa --preset smoke --len-max 5 --no-peer
  expect 1 "--config: .*nonexistent.json" -- dsa --config "$tmp/nonexistent.json"
  expect 1 "pto-bench dsa: --dtype bf16: the chain runs in f32 only" -- dsa --preset smoke --dtype bf16 --no-peer
  echo '{"stage_barriers": "attention"}' >"$tmp/bad.json"
  expect 1 "stage_barriers: expected an array of label prefixes" -- dsa --preset smoke --config "$tmp/bad.json" --no-peer
  echo '{"stage_barriers": ["mla_prolog", ""]}' >"$tmp/bad.json"
  expect 1 "stage_barriers\[1\]: empty label prefix" -- dsa --preset smoke --config "$tmp/bad.json" --no-peer
  # stages against the data flow: the barrier compile says which tasks
  echo '{"stage_barriers": ["attention", "indexer"]}' >"$tmp/bad.json"
  expect 1 "stage_barriers: task .* of stage 0 \('attention'\) feeds task .* of the earlier stage 1 \('indexer'\)|stage_barriers: task .* \('attention'\)" -- dsa --preset smoke --config "$tmp/bad.json" --no-peer
  "$bench" dsa --help >"$tmp/out" 2>&1 && grep -q "prefill" "$tmp/out" &&
    grep -q "bar/PTO" "$tmp/out" && grep -q "pto_barrier_ms" "$tmp/out" &&
    passed=$((passed + 1)) || fail "dsa --help lacks the presets, the table or the JSON fields"
  "$bench" --help >"$tmp/out" 2>&1 && grep -qE "^  dsa " "$tmp/out" &&
    passed=$((passed + 1)) || fail "pto-bench --help does not list dsa"
  ;;

run)
  # no interpreter: one line says so, PTO alone, exit 0, torch_ms null
  expect 0 "no PyTorch peer" -- --quick --json dsa --python "$tmp/no/python3"
  expect_json "JSON without a peer" 'len(r) == 1 and r[0]["workload"] == "dsa" and r[0]["preset"] == "smoke" and r[0]["threads"] >= 1 and r[0]["pto_ms"] > 0 and r[0]["pto_barrier_ms"] > 0 and r[0]["barrier_ratio"] > 0 and r[0]["torch_ms"] is None and r[0]["check"] == "ok" and r[0]["barrier_check"] == "ok" and r[0]["torch_check"] is None and len(r[0]["steps"]) == 2 and r[0]["steps"][1]["len_min"] == 11 and r[0]["steps"][1]["len_max"] == 39 and r[0]["compile_counted"] is True and set(r[0]["parts"]) >= {"mla_prolog", "indexer_prolog", "indexer", "attention", "makespan_ms"} and r[0]["parts"]["attention"]["busy_ms"] > 0 and r[0]["steps"][0]["tasks_barrier"] > r[0]["steps"][0]["tasks"]'

  # every option, no peer; progress lines per step
  expect 0 "step 2 of 2 \(lengths 11-39\): compiling" -- --quick dsa --no-peer --seed 7 --scale 0.125 \
    --save "$tmp/saved" --trace "$tmp/trace.json"
  grep -qE "^smoke +3 +2 +9-37 +2 +16 +small .* ok$" "$tmp/out" && passed=$((passed + 1)) ||
    fail "no smoke row: $(cat "$tmp/out")"
  grep -qE "^  mla_prolog " "$tmp/out" && grep -qE "^  2 +11-39 " "$tmp/out" && passed=$((passed + 1)) ||
    fail "no lines per step and per part: $(cat "$tmp/out")"
  expect_saved x cos sin w_dq w_uk kv_cache k_cache block_table out lse kv_new k_new indices
  [ -s "$tmp/trace-barrier.json" ] && passed=$((passed + 1)) || fail "no barrier trace"
  expect_meta 'm["workload"]=="dsa" and m["scale"]==0.125 and m["seed"]==7 and m["b"]==3 and m["topk"]==16 and m["steps"]==[{"n":[2,2,2],"len":[9,23,37]},{"n":[2,2,2],"len":[11,25,39]}]'
  # the traces: the barrier run's stages in order and in its config, the
  # MPMD run's without stages
  python3 - "$tmp/trace.json" "$tmp/trace-barrier.json" <<'EOF2' && passed=$((passed + 1)) || fail "the traces' stages"
import json, sys
parts = ["mla_prolog", "indexer_prolog", "indexer", "attention"]
def spans(path):
    t = json.load(open(path))
    first, last = {}, {}
    for e in t["traceEvents"]:
        if e["ph"] != "X":
            continue
        p = e["args"]["label"].split(".")[0]
        if p in parts:
            first[p] = min(first.get(p, 1e30), e["ts"])
            last[p] = max(last.get(p, -1e30), e["ts"] + e["dur"])
    return t["pto"]["config"], first, last
cfg, first, last = spans(sys.argv[1])
assert "stage_barriers" not in cfg, cfg
cfg, first, last = spans(sys.argv[2])
assert cfg["stage_barriers"] == parts, cfg
for a, b in zip(parts, parts[1:]):
    assert first[b] + 0.002 >= last[a], (a, last[a], b, first[b])
EOF2
  # a config's own stages replace the four parts in the barrier run
  echo '{"stage_barriers": ["mla_prolog", "attention"]}' >"$tmp/two.json"
  expect 0 "" -- --quick --json dsa --no-peer --config "$tmp/two.json" --trace "$tmp/own.json"
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["pto"]["config"]; sys.exit(0 if c["stage_barriers"]==["mla_prolog","attention"] else 1)' \
    "$tmp/own-barrier.json" && passed=$((passed + 1)) || fail "the config's stages were not used"

  peer_python
  # --save: the caches hold step 1's new rows at their slots, read through
  # a block table whose blocks are out of order
  "$py" - "$tmp/saved" <<'EOF2' && passed=$((passed + 1)) || fail "the saved caches and block table"
import json, sys
import numpy as np
d = sys.argv[1]
m = json.load(open(f"{d}/meta.json"))
bt = np.load(f"{d}/block_table.npy")
kvc, kc = np.load(f"{d}/kv_cache.npy"), np.load(f"{d}/k_cache.npy")
kvn, kn = np.load(f"{d}/kv_new.npy"), np.load(f"{d}/k_new.npy")
BS = m["block"]
used = bt[bt >= 0]
assert len(set(used.tolist())) == len(used) == m["blocks"], "blocks shared"
assert (np.diff(used) != 1).any(), "blocks in order"
for s, st in enumerate(m["steps"]):
    t = 0
    for b, (n, ln) in enumerate(zip(st["n"], st["len"])):
        for i in range(n):
            p = ln - n + i
            row = bt[b, p // BS], p % BS
            assert (kvc[row] == kvn[s, t]).all() and (kc[row] == kn[s, t]).all(), (s, b, i)
            t += 1
EOF2

  # --dynamic: the serving program beside each step's own, checked too
  expect 0 "compiling the serving program once" -- --quick --json dsa --dynamic --no-peer
  expect_json "--dynamic's JSON" 'r[0]["dynamic_check"] == "ok" and r[0]["dynamic_ms"] > 0 and r[0]["dynamic_static_ms"] > 0 and r[0]["dynamic_ratio"] > 0 and r[0]["dynamic_compile_ms"] > 0 and r[0]["check"] == "ok"'
  # its swimlane beside the static runs' with --trace
  expect 0 "swimlane \\(dynamic\\) in $tmp/dyn-dynamic.json" -- --quick dsa --dynamic --no-peer --trace "$tmp/dyn.json"
  python3 - "$tmp/dyn-dynamic.json" <<'EOF2' && passed=$((passed + 1)) || fail "the dynamic run's trace"
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
assert any(e["args"].get("label", "").startswith("indexer") for e in ev), "no indexer task"
EOF2

  # the serving loop: one compile, every step of all three checked
  expect 0 "compiling the serving program once" -- --quick --json dsa --preset serve-smoke --python "$py"
  expect_json "the serving loop's JSON" 'len(r) == 1 and r[0]["preset"] == "serve-smoke" and r[0]["serve"] and r[0]["compiles"] == 1 and r[0]["compile_ms"] > 0 and r[0]["step_ms"] > 0 and r[0]["step_ms_p99"] >= r[0]["step_ms_p50"] > 0 and r[0]["recompile_ms"] > r[0]["recompile_compile_ms"] > 0 and r[0]["torch_step_ms"] > 0 and r[0]["bind_us"] >= 0 and r[0]["check"] == "ok" and r[0]["recompile_check"] == "ok" and r[0]["torch_check"] == "ok" and len(r[0]["steps"]) == 16 and sum(s["tokens"] for s in r[0]["steps"]) == r[0]["tokens"] == r[0]["prefill_tokens"] + r[0]["decode_tokens"] and max(s["b"] for s in r[0]["steps"]) <= 4'

  # with the peer: all three checked, times and ratios reported
  expect 0 "checking PyTorch's result" -- --quick --json dsa --python "$py"
  expect_json "JSON with the peer" 'r[0]["torch_ms"] > 0 and r[0]["ratio"] > 0 and r[0]["check"] == "ok" and r[0]["barrier_check"] == "ok" and r[0]["torch_check"] == "ok" and r[0]["torch_variant"] == "batched" and r[0]["torch_version"]'
  # a sequence shorter than topk, one token per step, one sequence
  expect 0 "checking PyTorch's result" -- --quick dsa --b 1 --n 1 --len 5 --steps 3 --python "$py"

  # a peer whose answer is wrong fails the run
  cat >"$tmp/liar.py" <<'EOF2'
import json, sys, numpy as np
d = sys.argv[2]
m = json.load(open(d + "/meta.json"))
S, T = len(m["steps"]), sum(m["steps"][0]["n"])
L, R = m["latent"], m["rope"]
np.save(d + "/out.npy", np.zeros((S, T, m["h"], L), np.float32))
np.save(d + "/lse.npy", np.zeros((S, T, m["h"]), np.float32))
np.save(d + "/kv_new.npy", np.zeros((S, T, L + R), np.float32))
np.save(d + "/k_new.npy", np.zeros((S, T, m["di"]), np.float32))
np.save(d + "/indices.npy", np.full((S, T, m["topk"]), -1, np.int32))
json.dump({"best": "liar", "variants": {"liar": {"times_ms": [1.0], "median_ms": 1.0}}}, open(d + "/result.json", "w"))
EOF2
  expect 1 "WRONG RESULT from PyTorch: step 1: " -- --quick dsa --python "$py" --peer-script "$tmp/liar.py"
  grep -q "ok, torch WRONG" "$tmp/out" && passed=$((passed + 1)) || fail "the row does not say torch WRONG: $(cat "$tmp/out")"
  echo 'pass' >"$tmp/silent.py"
  expect 1 "the PyTorch peer wrote no result" -- --quick dsa --python "$py" --peer-script "$tmp/silent.py"
  expect_peer_crash dsa
  ;;

quick)
  quick_part dsa "^smoke +3 +2 +9-37 +2 +16 +small .* ok$"
  ;;

*)
  echo "usage: bench_cli_dsa.sh usage|run|quick PTO_BENCH" >&2
  exit 2
  ;;
esac
finish
