/* partitioner/partition.h (internal): tile graph -> executable. */
#ifndef PTO_PARTITIONER_PARTITION_H
#define PTO_PARTITIONER_PARTITION_H

#include "core/exe.h"

/* Partitions e->tg (already tiled) for machine m under cfg and fills e.
 * Returns 0 or a status with e->err set. */
pto_status pto__partition(pto_executable *e, const pto_config *cfg,
                          const pto_machine *m);

/* The rewrites of e's finished programs (partitioner/rewrite.c): the
 * fused instructions of its rule table in place of the chains they
 * replace, the programs' names, and PTO_TF_STREAM on the stores whose data
 * nothing reads back. PTO_OK or PTO_ENOMEM. */
pto_status pto__rewrite_programs(pto_executable *e);

/* PTO_OK, or PTO_ESTATE with e->err naming the tasks (and their ops) of a
 * cycle in e's task graph. pto__partition checks every executable it builds;
 * tests call it on graphs they break on purpose. */
pto_status pto__exe_check_acyclic(pto_executable *e);

/* The panels (rows of A, cols of B) a compile for machine m plans matmul
 * operands in: m's own (pto_machine.panel), or the active instruction
 * table's where m leaves them 0. */
void pto__machine_panel(const pto_machine *m, uint32_t *mr, uint32_t *nr);

#endif /* PTO_PARTITIONER_PARTITION_H */
