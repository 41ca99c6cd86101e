#!/usr/bin/env python3
"""The simulator's validation table: each workload measured and simulated
(`pto-bench ... --simulate host`) on 1 and 2 workers, in one run of
pto-bench each, and the simulated makespan's error against the measured
one. Exit status 1 when a row is off by more than --tolerance.

    tools/sim_validate.py                  # every workload, 1 and 2 workers
    tools/sim_validate.py --only gemm,dsa  # some of them
    tools/sim_validate.py --json rows.json # the rows as well

Benchmarks are noisy: run it on a quiet machine (nothing building beside
it), and read `measured` as a median of --repeats runs. It takes a few
minutes; progress goes to stderr.
"""
import argparse
import json
import os
import subprocess
import sys

# name -> pto-bench command line after the command (the peer is never timed)
WORKLOADS = {
    "gemm": ["gemm", "--no-peer", "1024x1024x1024", "128x8192x576"],
    "softmax": ["softmax"],
    "indexer": ["indexer", "--no-peer"],
    "attention": ["attention", "--no-peer"],
    "dsa-decode": ["dsa", "--no-peer", "--preset", "decode"],
    "dsa-prefill": ["dsa", "--no-peer", "--preset", "prefill"],
}

# keys that tell one row of a command's JSON from another
LABEL_KEYS = ("preset", "shape", "case", "rows", "cols", "m", "n", "k", "dtype")


def label(row):
    parts = []
    for k in LABEL_KEYS:
        if k in row and not isinstance(row[k], (dict, list)):
            parts.append(f"{k}={row[k]}")
    return " ".join(parts) or row.get("workload", "?")


def run(bench, name, args, threads, repeats, machine):
    cmd = [bench, "--json", "--quiet", "--threads", str(threads)]
    if repeats:
        cmd += ["--repeats", str(repeats)]
    cmd += args + ["--simulate", machine]
    print(f"sim_validate: {name} on {threads} worker(s): {' '.join(cmd)}",
          file=sys.stderr, flush=True)
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)  # the harness picks it per CPU
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env)
    if p.returncode:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"sim_validate: {name} failed (exit {p.returncode})")
    rows = json.loads(p.stdout)
    out = []
    for r in rows:
        if r.get("sim_ratio") is None or not r.get("sim_ms"):
            continue
        sim = r["sim_ms"]
        ratio = r["sim_ratio"]
        out.append({"workload": name, "case": label(r), "threads": threads,
                    "measured_ms": sim / ratio, "sim_ms": sim,
                    "error": ratio - 1.0,
                    "sim_barrier_ms": r.get("sim_barrier_ms")})
    if not out:
        raise SystemExit(f"sim_validate: {name}: no simulated row in the JSON")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default="build/tools/pto-bench",
                    help="the pto-bench binary (default: %(default)s)")
    ap.add_argument("--only", help="comma-separated workloads: "
                    + ",".join(WORKLOADS))
    ap.add_argument("--threads", default="1,2",
                    help="worker counts (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=0,
                    help="timed repeats per case (default: pto-bench's)")
    ap.add_argument("--machine", default="host",
                    help="--simulate's machine (default: %(default)s)")
    ap.add_argument("--tolerance", type=float, default=0.10,
                    help="the error allowed (default: %(default)s)")
    ap.add_argument("--json", help="also write the rows to this file")
    a = ap.parse_args()
    names = a.only.split(",") if a.only else list(WORKLOADS)
    for n in names:
        if n not in WORKLOADS:
            ap.error(f"unknown workload '{n}' (known: {','.join(WORKLOADS)})")
    if not os.access(a.bench, os.X_OK):
        ap.error(f"no pto-bench at {a.bench} (build first, or --bench PATH)")
    threads = [int(t) for t in a.threads.split(",")]
    rows = []
    for n in names:
        for t in threads:
            rows += run(a.bench, n, WORKLOADS[n], t, a.repeats, a.machine)
    print(f"{'workload':<12} {'case':<34} {'workers':>7} {'measured ms':>12} "
          f"{'simulated ms':>13} {'error':>8}")
    bad = 0
    for r in rows:
        off = abs(r["error"]) > a.tolerance
        bad += off
        print(f"{r['workload']:<12} {r['case'][:34]:<34} {r['threads']:>7} "
              f"{r['measured_ms']:>12.3f} {r['sim_ms']:>13.3f} "
              f"{100 * r['error']:>+7.1f}%{'  off' if off else ''}")
    print(f"{len(rows)} rows, {bad} off by more than "
          f"{100 * a.tolerance:.0f}%")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
