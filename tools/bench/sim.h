/* tools/bench/sim.h (internal to pto-bench): --simulate MACHINE for the
 * commands (pto/sim.h) and `pto-bench calibrate`: which profile a MACHINE
 * names, and a case simulated on it beside its measured run. */
#ifndef PTO_TOOLS_BENCH_SIM_H
#define PTO_TOOLS_BENCH_SIM_H

#include <jansson.h>
#include <stdio.h>

#include "bench/bench.h"
#include "pto/sim.h"

/* MACHINE: "host" (the calibrated CPU at hand: the profile `pto-bench
 * calibrate` wrote, made now when there is none), "host:N" (the same
 * cores N times over, pto_profile_scale), "ascend"
 * (ascend-profile.json beside pto-bench or in ../share/pto/) or a profile
 * file (a path). */
typedef struct bench_sim {
  char spec[256];     /* as given */
  char name[64];      /* what the JSON's sim_machine says */
  pto_profile *prof;  /* the profile, scaled for host:N */
  /* host at the measured run's worker count: the measured executable
   * itself is simulated */
  int same;
  int threads; /* the measured run's workers */
} bench_sim;

/* Where `pto-bench calibrate` writes the host's profile by default:
 * $PTO_PROFILE when set, else $XDG_CACHE_HOME/pto/host-profile.json, else
 * ~/.cache/pto/host-profile.json. */
const char *bench_sim_host_path(char *buf, size_t size);
/* mkdir -p of the directory path is in */
void bench_make_dirs(const char *path);
/* The calibration (pto_profile_calibrate, then the runtime's own costs
 * measured on small graphs) on `threads` workers; the profile into *out
 * (verbose: every timed shape on stderr). 0, or -1 after printing why. */
int bench_calibrate(const bench_opts *o, int threads, double seconds,
                    const char *name, int verbose, pto_profile **out);
/* Resolves spec for a command measured on `threads` workers. 0, or -1
 * after printing why, prefixed "pto-bench CMD: ". */
int bench_sim_open(const bench_opts *o, const char *cmd, const char *spec,
                   int threads, bench_sim *s);
void bench_sim_close(bench_sim *s); /* NULL and a closed one: no-op */

/* The machine a case is compiled for when it is not the measured one:
 * the profile's (host:N, ascend, a file's). */
const pto_machine *bench_sim_machine(const bench_sim *s);

/* e (compiled for the measured run) simulated with cfg's policy when the
 * machine is the measured one; otherwise program p compiled afresh for
 * the profile's machine with cfg's knobs, labels and stage barriers, then
 * simulated. cold: the run starts with empty caches (as a command that
 * flushes them times it). trace: the simulated trace's path or NULL. The
 * makespan in *ms (and the task count in *tasks when not NULL). 0, or -1
 * after printing why. */
int bench_sim_case(const char *cmd, const bench_sim *s, const pto_executable *e,
                   pto_program *p, const pto_config *cfg, int cold,
                   const char *trace, double *ms, uint32_t *tasks);

/* bench_sim_case for an operator case (warm, as it is timed) into *ms (0
 * when it fails, printed), its swimlane beside --trace's (trace_path's
 * case path with ".sim.json" added) when trace_path is set. */
void bench_sim_case_of(const bench_sim *s, const char *cmd,
                       const char *trace_path, const char *preset, int several,
                       const pto_executable *e, pto_program *p,
                       const pto_config *cfg, double *ms);

/* "  simulated on MACHINE: X ms (measured Y ms: sim/measured Z)" under a
 * row, and sim_ms, sim_machine (and sim_ratio, the simulated over the
 * measured makespan) in j; measured_ms <= 0: none. */
void bench_sim_report(FILE *f, json_t *j, const bench_sim *s, double sim_ms,
                      double measured_ms);

#endif /* PTO_TOOLS_BENCH_SIM_H */
