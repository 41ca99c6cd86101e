#!/usr/bin/env bash
# ctest bench-cli-sim-recalibrate-run: `--simulate host` does not simulate a run on
# more workers than its cached profile of this host was calibrated with
# (that profile lacks the bandwidth they share): it says so, keeps the old
# profile as FILE.prev and calibrates again on every core.
# usage: bench_cli_sim_recalibrate.sh PTO_BENCH
set -euo pipefail
bench=$1
if [ "$(nproc)" -lt 2 ]; then
  echo "one core: nothing to recalibrate for"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PTO_PROFILE=$tmp/host.json
"$bench" --quick --quiet --threads 1 calibrate --out "$PTO_PROFILE" >"$tmp/cal.txt" 2>&1 ||
  { cat "$tmp/cal.txt"; exit 1; }
workers() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['machine']['cube_workers'])" "$1"; }
[ "$(workers "$PTO_PROFILE")" = 1 ] || { echo "calibrate --threads 1 wrote $(workers "$PTO_PROFILE") workers"; exit 1; }
"$bench" --quick --threads 2 softmax --simulate host >"$tmp/run.txt" 2>&1 ||
  { cat "$tmp/run.txt"; exit 1; }
grep -q "calibrated with 1 workers, this run has 2" "$tmp/run.txt" ||
  { cat "$tmp/run.txt"; echo "no word of the recalibration"; exit 1; }
grep -q "simulated on host" "$tmp/run.txt" || { cat "$tmp/run.txt"; exit 1; }
[ -f "$PTO_PROFILE.prev" ] || { echo "the old profile was not kept"; exit 1; }
[ "$(workers "$PTO_PROFILE")" -ge 2 ] || { echo "the new profile has $(workers "$PTO_PROFILE") workers"; exit 1; }
echo "a 1-worker profile was recalibrated for a 2-worker run"

# one calibrated here longer ago than PTO_PROFILE_MAX_HOURS (default 12)
# is made again too: a VM may run on another host of its CPU model since
age() { python3 -c "import json,sys,time; p=json.load(open(sys.argv[1])); p['calibration']['time']=int(time.time()-float(sys.argv[2])*3600); json.dump(p,open(sys.argv[1],'w'))" "$PTO_PROFILE" "$1"; }
age 13
"$bench" --quick --threads 2 softmax --simulate host >"$tmp/run.txt" 2>&1 ||
  { cat "$tmp/run.txt"; exit 1; }
grep -q "calibrated 13.0 h ago, more than PTO_PROFILE_MAX_HOURS=12" "$tmp/run.txt" ||
  { cat "$tmp/run.txt"; echo "a 13-hour-old profile was kept"; exit 1; }
age 13
PTO_PROFILE_MAX_HOURS=0 "$bench" --quick --threads 2 softmax --simulate host >"$tmp/run.txt" 2>&1 ||
  { cat "$tmp/run.txt"; exit 1; }
if grep -q "calibrating this host again" "$tmp/run.txt"; then
  cat "$tmp/run.txt"; echo "PTO_PROFILE_MAX_HOURS=0 did not keep it"; exit 1
fi
if PTO_PROFILE_MAX_HOURS=soon "$bench" --quick softmax --simulate host >"$tmp/run.txt" 2>&1; then
  echo "a bad PTO_PROFILE_MAX_HOURS was taken"; exit 1
fi
grep -q "PTO_PROFILE_MAX_HOURS=soon: expected hours, 0 for any age" "$tmp/run.txt" ||
  { cat "$tmp/run.txt"; exit 1; }
echo "a 13-hour-old profile was recalibrated, kept with PTO_PROFILE_MAX_HOURS=0"
