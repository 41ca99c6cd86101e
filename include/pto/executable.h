/* pto/executable.h: compiling a program into an executable (compiled
 * programs plus the execution graph of tasks) and running it. */
#ifndef PTO_EXECUTABLE_H
#define PTO_EXECUTABLE_H

#include <stdint.h>
#include <stdio.h>

#include "pto/config.h"
#include "pto/export.h"
#include "pto/program.h"
#include "pto/status.h"

PTO_EXTERN_C_BEGIN

typedef struct pto_executable pto_executable;

/* Tiles, partitions, plans local memory, compiles programs and builds the
 * execution graph. cfg NULL uses pto_config_new()'s defaults with the JSON
 * file the environment variable PTO_CONFIG names merged in, when it is set
 * (a bad file fails the compile: "compile: PTO_CONFIG=tune.json: ..."), so
 * an application is retuned without rebuilding it. On failure
 * *exe is NULL and pto_program_error(p) says why, e.g. "compile: rowsum
 * 'x.sum' needs 262144 bytes of UB, the machine has 196608" (p NULL:
 * pto_last_error). The executable keeps its own copy of what it reads of
 * the program (the tensor graph its dumps, traces and labels show), so the
 * program may be freed, or grow, while the executable lives. */
PTO_API pto_status pto_compile(pto_program *p, const pto_config *cfg,
                               pto_executable **exe);
PTO_API void pto_executable_free(pto_executable *e); /* NULL is a no-op */

/* The cube tile {m, n, k} the compiler gives a matmul whose tile shape
 * nobody set (neither the program's scopes nor a config's label): `batch`
 * independent M x N x K products on machine mach run by `workers` workers.
 * Every balanced split of M and N into whole panels of the micro-kernel
 * (pto_matmul_panel) whose accumulator fits L0C is scored by reuse (flops
 * per packed element), padding, the depth of the k slices (K is split into
 * accumulating slices of at most 256 whose packed A and B fit L0A and L0B),
 * at least two tiles per worker, the last round's idle workers, and no task
 * smaller than about 4 MFLOP (a small matmul stays one tile). The choice
 * shows in dumps and traces as the op's tile shape; a tile set in code or
 * in a config wins over it. vec_rows/vec_cols are left 0. PTO_EINVAL for a
 * NULL pointer, a size < 1 or 0 workers; PTO_ECAPACITY when not even one
 * panel fits the machine. */
PTO_API pto_status pto_matmul_tile(const pto_machine *mach, int64_t batch,
                                   int64_t M, int64_t N, int64_t K,
                                   uint32_t workers, pto_tile_shape *tile);
/* The cube tile {m, n} the compiler gives a pto_sparse_attention whose
 * tile nobody set (or set to zeros) on machine mach: m query heads a
 * task, n slots a block of its online softmax, for `heads` heads of width
 * d, values of width dv and topk slots a query (pto_attention_tile in
 * pto/attention.h says how it is chosen). PTO_EINVAL for a NULL pointer
 * or a size < 1. */
PTO_API pto_status pto_sparse_attention_tile(const pto_machine *mach,
                                             int64_t heads, int64_t d,
                                             int64_t dv, int64_t topk,
                                             pto_tile_shape *tile);
/* The cube tile {m, n} the compiler gives a pto_matmul_relu_wsum whose
 * cube tile nobody set on machine mach: `batch` products of `rows` rows
 * of a in groups of `group`, K deep, N columns of b (the lightning
 * indexer's score: S1 * H query rows in groups of H heads, D deep, S2
 * keys; pto_indexer_qk_tile in pto/indexer.h says how it is chosen).
 * PTO_EINVAL for a NULL pointer or a size < 1. */
PTO_API pto_status pto_matmul_relu_wsum_tile(const pto_machine *mach,
                                             int64_t batch, int64_t rows,
                                             int64_t group, int64_t K,
                                             int64_t N, pto_tile_shape *tile);
/* The message of the last failed call on e ("" if none; a run clears it
 * when it starts). */
PTO_API const char *pto_executable_error(const pto_executable *e);
/* What the compile noticed but did not refuse, one line each ("" when
 * nothing; e NULL gives ""). Today: settings of the config's label
 * overrides that no op of the program reads, e.g. "config: label 'atention'
 * (l1_reuse, cube_tile) matches no op of program 'sfa': ..." for a typo, or
 * "config: label 'mlp.act': cube_tile is unused: it applies to matmuls, and
 * the label has none". One config may serve several programs, so these are
 * warnings, not errors; tools print them (pto-dump does, on stderr). */
PTO_API const char *pto_executable_warnings(const pto_executable *e);

/* Runs every task on the calling thread in a topological order. inputs and
 * outputs are dense row-major buffers in declaration order. */
PTO_API pto_status pto_executable_run_serial(pto_executable *e,
                                             const void *const *inputs,
                                             void *const *outputs);

typedef struct pto_exe_stats {
  uint32_t tensor_ops, tile_instructions, subgraphs, programs, tasks, edges;
  uint64_t boundary_bytes;  /* global bytes moved by all tasks, one run */
  uint64_t workspace_bytes; /* intermediates kept in global memory */
  uint64_t mem_peak[5];     /* per pto_mem_level: the largest program's use */
  double ms_tile, ms_partition, ms_plan, ms_graph, ms_total;
} pto_exe_stats;

PTO_API pto_status pto_executable_stats(const pto_executable *e,
                                        pto_exe_stats *s);

/* Dumps of each stage, as Graphviz DOT or JSON. */
typedef enum pto_stage {
  PTO_STAGE_TENSOR,
  PTO_STAGE_TILE,
  PTO_STAGE_SUBGRAPH,
  PTO_STAGE_EXEC,
  PTO_STAGE_COUNT
} pto_stage;
typedef enum pto_dump_format { PTO_DUMP_DOT, PTO_DUMP_JSON } pto_dump_format;

PTO_API pto_status pto_executable_dump(const pto_executable *e,
                                       pto_stage stage, pto_dump_format fmt,
                                       FILE *out);

/* The dynamic dims the executable was compiled with (pto_dim_dynamic), in
 * declaration order: what a run binds (pto_run_bind). */
PTO_API int pto_executable_num_dims(const pto_executable *e);
PTO_API const char *pto_executable_dim_name(const pto_executable *e, int i);
PTO_API int64_t pto_executable_dim_max(const pto_executable *e, int i);

/* Task-level queries, for tests and tools. */
PTO_API uint32_t pto_executable_num_tasks(const pto_executable *e);
PTO_API uint32_t pto_executable_task_program(const pto_executable *e,
                                             uint32_t task);
PTO_API const char *pto_executable_task_label(const pto_executable *e,
                                              uint32_t task);
PTO_API uint32_t pto_executable_task_succ(const pto_executable *e,
                                          uint32_t task,
                                          const uint32_t **succ);
PTO_API const char *pto_executable_program_name(const pto_executable *e,
                                                uint32_t prog);

PTO_EXTERN_C_END

#endif /* PTO_EXECUTABLE_H */
