#!/usr/bin/env bash
# `pto-bench ops`'s command line, as a user meets it.
#   bench_cli_ops.sh usage PTO_BENCH  bad input: clear message, exit 2; the
#                                     help and the operators it lists
#   bench_cli_ops.sh run PTO_BENCH    --list, --op subsets in JSON without
#                                     the peer, a lying and a missing peer
#   bench_cli_ops.sh quick PTO_BENCH  `pto-bench --quick ops`: every
#                                     operator checked (PTO's result and,
#                                     when there is a peer, PyTorch's)
# Exit 0 passed, 1 failed, 77 skipped (what the part needs is missing).
# Timings are never checked: only results, fields and exit statuses.
set -uo pipefail
part=$1
bench=$2
# shellcheck source=bench_cli_lib.sh
. "$(dirname "$0")/bench_cli_lib.sh"

ops="rms-norm layer-norm softmax rope silu-mlp gelu-mlp attention moe-router cross-entropy"

case $part in
usage)
  expect 2 "unknown option '--bogus'" -- ops --bogus
  expect 2 "unknown operator 'nope'; operators: rms-norm layer-norm" -- ops --op nope
  expect 2 "unknown operator 'soft'" -- ops --op rope,soft
  expect 2 "--op needs a name" -- ops --op
  expect 2 "--python needs a path" -- ops --python
  expect 2 "--threads needs an integer" -- ops --threads 0
  expect 2 "--trace needs a file" -- ops --trace
  expect 2 "--config needs a file" -- ops --op softmax --config
  expect 1 "--config: $tmp/none.json: cannot open" -- --quick ops --op softmax --no-peer --config "$tmp/none.json"
  echo '{"labels": 3}' >"$tmp/bad.json"
  expect 1 "labels: expected an object of labels, got 3" -- --quick ops --op softmax --no-peer --config "$tmp/bad.json"
  "$bench" ops --help >"$tmp/out" 2>&1 && grep -q "roof_fraction" "$tmp/out" &&
    grep -q "pto_compile(p, NULL, &e)" "$tmp/out" && passed=$((passed + 1)) ||
    fail "ops --help lacks the JSON fields or how the operators are compiled"
  for op in $ops; do
    grep -qE "^  $op " "$tmp/out" || fail "ops --help does not list $op"
  done
  "$bench" --help >"$tmp/out" 2>&1 && grep -qE "^  ops " "$tmp/out" &&
    passed=$((passed + 1)) || fail "pto-bench --help does not list ops"
  ;;

run)
  "$bench" ops --list >"$tmp/out" 2>"$tmp/err" &&
    [ "$(awk '{print $1}' "$tmp/out" | xargs)" = "$ops" ] &&
    passed=$((passed + 1)) || fail "ops --list: $(cat "$tmp/out" "$tmp/err")"

  # a subset, in the order given, each once; PTO alone
  expect 0 "" -- --quick --json ops --op softmax,rope --op rms-norm,softmax --no-peer
  expect_json "a subset without the peer" '[x["op"] for x in r] == ["softmax", "rope", "rms-norm"] and all(x["workload"] == "ops" and x["check"] is True and x["torch_ms"] is None and x["torch_check"] is None and x["ratio"] is None and x["roof"] == "dram" and x["roof_gbps"] > 0 and x["roof_fraction"] > 0 and x["pto_ms"] > 0 and x["tasks"] >= 1 and x["programs"] >= 1 and x["max_rel_err"] <= x["tolerance"] for x in r)'
  expect 0 "" -- --quick --json --threads 1 ops --op attention,moe-router --no-peer
  expect_json "matmul operators against the FMA peak" 'all(x["roof"] == "fma" and x["roof_gflops"] > 0 and x["gflop"] > 0 and x["threads"] == 1 and x["check"] is True for x in r)'

  # --trace: a swimlane per operator, pto-trace's format; --config: a
  # label's tile from the file wins over the chosen one
  expect 0 "rope: swimlane of one traced run in $tmp/sw-rope.json" -- --quick ops --op rms-norm,rope --no-peer --trace "$tmp/sw.json"
  python3 -c 'import json, sys; [json.load(open(f))["pto"]["workload"] for f in sys.argv[1:]]' "$tmp/sw-rms-norm.json" "$tmp/sw-rope.json" &&
    passed=$((passed + 1)) || fail "ops --trace: no swimlane per operator"
  echo '{"labels": {"rms_norm": {"vec_tile": [8, 1024]}}}' >"$tmp/rn.json"
  expect 0 "" -- --quick --json ops --op rms-norm --no-peer --config "$tmp/rn.json"
  expect_json "--config's tile" 'r[0]["config"] == "'"$tmp"'/rn.json" and r[0]["tasks"] == 64 and r[0]["check"] is True'
  expect 0 "" -- --quick --json ops --op rms-norm --no-peer
  expect_json "no config: the chosen tile" 'r[0]["config"] is None and r[0]["tasks"] != 64'

  # no interpreter: one line says so, PTO alone, exit 0
  expect 0 "no PyTorch peer" -- --quick ops --op cross-entropy --python "$tmp/no/python3"

  peer_python
  # a peer whose answer is wrong fails the run and says whose it was
  cat >"$tmp/liar.py" <<'EOF2'
import json, os, sys, numpy as np
d = sys.argv[2]
names = json.load(open(d + "/meta.json"))["ops"]
for n in names:
    m = json.load(open(f"{d}/{n}/meta.json"))
    np.save(f"{d}/{n}/y.npy", np.zeros(m["dims"], np.float32))
json.dump({"best": "", "variants": {}, "ops": {n: {"best": "liar", "variants": {"liar": {"median_ms": 1.0}}} for n in names}}, open(d + "/result.json", "w"))
EOF2
  expect 1 "softmax 256x2048: WRONG RESULT from PyTorch: row 0" -- --quick ops --op softmax --python "$py" --peer-script "$tmp/liar.py"
  grep -qE "^softmax .* ok, torch WRONG$" "$tmp/out" && passed=$((passed + 1)) ||
    fail "the row does not say torch WRONG: $(cat "$tmp/out")"
  expect_peer_crash ops --op softmax

  # pto-bench flash: its two operators, tensor ops and a tile program
  "$bench" flash --list >"$tmp/out" 2>"$tmp/err" &&
    [ "$(awk '{print $1}' "$tmp/out" | xargs)" = "flash flash-expert" ] &&
    passed=$((passed + 1)) || fail "flash --list: $(cat "$tmp/out" "$tmp/err")"
  expect 2 "unknown option '--op'" -- flash --op softmax
  expect 0 "" -- --quick --json flash --no-peer
  expect_json "flash in both modes" '[(x["workload"], x["op"], x["mode"]) for x in r] == [("flash", "flash", "tensor"), ("flash", "flash-expert", "expert")] and all(x["check"] is True and x["roof"] == "fma" and x["pto_gflops"] > 0 and x["peak_gflops"] > 0 and x["pto_ms"] > 0 for x in r)'
  ;;

quick)
  if py=$(torch_python); then
    peer=(--python "$py")
  else
    echo "$name: no python3 with torch and numpy; --quick ops runs without its peer" >&2
    peer=(--no-peer)
  fi
  expect 0 "" -- --quick --json ops "${peer[@]}"
  want=$([ "${peer[0]}" = --no-peer ] && echo None || echo True)
  expect_json "every operator checked" "[x['op'] for x in r] == '$ops'.split() and all(x['check'] is True and x['torch_check'] is $want and x['roof'] in ('fma', 'dram') and x['roof_fraction'] > 0 and x['max_rel_err'] <= x['tolerance'] for x in r)"
  ;;

*)
  echo "usage: bench_cli_ops.sh usage|run|quick PTO_BENCH" >&2
  exit 2
  ;;
esac
finish
