# shellcheck shell=bash
# Helpers of pto-bench's command-line tests (bench_cli.sh,
# bench_cli_attention.sh), sourced after they set $bench (the pto-bench
# to run): a private $tmp removed on exit, counters of passed and failed
# checks, the checks themselves, and the parts both operators' tests share
# (a run through --save, --trace and several presets, a crashing peer,
# `pto-bench --quick CMD`). $name: the sourcing script's, for its messages.
name=$(basename "$0" .sh)
# pto-bench's own choice of the peers' OpenBLAS kernel, whatever the
# environment holds: a core named there is warned of (one more line that
# names PyTorch); bench_cli_bf16.sh tests that warning
unset OPENBLAS_CORETYPE
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pto-bench-cli-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
passed=0

fail() {
  echo "FAIL: $*" >&2
  failed=$((failed + 1))
}

# expect STATUS PATTERN -- ARGS...: runs pto-bench ARGS, wants exit STATUS
# and PATTERN (grep -E) in its stderr.
expect() {
  local want=$1 pattern=$2
  shift 3
  "$bench" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    fail "pto-bench $*: exit $got, expected $want"
    sed 's/^/  | /' "$tmp/err" | tail -5 >&2
  elif ! grep -qE -- "$pattern" "$tmp/err"; then
    fail "pto-bench $*: stderr lacks /$pattern/"
    sed 's/^/  | /' "$tmp/err" | tail -5 >&2
  else
    passed=$((passed + 1))
  fi
}

# An interpreter with torch and numpy, as pto-bench looks for one.
torch_python() {
  for py in /usr/bin/python3 python3; do
    if "$py" -c 'import numpy, torch' >/dev/null 2>&1; then
      echo "$py"
      return 0
    fi
  done
  return 1
}

# expect_json WHAT EXPR: evaluates a Python expression over the JSON array
# `r` pto-bench printed last ($tmp/out; any python3: json is in its
# standard library); false fails WHAT.
expect_json() {
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$tmp/out" &&
    passed=$((passed + 1)) || fail "$1: $(cat "$tmp/out")"
}

# expect_meta EXPR: the same over `m`, the meta.json of the last --save
# into $tmp/saved.
expect_meta() {
  python3 -c "import json,sys; m=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" "$tmp/saved/meta.json" &&
    passed=$((passed + 1)) || fail "meta.json: $(cat "$tmp/saved/meta.json")"
}

# expect_saved FILE...: the last run wrote $tmp/saved/FILE.npy for each
# FILE, and its --trace $tmp/trace.json.
expect_saved() {
  for f in "$@"; do
    [ -s "$tmp/saved/$f.npy" ] || fail "--save wrote no $f.npy"
  done
  [ -s "$tmp/trace.json" ] && passed=$((passed + 1)) || fail "--trace wrote nothing"
}

# expect_per_preset FILE CMD ARGS...: `pto-bench --quick CMD` on presets
# smoke and small with ARGS, no peer, --save and --trace: one directory
# (holding FILE.npy) and one trace file per preset.
expect_per_preset() {
  local file=$1 cmd=$2
  shift 2
  expect 0 "" -- --quick "$cmd" --preset smoke,small "$@" --no-peer \
    --save "$tmp/two" --trace "$tmp/two.json"
  for p in smoke small; do
    [ -s "$tmp/two/$p/$file.npy" ] && [ -s "$tmp/two-$p.json" ] || fail "--save/--trace for $p"
  done
}

# peer_python: sets py to an interpreter with torch and numpy, or says the
# peer parts are skipped and ends the part: 77 (skipped) when nothing
# failed so far, else 1.
peer_python() {
  if ! py=$(torch_python); then
    echo "$name: no python3 with torch and numpy; the peer parts are skipped" >&2
    finish && exit 77 || exit 1
  fi
}

# expect_peer_crash CMD ARGS...: a peer that exits 3 fails the run, saying so.
expect_peer_crash() {
  local cmd=$1
  shift
  echo 'raise SystemExit(3)' >"$tmp/crash.py"
  expect 1 "the PyTorch peer .* failed: exit status 3" -- --quick "$cmd" "$@" --python "$py" --peer-script "$tmp/crash.py"
}

# quick_part CMD ROW: `pto-bench --quick CMD` without an interpreter (one
# line says so, and a row matching ROW, grep -E), then with its peer when
# there is one (a smoke row with a ratio, both results checked).
quick_part() {
  local cmd=$1 row=$2 n
  expect 0 "no PyTorch peer" -- --quick "$cmd" --python "$tmp/no/python3"
  n=$(grep -ci "torch" "$tmp/err")
  [ "$n" -eq 1 ] && passed=$((passed + 1)) || fail "the missing peer took $n lines"
  grep -qE "$row" "$tmp/out" && passed=$((passed + 1)) || fail "no smoke row: $(cat "$tmp/out")"
  if torch_python >/dev/null; then
    expect 0 "checking PyTorch's result" -- --quick "$cmd"
    grep -qE "^smoke .*x .* ok$" "$tmp/out" && passed=$((passed + 1)) || fail "no smoke row with a ratio: $(cat "$tmp/out")"
  else
    echo "$name: no python3 with torch and numpy; --quick $cmd ran without its peer only" >&2
  fi
}

# finish: the counts, and the exit status (0 when nothing failed).
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
