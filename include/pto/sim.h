/* pto/sim.h: planning for machines that are not here. A machine profile
 * gives the cost of every PTO instruction on each core type of a machine,
 * its memory system and the runtime's own per-task costs; the simulator
 * replays an executable's task graph on it with the runtime's dispatch
 * policies, in simulated time, and writes the same trace a measured run
 * writes (pto-trace html/report/compare read it unchanged), marked as
 * simulated. A profile comes from a calibration run on the CPU at hand
 * (pto_profile_calibrate, `pto-bench calibrate`) or from a file written by
 * hand from a part's public figures (tools/configs/ascend-profile.json).
 *
 * The cost model (docs/simulation.md). An instruction call costs
 *
 *   t = max(call + row * rows + in * in_elems + out * out_elems
 *               + spill * (in_elems + out_elems) + flop * flops,
 *           call + llc_rows * llc_row + dram_rows * dram_row
 *                + mem_x * (llc_bytes / b_llc + dram_bytes / b_dram))
 *
 * (llc_row, dram_row: the instruction's mrow_ns when it has one).
 *
 * ns: the first line its work with its global data in the core's own cache
 * (what a calibration times), the second its global bytes from where they
 * are (a per-worker L2, the shared last-level cache or DRAM: the simulator
 * tracks where each region of each tensor was last touched); b_llc and
 * b_dram are what the core gets of each level's bandwidth while the other
 * tasks streaming at the same time share it (processor sharing), and the
 * rows are the contiguous runs of its windows read from there (a strided
 * window's rows; a dense window is one run), each costing the level's
 * row_ns; stores around the caches (PTO_TF_STREAM) stream to DRAM at its
 * store_gbps. rows are
 * the rows it walks, in_elems and out_elems the valid elements of its local
 * sources and destinations (spill counts them only when its operands and
 * global window overflow the core's L1), flops and bytes the instruction
 * table's.
 * Which terms an instruction's operand class has is a column of the table
 * beside its other facts (core/cost.c); their ns come from the profile, per
 * instruction or per class, per core type.
 *
 * The profile (JSON, every key optional unless said; unknown keys are
 * errors):
 *   {"format": "pto-profile", "version": 1,        (both required)
 *    "name": "host",                               (required, 1..31 chars)
 *    "about": "...",  "sources": [...], "assumptions": [...]   (free text)
 *    "machine": "host" | "ascend" | {the config's machine object},
 *    "runtime": {"dispatch_ns", "handoff_ns", "task_ns", "instance_ns",
 *                "call_ns"},
 *    "memory": {"l1": {"bytes"}, "l2": {"bytes", "core_gbps"},
 *               "llc": {"bytes", "core_gbps", "total_gbps", "row_ns"},
 *               "dram": {"core_gbps", "total_gbps", "row_ns",
 *                        "store_gbps"}},                   (required)
 *    "costs": {"any" | "cube" | "vector":                    (required)
 *               {"classes": {"<class>": TERMS},
 *                "insns": {"<NAME>[.pack_a|.pack_b|.pack_ab][.f32|.bf16|
 *                          .f16|.i32]": TERMS}}}}
 * TERMS is {"call_ns", "row_ns", "in_ns", "out_ns", "spill_ns",
 * "spill2_ns", "flop_ns"} (ns each, an absent one 0, at least one given)
 * and "mem_x" (> 0, default 1: the memory side's bytes take that many
 * times the level's streaming time, a packing load's more) and "mrow_ns"
 * (what each contiguous run of its windows costs it beyond the bytes;
 * default the level's row_ns) and "drow_ns" (ns per row it walks, for the
 * share of its global bytes from DRAM; default 0) and "dram_x" (mem_x for DRAM; stores with
 * PTO_TF_STREAM go at DRAM's store_gbps whatever the instruction). A
 * matmul's flops count its rows padded to the micro-kernel's panels. An
 * instruction's cost on core type c is the first entry found of: its name with its packing and dtype
 * variant, with its packing, with its dtype, bare, then its class, in
 * section c, then in "any". A profile is refused (PTO_ECONFIG, the message
 * naming the key) when any number is negative or not a number, a required
 * key is missing, or some instruction of the table has no cost on a core
 * type that runs it (memory instructions run on both). */
#ifndef PTO_SIM_H
#define PTO_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "pto/config.h"
#include "pto/executable.h"
#include "pto/export.h"
#include "pto/runtime.h"
#include "pto/status.h"

PTO_EXTERN_C_BEGIN

typedef struct pto_profile pto_profile;

/* A profile from a JSON file or string, validated; on failure *out is NULL
 * and pto_last_error() says why, naming the file and the key ("ascend.json:
 * costs.vector.insns.TEXP.call_ns: -3 is negative"). PTO_EIO when the file
 * cannot be read, PTO_ECONFIG for its content. */
PTO_API pto_status pto_profile_load_file(const char *path, pto_profile **out);
PTO_API pto_status pto_profile_load_string(const char *json,
                                           pto_profile **out);
PTO_API void pto_profile_free(pto_profile *p); /* NULL is a no-op */
/* The profile as JSON (the schema above; free() it); NULL on ENOMEM. */
PTO_API char *pto_profile_to_json(const pto_profile *p);
/* Its name ("host", "ascend", "host:64"); "" for NULL. */
PTO_API const char *pto_profile_name(const pto_profile *p);
/* The machine it describes: its "machine", else the host's (workers per
 * core type, local memory per level); what a program is compiled for
 * before it is simulated. */
PTO_API const pto_machine *pto_profile_machine(const pto_profile *p);

/* `host:N`: the profile's machine with N workers of the same cores, its
 * shared last-level cache and DRAM scaled with them: capacity and total
 * bandwidth times N over the profile's workers, so each core keeps the
 * share it had with every calibrated core streaming (a machine built of
 * copies of this one; a real server's figures belong in a profile file).
 * Named "<name>:<N>". PTO_EINVAL for N = 0 or more than 65536. */
PTO_API pto_status pto_profile_scale(const pto_profile *p, uint32_t workers,
                                     pto_profile **out);

/* The runtime's own costs per task (ns): from the end of a task to the
 * start of the next on the same worker (dispatch), from a task made ready
 * to its start on another, idle worker (handoff), inside a task's box
 * before its first instance (task), per instance (instance) and per
 * instruction call beyond the instruction itself (call). */
typedef struct pto_sim_runtime {
  double dispatch_ns, handoff_ns, task_ns, instance_ns, call_ns;
} pto_sim_runtime;
PTO_API pto_sim_runtime pto_profile_runtime(const pto_profile *p);
/* PTO_EINVAL for a negative or non-finite value. */
PTO_API pto_status pto_profile_set_runtime(pto_profile *p,
                                           const pto_sim_runtime *rt);

/* ---- calibration ---------------------------------------------------------- */

typedef struct pto_calibrate_params {
  const char *name; /* the profile's name; NULL: "host" */
  /* workers the memory probes run at once (the profile's machine); 0: the
   * host's */
  uint32_t workers;
  double seconds; /* about how long it may take; 0: 4 s */
  FILE *log;      /* one line per instruction and probe; NULL: quiet */
  int verbose;    /* 1: every timed shape into the log too */
} pto_calibrate_params;
PTO_API pto_calibrate_params pto_calibrate_params_default(void);

/* Measures this CPU: every instruction of the table at several tile shapes
 * through the active instruction table (PTO_ISA chooses it), its operands
 * hot in the core's cache, each cost term fitted (non-negative least
 * squares on relative error); the bandwidth of the core's L2, of the
 * shared last-level cache and of DRAM from one worker and from all at
 * once, and the last-level cache's effective size. The runtime's costs
 * are left at estimates (pto-bench calibrate measures them with a run).
 * PTO_EISA when PTO_ISA cannot be honoured. */
PTO_API pto_status pto_profile_calibrate(const pto_calibrate_params *prm,
                                         pto_profile **out);

/* 1 when p was calibrated on this CPU (its calibration.cpu: the model name
 * with family, model and stepping) through the instruction table in use
 * (calibration.isa); 0 when it was calibrated on another CPU or table, and
 * why says which differs ("profile 'host' was calibrated on ... with the
 * avx2 instruction table; this is ... with the avx512 table"); -1 when it
 * is no calibration (written by hand, or NULL), why saying so. why may be
 * NULL. */
PTO_API int pto_profile_is_this_host(const pto_profile *p, char *why,
                                     size_t size);
/* Seconds since p was calibrated (its calibration.time, Unix seconds, which
 * pto_profile_calibrate records with calibration.date); -1 when it records
 * no time (written by hand, by an older PTO, or NULL). A machine's speed
 * can change under the same CPU: a VM moved to another host of its model
 * ran GEMM 13 % slower a day later at the same FMA peak. */
PTO_API double pto_profile_age_s(const pto_profile *p);

/* ---- simulation ------------------------------------------------------------ */

typedef struct pto_sim_params {
  const pto_profile *profile; /* required */
  /* workers per core type; NULL: the machine e was compiled for */
  const pto_machine *machine;
  pto_policy policy; /* the runtime's dispatch policy */
  /* 1: the caches hold nothing when the run starts (as after a flush);
   * 0: what repeated runs leave: the run simulated is the second of two,
   * the caches as the first left them (and what no task of it touched in
   * the last-level cache when every tensor fits there) */
  int cold;
  /* where the simulated trace goes (Chrome trace JSON, pto-trace's
   * format): a file (NULL: none), or an open stream (NULL: none) */
  const char *trace_path;
  FILE *trace_file;
} pto_sim_params;

/* no profile, the executable's machine, critical-path, warm, no trace */
PTO_API pto_sim_params pto_sim_params_default(void);

typedef struct pto_sim_result {
  double makespan_ns;
  uint32_t tasks, workers;
  double busy_ns;          /* summed over workers, overheads included */
  double work_ns[2];       /* per core type: the tasks' boxes */
  double critical_path_ns; /* longest chain of the tasks' simulated boxes */
  /* global bytes the tasks read or wrote per level: their L2s, the
   * last-level cache, DRAM */
  double l2_bytes, llc_bytes, dram_bytes;
} pto_sim_result;

/* Replays e's tasks (every task, at the maxima of its dynamic dims) on
 * params' machine in simulated time: a task starts when its producers have
 * ended and a worker of its core type is free, as the runtime chooses
 * (the policy's order, a finishing worker keeping one ready successor, its
 * batched pops); it lasts the runtime's costs plus its instructions'
 * costs over its instances. Fills *r; writes the trace when asked (the
 * machine named "sim:<profile>", "simulated": true in its metadata).
 * PTO_EINVAL for NULL arguments or no profile; PTO_ECONFIG when the
 * machine has no worker for a core type a task needs, or an instruction
 * (a custom one) has no cost in the profile (pto_executable_error(e) names
 * it); PTO_EIO when the trace cannot be written. */
PTO_API pto_status pto_simulate(const pto_executable *e,
                                const pto_sim_params *params,
                                pto_sim_result *r);

PTO_EXTERN_C_END

#endif /* PTO_SIM_H */
