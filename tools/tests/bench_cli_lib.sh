# Helpers of pto-bench's command-line tests (bench_cli.sh,
# bench_cli_attention.sh), sourced after they set $bench (the pto-bench
# to run): a private $tmp removed on exit, counters of passed and failed
# checks, and the checks themselves.
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

# json_check FILE EXPR: evaluates a Python expression over the JSON array
# `r` in FILE (any python3: json is in its standard library).
json_check() {
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"
}

# finish: the counts, and the exit status (0 when nothing failed).
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
