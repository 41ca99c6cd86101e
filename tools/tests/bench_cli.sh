#!/usr/bin/env bash
# pto-bench's command line, as a user meets it.
#   bench_cli.sh usage PTO_BENCH   bad input: clear message, exit 2 or 1
#   bench_cli.sh run PTO_BENCH     a tiny indexer case through every option:
#                                  --json, --save, --trace, a missing and a
#                                  lying peer
#   bench_cli.sh quick PTO_BENCH   `pto-bench --quick indexer`, with the
#                                  peer and with a missing interpreter, and
#                                  the headline (`pto-bench --quick`)
# Exit 0 passed, 1 failed, 77 skipped (what the part needs is missing).
set -uo pipefail
part=$1
bench=$2
# shellcheck source=bench_cli_lib.sh
. "$(dirname "$0")/bench_cli_lib.sh"

# Small enough for every machine's default tiles and fast under sanitizers.
tiny=(--preset smoke --s1 8 --s2 512 --topk 64)

case $part in
usage)
  expect 2 "unknown preset 'huge'" -- indexer --preset huge
  expect 2 "presets: smoke small medium real-topk large decode all" -- indexer --preset huge
  expect 2 "unknown preset 'smoke,'|unknown preset ''" -- indexer --preset smoke,
  expect 2 "--preset needs a name" -- indexer --preset
  expect 2 "--s1 needs an integer in \[1, " -- indexer --s1 abc
  expect 2 "--s2 needs an integer" -- indexer --s2 0
  expect 2 "--topk needs an integer" -- indexer --topk -5
  expect 2 "--seed needs an integer" -- indexer --seed x
  expect 2 "unknown mask 'diagonal' \(none or causal\)" -- indexer --mask diagonal
  expect 2 "unknown option '--bogus'" -- indexer --bogus
  expect 2 "--save needs a directory" -- indexer --save
  expect 2 "--threads needs an integer" -- --threads 0 indexer
  expect 2 "unknown command 'indexr'" -- indexr
  expect 2 "all takes no options of its own, got '--preset'" -- all --preset smoke
  "$bench" --help >"$tmp/out" 2>&1 && grep -q "pto-bench all" "$tmp/out" &&
    grep -qE "^  all +every command" "$tmp/out" && passed=$((passed + 1)) ||
    fail "--help does not say what the headline and 'all' run"
  expect 1 "--config: .*nonexistent.json" -- indexer --config "$tmp/nonexistent.json"
  printf '{"knobs": {"nbuffer": }' >"$tmp/bad.json"
  expect 1 "--config: .*bad.json:1:" -- indexer --config "$tmp/bad.json"
  printf '{"knobs": {"bogus": 1}}' >"$tmp/unknown.json"
  expect 1 "--config: .*knobs.bogus" -- indexer --config "$tmp/unknown.json"
  expect 1 "--against: .*bad.json:1:" -- indexer --no-peer --against "$tmp/bad.json"
  expect 2 "--against is not for this command" -- dsa --against "$tmp/unknown.json"
  expect 2 "--peak-each is not for this command" -- dsa --peak-each
  expect 2 "--peak-each does not combine with --against" -- indexer --peak-each --against "$tmp/unknown.json"
  expect 2 "--dynamic does not combine with --against or --peak-each" -- indexer --dynamic --peak-each
  expect 1 "needs [0-9.]+ GiB of buffers" -- indexer --b 4096 --s1 4096 --no-peer
  # PTO_CONFIG reaches the operator benchmarks as every command
  PTO_CONFIG="$tmp/bad.json" expect 1 "PTO_CONFIG=.*bad.json:1:" -- indexer --no-peer
  "$bench" indexer --help >"$tmp/out" 2>&1 && grep -q "real-topk" "$tmp/out" &&
    grep -q "PyTorch / PTO" "$tmp/out" && passed=$((passed + 1)) ||
    fail "indexer --help lacks the presets or how to read the table"
  ;;

run)
  # no interpreter: one line says so, PTO alone, exit 0, torch_ms null
  expect 0 "no PyTorch peer" -- --quick --json indexer "${tiny[@]}" --python "$tmp/no/python3"
  expect_json "JSON without a peer" 'len(r) == 1 and r[0]["workload"] == "indexer" and r[0]["torch_ms"] is None and r[0]["check"] == "ok" and r[0]["pto_ms"] > 0 and r[0]["s2"] == 512 and r[0]["mask"] == "causal" and r[0]["peak_gflops"] >= 0 and r[0]["pto_peak_fraction_each"] is None'

  # --peak-each: an FMA probe before each timed run, the runs' median
  # fraction of the probe before them
  expect 0 "--peak-each: PTO at [0-9.]+% \\[[0-9.]+-[0-9.]+\\] of the FMA rate" -- --quick --json indexer "${tiny[@]}" --no-peer --peak-each
  expect_json "JSON with --peak-each" 'r[0]["check"] == "ok" and r[0]["pto_peak_fraction_each"] > 0 and r[0]["peak_each_gflops"] > 0'

  # --dynamic: the program with dynamic sizes timed in turn, both checked
  expect 0 "timing the static and the dynamic program in turn" -- --quick --json indexer "${tiny[@]}" --no-peer --dynamic
  expect_json "JSON with --dynamic" 'r[0]["check"] == "ok" and r[0]["dynamic_check"] == "ok" and r[0]["dynamic_ms"] > 0 and r[0]["dynamic_compile_ms"] > 0 and abs(r[0]["dynamic_ratio"] - r[0]["dynamic_ms"] / r[0]["dynamic_static_ms"]) < 1e-4 * r[0]["dynamic_ratio"]'

  # --against: a second config timed in turn, both checked, the ratio
  printf '{"labels": {"indexer.qk": {"l1_reuse": 1}}}' >"$tmp/reuse1.json"
  expect 0 "timing PTO under --config and --against in turn" -- --quick --json indexer "${tiny[@]}" --no-peer --against "$tmp/reuse1.json"
  expect_json "JSON with --against" 'r[0]["check"] == "ok" and r[0]["against_config"].endswith("reuse1.json") and r[0]["against_ms"] > 0 and abs(r[0]["against_ratio"] - r[0]["pto_ms"] / r[0]["against_ms"]) < 1e-4 * r[0]["against_ratio"]'

  # --save, --trace and --mask none, no peer
  expect 0 "swimlane of one traced run" -- --quick indexer "${tiny[@]}" --mask none --no-peer --seed 7 \
    --save "$tmp/saved" --trace "$tmp/trace.json"
  expect_saved q k w indices values
  expect_meta 'm["mask"]=="none" and m["seed"]==7 and m["s2"]==512 and m["topk"]==64'

  # two presets: one file and directory per preset
  expect_per_preset values indexer --s1 4 --s2 256 --topk 32

  peer_python
  # the saved files are NumPy's: what PTO saved checks out in NumPy
  "$py" - "$tmp/saved" <<'EOF' && passed=$((passed + 1)) || fail "NumPy disagrees with the saved run"
import sys, numpy as np
d = sys.argv[1]
q, k, w = (np.load(f"{d}/{n}.npy").astype(np.float64) for n in "qkw")
idx, val = np.load(f"{d}/indices.npy"), np.load(f"{d}/values.npy")
assert q.shape == (1, 8, 64, 128) and k.shape == (1, 512, 128) and w.shape == (1, 8, 64)
assert idx.dtype == np.int32 and val.dtype == np.float32 and idx.shape == (1, 8, 64)
s = np.einsum("bsh,bsht->bst", w, np.maximum(np.einsum("bshd,btd->bsht", q, k), 0))
for i in range(8):
    top = np.sort(s[0, i])[::-1][:64]
    assert np.allclose(np.sort(s[0, i, idx[0, i]])[::-1], top, rtol=1e-4, atol=1e-3)
    assert np.allclose(val[0, i], top, rtol=1e-4, atol=1e-3)
EOF

  # with the peer: both sides checked, times and ratio reported
  expect 0 "checking PyTorch's result" -- --quick --json indexer "${tiny[@]}" --python "$py"
  expect_json "JSON with the peer" 'r[0]["torch_ms"] > 0 and r[0]["ratio"] > 0 and r[0]["torch_check"] == "ok" and r[0]["torch_variant"] in ("chunked", "naive") and set(r[0]["torch_variants"]) == {"chunked", "naive"}'

  # a peer whose answer is wrong fails the run
  cat >"$tmp/liar.py" <<'EOF'
import json, sys, numpy as np
d = sys.argv[2]
m = json.load(open(d + "/meta.json"))
shape = (m["b"], m["s1"], m["topk"])
np.save(d + "/indices.npy", np.tile(np.arange(m["topk"], dtype=np.int32), shape[:2] + (1,)))
np.save(d + "/values.npy", np.zeros(shape, np.float32))
json.dump({"best": "liar", "variants": {"liar": {"times_ms": [1.0], "median_ms": 1.0}}}, open(d + "/result.json", "w"))
EOF
  expect 1 "WRONG RESULT from PyTorch" -- --quick indexer "${tiny[@]}" --python "$py" --peer-script "$tmp/liar.py"
  # a peer that writes the wrong shape, and one that crashes
  sed -i 's/m\["topk"\])$/m["topk"] + 1)/' "$tmp/liar.py"
  expect 1 "values.npy: holds float32 \(1, 8, 65\), expected float32 \(1, 8, 64\)" -- \
    --quick indexer "${tiny[@]}" --python "$py" --peer-script "$tmp/liar.py"
  expect_peer_crash indexer "${tiny[@]}"
  ;;

quick)
  quick_part indexer "^smoke .* ok$"
  # the headline, short: its three commands, then what runs everything
  expect 0 "headline 3 of 3: attention" -- --quick --json
  grep -q "headline done in [0-9]* s.* \`pto-bench all\` runs every command" "$tmp/err" &&
    passed=$((passed + 1)) || fail "the headline does not end by naming 'pto-bench all'"
  expect_json "the headline's JSON" '[x["workload"] for x in r] == ["dsa", "indexer", "attention"] and all(x["check"] == "ok" for x in r)'
  ;;

*)
  echo "usage: bench_cli.sh usage|run|quick PTO_BENCH" >&2
  exit 2
  ;;
esac
finish
