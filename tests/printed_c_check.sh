#!/usr/bin/env bash
# ctest e2e-printed-c: the C program fuzz_diff prints for a seed (what a
# failing seed reports, to become a regression test) compiles warning-free
# against the public headers, links against the library, runs and passes.
# usage: printed_c_check.sh FUZZ_DIFF CC INCLUDE_DIR LIB_DIR SEED...
set -euo pipefail
fuzz_diff=$1 cc=$2 inc=$3 lib=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for seed in "$@"; do
  "$fuzz_diff" --print-c "$seed" >"$tmp/seed.c"
  "$cc" -std=c11 -Wall -Wextra -Werror -O1 "$tmp/seed.c" -I"$inc" -L"$lib" \
    -Wl,-rpath,"$lib" -lpto -lm -o "$tmp/seed"
  if ! "$tmp/seed" >"$tmp/out.txt" 2>&1; then
    cat "$tmp/out.txt"
    echo "printed program of seed $seed failed"
    exit 1
  fi
done
echo "printed programs of $# seeds compiled and passed"
