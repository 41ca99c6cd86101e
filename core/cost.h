/* core/cost.h (internal): the cost column of the instruction table and the
 * machine profile that prices it (pto/sim.h). Every operand class declares
 * the terms its time depends on (pto__class_cost, core/cost.c: a
 * COST_<CLASS> per class, as tileops/check.c has a rule_<CLASS>); a
 * profile gives their ns per instruction, per core type. The simulator
 * (scheduler/sim.c) and the calibration (tileops/calibrate.c) read these,
 * never the opcodes. */
#ifndef PTO_CORE_COST_H
#define PTO_CORE_COST_H

#include <jansson.h>
#include <stdint.h>

#include "core/error.h"
#include "core/exe.h"
#include "core/isa.h"
#include "pto/sim.h"

/* The terms of a cost (pto_cost_feat, pto_cost_terms), in this order. */
enum {
  PTO_COST_CALL, /* per call */
  PTO_COST_ROW,  /* per row it walks: dst0's valid rows (src0's without a
                    destination) */
  PTO_COST_IN,   /* per valid element of its local sources */
  PTO_COST_OUT,  /* per valid element of its local destinations */
  /* per element read or written (in + out) of a call whose operands do not
   * fit the core's L1 together (the profile's memory.l1.bytes): what the
   * elements cost beyond the L1's rate, from the L2 */
  PTO_COST_SPILL,
  /* the same past the core's L2 (memory.l2.bytes): from the shared cache */
  PTO_COST_SPILL2,
  PTO_COST_FLOP, /* per flop of the table's flops column */
  PTO_COST_TERMS
};
#define PTO_COST_BIT(t) (1u << (t))
#define PTO_COST_ALL ((1u << PTO_COST_TERMS) - 1)
/* A modifier of the cost column: the micro-kernel runs dst0's rows in
 * whole panels of the table's mr (pto_insn_shape.mr), so its flop term
 * counts them padded (an M of 16 costs as 24 on panels of 12). */
#define PTO_COST_PAD_M (1u << 16)

/* "call_ns", "row_ns", "in_ns", "out_ns", "spill_ns", "spill2_ns",
 * "flop_ns" */
extern const char *const pto__cost_term_key[PTO_COST_TERMS];

/* The cost column: the terms class c's time depends on (PTO_COST_BIT of
 * each); the call is always one. */
uint32_t pto__class_cost(pto_insn_class c);

/* An instruction call's terms, and the global bytes it moves through its
 * views (the table's bytes, split between a.g and a.g2). */
typedef struct pto_cost_feat {
  double x[PTO_COST_TERMS];
  double gbytes[2];
} pto_cost_feat;

/* l1, l2: the core's L1 and L2 in bytes (a call whose operands and
 * global window exceed one spills: PTO_COST_SPILL, PTO_COST_SPILL2). */
void pto__cost_features(const pto_insn_shape *s, double l1, double l2,
                        pto_cost_feat *f);
/* The shape block of instruction pi of program pr (valid shapes and
 * dtypes of its tiles, its views' shapes), as the partitioner builds it. */
void pto__cost_shape(const pto_cprog *pr, const pto_pinst *pi,
                     pto_insn_shape *s);

/* The variant of an instruction call a profile may price apart: its
 * packing (0 none, 1 PTO_TF_PACK_A, 2 PACK_B, 3 both) and its key dtype
 * (the global view's, else src0's, else dst0's). */
#define PTO_COST_PACKS 4
uint32_t pto__cost_pack(const pto_insn_shape *s);
pto_dtype pto__cost_dtype(const pto_insn_shape *s);
extern const char *const pto__cost_pack_suffix[PTO_COST_PACKS];

typedef struct pto_cost_terms {
  double ns[PTO_COST_TERMS];
  /* how many times longer its global bytes take from the shared cache or
   * DRAM than the level's streaming rate says ("mem_x", > 0; 1 when
   * absent): a packing load's scattered writes and short rows keep fewer
   * lines in flight than a copy, which may beat the probe */
  double mem_x;
  /* what each contiguous run of its windows costs it from the shared
   * cache or DRAM ("mrow_ns"; < 0 when absent: the level's row_ns) */
  double mrow_ns;
  /* the same multiplier for its bytes from and to DRAM ("dram_x"; 0 when
   * absent: mem_x); stores around the caches (PTO_TF_STREAM) go at DRAM's
   * store rate whatever the instruction */
  double dram_x;
  /* what each row it walks costs it beyond its bytes' time, for the share
   * of its global bytes that comes from DRAM ("drow_ns"; 0 when absent):
   * an instruction that works row by row waits on each short row's first
   * lines, so a window of many short rows streams slower than one of few
   * long rows of the same bytes */
  double drow_ns;
  int set; /* found in the profile */
} pto_cost_terms;

/* A memory level of the profile: capacity in bytes (per worker for the
 * L2, shared for the last-level cache; DRAM has none), what one core
 * streams from it alone and what all cores stream at once, bytes per ns
 * (= GB/s); what each contiguous run of a window read from it costs beyond
 * its bytes (a row of a strided window: its latency, half hidden); and for
 * DRAM what a core's stores around the caches (PTO_TF_STREAM) stream. */
typedef struct pto_mem_tier {
  double bytes, core_bw, total_bw;
  double row_ns;
  double store_bw;
} pto_mem_tier;

#define PTO_COST_SECTIONS 3 /* "cube", "vector" (pto_core_type), "any" */

struct pto_profile {
  char name[32];
  json_t *doc; /* the document, as loaded or built (owns every string) */
  pto_machine machine;
  int has_machine; /* its "machine"; else the host's */
  pto_sim_runtime rt;
  double l1; /* the core's L1 data cache, bytes (0: none) */
  pto_mem_tier l2, llc, dram;
  /* resolved costs of the built-in instructions: [program core type][op]
   * [packing][key dtype] */
  pto_cost_terms (*cost)[PTO_OP_COUNT][PTO_COST_PACKS][PTO_DTYPE_COUNT];
};

/* The cost of op's calls in a program of core type core (cube or vector)
 * with packing pack and key dtype dt: the profile's resolved entry, or a
 * custom instruction's (looked up by name each time); NULL when it has
 * none. */
const pto_cost_terms *pto__profile_cost(const pto_profile *p,
                                        pto_core_type core, int op,
                                        uint32_t pack, pto_dtype dt,
                                        pto_cost_terms *buf);

/* The ns of an instruction call with features f, costs c, its global
 * bytes in the core's cache. */
static inline double pto__cost_compute_ns(const pto_cost_terms *c,
                                          const pto_cost_feat *f) {
  double t = 0;
  for (int k = 0; k < PTO_COST_TERMS; k++)
    t += c->ns[k] * f->x[k];
  return t;
}

/* A profile from a parsed document (taken: freed on failure too), its
 * messages naming src (a file, or NULL). */
pto_status pto__profile_from_json(json_t *doc, const char *src,
                                  pto_profile **out, pto_error *err);

#endif /* PTO_CORE_COST_H */
