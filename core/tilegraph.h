/* core/tilegraph.h (internal): the tile graph a program is tiled into.
 *
 * Every tensor op becomes units ("op tiles"): the instructions that compute
 * one output tile of the op, from TLOADs of its input windows to the TSTORE
 * of its output window. Local tile values are SSA: each is defined by one
 * instruction. Global memory is addressed by storage id: a root tensor id
 * (< program n_tensors), n_tensors + j for the dense copy of output j, or
 * n_tensors + n_outputs + i for scratch i (an op's intermediates between
 * its own units, which no tensor holds: top-k's candidates). */
#ifndef PTO_CORE_TILEGRAPH_H
#define PTO_CORE_TILEGRAPH_H

#include <stdint.h>

#include "core/isa.h"
#include "core/program.h"
#include "core/tile_choose.h"
#include "pto/config.h"

#define PTO_NONE UINT32_MAX

/* A run-time clip of one extent n by a dynamic dim: a run bound to extent
 * E of dim d1 - 1 uses min(n, max(0, E * mul - off)) in its place; d1 0:
 * the extent is static (so a zeroed clip is none). off is where the tile
 * starts along that dim, mul the elements per unit of it (core/program.h,
 * dyn_mul). */
typedef struct pto_clip {
  uint8_t d1;
  int64_t off, mul;
} pto_clip;

static const pto_clip PTO_CLIP_NONE = {0, 0, 1};

typedef struct pto_gref {
  uint32_t storage;
  pto_dtype dtype; /* storage dtype */
  int64_t offset;  /* elements */
  int64_t rows, cols, rs, cs;
  /* run-time clips of rows and cols, and of the two batch coordinates (a
   * batch clip empties the window when E <= off) */
  pto_clip cr, cc, cb[2];
} pto_gref;

typedef struct pto_tval {
  pto_dtype dtype;
  uint32_t rows, cols;   /* capacity */
  uint32_t vrows, vcols; /* valid region (at the dims' maxima) */
  pto_clip cr, cc;       /* its run-time clip by dynamic dims */
} pto_tval;

typedef struct pto_tinst {
  int32_t op;
  uint8_t n_src, n_dst;
  uint32_t src[PTO_MAX_SRC], dst[PTO_MAX_DST]; /* tval ids */
  pto_gref g;
  double s;
  pto_sterm st[2]; /* s's run-time terms (core/program.h); none: sign 0 */
  pto_sterm it;    /* imm[1]'s run-time term */
  int32_t imm[2];
  uint32_t flags;
} pto_tinst;

typedef struct pto_unit {
  uint32_t node; /* tensor op, or PTO_NONE for an output copy */
  uint32_t first, count; /* instructions [first, first + count) */
  pto_core_type core;
} pto_unit;

/* A global buffer the tiler adds for one op's intermediates. */
typedef struct pto_tscratch {
  pto_dtype dtype;
  int64_t elems;
  uint32_t node;    /* the op whose units use it */
  const char *name; /* what it holds (a string literal), for dumps */
} pto_tscratch;

typedef struct pto_tgraph {
  const pto_program *prog;
  uint32_t n_storages; /* n_tensors + n_outputs + n_scratch */
  pto_tinst *insts;
  uint32_t n_insts, cap_insts;
  pto_tval *vals;
  uint32_t n_vals, cap_vals;
  pto_unit *units;
  uint32_t n_units, cap_units;
  /* out_storage[j]: where output j is written (a root id or a copy). */
  uint32_t *out_storage;
  pto_tile_shape *node_tile; /* tile shape used per node */
  uint8_t *vec_chosen;       /* per node: its vector tile is the compiler's */
  /* per node, NULL-terminated, what it reads where that is not its inputs
   * (an attention chain's last matmul tiled as one op reads q, k and v:
   * core/tiling_flash.c); NULL, or reads[i][0] NULL: its inputs */
  const struct pto_tensor *(*reads)[4];
  pto_tscratch *scratch;
  uint32_t n_scratch, cap_scratch;
  pto_error err;
} pto_tgraph;

/* Tiles every op of p under its tile shape (config overrides by label win;
 * a matmul's cube tile nobody set is chosen for ctx's machine and panels,
 * core/tile_choose.h; ctx NULL leaves it whole). Returns 0 or a status
 * with tg->err set. */
pto_status pto__tile(pto_tgraph *tg, const pto_program *p,
                     const pto_config *cfg, const pto_tile_ctx *ctx);
void pto__tgraph_free(pto_tgraph *tg);

/* Storage bytes, dtype and name (its tensor's, its output's, or a
 * scratch's) of storage id s. */
int64_t pto__storage_bytes(const pto_tgraph *tg, uint32_t s);
pto_dtype pto__storage_dtype(const pto_tgraph *tg, uint32_t s);
const char *pto__storage_name(const pto_tgraph *tg, uint32_t s);

#endif /* PTO_CORE_TILEGRAPH_H */
