/* Random programs (randprog.h): a case built into a pto_program through
 * the public API or printed as the same calls in a stand-alone C program,
 * and its config built or printed. */
#include "tests/randprog_impl.h"

#include <inttypes.h>
#include <string.h>

#include "randprog_inc_str.h" /* rp_inc_lines: randprog_inc.h as text */

/* ---- building and printing
 * ------------------------------------------------------ */

static const char *dt_c(pto_dtype dt) {
  static const char *names[] = {"PTO_F32", "PTO_I32", "PTO_BF16", "PTO_F16"};
  return (unsigned)dt < 4 ? names[dt] : "?";
}

static void print_shape(FILE *o, int nd, const int64_t *s) {
  fprintf(o, "(const int64_t[]){");
  for (int i = 0; i < nd; i++)
    fprintf(o, "%s%" PRId64, i ? ", " : "", s[i]);
  fprintf(o, "}");
}

/* A step's shape with its dynamic axes as the dims' codes (d[k] when
 * printed). */
static void print_dshape(FILE *o, const rp_step *s) {
  fprintf(o, "(const int64_t[]){");
  for (int i = 0; i < s->nd; i++) {
    if (s->dim[i])
      fprintf(o, "%sd[%d]", i ? ", " : "", s->dim[i] - 1);
    else
      fprintf(o, "%s%" PRId64, i ? ", " : "", s->shape[i]);
  }
  fprintf(o, "}");
}
static const int64_t *dshape(const rp_step *s, const int64_t *codes,
                             int64_t *buf) {
  for (int i = 0; i < s->nd; i++)
    buf[i] = s->dim[i] ? codes[s->dim[i] - 1] : s->shape[i];
  return buf;
}

void dims_declare(const rp_case *c, pto_program *p, int64_t *codes) {
  for (int k = 0; k < c->n_dims; k++)
    codes[k] = pto_dim_dynamic(p, c->dims[k].name, c->dims[k].max);
}

void dims_describe(const rp_case *c, const int64_t *ext, char *buf,
                   size_t size) {
  size_t n = 0;
  buf[0] = 0;
  for (int k = 0; k < c->n_dims && n < size; k++)
    n += (size_t)snprintf(buf + n, size - n, "%s%s=%" PRId64, k ? " " : "",
                          c->dims[k].name, ext[k]);
}

/* Builds the program into p (tensors into T) or, with o non-NULL, prints
 * the same calls as C. */
void emit_program(const rp_case *c, pto_program *p, pto_tensor **T, FILE *o) {
  int64_t codes[RP_MAX_DIMS] = {0}, sh[4];
  if (o && c->n_dims) {
    fprintf(o, "  int64_t d[%d];\n", c->n_dims);
    for (int k = 0; k < c->n_dims; k++)
      fprintf(o, "  d[%d] = pto_dim_dynamic(p, \"%s\", %" PRId64 ");\n", k,
              c->dims[k].name, c->dims[k].max);
  } else if (!o) {
    dims_declare(c, p, codes);
  }
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    const int *in = s->in;
    switch (s->kind) {
    case S_INPUT:
      if (o) {
        fprintf(o, "  t[%d] = pto_input(p, \"%s\", %s, %d, ", s->out, s->name,
                dt_c(s->dt), s->nd);
        print_dshape(o, s);
        fprintf(o, ");\n");
      } else
        T[s->out] = pto_input(p, s->name, s->dt, s->nd, dshape(s, codes, sh));
      break;
    case S_OUTPUT:
      if (o)
        fprintf(o, "  pto_output(p, t[%d], \"%s\");\n", in[0], s->name);
      else
        pto_output(p, T[in[0]], s->name);
      break;
    case S_PUSH_LABEL:
      if (o)
        fprintf(o, "  pto_program_push_label(p, \"%s\");\n", s->name);
      else
        pto_program_push_label(p, s->name);
      break;
    case S_POP_LABEL:
      if (o)
        fprintf(o, "  pto_program_pop_label(p);\n");
      else
        pto_program_pop_label(p);
      break;
    case S_PUSH_TILE:
      if (o && s->has_tile)
        fprintf(o,
                "  pto_program_push_tile(p, &(pto_tile_shape){%u, %u, %u, %u, "
                "%u});\n",
                s->tile[0], s->tile[1], s->tile[2], s->tile[3], s->tile[4]);
      else if (o)
        fprintf(o, "  pto_program_push_tile(p, NULL);\n");
      else {
        pto_tile_shape ts = {s->tile[0], s->tile[1], s->tile[2], s->tile[3],
                             s->tile[4]};
        pto_program_push_tile(p, s->has_tile ? &ts : NULL);
      }
      break;
    case S_POP_TILE:
      if (o)
        fprintf(o, "  pto_program_pop_tile(p);\n");
      else
        pto_program_pop_tile(p);
      break;
    case S_SET_VEC:
      if (o)
        fprintf(o, "  pto_program_set_vec_tile(p, %u, %u);\n", s->tile[0],
                s->tile[1]);
      else
        pto_program_set_vec_tile(p, s->tile[0], s->tile[1]);
      break;
    case S_SET_CUBE:
      if (o)
        fprintf(o, "  pto_program_set_cube_tile(p, %u, %u, %u);\n", s->tile[0],
                s->tile[1], s->tile[2]);
      else
        pto_program_set_cube_tile(p, s->tile[0], s->tile[1], s->tile[2]);
      break;
    case S_PUSH_SCOPE: {
      pto_tile_shape ts = {s->tile[0], s->tile[1], s->tile[2], s->tile[3],
                           s->tile[4]};
      if (o) {
        fprintf(o, "  pto_program_push_scope(p, ");
        if (s->name[0])
          fprintf(o, "\"%s\", ", s->name);
        else
          fprintf(o, "NULL, ");
        if (s->has_tile)
          fprintf(o, "&(pto_tile_shape){%u, %u, %u, %u, %u});\n", s->tile[0],
                  s->tile[1], s->tile[2], s->tile[3], s->tile[4]);
        else
          fprintf(o, "NULL);\n");
      } else
        pto_program_push_scope(p, s->name[0] ? s->name : NULL,
                               s->has_tile ? &ts : NULL);
      break;
    }
    case S_POP_SCOPE:
      if (o)
        fprintf(o, "  pto_program_pop_scope(p);\n");
      else
        pto_program_pop_scope(p);
      break;
    case S_OP:
      break;
    }
    if (s->kind != S_OP)
      continue;
    int op = s->op;
    if (o && op != O_SLICE && op != O_RESHAPE && op != O_TRANSPOSE) {
      const rp_val *v = &c->vals[s->out];
      static const char *const lv[] = {"grid", "exact", "approx", "unused"};
      fprintf(o, "  /* %s%s", v->special ? "special " : "", lv[v->lvl]);
      if (v->lvl == L_GRID)
        fprintf(o, " 2^-%d", v->q);
      if (v->lvl == L_APPROX)
        fprintf(o, " +-%.3g", v->err);
      if (!v->special)
        fprintf(o, " in [%.6g, %.6g]", v->lo, v->hi);
      fprintf(o, " */\n");
      if (op == O_ATTENTION) {
        const rp_val *l = &c->vals[s->out2];
        fprintf(o, "  /* lse %s +-%.3g in [%.6g, %.6g]%s */\n", lv[l->lvl],
                l->err, l->lo, l->hi, l->posinf ? " or +inf" : "");
      }
    }
    if (o)
      fprintf(o, "  t[%d] = ", s->out);
    pto_tensor *r = NULL;
    switch (op) {
#define BIN(OP, fn)                                                            \
  case OP:                                                                     \
    if (o)                                                                     \
      fprintf(o, #fn "(p, t[%d], t[%d]);\n", in[0], in[1]);                    \
    else                                                                       \
      r = fn(p, T[in[0]], T[in[1]]);                                           \
    break;
      BIN(O_ADD, pto_add)
      BIN(O_SUB, pto_sub)
      BIN(O_MUL, pto_mul)
      BIN(O_DIV, pto_div)
      BIN(O_MAX, pto_max)
      BIN(O_MIN, pto_min)
#undef BIN
#define SCL(OP, fn)                                                            \
  case OP:                                                                     \
    if (o)                                                                     \
      fprintf(o, #fn "(p, t[%d], %.17g);\n", in[0], s->scalar);                \
    else                                                                       \
      r = fn(p, T[in[0]], s->scalar);                                          \
    break;
      SCL(O_ADDS, pto_adds)
      SCL(O_SUBS, pto_subs)
      SCL(O_MULS, pto_muls)
      SCL(O_DIVS, pto_divs)
      SCL(O_MAXS, pto_maxs)
      SCL(O_MINS, pto_mins)
#undef SCL
#define UN(OP, fn)                                                             \
  case OP:                                                                     \
    if (o)                                                                     \
      fprintf(o, #fn "(p, t[%d]);\n", in[0]);                                  \
    else                                                                       \
      r = fn(p, T[in[0]]);                                                     \
    break;
      UN(O_EXP, pto_exp)
      UN(O_LOG, pto_log)
      UN(O_SQRT, pto_sqrt)
      UN(O_RSQRT, pto_rsqrt)
      UN(O_RECIP, pto_recip)
      UN(O_RELU, pto_relu)
      UN(O_ABS, pto_abs)
      UN(O_NEG, pto_neg)
      UN(O_ROWSUM, pto_rowsum)
      UN(O_ROWMAX, pto_rowmax)
      UN(O_ROWMIN, pto_rowmin)
      UN(O_COLSUM, pto_colsum)
      UN(O_COLMAX, pto_colmax)
      UN(O_SOFTMAX, pto_softmax)
      UN(O_SIGMOID, pto_sigmoid)
      UN(O_SILU, pto_silu)
      UN(O_GELU, pto_gelu)
      UN(O_MEAN, pto_mean)
      UN(O_VAR, pto_var)
#undef UN
    case O_LAYER_NORM:
    case O_RMS_NORM: {
      /* in: x, then gamma (flags bit 0) and beta (bit 1) when present */
      const int gi = (s->flags & 1) ? 1 : -1,
                bi = (s->flags & 2) ? ((s->flags & 1) ? 2 : 1) : -1;
      if (o) {
        char gs[16] = "NULL", bs[16] = "NULL";
        if (gi > 0)
          snprintf(gs, sizeof gs, "t[%d]", in[gi]);
        if (bi > 0)
          snprintf(bs, sizeof bs, "t[%d]", in[bi]);
        if (op == O_LAYER_NORM)
          fprintf(o, "pto_layer_norm(p, t[%d], %s, %s, %.17g);\n", in[0], gs,
                  bs, s->scalar);
        else
          fprintf(o, "pto_rms_norm(p, t[%d], %s, %.17g);\n", in[0], gs,
                  s->scalar);
      } else if (op == O_LAYER_NORM) {
        r = pto_layer_norm(p, T[in[0]], gi > 0 ? T[in[gi]] : NULL,
                           bi > 0 ? T[in[bi]] : NULL, s->scalar);
      } else {
        r = pto_rms_norm(p, T[in[0]], gi > 0 ? T[in[gi]] : NULL, s->scalar);
      }
      break;
    }
    case O_MATMUL_MASKED:
      if (o)
        fprintf(o, "pto_matmul_masked(p, t[%d], t[%d], %u, %" PRId64 ");\n",
                in[0], in[1], s->flags, s->ival);
      else
        r = pto_matmul_masked(p, T[in[0]], T[in[1]], s->flags, s->ival);
      break;
    case O_IOTA_AXIS:
      if (o) {
        fprintf(o, "pto_iota_axis(p, %s, %d, ", dt_c(s->dt), s->nd);
        print_dshape(o, s);
        fprintf(o, ", %d, %" PRId64 ");\n", s->a0, s->ival);
      } else
        r = pto_iota_axis(p, s->dt, s->nd, dshape(s, codes, sh), s->a0,
                          s->ival);
      break;
    case O_TPROG:
      if (o)
        fprintf(o, "rp_tprog(p, t[%d], UINT64_C(%" PRIu64 "));\n", in[0],
                (uint64_t)s->ival);
      else
        r = rp_tprog(p, T[in[0]], (uint64_t)s->ival);
      break;
    case O_ASSEMBLE:
      if (o) {
        fprintf(o, "pto_assemble(p, t[%d], t[%d], ", in[0], in[1]);
        print_shape(o, s->nd, s->end);
        fprintf(o, ");\n");
      } else
        r = pto_assemble(p, T[in[0]], T[in[1]], s->end);
      break;
    case O_CAST:
      if (o)
        fprintf(o, "pto_cast(p, t[%d], %s);\n", in[0], dt_c(s->dt));
      else
        r = pto_cast(p, T[in[0]], s->dt);
      break;
    case O_CMP:
      if (o)
        fprintf(o, "pto_cmp(p, t[%d], t[%d], (pto_cmp_mode)%d);\n", in[0],
                in[1], s->a0);
      else
        r = pto_cmp(p, T[in[0]], T[in[1]], (pto_cmp_mode)s->a0);
      break;
    case O_SELECT:
      if (o)
        fprintf(o, "pto_select(p, t[%d], t[%d], t[%d]);\n", in[0], in[1],
                in[2]);
      else
        r = pto_select(p, T[in[0]], T[in[1]], T[in[2]]);
      break;
    case O_MATMUL:
      if (o)
        fprintf(o, "pto_matmul(p, t[%d], t[%d], %u);\n", in[0], in[1],
                s->flags);
      else
        r = pto_matmul(p, T[in[0]], T[in[1]], s->flags);
      break;
    case O_MATMUL_ACC:
      if (o)
        fprintf(o, "pto_matmul_acc(p, t[%d], t[%d], t[%d], %u);\n", in[2],
                in[0], in[1], s->flags);
      else
        r = pto_matmul_acc(p, T[in[2]], T[in[0]], T[in[1]], s->flags);
      break;
    case O_TOPK:
      if (o)
        fprintf(o, "%s(p, t[%d], %" PRId64 ", &t[%d]);\n",
                s->flags & RP_TOPK_MASKED ? "pto_topk_masked" : "pto_topk",
                in[0], s->ival, s->out2);
      else if (s->flags & RP_TOPK_MASKED)
        r = pto_topk_masked(p, T[in[0]], s->ival, &T[s->out2]);
      else
        r = pto_topk(p, T[in[0]], s->ival, &T[s->out2]);
      break;
    case O_ATTENTION:
      if (o)
        fprintf(o,
                "pto_sparse_attention(p, t[%d], t[%d], t[%d], %" PRId64
                ", %.17g, &t[%d]);\n",
                in[0], in[1], in[2], s->ival, s->scalar, s->out2);
      else
        r = pto_sparse_attention(p, T[in[0]], T[in[1]], T[in[2]], s->ival,
                                 s->scalar, &T[s->out2]);
      break;
    case O_GATHER:
      if (o && s->n_in > 2)
        fprintf(o, "pto_gather_else(p, t[%d], t[%d], t[%d], %u);\n", in[0],
                in[1], in[2], s->flags);
      else if (o)
        fprintf(o, "pto_gather(p, t[%d], t[%d], %u);\n", in[0], in[1],
                s->flags);
      else if (s->n_in > 2)
        r = pto_gather_else(p, T[in[0]], T[in[1]], T[in[2]], s->flags);
      else
        r = pto_gather(p, T[in[0]], T[in[1]], s->flags);
      break;
    case O_CONCAT:
      if (o) {
        fprintf(o, "pto_concat(p, %d, (pto_tensor *const[]){", s->n_in);
        for (int k = 0; k < s->n_in; k++)
          fprintf(o, "%st[%d]", k ? ", " : "", in[k]);
        fprintf(o, "}, %d);\n", s->a0);
      } else {
        pto_tensor *ts[MAX_IN];
        for (int k = 0; k < s->n_in; k++)
          ts[k] = T[in[k]];
        r = pto_concat(p, s->n_in, ts, s->a0);
      }
      break;
    case O_FULL:
      if (o) {
        fprintf(o, "pto_full(p, %s, %d, ", dt_c(s->dt), s->nd);
        print_dshape(o, s);
        fprintf(o, ", %.17g);\n", s->scalar);
      } else
        r = pto_full(p, s->dt, s->nd, dshape(s, codes, sh), s->scalar);
      break;
    case O_IOTA:
      if (o) {
        fprintf(o, "pto_iota(p, %s, %d, ", dt_c(s->dt), s->nd);
        print_dshape(o, s);
        fprintf(o, ", %" PRId64 ");\n", s->ival);
      } else
        r = pto_iota(p, s->dt, s->nd, dshape(s, codes, sh), s->ival);
      break;
    case O_SLICE:
      if (o) {
        fprintf(o, "pto_slice(p, t[%d], ", in[0]);
        print_shape(o, s->nd, s->shape);
        fprintf(o, ", ");
        print_shape(o, s->nd, s->end);
        fprintf(o, ");\n");
      } else
        r = pto_slice(p, T[in[0]], s->shape, s->end);
      break;
    case O_RESHAPE:
      if (o) {
        fprintf(o, "pto_reshape(p, t[%d], %d, ", in[0], s->nd);
        print_shape(o, s->nd, s->shape);
        fprintf(o, ");\n");
      } else
        r = pto_reshape(p, T[in[0]], s->nd, s->shape);
      break;
    case O_TRANSPOSE:
      if (o)
        fprintf(o, "pto_transpose(p, t[%d], %d, %d);\n", in[0], s->a0, s->a1);
      else
        r = pto_transpose(p, T[in[0]], s->a0, s->a1);
      break;
    }
    if (!o)
      T[s->out] = r;
  }
}

static void cfg_json(const rp_cfg *f, char *buf, size_t size) {
  size_t n = 0;
#define PUT(...)                                                               \
  do {                                                                         \
    if (n < size)                                                              \
      n += (size_t)snprintf(buf + n, size - n, __VA_ARGS__);                   \
  } while (0)
  const char *sep = "";
  PUT("{");
  if (f->machine == M_HOST) {
    PUT("\"machine\": \"host\"");
    sep = ", ";
  } else if (f->machine == M_ASCEND) {
    PUT("\"machine\": \"ascend\"");
    sep = ", ";
  } else if (f->machine == M_CUSTOM) {
    PUT("\"machine\": {\"name\": \"rp\", \"cube_workers\": %u, "
        "\"vector_workers\": %u, \"shared\": %s, \"memory\": {",
        f->workers[0], f->workers[1], f->shared ? "true" : "false");
    for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
      PUT("%s\"%s\": %" PRIu64, l ? ", " : "",
          pto_mem_level_name((pto_mem_level)l), f->mem[l]);
    PUT("}}");
    sep = ", ";
  }
  static const char *const policies[] = {"\"fifo\"", "\"critical-path\"",
                                         "\"locality\""};
  if (f->knob_set) {
    PUT("%s\"knobs\": {", sep);
    const char *s2 = "";
    for (int k = 0; k < PTO_KNOB_COUNT; k++)
      if (f->knob_set & (1 << k)) {
        if (k == PTO_KNOB_POLICY)
          PUT("%s\"policy\": %s", s2, policies[f->knob[k]]);
        else if (k == PTO_KNOB_FUSE)
          PUT("%s\"fuse\": %s", s2, f->knob[k] ? "true" : "false");
        else
          PUT("%s\"%s\": %" PRId64, s2, pto_knob_name((pto_knob)k), f->knob[k]);
        s2 = ", ";
      }
    PUT("}");
    sep = ", ";
  }
  if (f->n_labels) {
    PUT("%s\"labels\": {", sep);
    for (int i = 0; i < f->n_labels; i++) {
      const rp_label_cfg *l = &f->labels[i];
      PUT("%s\"%s\": {", i ? ", " : "", l->label);
      const char *s2 = "";
      for (int k = 0; k < PTO_KNOB_COUNT; k++)
        if (l->knob_set & (1 << k)) {
          PUT("%s\"%s\": %" PRId64, s2, pto_knob_name((pto_knob)k), l->knob[k]);
          s2 = ", ";
        }
      if (l->vec_set) {
        PUT("%s\"vec_tile\": [%u, %u]", s2, l->vec[0], l->vec[1]);
        s2 = ", ";
      }
      if (l->cube_set)
        PUT("%s\"cube_tile\": [%u, %u, %u]", s2, l->cube[0], l->cube[1],
            l->cube[2]);
      PUT("}");
    }
    PUT("}");
  }
  PUT("}");
#undef PUT
}

/* The config (NULL for CFG_NULL), built or printed. l1_one: every l1_reuse
 * setting forced to 1 (the probe for known bug 3). */
pto_config *emit_config(const rp_case *c, FILE *o, int l1_one, char *err,
                        size_t size) {
  rp_cfg f = c->cfg;
  if (l1_one) {
    if (f.knob_set & (1 << PTO_KNOB_L1_REUSE))
      f.knob[PTO_KNOB_L1_REUSE] = 1;
    for (int i = 0; i < f.n_labels; i++)
      if (f.labels[i].knob_set & (1 << PTO_KNOB_L1_REUSE))
        f.labels[i].knob[PTO_KNOB_L1_REUSE] = 1;
  }
  if (f.mode == CFG_NULL) {
    if (o)
      fprintf(o, "  pto_config *c = NULL; /* the defaults */\n");
    return NULL;
  }
  if (f.mode == CFG_JSON) {
    char json[4096];
    cfg_json(&f, json, sizeof json);
    if (o) {
      fprintf(o, "  pto_config *c = pto_config_new();\n  if "
                 "(pto_config_load_string(c, \"");
      for (const char *q = json; *q; q++) {
        if (*q == '"')
          fputc('\\', o);
        fputc(*q, o);
      }
      fprintf(o, "\"))\n    return fprintf(stderr, \"config: %%s\\n\", "
                 "pto_config_error(c)), 1;\n");
      return NULL;
    }
    pto_config *cfg = pto_config_new();
    if (cfg && pto_config_load_string(cfg, json) != PTO_OK) {
      snprintf(err, size, "config %.300s: %.200s", json, pto_config_error(cfg));
      pto_config_free(cfg);
      return NULL;
    }
    return cfg;
  }
  pto_config *cfg = o ? NULL : pto_config_new();
  int bad = 0;
  if (o)
    fprintf(o, "  pto_config *c = pto_config_new();\n");
  if (f.machine == M_ASCEND) {
    if (o)
      fprintf(o, "  {\n    pto_machine m = pto_machine_ascend();\n"
                 "    pto_config_set_machine(c, &m);\n  }\n");
    else {
      pto_machine m = pto_machine_ascend();
      bad |= pto_config_set_machine(cfg, &m) != PTO_OK;
    }
  } else if (f.machine == M_CUSTOM) {
    if (o) {
      fprintf(
          o,
          "  {\n    pto_machine m;\n    memset(&m, 0, sizeof m);\n"
          "    strcpy(m.name, \"rp\");\n    m.workers[PTO_CORE_CUBE] = %u;\n"
          "    m.workers[PTO_CORE_VECTOR] = %u;\n    m.shared = %d;\n",
          f.workers[0], f.workers[1], f.shared);
      for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
        fprintf(o, "    m.mem[PTO_MEM_%s] = %" PRIu64 ";\n",
                pto_mem_level_name((pto_mem_level)l), f.mem[l]);
      fprintf(o, "    pto_config_set_machine(c, &m);\n  }\n");
    } else {
      pto_machine m;
      memset(&m, 0, sizeof m);
      strcpy(m.name, "rp");
      m.workers[PTO_CORE_CUBE] = f.workers[0];
      m.workers[PTO_CORE_VECTOR] = f.workers[1];
      m.shared = f.shared;
      for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
        m.mem[l] = (size_t)f.mem[l];
      bad |= pto_config_set_machine(cfg, &m) != PTO_OK;
    }
  }
  static const char *const knob_c[] = {"PTO_KNOB_NBUFFER", "PTO_KNOB_L1_REUSE",
                                       "PTO_KNOB_POLICY", "PTO_KNOB_FUSE"};
  for (int k = 0; k < PTO_KNOB_COUNT; k++)
    if (f.knob_set & (1 << k)) {
      if (o)
        fprintf(o, "  pto_config_set_knob(c, NULL, %s, %" PRId64 ");\n",
                knob_c[k], f.knob[k]);
      else
        bad |= pto_config_set_knob(cfg, NULL, (pto_knob)k, f.knob[k]) != PTO_OK;
    }
  for (int i = 0; i < f.n_labels; i++) {
    const rp_label_cfg *l = &f.labels[i];
    for (int k = 0; k < PTO_KNOB_COUNT; k++)
      if (l->knob_set & (1 << k)) {
        if (o)
          fprintf(o, "  pto_config_set_knob(c, \"%s\", %s, %" PRId64 ");\n",
                  l->label, knob_c[k], l->knob[k]);
        else
          bad |= pto_config_set_knob(cfg, l->label, (pto_knob)k, l->knob[k]) !=
                 PTO_OK;
      }
    if (l->vec_set || l->cube_set) {
      pto_tile_shape ts = {l->vec[0], l->vec[1], l->cube[0], l->cube[1],
                           l->cube[2]};
      if (o)
        fprintf(o,
                "  pto_config_set_tile(c, \"%s\", &(pto_tile_shape){%u, %u, "
                "%u, %u, %u});\n",
                l->label, ts.vec_rows, ts.vec_cols, ts.cube_m, ts.cube_n,
                ts.cube_k);
      else
        bad |= pto_config_set_tile(cfg, l->label, &ts) != PTO_OK;
    }
  }
  if (bad && cfg) {
    snprintf(err, size, "config: %s", pto_config_error(cfg));
    pto_config_free(cfg);
    return NULL;
  }
  return cfg;
}

int cfg_has_l1_reuse(const rp_cfg *f) {
  if ((f->knob_set & (1 << PTO_KNOB_L1_REUSE)) &&
      f->knob[PTO_KNOB_L1_REUSE] > 1)
    return 1;
  for (int i = 0; i < f->n_labels; i++)
    if ((f->labels[i].knob_set & (1 << PTO_KNOB_L1_REUSE)) &&
        f->labels[i].knob[PTO_KNOB_L1_REUSE] > 1)
      return 1;
  return 0;
}

int cfg_fuses(const rp_cfg *f) {
  if (f->mode != CFG_NULL && (f->knob_set & (1 << PTO_KNOB_FUSE)) &&
      !f->knob[PTO_KNOB_FUSE])
    return 0;
  return 1;
}

/* How outputs are compared: a tolerance < 0 is bit-exact. */
double out_tol(const rp_val *v) {
  if (v->lvl != L_APPROX || v->special || v->dt == PTO_I32)
    return v->zsign ? -2 : -1;
  return v->err;
}

void rt_machine(const rp_rt_spec *r, uint32_t *cube, uint32_t *vec) {
  static const uint32_t ded[3][2] = {{1, 1}, {1, 2}, {2, 1}};
  *cube = r->shared ? (uint32_t)r->variant + 1 : ded[r->variant][0];
  *vec = r->shared ? (uint32_t)r->variant + 1 : ded[r->variant][1];
}

/* The end of a dynamic case's program: one run bound to each binding in
 * turn, the evaluator at that binding, the outputs (past the extents too)
 * compared after every execution; a binding that breaks an equality must
 * be refused by both. */
static void print_dynamic(const rp_case *c, FILE *o, int n_out) {
  emit_config(c, o, 0, NULL, 0);
  fprintf(
      o,
      "  pto_executable *e = NULL;\n  pto_status st = pto_compile(p, c, &e);\n"
      "  if (st)\n    return printf(\"compile: %%s: %%s\\n\", "
      "pto_status_name(st), pto_program_error(p)), 1;\n");
  fprintf(o, "  static const char *const names[%d] = {", c->n_dims);
  for (int k = 0; k < c->n_dims; k++)
    fprintf(o, "%s\"%s\"", k ? ", " : "", c->dims[k].name);
  fprintf(o, "};\n  static const int64_t binds[%d][%d] = {", c->n_binds,
          c->n_dims);
  for (int i = 0; i < c->n_binds; i++) {
    fprintf(o, "%s{", i ? ", " : "");
    for (int k = 0; k < c->n_dims; k++)
      fprintf(o, "%s%" PRId64, k ? ", " : "", c->binds[i].ext[k]);
    fprintf(o, "}");
  }
  fprintf(o,
          "};\n  /* PTO_ESHAPE: an equality the ops recorded, broken */\n"
          "  static const pto_status expect[%d] = {",
          c->n_binds);
  for (int i = 0; i < c->n_binds; i++)
    fprintf(o, "%s%s", i ? ", " : "",
            c->binds[i].expect ? "PTO_ESHAPE" : "PTO_OK");
  fprintf(o, "};\n  static const int pats[4] = {0xa5, 0x5a, 0x3c, 0xc3};\n");
  fprintf(o, "  pto_runtime *rt[%d] = {0};\n", c->n_rts + 1);
  for (int i = 0; i < c->n_rts; i++) {
    uint32_t cu, ve;
    rt_machine(&c->rts[i], &cu, &ve);
    fprintf(o,
            "  {\n    pto_machine m;\n    pto_machine_host(&m);\n"
            "    m.workers[PTO_CORE_CUBE] = %u;\n"
            "    m.workers[PTO_CORE_VECTOR] = %u;\n    m.shared = %d;\n"
            "    pto_runtime_params prm = pto_runtime_params_default();\n"
            "    prm.machine = &m;\n    prm.policy = (pto_policy)%d;\n"
            "    if (pto_runtime_new(&prm, &rt[%d]))\n"
            "      return printf(\"runtime: %%s\\n\", "
            "pto_runtime_error(NULL)), 1;\n  }\n",
            cu, ve, c->rts[i].shared, c->rts[i].policy, i);
  }
  fprintf(o, "  pto_run *r = NULL;\n  if (pto_run_new(e, &r))\n"
             "    return printf(\"run: %%s\\n\", pto_last_error()), 1;\n");
  fprintf(o, "  int bad = 0;\n  char msg[256];\n");
  fprintf(o, "  for (int b = 0; b < %d; b++) {\n", c->n_binds);
  fprintf(o,
          "    for (int k = 0; k < %d; k++)\n"
          "      if (pto_run_bind(r, names[k], binds[b][k]))\n"
          "        return printf(\"bind: %%s\\n\", pto_run_error(r)), 1;\n"
          "    for (int j = 0; j < %d; j++)\n"
          "      memset(want[j], pats[b %% 4], (size_t)n_out[j] * 4);\n"
          "    pto_status est = pto_program_eval_dims(p, binds[b], "
          "(const void *const *)in, want);\n",
          c->n_dims, n_out);
  fprintf(o, "    if (expect[b]) {\n      st = pto_run_exec_serial(r, "
             "(const void *const *)in, got);\n"
             "      if (est != expect[b] || st != expect[b]) {\n"
             "        printf(\"binding %%d: eval %%s, serial %%s: want "
             "%%s\\n\", b, pto_status_name(est), pto_status_name(st), "
             "pto_status_name(expect[b]));\n        bad = 1;\n      }\n"
             "      continue;\n    }\n");
  fprintf(o, "    for (int run = 0; run <= %d; run++) {\n", c->n_rts);
  fprintf(o,
          "      for (int j = 0; j < %d; j++)\n"
          "        memset(got[j], pats[b %% 4], (size_t)n_out[j] * 4);\n"
          "      st = run ? pto_run_exec(rt[run - 1], r, (const void *const "
          "*)in, got)\n"
          "               : pto_run_exec_serial(r, (const void *const *)in, "
          "got);\n"
          "      if (st != est) {\n"
          "        printf(\"binding %%d, run %%d: %%s (%%s), eval: %%s "
          "(%%s)\\n\", b, run, pto_status_name(st), pto_run_error(r), "
          "pto_status_name(est), pto_program_error(p));\n"
          "        bad = 1;\n      }\n",
          n_out);
  fprintf(o,
          "      for (int j = 0; j < %d && !st && !est; j++)\n"
          "        if (rp_compare(got[j], want[j], dt_out[j], n_out[j], "
          "tol[j], msg, sizeof msg) >= 0) {\n"
          "          printf(\"binding %%d, run %%d, output %%d: %%s\\n\", b, "
          "run, j, msg);\n"
          "          bad = 1;\n        }\n    }\n  }\n",
          n_out);
  fprintf(o,
          "  printf(\"%%s\\n\", bad ? \"FAIL\" : \"ok\");\n"
          "  pto_run_free(r);\n"
          "  for (int i = 0; i < %d; i++)\n    pto_runtime_free(rt[i]);\n"
          "  pto_executable_free(e);\n  pto_config_free(c);\n"
          "  pto_program_free(p);\n  return bad;\n}\n",
          c->n_rts);
}

void rp_print_c(const rp_case *c, FILE *o) {
  fprintf(o, "/* Random differential test case: seed %" PRIu64 " (", c->seed);
  rp_switches_print(&c->sw, o);
  fprintf(
      o,
      ")%s.\n * Reproduce: tests/fuzz_diff --print-c %" PRIu64
      "; build: cc -std=c11 THIS.c $(pkg-config --cflags --libs pto) -lm */\n",
      c->untiled ? ", no tile set: every tile is the compiler's" : "", c->seed);
  fprintf(o, "#define _GNU_SOURCE\n#include <stdlib.h>\n#include <unistd.h>\n");
  for (size_t i = 0; i < sizeof rp_inc_lines / sizeof rp_inc_lines[0]; i++)
    fprintf(o, "%s\n", rp_inc_lines[i]);
  int n_in = 0, n_out = 0;
  for (int i = 0; i < c->n_steps; i++) {
    n_in += c->steps[i].kind == S_INPUT;
    n_out += c->steps[i].kind == S_OUTPUT;
  }
  fprintf(o,
          "\nint main(void) {\n  alarm(120); /* a hang ends the program */\n");
  fprintf(o, "  pto_program *p = pto_program_new(\"seed%" PRIu64 "\");\n",
          c->seed);
  fprintf(o, "  pto_tensor *t[%d] = {0};\n", c->n_vals + 1);
  emit_program(c, NULL, NULL, o);
  fprintf(o, "  if (pto_program_status(p))\n    return fprintf(stderr, "
             "\"build: %%s\\n\", pto_program_error(p)), 1;\n");
  /* inputs */
  fprintf(o, "  void *in[%d], *want[%d], *got[%d];\n", n_in + 1, n_out + 1,
          n_out + 1);
  fprintf(o,
          "  int64_t n_out[%d];\n  pto_dtype dt_out[%d];\n  double tol[%d];\n",
          n_out + 1, n_out + 1, n_out + 1);
  int k = 0;
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    if (s->kind != S_INPUT)
      continue;
    fprintf(o, "  in[%d] = malloc(%" PRId64 " * 4);\n", k,
            numel_of(s->nd, s->shape));
    fprintf(o,
            "  rp_fill(in[%d], %s, %" PRId64 ", UINT64_C(%" PRIu64
            "), %d, %d, %.17g, %.17g);\n",
            k, dt_c(s->dt), numel_of(s->nd, s->shape), s->fill_seed,
            s->fill_kind, s->fill_q, s->fill_lo, s->fill_hi);
    k++;
  }
  k = 0;
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    if (s->kind != S_OUTPUT)
      continue;
    const rp_val *v = &c->vals[s->in[0]];
    fprintf(o,
            "  n_out[%d] = %" PRId64
            ";\n  dt_out[%d] = %s;\n  tol[%d] = %.17g;\n",
            k, numel_of(v->nd, v->shape), k, dt_c(v->dt), k, out_tol(v));
    fprintf(o,
            "  want[%d] = calloc((size_t)n_out[%d], 4);\n  got[%d] = "
            "calloc((size_t)n_out[%d], 4);\n",
            k, k, k, k);
    k++;
  }
  if (c->n_dims) {
    print_dynamic(c, o, n_out);
    return;
  }
  fprintf(o, "  pto_status est = pto_program_eval(p, (const void *const *)in, "
             "want);\n");
  fprintf(o, "  printf(\"eval: %%s %%s\\n\", pto_status_name(est), "
             "pto_program_error(p));\n");
  emit_config(c, o, 0, NULL, 0);
  fprintf(
      o,
      "  pto_executable *e = NULL;\n  pto_status st = pto_compile(p, c, &e);\n"
      "  if (st)\n    return printf(\"compile: %%s: %%s\\n\", "
      "pto_status_name(st), "
      "pto_program_error(p)), 1;\n");
  fprintf(o, "  int bad = 0;\n  char msg[256];\n");
  fprintf(o, "  for (int run = 0; run <= %d; run++) {\n", c->n_rts);
  fprintf(o,
          "    pto_runtime *rt = NULL;\n    for (int j = 0; j < %d; j++)\n"
          "      memset(got[j], run ? 0x5a : 0xa5, (size_t)n_out[j] * 4);\n",
          n_out);
  fprintf(o, "    if (run == 0) {\n      st = pto_executable_run_serial(e, "
             "(const void *const *)in, got);\n"
             "    } else {\n");
  fprintf(o, "      static const unsigned rts[][4] = {");
  for (int i = 0; i < c->n_rts; i++) {
    uint32_t cu, ve;
    rt_machine(&c->rts[i], &cu, &ve);
    fprintf(o, "%s{%u, %u, %d, %d}", i ? ", " : "", cu, ve, c->rts[i].shared,
            c->rts[i].policy);
  }
  fprintf(o, "};\n      pto_machine m;\n      pto_machine_host(&m);\n"
             "      m.workers[PTO_CORE_CUBE] = rts[run - 1][0];\n"
             "      m.workers[PTO_CORE_VECTOR] = rts[run - 1][1];\n"
             "      m.shared = (int)rts[run - 1][2];\n"
             "      pto_runtime_params prm = pto_runtime_params_default();\n"
             "      prm.machine = &m;\n      prm.policy = (pto_policy)rts[run "
             "- 1][3];\n"
             "      if (pto_runtime_new(&prm, &rt))\n"
             "        return printf(\"runtime: %%s\\n\", "
             "pto_runtime_error(NULL)), 1;\n"
             "      st = pto_runtime_run(rt, e, (const void *const *)in, "
             "got);\n    }\n");
  fprintf(
      o,
      "    const char *what = run ? \"runtime\" : \"serial\";\n"
      "    if (st != est) {\n      printf(\"%%s run %%d: %%s (%%s), eval: "
      "%%s\\n\", what, run, "
      "pto_status_name(st), pto_executable_error(e), pto_status_name(est));\n"
      "      bad = 1;\n    }\n");
  fprintf(o,
          "    for (int j = 0; j < %d && !st && !est; j++)\n"
          "      if (rp_compare(got[j], want[j], dt_out[j], n_out[j], tol[j], "
          "msg, sizeof msg) >= 0) {\n"
          "        printf(\"%%s run %%d, output %%d: %%s\\n\", what, run, j, "
          "msg);\n"
          "        bad = 1;\n      }\n"
          "    pto_runtime_free(rt);\n  }\n",
          n_out);
  fprintf(o, "  printf(\"%%s\\n\", bad ? \"FAIL\" : \"ok\");\n"
             "  pto_executable_free(e);\n  pto_config_free(c);\n  "
             "pto_program_free(p);\n"
             "  return bad;\n}\n");
}
