#!/usr/bin/env python3
"""The simulator's scaling table: DeepSeek's indexer attention (`pto-bench
dsa`, presets decode and prefill) simulated with MPMD and with stage
barriers on hosts of N of this CPU's cores (`--simulate host:N`, each
compiled for N workers: PTO_THREADS=N) and on the Ascend profile, and the
barriers' makespan over MPMD's.

    tools/sim_scale.py                          # host:8,16,32,64 and ascend
    tools/sim_scale.py --cores 8,64 --preset decode --steps 2
    tools/sim_scale.py --json rows.json         # the rows as well

Each row also runs the executable once on this machine (pto-bench measures
what it simulates); those times are for the N-worker program on this
machine's cores and say nothing of the simulated host. Calibrate first
(`pto-bench calibrate`) on a quiet machine. Progress goes to stderr.
"""
import argparse
import json
import os
import subprocess
import sys


def run(bench, machine, preset, cores, steps):
    cmd = [bench, "--json", "--quiet", "--repeats", "1", "dsa", "--no-peer",
           "--preset", preset, "--simulate", machine]
    if steps:
        cmd += ["--steps", str(steps)]
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if cores:
        env["PTO_THREADS"] = str(cores)
    print(f"sim_scale: {preset} on {machine}: "
          f"{'PTO_THREADS=%d ' % cores if cores else ''}{' '.join(cmd)}",
          file=sys.stderr, flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env)
    if p.returncode:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"sim_scale: {preset} on {machine} failed "
                         f"(exit {p.returncode})")
    for r in json.loads(p.stdout):
        if r.get("sim_ms") and r.get("sim_barrier_ms"):
            return {"preset": preset, "machine": machine,
                    "mpmd_ms": r["sim_ms"],
                    "barrier_ms": r["sim_barrier_ms"],
                    "gain": r["sim_barrier_ms"] / r["sim_ms"]}
    raise SystemExit(f"sim_scale: {preset} on {machine}: no simulated row")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default="build/tools/pto-bench",
                    help="the pto-bench binary (default: %(default)s)")
    ap.add_argument("--cores", default="8,16,32,64",
                    help="simulated host sizes (default: %(default)s)")
    ap.add_argument("--preset", default="decode,prefill",
                    help="dsa presets (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=0,
                    help="decode steps (default: the preset's)")
    ap.add_argument("--no-ascend", action="store_true",
                    help="leave out the Ascend profile")
    ap.add_argument("--json", help="also write the rows to this file")
    a = ap.parse_args()
    if not os.access(a.bench, os.X_OK):
        ap.error(f"no pto-bench at {a.bench} (build first, or --bench PATH)")
    try:
        cores = [int(c) for c in a.cores.split(",") if c]
    except ValueError:
        ap.error(f"--cores {a.cores}: expected numbers, comma-separated")
    if any(c < 1 for c in cores):
        ap.error(f"--cores {a.cores}: every size must be at least 1")
    jobs = [(p, f"host:{c}", c) for p in a.preset.split(",")
            for c in cores + ([] if a.no_ascend else [0])]
    rows = []
    # each row as it comes (a whole table takes about ten minutes), the
    # JSON rewritten after each, so an interrupted run keeps what it made
    print(f"{'preset':<8} {'machine':<10} {'MPMD ms':>10} "
          f"{'barriers ms':>12} {'barriers/MPMD':>14}", flush=True)
    for preset, machine, c in jobs:
        r = run(a.bench, machine if c else "ascend", preset, c, a.steps)
        rows.append(r)
        print(f"{r['preset']:<8} {r['machine']:<10} {r['mpmd_ms']:>10.3f} "
              f"{r['barrier_ms']:>12.3f} {r['gain']:>13.2f}x", flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
