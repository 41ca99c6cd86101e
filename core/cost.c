/* The cost column of the instruction table (which terms each operand
 * class's time depends on) and machine profiles: loading, validating and
 * resolving them into a cost per instruction, core type, packing and
 * dtype (pto/sim.h). */
#include "core/cost.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/custom.h"

/* ---- the cost column ------------------------------------------------------ */

#define R PTO_COST_BIT(PTO_COST_ROW)
#define SP (PTO_COST_BIT(PTO_COST_SPILL) | PTO_COST_BIT(PTO_COST_SPILL2))
#define I (PTO_COST_BIT(PTO_COST_IN) | SP)
#define O (PTO_COST_BIT(PTO_COST_OUT) | SP)
#define F PTO_COST_BIT(PTO_COST_FLOP)
#define PM PTO_COST_PAD_M
/* One per class; a class without one does not compile. Element-wise work
 * goes by the elements it writes (its flops are a multiple of them), a
 * reduction or a store by those it reads, a matmul by its flops, the
 * operands it reads (packed panels) and the accumulator it writes; every
 * class pays per call and per row, and for its elements beyond the L1's
 * rate when its operands overflow the L1 (beyond the L2's when they
 * overflow the L2 too). */
#define COST_CUSTOM (R | I | O)
#define COST_LOAD (R | O)
#define COST_STORE (R | I)
#define COST_MULSTORE (R | I)
#define COST_LOADMAX (R | O)
#define COST_LOADEXPSUM (R | O)
#define COST_LOADSTORE (R | O)
#define COST_GATHER (R | O)
#define COST_GATHERELSE (R | O)
#define COST_GATHERPACK (R | I | O)
#define COST_BINARY (R | O)
#define COST_UNARY (R | O)
#define COST_CMP (R | O)
#define COST_SEL (R | O)
#define COST_CONVERT (R | O)
#define COST_SCALAR (R | O)
#define COST_FILL (R | O)
#define COST_ROWRED (R | I)
#define COST_COLRED (R | I)
#define COST_ROWEXPAND (R | O)
#define COST_ROWEXPAND2 (R | O)
#define COST_ROWEXPDIF (R | O)
#define COST_ROWEXPSUM (R | O)
#define COST_COLEXPAND (R | O)
#define COST_COLEXPAND2 (R | O)
#define COST_MATMUL (R | I | O | F | PM)
#define COST_MATMUL_ACC (R | I | O | F | PM)
#define COST_MATMUL_WSUM (R | I | O | F)
#define COST_MATMUL_WSUM_G (R | I | O | F)
#define COST_MATMUL_GA (R | I | O | F | PM)
#define COST_MATMUL_GB (R | I | O | F | PM)
#define COST_SMONLINE (R | I | O)
#define COST_SMFINAL (R | I | O)
#define COST_EXTRACT (R | O)
#define COST_INSERT (R | O)
#define COST_TRANS (R | O)
#define COST_FILLPAD (R | O)
#define COST_SORT32 (R | I)
#define COST_MRGSORT (R | I)
#define COST_TOPK (R | I | O)
#define COST_MRGTOPK (R | I | O)

static const uint32_t class_cost[PTO_CLASS_COUNT] = {
#define PTO__COST_ROW(name) [PTO_CLASS_##name] = COST_##name,
    PTO_CLASS_MAP(PTO__COST_ROW)
#undef PTO__COST_ROW
};
#undef PM
#undef SP
#undef R
#undef I
#undef O
#undef F

uint32_t pto__class_cost(pto_insn_class c) {
  return ((unsigned)c < PTO_CLASS_COUNT ? class_cost[c] : 0) |
         PTO_COST_BIT(PTO_COST_CALL);
}

const char *const pto__cost_term_key[PTO_COST_TERMS] = {
    "call_ns", "row_ns",    "in_ns",  "out_ns",
    "spill_ns", "spill2_ns", "flop_ns"};

const char *const pto__cost_pack_suffix[PTO_COST_PACKS] = {"", ".pack_a",
                                                           ".pack_b",
                                                           ".pack_ab"};

/* ---- features ------------------------------------------------------------- */

static double area(const uint32_t rc[2]) {
  return (double)rc[0] * rc[1];
}

void pto__cost_features(const pto_insn_shape *s, double l1, double l2,
                        pto_cost_feat *f) {
  memset(f, 0, sizeof *f);
  f->x[PTO_COST_CALL] = 1;
  uint32_t rows = 0;
  if (s->n_dst)
    rows = s->dst[0][0];
  if (s->n_src && s->src[0][0] > rows)
    rows = s->src[0][0];
  f->x[PTO_COST_ROW] = rows;
  double set = 0; /* the bytes of its operands */
  for (int r = 0; r < s->n_src && r < PTO_MAX_SRC; r++) {
    f->x[PTO_COST_IN] += area(s->src[r]);
    set += area(s->src[r]) * (double)pto_dtype_size(s->sdt[r]);
  }
  for (int d = 0; d < s->n_dst && d < PTO_MAX_DST; d++) {
    f->x[PTO_COST_OUT] += area(s->dst[d]);
    set += area(s->dst[d]) * (double)pto_dtype_size(s->ddt[d]);
  }
  f->x[PTO_COST_FLOP] = (double)pto__insn_flops_of(s);
  const pto_insn_info *in = pto__insn_info(s->op);
  if (in && (pto__class_cost(in->cls) & PTO_COST_PAD_M) && s->mr > 1 &&
      s->n_dst && s->dst[0][0]) {
    const double m = s->dst[0][0],
                 pad = (double)((s->dst[0][0] + s->mr - 1) / s->mr * s->mr);
    f->x[PTO_COST_FLOP] *= pad / m;
  }
  const pto_insn_facts *fa = pto__insn_facts(s->op);
  const double bytes = (double)pto__insn_bytes_of(s);
  if (fa && fa->g2 != PTO_GA_NONE) {
    /* the second view covers dst0's (src0's) valid region */
    const uint32_t *rc = s->n_dst ? s->dst[0] : s->src[0];
    double b2 = area(rc) * (double)pto_dtype_size(s->g2dt);
    f->gbytes[1] = b2 < bytes ? b2 : bytes;
  }
  f->gbytes[0] = bytes - f->gbytes[1];
  if (set + bytes > l1)
    f->x[PTO_COST_SPILL] = f->x[PTO_COST_IN] + f->x[PTO_COST_OUT];
  if (l2 > 0 && set + bytes > l2)
    f->x[PTO_COST_SPILL2] = f->x[PTO_COST_IN] + f->x[PTO_COST_OUT];
}

void pto__cost_shape(const pto_cprog *pr, const pto_pinst *pi,
                     pto_insn_shape *s) {
  uint32_t mr = 0, nr = 0;
  (void)nr;
  *s = (pto_insn_shape){.op = pi->op,
                        .n_src = pi->n_src,
                        .flags = pi->flags,
                        .imm = {pi->imm[0], pi->imm[1]},
                        .mr = mr};
  /* the plan's scratch tile is not a destination of the instruction */
  const pto_insn_info *info = pto__insn_info(pi->op);
  s->n_dst = info && info->n_dst < pi->n_dst ? info->n_dst : pi->n_dst;
  for (int r = 0; r < s->n_src && r < PTO_MAX_SRC; r++) {
    const pto_ptile *pt = &pr->tiles[pi->src[r]];
    s->src[r][0] = pt->vrows;
    s->src[r][1] = pt->vcols;
    s->sdt[r] = pt->dtype;
  }
  for (int d = 0; d < s->n_dst && d < PTO_MAX_DST; d++) {
    const pto_ptile *pt = &pr->tiles[pi->dst[d]];
    s->dst[d][0] = pt->vrows;
    s->dst[d][1] = pt->vcols;
    s->ddt[d] = pt->dtype;
  }
  for (int i = 0; i < 2; i++) {
    const int32_t l = i ? pi->slot2 : pi->slot;
    if (l < 0 || (uint32_t)l >= pr->n_slots)
      continue;
    int64_t *g = i ? s->g2 : s->g;
    g[0] = pr->slots[l].rows;
    g[1] = pr->slots[l].cols;
    *(i ? &s->g2dt : &s->gdt) = pr->slots[l].dtype;
  }
}

uint32_t pto__cost_pack(const pto_insn_shape *s) {
  return (s->flags & PTO_TF_PACK_A ? 1u : 0u) |
         (s->flags & PTO_TF_PACK_B ? 2u : 0u);
}

pto_dtype pto__cost_dtype(const pto_insn_shape *s) {
  const pto_insn_facts *f = pto__insn_facts(s->op);
  if (f && f->g != PTO_GA_NONE)
    return s->gdt;
  if (s->n_src)
    return s->sdt[0];
  if (s->n_dst)
    return s->ddt[0];
  return PTO_F32;
}

/* ---- loading --------------------------------------------------------------- */

typedef struct ld {
  pto_error *err;
  const char *src;
} ld;

__attribute__((format(printf, 4, 5))) static pto_status
ld_fail(const ld *x, pto_status st, const char *path, const char *fmt, ...) {
  char msg[PTO_ERROR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (x->src)
    return pto__error_set(x->err, st, "%s: %s%s%s", x->src, path,
                          *path ? ": " : "", msg);
  return pto__error_set(x->err, st, "profile: %s%s%s", path, *path ? ": " : "",
                        msg);
}

static const char *describe(const json_t *v, char *buf, size_t n) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    snprintf(buf, n, "\"%.40s\"", json_string_value(v));
    return buf;
  case JSON_INTEGER:
  case JSON_REAL:
    snprintf(buf, n, "%g", json_number_value(v));
    return buf;
  case JSON_TRUE:
    return "true";
  case JSON_FALSE:
    return "false";
  default:
    return "null";
  }
}

/* Every key of object o is one of keys (NULL-terminated). */
static pto_status only_keys(const ld *x, const json_t *o, const char *path,
                            const char *const *keys) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    int ok = 0;
    for (int i = 0; keys[i] && !ok; i++)
      ok = !strcmp(k, keys[i]);
    if (!ok) {
      char allowed[256];
      size_t n = 0;
      allowed[0] = '\0';
      for (int i = 0; keys[i] && n < sizeof allowed; i++)
        n += (size_t)snprintf(allowed + n, sizeof allowed - n, "%s%s",
                              i ? ", " : "", keys[i]);
      return ld_fail(x, PTO_ECONFIG, path, "unknown key \"%s\" (expected %s)",
                     k, allowed);
    }
  }
  return PTO_OK;
}

/* A non-negative finite number at o[key] into *out; absent: *out = dflt
 * (required: an error). */
static pto_status number(const ld *x, const json_t *o, const char *path,
                         const char *key, int required, double dflt,
                         double *out) {
  char p[256], b[64];
  snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
  json_t *v = json_object_get(o, key);
  if (!v) {
    if (required)
      return ld_fail(x, PTO_ECONFIG, p, "missing (a number >= 0)");
    *out = dflt;
    return PTO_OK;
  }
  if (!json_is_number(v))
    return ld_fail(x, PTO_ECONFIG, p, "expected a number >= 0, got %s",
                   describe(v, b, sizeof b));
  double d = json_number_value(v);
  if (!isfinite(d) || d < 0)
    return ld_fail(x, PTO_ECONFIG, p, "%g is negative%s", d,
                   isfinite(d) ? "" : " or not finite");
  *out = d;
  return PTO_OK;
}

/* A size: a number of bytes, or a string "512KiB", "192MiB", "2M"... */
static pto_status size_of(const ld *x, const json_t *o, const char *path,
                          const char *key, double *out) {
  char p[256], b[64];
  snprintf(p, sizeof p, "%s.%s", path, key);
  json_t *v = json_object_get(o, key);
  if (!v)
    return ld_fail(x, PTO_ECONFIG, p, "missing (bytes, or a size like "
                                      "\"192MiB\")");
  if (json_is_number(v))
    return number(x, o, path, key, 1, 0, out);
  const char *s = json_string_value(v);
  char *end = NULL;
  double d = s ? strtod(s, &end) : -1;
  double mul = 1;
  if (s && end != s) {
    while (*end == ' ')
      end++;
    const char u = (char)toupper((unsigned char)*end);
    if (u == 'K' || u == 'M' || u == 'G') {
      mul = u == 'K' ? 1024.0 : u == 'M' ? 1048576.0 : 1073741824.0;
      end++;
      if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
        end += strlen(end);
    } else if (!strcasecmp(end, "B")) {
      end++;
    }
  }
  if (!s || end == s || *end || !(d >= 0) || !isfinite(d))
    return ld_fail(x, PTO_ECONFIG, p, "expected a size, got %s",
                   describe(v, b, sizeof b));
  *out = d * mul;
  return PTO_OK;
}

static pto_status parse_terms(const ld *x, const json_t *o, const char *path,
                              pto_cost_terms *t) {
  char b[64];
  if (!json_is_object(o))
    return ld_fail(x, PTO_ECONFIG, path, "expected an object of %s, ... got %s",
                   pto__cost_term_key[0], describe(o, b, sizeof b));
  static const char *const keys[] = {"call_ns",  "row_ns",    "in_ns",
                                     "out_ns",   "spill_ns",  "spill2_ns",
                                     "flop_ns",  "mem_x",     "mrow_ns",
                                     "dram_x",   "drow_ns",   NULL};
  pto_status st = only_keys(x, o, path, keys);
  if (st)
    return st;
  if (!json_object_size(o))
    return ld_fail(x, PTO_ECONFIG, path,
                   "no cost: give at least one of call_ns, row_ns, in_ns, "
                   "out_ns, spill_ns, spill2_ns, flop_ns");
  memset(t, 0, sizeof *t);
  for (int k = 0; k < PTO_COST_TERMS; k++)
    if ((st = number(x, o, path, pto__cost_term_key[k], 0, 0, &t->ns[k])))
      return st;
  if ((st = number(x, o, path, "mem_x", 0, 1, &t->mem_x)) ||
      (st = number(x, o, path, "mrow_ns", 0, -1, &t->mrow_ns)) ||
      (st = number(x, o, path, "dram_x", 0, 0, &t->dram_x)) ||
      (st = number(x, o, path, "drow_ns", 0, 0, &t->drow_ns)))
    return st;
  if (!(t->mem_x > 0)) {
    char p[256];
    snprintf(p, sizeof p, "%s.mem_x", path);
    return ld_fail(x, PTO_ECONFIG, p, "%g is not above 0 (a multiplier of "
                                      "the memory time)",
                   t->mem_x);
  }
  t->set = 1;
  return PTO_OK;
}

static int class_named(const char *s) {
  for (int c = 0; c < PTO_CLASS_COUNT; c++)
    if (!strcasecmp(s, pto__class_name((pto_insn_class)c)))
      return c;
  return -1;
}

static int op_named(const char *s, size_t n) {
  for (int op = 0; op < PTO_OP_COUNT; op++) {
    const char *nm = pto__insn_rows[op].name;
    if (strlen(nm) == n && !strncmp(nm, s, n))
      return op;
  }
  return -1;
}

static int dtype_named(const char *s) {
  for (int d = 0; d < PTO_DTYPE_COUNT; d++)
    if (!strcmp(s, pto_dtype_name((pto_dtype)d)))
      return d;
  return -1;
}

/* An instruction key "NAME[.pack_x][.dtype]": its op (or -1 for a custom
 * name), packing (-1: any) and dtype (-1: any). 0, or -1 when malformed. */
static int parse_insn_key(const char *key, int *op, int *pack, int *dt) {
  const char *dot = strchr(key, '.');
  size_t n = dot ? (size_t)(dot - key) : strlen(key);
  *op = op_named(key, n);
  *pack = *dt = -1;
  while (dot) {
    const char *part = dot + 1;
    dot = strchr(part, '.');
    char buf[16];
    size_t m = dot ? (size_t)(dot - part) : strlen(part);
    if (m >= sizeof buf)
      return -1;
    memcpy(buf, part, m);
    buf[m] = '\0';
    int p = -1;
    for (int k = 1; k < PTO_COST_PACKS; k++)
      if (!strcmp(buf, pto__cost_pack_suffix[k] + 1))
        p = k;
    if (p >= 0 && *pack < 0 && *dt < 0) {
      *pack = p;
    } else if (dtype_named(buf) >= 0 && *dt < 0) {
      *dt = dtype_named(buf);
    } else {
      return -1;
    }
  }
  return 0;
}

/* The section index of a core type name. */
static int section_named(const char *s) {
  if (!strcmp(s, "cube"))
    return PTO_CORE_CUBE;
  if (!strcmp(s, "vector"))
    return PTO_CORE_VECTOR;
  if (!strcmp(s, "any"))
    return 2;
  return -1;
}

/* What one section declares, before resolution. */
typedef struct section {
  pto_cost_terms cls[PTO_CLASS_COUNT];
  /* [op][pack + 1][dt + 1]: -1 (any) at index 0 */
  pto_cost_terms (*insn)[PTO_COST_PACKS + 1][PTO_DTYPE_COUNT + 1];
} section;

static pto_status parse_section(const ld *x, const json_t *o, const char *path,
                                section *s) {
  char p[256], b[64];
  if (!json_is_object(o))
    return ld_fail(x, PTO_ECONFIG, path, "expected an object, got %s",
                   describe(o, b, sizeof b));
  static const char *const keys[] = {"classes", "insns", NULL};
  pto_status st = only_keys(x, o, path, keys);
  if (st)
    return st;
  const char *k;
  json_t *v;
  json_t *cls = json_object_get(o, "classes"),
         *ins = json_object_get(o, "insns");
  if (cls && !json_is_object(cls))
    return ld_fail(x, PTO_ECONFIG, path, "classes: expected an object");
  if (ins && !json_is_object(ins))
    return ld_fail(x, PTO_ECONFIG, path, "insns: expected an object");
  json_object_foreach(cls, k, v) {
    snprintf(p, sizeof p, "%s.classes.%s", path, k);
    int c = class_named(k);
    if (c < 0)
      return ld_fail(x, PTO_ECONFIG, p, "unknown operand class \"%s\"", k);
    if ((st = parse_terms(x, v, p, &s->cls[c])))
      return st;
  }
  json_object_foreach(ins, k, v) {
    snprintf(p, sizeof p, "%s.insns.%s", path, k);
    int op, pack, dt;
    if (parse_insn_key(k, &op, &pack, &dt) < 0)
      return ld_fail(x, PTO_ECONFIG, p,
                     "malformed key (NAME, then .pack_a, .pack_b or .pack_ab, "
                     "then a dtype such as .bf16)");
    if (op < 0) {
      /* a custom instruction's name: checked when it is registered, read
       * by name when a task runs it */
      const size_t n = strcspn(k, ".");
      char nm[64];
      snprintf(nm, sizeof nm, "%.*s", (int)(n < 63 ? n : 63), k);
      if (pto_custom_op_find(nm) < 0)
        return ld_fail(x, PTO_ECONFIG, p, "unknown instruction \"%s\"", nm);
      pto_cost_terms t;
      if ((st = parse_terms(x, v, p, &t)))
        return st;
      continue;
    }
    if ((st = parse_terms(x, v, p, &s->insn[op][pack + 1][dt + 1])))
      return st;
  }
  return PTO_OK;
}

/* The first entry of the lookup order in section s, or NULL. */
static const pto_cost_terms *lookup(const section *s, int op, int pack,
                                    int dt) {
  const pto_cost_terms *t;
  if ((t = &s->insn[op][pack + 1][dt + 1])->set)
    return t;
  if ((t = &s->insn[op][pack + 1][0])->set)
    return t;
  if ((t = &s->insn[op][0][dt + 1])->set)
    return t;
  if ((t = &s->insn[op][0][0])->set)
    return t;
  if ((t = &s->cls[pto__insn_rows[op].cls])->set)
    return t;
  return NULL;
}

static pto_status parse_memory(const ld *x, const json_t *m, pto_profile *p) {
  char b[64];
  if (!json_is_object(m))
    return ld_fail(x, PTO_ECONFIG, "memory",
                   "missing or not an object (l2, llc, dram)");
  static const char *const keys[] = {"l1", "l2", "llc", "dram", NULL};
  pto_status st = only_keys(x, m, "memory", keys);
  if (st)
    return st;
  /* the core's L1 (optional: none, every call spills) */
  json_t *l1 = json_object_get(m, "l1");
  if (l1) {
    static const char *const k_l1[] = {"bytes", NULL};
    if (!json_is_object(l1))
      return ld_fail(x, PTO_ECONFIG, "memory.l1", "expected an object");
    if ((st = only_keys(x, l1, "memory.l1", k_l1)) ||
        (st = size_of(x, l1, "memory.l1", "bytes", &p->l1)))
      return st;
  }
  static const char *const names[3] = {"l2", "llc", "dram"};
  pto_mem_tier *tier[3] = {&p->l2, &p->llc, &p->dram};
  const uint32_t workers =
      p->machine.shared ? p->machine.workers[0]
                        : p->machine.workers[0] + p->machine.workers[1];
  for (int i = 0; i < 3; i++) {
    char path[32];
    snprintf(path, sizeof path, "memory.%s", names[i]);
    json_t *o = json_object_get(m, names[i]);
    if (!json_is_object(o))
      return ld_fail(x, PTO_ECONFIG, path, "%s (an object)",
                     o ? describe(o, b, sizeof b) : "missing");
    static const char *const k_l2[] = {"bytes", "core_gbps", NULL};
    static const char *const k_llc[] = {"bytes", "core_gbps", "total_gbps",
                                        "row_ns", NULL};
    static const char *const k_dram[] = {"core_gbps", "total_gbps", "row_ns",
                                         "store_gbps", NULL};
    if ((st = only_keys(x, o, path, i == 0 ? k_l2 : i == 1 ? k_llc : k_dram)))
      return st;
    if (i < 2 && (st = size_of(x, o, path, "bytes", &tier[i]->bytes)))
      return st;
    /* the L2's own bandwidth is in the instructions' costs (calibrated
     * with their data there): informational */
    if ((st = number(x, o, path, "core_gbps", i > 0, 0, &tier[i]->core_bw)))
      return st;
    if (i > 0 && !(tier[i]->core_bw > 0))
      return ld_fail(x, PTO_ECONFIG, path, "core_gbps: must be > 0");
    if (i > 0 && (st = number(x, o, path, "total_gbps", 0,
                              tier[i]->core_bw * workers, &tier[i]->total_bw)))
      return st;
    if (i > 0 && !(tier[i]->total_bw > 0))
      return ld_fail(x, PTO_ECONFIG, path, "total_gbps: must be > 0");
    if (i == 0)
      tier[i]->total_bw = tier[i]->core_bw * workers;
    if (i > 0 && (st = number(x, o, path, "row_ns", 0, 0, &tier[i]->row_ns)))
      return st;
    if (i == 2 && (st = number(x, o, path, "store_gbps", 0, tier[i]->core_bw,
                               &tier[i]->store_bw)))
      return st;
    if (i == 2 && !(tier[i]->store_bw > 0))
      return ld_fail(x, PTO_ECONFIG, path, "store_gbps: must be > 0");
  }
  return PTO_OK;
}

static pto_status parse_machine(const ld *x, json_t *m, pto_profile *p) {
  pto_config *c = pto_config_new();
  if (!c)
    return ld_fail(x, PTO_ENOMEM, "machine", "out of memory");
  json_t *wrap = json_pack("{sO}", "machine", m);
  char *text = wrap ? json_dumps(wrap, JSON_COMPACT) : NULL;
  json_decref(wrap);
  pto_status st = text ? pto_config_load_string(c, text) : PTO_ENOMEM;
  free(text);
  if (st) {
    st = ld_fail(x, st == PTO_ENOMEM ? PTO_ENOMEM : PTO_ECONFIG, "",
                 "%s", pto_config_error(c));
  } else {
    p->machine = *pto_config_machine(c);
    p->has_machine = 1;
  }
  pto_config_free(c);
  return st;
}

static void host_machine(pto_machine *m) {
  if (pto_machine_host(m) != PTO_OK) {
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "host");
    m->workers[0] = m->workers[1] = 1;
    m->shared = 1;
    for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
      m->mem[l] = (size_t)1 << 20;
  }
}

pto_status pto__profile_from_json(json_t *doc, const char *src,
                                  pto_profile **out, pto_error *err) {
  ld x = {err, src};
  char b[64];
  *out = NULL;
  pto_status st = PTO_OK;
  section *sec = NULL;
  pto_profile *p = calloc(1, sizeof *p);
  if (!p) {
    json_decref(doc);
    return ld_fail(&x, PTO_ENOMEM, "", "out of memory");
  }
  p->doc = doc;
  if (!json_is_object(doc)) {
    st = ld_fail(&x, PTO_ECONFIG, "", "not a profile: expected a JSON object");
    goto fail;
  }
  static const char *const keys[] = {
      "format", "version", "name",   "about",  "sources",    "assumptions",
      "machine", "runtime", "memory", "costs", "calibration", NULL};
  if ((st = only_keys(&x, doc, "", keys)))
    goto fail;
  const char *fmt = json_string_value(json_object_get(doc, "format"));
  if (!fmt || strcmp(fmt, "pto-profile")) {
    st = ld_fail(&x, PTO_ECONFIG, "format",
                 "not a machine profile (expected \"format\": "
                 "\"pto-profile\")");
    goto fail;
  }
  json_t *ver = json_object_get(doc, "version");
  if (!json_is_integer(ver) || json_integer_value(ver) != 1) {
    st = ld_fail(&x, PTO_ECONFIG, "version",
                 "%s; this PTO reads profile version 1",
                 ver ? describe(ver, b, sizeof b) : "missing");
    goto fail;
  }
  const char *name = json_string_value(json_object_get(doc, "name"));
  if (!name || !name[0] || strlen(name) >= sizeof p->name) {
    st = ld_fail(&x, PTO_ECONFIG, "name", "expected a string of 1..%zu "
                                          "characters",
                 sizeof p->name - 1);
    goto fail;
  }
  snprintf(p->name, sizeof p->name, "%s", name);
  static const char *const texts[] = {"sources", "assumptions"};
  for (int i = 0; i < 2; i++) {
    json_t *a = json_object_get(doc, texts[i]), *v;
    size_t k;
    if (a && !json_is_array(a)) {
      st = ld_fail(&x, PTO_ECONFIG, texts[i], "expected an array of strings");
      goto fail;
    }
    json_array_foreach(a, k, v) if (!json_is_string(v)) {
      st = ld_fail(&x, PTO_ECONFIG, texts[i], "expected an array of strings");
      goto fail;
    }
  }
  json_t *m = json_object_get(doc, "machine");
  if (m) {
    if ((st = parse_machine(&x, m, p)))
      goto fail;
  } else {
    host_machine(&p->machine);
  }
  json_t *rt = json_object_get(doc, "runtime");
  if (rt) {
    static const char *const rkeys[] = {"dispatch_ns", "handoff_ns", "task_ns",
                                        "instance_ns", "call_ns", NULL};
    if (!json_is_object(rt)) {
      st = ld_fail(&x, PTO_ECONFIG, "runtime", "expected an object");
      goto fail;
    }
    if ((st = only_keys(&x, rt, "runtime", rkeys)) ||
        (st = number(&x, rt, "runtime", "dispatch_ns", 0, 0,
                     &p->rt.dispatch_ns)) ||
        (st = number(&x, rt, "runtime", "handoff_ns", 0, 0,
                     &p->rt.handoff_ns)) ||
        (st = number(&x, rt, "runtime", "task_ns", 0, 0, &p->rt.task_ns)) ||
        (st = number(&x, rt, "runtime", "instance_ns", 0, 0,
                     &p->rt.instance_ns)) ||
        (st = number(&x, rt, "runtime", "call_ns", 0, 0, &p->rt.call_ns)))
      goto fail;
  }
  if ((st = parse_memory(&x, json_object_get(doc, "memory"), p)))
    goto fail;
  json_t *costs = json_object_get(doc, "costs");
  if (!json_is_object(costs)) {
    st = ld_fail(&x, PTO_ECONFIG, "costs",
                 "missing or not an object (any, cube, vector)");
    goto fail;
  }
  sec = calloc(PTO_COST_SECTIONS, sizeof *sec);
  p->cost = calloc(2, sizeof *p->cost);
  if (!sec || !p->cost) {
    st = ld_fail(&x, PTO_ENOMEM, "costs", "out of memory");
    goto fail;
  }
  for (int i = 0; i < PTO_COST_SECTIONS; i++)
    if (!(sec[i].insn = calloc(PTO_OP_COUNT, sizeof *sec[i].insn))) {
      st = ld_fail(&x, PTO_ENOMEM, "costs", "out of memory");
      goto fail;
    }
  const char *k;
  json_t *v;
  json_object_foreach(costs, k, v) {
    char path[64];
    snprintf(path, sizeof path, "costs.%s", k);
    int s = section_named(k);
    if (s < 0) {
      st = ld_fail(&x, PTO_ECONFIG, path,
                   "unknown section (expected any, cube or vector)");
      goto fail;
    }
    if ((st = parse_section(&x, v, path, &sec[s])))
      goto fail;
  }
  /* resolve: the program's core type's section, then "any", then the
   * instruction's own core type's section */
  for (int c = 0; c < 2; c++)
    for (int op = 0; op < PTO_OP_COUNT; op++) {
      const pto_core_type own = pto__insn_rows[op].core;
      for (int pk = 0; pk < PTO_COST_PACKS; pk++)
        for (int dt = 0; dt < PTO_DTYPE_COUNT; dt++) {
          const pto_cost_terms *t = lookup(&sec[c], op, pk, dt);
          if (!t)
            t = lookup(&sec[2], op, pk, dt);
          if (!t && own < PTO_CORE_MEMORY && (int)own != c)
            t = lookup(&sec[own], op, pk, dt);
          if (t)
            p->cost[c][op][pk][dt] = *t;
        }
    }
  /* every instruction priced on every core type that runs it */
  for (int op = 0; op < PTO_OP_COUNT; op++) {
    const pto_core_type own = pto__insn_rows[op].core;
    for (int c = 0; c < 2; c++) {
      if (own < PTO_CORE_MEMORY && (int)own != c)
        continue;
      if (p->cost[c][op][0][PTO_F32].set)
        continue;
      const char *cn = c == PTO_CORE_CUBE ? "cube" : "vector";
      char cls[32];
      snprintf(cls, sizeof cls, "%s", pto__class_name(pto__insn_rows[op].cls));
      for (char *q = cls; *q; q++)
        *q = (char)tolower((unsigned char)*q);
      st = ld_fail(&x, PTO_ECONFIG, "costs",
                   "no cost for %s (class %s) on %s cores: give costs.%s."
                   "insns.%s, costs.%s.classes.%s, or either under "
                   "costs.any",
                   pto__insn_rows[op].name, cls, cn, cn,
                   pto__insn_rows[op].name, cn, cls);
      goto fail;
    }
  }
  for (int i = 0; i < PTO_COST_SECTIONS; i++)
    free(sec[i].insn);
  free(sec);
  *out = p;
  return PTO_OK;
fail:
  if (sec)
    for (int i = 0; i < PTO_COST_SECTIONS; i++)
      free(sec[i].insn);
  free(sec);
  pto_profile_free(p);
  return st;
}

/* ---- custom instructions' costs --------------------------------------------- */

/* The entry of custom instruction name (any packing or dtype) in section
 * s of the profile's document, into *t. */
static int custom_lookup(const json_t *doc, const char *s, const char *name,
                         pto_cost_terms *t) {
  json_t *ins = json_object_get(
      json_object_get(json_object_get(doc, "costs"), s), "insns");
  json_t *v = json_object_get(ins, name);
  pto_error e;
  ld x = {&e, NULL};
  return v && !parse_terms(&x, v, "", t);
}

const pto_cost_terms *pto__profile_cost(const pto_profile *p,
                                        pto_core_type core, int op,
                                        uint32_t pack, pto_dtype dt,
                                        pto_cost_terms *buf) {
  if (!p || core >= PTO_CORE_MEMORY)
    core = PTO_CORE_VECTOR;
  if (op >= 0 && op < PTO_OP_COUNT) {
    if (pack >= PTO_COST_PACKS || (unsigned)dt >= PTO_DTYPE_COUNT)
      pack = 0, dt = PTO_F32;
    const pto_cost_terms *t = &p->cost[core][op][pack][dt];
    return t->set ? t : NULL;
  }
  const pto_insn_info *i = pto__insn_info(op);
  if (!i)
    return NULL;
  if (custom_lookup(p->doc, core == PTO_CORE_CUBE ? "cube" : "vector", i->name,
                    buf) ||
      custom_lookup(p->doc, "any", i->name, buf))
    return buf;
  memset(buf, 0, sizeof *buf);
  json_t *cls = json_object_get(
      json_object_get(json_object_get(p->doc, "costs"), "any"), "classes");
  json_t *v = json_object_get(cls, "custom");
  pto_error e;
  ld x = {&e, NULL};
  return v && !parse_terms(&x, v, "", buf) ? buf : NULL;
}

/* ---- the public calls --------------------------------------------------------- */

pto_status pto_profile_load_string(const char *json, pto_profile **out) {
  if (!out)
    return pto__last_error(PTO_EINVAL, "profile: out is NULL");
  *out = NULL;
  if (!json)
    return pto__last_error(PTO_EINVAL, "profile: the JSON text is NULL");
  json_error_t je;
  json_t *doc = json_loads(json, JSON_REJECT_DUPLICATES, &je);
  if (!doc)
    return pto__last_error(PTO_ECONFIG, "profile: line %d, column %d: %s",
                           je.line, je.column, je.text);
  pto_error err;
  pto__error_clear(&err);
  pto_status st = pto__profile_from_json(doc, NULL, out, &err);
  return st ? pto__last_error(st, "%s", err.msg) : PTO_OK;
}

pto_status pto_profile_load_file(const char *path, pto_profile **out) {
  if (!out)
    return pto__last_error(PTO_EINVAL, "profile: out is NULL");
  *out = NULL;
  if (!path)
    return pto__last_error(PTO_EINVAL, "profile: the path is NULL");
  FILE *f = fopen(path, "r");
  if (!f)
    return pto__last_error(PTO_EIO, "%s: cannot read the profile", path);
  json_error_t je;
  json_t *doc = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
  fclose(f);
  if (!doc)
    return pto__last_error(PTO_ECONFIG, "%s: line %d, column %d: %s", path,
                           je.line, je.column, je.text);
  pto_error err;
  pto__error_clear(&err);
  pto_status st = pto__profile_from_json(doc, path, out, &err);
  return st ? pto__last_error(st, "%s", err.msg) : PTO_OK;
}

void pto_profile_free(pto_profile *p) {
  if (!p)
    return;
  json_decref(p->doc);
  free(p->cost);
  free(p);
}

char *pto_profile_to_json(const pto_profile *p) {
  return p ? json_dumps(p->doc, JSON_INDENT(1) | JSON_REAL_PRECISION(6))
           : NULL;
}

const char *pto_profile_name(const pto_profile *p) {
  return p ? p->name : "";
}

const pto_machine *pto_profile_machine(const pto_profile *p) {
  return p ? &p->machine : NULL;
}

pto_sim_runtime pto_profile_runtime(const pto_profile *p) {
  pto_sim_runtime r;
  memset(&r, 0, sizeof r);
  return p ? p->rt : r;
}

pto_status pto_profile_set_runtime(pto_profile *p, const pto_sim_runtime *rt) {
  if (!p || !rt)
    return pto__last_error(PTO_EINVAL, "profile: NULL argument");
  const double v[5] = {rt->dispatch_ns, rt->handoff_ns, rt->task_ns,
                       rt->instance_ns, rt->call_ns};
  static const char *const keys[5] = {"dispatch_ns", "handoff_ns", "task_ns",
                                      "instance_ns", "call_ns"};
  for (int i = 0; i < 5; i++)
    if (!isfinite(v[i]) || v[i] < 0)
      return pto__last_error(PTO_EINVAL, "profile: runtime.%s: %g is negative "
                                         "or not finite",
                             keys[i], v[i]);
  json_t *o = json_object();
  for (int i = 0; o && i < 5; i++)
    json_object_set_new(o, keys[i], json_real(v[i]));
  if (!o || json_object_set_new(p->doc, "runtime", o))
    return pto__last_error(PTO_ENOMEM, "profile: out of memory");
  p->rt = *rt;
  return PTO_OK;
}

static json_t *machine_json(const pto_machine *m) {
  json_t *mem = json_object();
  for (int l = 0; mem && l < PTO_MEM_LEVEL_COUNT; l++)
    json_object_set_new(mem, pto_mem_level_name((pto_mem_level)l),
                        json_integer((json_int_t)m->mem[l]));
  return json_pack("{ss si si sb so}", "name", m->name, "cube_workers",
                   (int)m->workers[PTO_CORE_CUBE], "vector_workers",
                   (int)m->workers[PTO_CORE_VECTOR], "shared", m->shared, "memory",
                   mem);
}

pto_status pto_profile_scale(const pto_profile *p, uint32_t workers,
                             pto_profile **out) {
  if (!p || !out)
    return pto__last_error(PTO_EINVAL, "profile: NULL argument");
  *out = NULL;
  if (workers == 0 || workers > 65536)
    return pto__last_error(PTO_EINVAL,
                           "profile '%s': %u workers (expected 1..65536)",
                           p->name, workers);
  const pto_machine *m = &p->machine;
  const uint32_t had = m->shared ? m->workers[0] : m->workers[0] + m->workers[1];
  const double f = (double)workers / (had ? had : 1);
  pto_machine s = *m;
  char name[64];
  snprintf(name, sizeof name, "%s:%u", p->name, workers);
  if (strlen(name) >= sizeof s.name)
    return pto__last_error(PTO_EINVAL, "profile '%s': the name '%s' is too "
                                       "long",
                           p->name, name);
  memcpy(s.name, name, strlen(name) + 1);
  if (m->shared) {
    s.workers[0] = s.workers[1] = workers;
  } else {
    uint32_t cube = (uint32_t)lround(m->workers[0] * f);
    cube = cube < 1 ? 1 : cube >= workers ? workers - 1 : cube;
    if (workers < 2)
      return pto__last_error(PTO_EINVAL,
                             "profile '%s': a machine of dedicated cube and "
                             "vector workers needs at least 2",
                             p->name);
    s.workers[0] = cube;
    s.workers[1] = workers - cube;
  }
  json_t *doc = json_deep_copy(p->doc);
  json_t *mem = doc ? json_object_get(doc, "memory") : NULL;
  json_t *mj = machine_json(&s);
  if (!doc || !mem || !mj) {
    json_decref(doc);
    json_decref(mj);
    return pto__last_error(PTO_ENOMEM, "profile: out of memory");
  }
  json_object_set_new(doc, "name", json_string(name));
  json_object_set_new(doc, "machine", mj);
  json_t *llc = json_object_get(mem, "llc"), *dram = json_object_get(mem, "dram");
  json_object_set_new(llc, "bytes", json_real(p->llc.bytes * f));
  json_object_set_new(llc, "total_gbps", json_real(p->llc.total_bw * f));
  json_object_set_new(dram, "total_gbps", json_real(p->dram.total_bw * f));
  pto_error err;
  pto__error_clear(&err);
  pto_status st = pto__profile_from_json(doc, NULL, out, &err);
  return st ? pto__last_error(st, "%s", err.msg) : PTO_OK;
}
