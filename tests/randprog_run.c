/* Random programs (randprog.h): running a case (eval, compile, run
 * serially and on runtimes) and checking every run against the evaluator
 * and the known bugs' patterns. */
#include "tests/randprog_impl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/exe.h" /* the op of an unfused task (check_parallel) */

/* ---- running and checking
 * -------------------------------------------------------- */

struct rp_env {
  rp_progress *prog;
  rp_progress local;
  int serial_only;
  int repeat; /* extra runs on each runtime */
  pto_runtime *rt[2][3][PTO_POLICY_COUNT];
};

rp_env *rp_env_new(rp_progress *progress) {
  rp_env *e = calloc(1, sizeof *e);
  if (e)
    e->prog = progress ? progress : &e->local;
  return e;
}

void rp_env_serial_only(rp_env *env, int on) {
  env->serial_only = on;
}
void rp_env_repeat(rp_env *env, int n) {
  env->repeat = n;
}

void rp_env_free(rp_env *env) {
  if (!env)
    return;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < PTO_POLICY_COUNT; c++)
        pto_runtime_free(env->rt[a][b][c]);
  free(env);
}

static void stage(rp_env *env, int st) {
  env->prog->stage = st;
  env->prog->beat++;
}

static pto_runtime *env_runtime(rp_env *env, const rp_rt_spec *r, char *msg,
                                size_t size) {
  pto_runtime **slot = &env->rt[r->shared][r->variant][r->policy];
  if (*slot)
    return *slot;
  pto_machine m;
  if (pto_machine_host(&m) != PTO_OK) {
    snprintf(msg, size, "pto_machine_host failed");
    return NULL;
  }
  rt_machine(r, &m.workers[PTO_CORE_CUBE], &m.workers[PTO_CORE_VECTOR]);
  m.shared = r->shared;
  pto_runtime_params prm = pto_runtime_params_default();
  prm.machine = &m;
  prm.policy = (pto_policy)r->policy;
  prm.spin_us = 20; /* other processes share this machine's cores */
  prm.yield_us = 200;
  prm.pin = r->variant != 1;
  prm.trace = r->variant == 2; /* tracing runs too */
  if (pto_runtime_new(&prm, slot) != PTO_OK) {
    snprintf(msg, size, "pto_runtime_new: %s", pto_runtime_error(NULL));
    return NULL;
  }
  return *slot;
}

/* Kahn's algorithm over e's task graph: how many tasks it orders (fewer
 * than all: the graph has a cycle), and in *width (unless NULL) the most
 * tasks of one depth (longest path from a source): what a level of the
 * graph gives the workers to run at once. */
static uint32_t graph_order(const pto_executable *e, uint32_t *width) {
  uint32_t n = pto_executable_num_tasks(e), best = 0;
  uint32_t *pend = calloc(n + 1, sizeof *pend),
           *q = malloc((n + 1) * sizeof *q),
           *depth = calloc(n + 1, sizeof *depth),
           *count = calloc(n + 1, sizeof *count);
  if (!pend || !q || !depth || !count)
    abort();
  for (uint32_t t = 0; t < n; t++) {
    const uint32_t *succ;
    uint32_t k = pto_executable_task_succ(e, t, &succ);
    for (uint32_t j = 0; j < k; j++)
      pend[succ[j]]++;
  }
  uint32_t head = 0, tail = 0;
  for (uint32_t t = 0; t < n; t++)
    if (!pend[t])
      q[tail++] = t;
  while (head < tail) {
    uint32_t t = q[head++];
    if (++count[depth[t]] > best)
      best = count[depth[t]];
    const uint32_t *succ;
    uint32_t k = pto_executable_task_succ(e, t, &succ);
    for (uint32_t j = 0; j < k; j++) {
      if (depth[succ[j]] < depth[t] + 1)
        depth[succ[j]] = depth[t] + 1;
      if (--pend[succ[j]] == 0)
        q[tail++] = succ[j];
    }
  }
  free(pend);
  free(q);
  free(depth);
  free(count);
  if (width)
    *width = best;
  return tail;
}

typedef struct run_bufs {
  int n_in, n_out;
  void **in, **want, **got;
  const rp_val **outv;
  const char **names;
} run_bufs;

static rp_outcome fail_msg(char *msg, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static rp_outcome fail_msg(char *msg, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, size, fmt, ap);
  va_end(ap);
  return RP_FAIL;
}

/* One run's outputs against the evaluator's. */
static rp_outcome check_outputs(const run_bufs *b, const char *what, char *msg,
                                size_t size) {
  for (int j = 0; j < b->n_out; j++) {
    const rp_val *v = b->outv[j];
    char m[384];
    if (rp_compare(b->got[j], b->want[j], v->dt, numel_of(v->nd, v->shape),
                   out_tol(v), m, sizeof m) >= 0)
      return fail_msg(msg, size, "%s: output %s: %s", what, b->names[j], m);
  }
  return RP_PASS;
}

static void fill_bufs(const run_bufs *b, void **bufs, int pat) {
  for (int j = 0; j < b->n_out; j++) {
    const rp_val *v = b->outv[j];
    memset(bufs[j], pat,
           (size_t)numel_of(v->nd, v->shape) * pto_dtype_size(v->dt));
  }
}
static void fill_pattern(const run_bufs *b, int pat) {
  fill_bufs(b, b->got, pat);
}

/* The trace of a traced execution summarises. */
static pto_status summarise(const pto_executable *e, const pto_run *run) {
  char *text = NULL;
  size_t len = 0;
  FILE *mf = open_memstream(&text, &len);
  pto_status st = !mf   ? PTO_ENOMEM
                  : run ? pto_run_trace_summary(run, mf)
                        : pto_executable_trace_summary(e, mf);
  if (mf)
    fclose(mf);
  free(text);
  return st;
}

/* A dynamic case: one run of e, bound to each of c's bindings in turn and
 * executed serially and on each of the case's runtimes, against the
 * evaluator at that binding. Every output buffer starts with a pattern of
 * the binding's, so what lies past the extents (which neither writes)
 * must match too, and a run that wrote its last binding's results where
 * this one's are not would show. A binding that breaks an equality on
 * purpose must be refused by both. */
static rp_outcome run_dynamic(rp_env *env, const rp_case *c, pto_program *p,
                              const pto_executable *e, const run_bufs *b,
                              char *msg, size_t size) {
  pto_run *run = NULL;
  pto_status st = pto_run_new(e, &run);
  if (st != PTO_OK)
    return fail_msg(msg, size, "run: pto_run_new: %s (%s)", pto_status_name(st),
                    pto_last_error());
  rp_outcome res = RP_PASS;
  const void *const *in = (const void *const *)b->in;
  /* above a maximum: refused, naming the dim and the value */
  const rp_dim *d0 = &c->dims[0];
  char v0[32];
  snprintf(v0, sizeof v0, "= %" PRId64, d0->max + 1);
  st = pto_run_bind(run, d0->name, d0->max + 1);
  if (st != PTO_ERANGE || !strstr(pto_run_error(run), d0->name) ||
      !strstr(pto_run_error(run), v0)) {
    res = fail_msg(msg, size,
                   "bind: dim '%s' (maximum %" PRId64 ") bound to %" PRId64
                   ": %s (%s), want PTO_ERANGE naming the dim and value",
                   d0->name, d0->max, d0->max + 1, pto_status_name(st),
                   pto_run_error(run));
    goto done;
  }
  static const int pats[] = {0xa5, 0x5a, 0x3c, 0xc3};
  for (int bi = 0; bi < c->n_binds; bi++) {
    const rp_bind *bd = &c->binds[bi];
    char at[128];
    dims_describe(c, bd->ext, at, sizeof at);
    for (int k = 0; k < c->n_dims; k++) {
      st = (k + bi) & 1 ? pto_run_bind_index(run, k, bd->ext[k])
                        : pto_run_bind(run, c->dims[k].name, bd->ext[k]);
      if (st != PTO_OK) {
        res =
            fail_msg(msg, size, "bind: at %s: dim '%s': %s (%s)", at,
                     c->dims[k].name, pto_status_name(st), pto_run_error(run));
        goto done;
      }
    }
    const int pat = pats[bi % 4];
    stage(env, RP_STAGE_EVAL);
    fill_bufs(b, b->want, pat);
    const pto_status est = pto_program_eval_dims(p, bd->ext, in, b->want);
    if (bd->expect != PTO_OK) { /* an equality broken on purpose */
      if (est != bd->expect || !strstr(pto_program_error(p), "must equal")) {
        res = fail_msg(msg, size,
                       "eval: at %s (an equality broken): %s (%s), want %s", at,
                       pto_status_name(est), pto_program_error(p),
                       pto_status_name((pto_status)bd->expect));
        goto done;
      }
      stage(env, RP_STAGE_SERIAL);
      fill_pattern(b, pat);
      st = pto_run_exec_serial(run, in, b->got);
      if (st != bd->expect || !strstr(pto_run_error(run), "must equal")) {
        res = fail_msg(msg, size,
                       "serial: at %s (an equality broken): %s (%s), want %s",
                       at, pto_status_name(st), pto_run_error(run),
                       pto_status_name((pto_status)bd->expect));
        goto done;
      }
      continue;
    }
    if (est != PTO_OK && est != PTO_ERANGE) {
      res = fail_msg(msg, size, "eval: at %s: %s: %s", at, pto_status_name(est),
                     pto_program_error(p));
      goto done;
    }
    stage(env, RP_STAGE_SERIAL);
    fill_pattern(b, pat);
    st = pto_run_exec_serial(run, in, b->got);
    char what[256];
    snprintf(what, sizeof what, "serial: at %s", at);
    if (st != est) {
      res = fail_msg(msg, size, "%s: %s (%s), eval: %s (%s)", what,
                     pto_status_name(st), pto_run_error(run),
                     pto_status_name(est), pto_program_error(p));
      goto done;
    }
    if (est == PTO_OK && (res = check_outputs(b, what, msg, size)) != RP_PASS)
      goto done;
    for (int i = 0; i < c->n_rts && !env->serial_only; i++) {
      const rp_rt_spec *r = &c->rts[i];
      stage(env, RP_STAGE_RUNTIME);
      pto_runtime *rt = env_runtime(env, r, msg, size);
      if (!rt) {
        res = RP_FAIL;
        goto done;
      }
      const int reps = bi == c->n_binds - 1 ? r->repeat + env->repeat : 0;
      for (int rep = 0; rep <= reps; rep++) {
        fill_pattern(b, pat);
        st = pto_run_exec(rt, run, in, b->got);
        uint32_t cu, ve;
        rt_machine(r, &cu, &ve);
        snprintf(
            what, sizeof what, "runtime (%u cube + %u vector%s, %s%s): at %s",
            cu, ve, r->shared ? " shared" : "",
            pto_policy_name((pto_policy)r->policy), rep ? ", again" : "", at);
        if (st != est) {
          res = fail_msg(msg, size, "%s: %s (%s), eval: %s", what,
                         pto_status_name(st), pto_run_error(run),
                         pto_status_name(est));
          goto done;
        }
        if (est == PTO_OK &&
            (res = check_outputs(b, what, msg, size)) != RP_PASS)
          goto done;
        if (r->variant == 2 && (st = summarise(e, run)) != PTO_OK) {
          res = fail_msg(msg, size, "%s: trace summary: %s (%s)", what,
                         pto_status_name(st), pto_run_error(run));
          goto done;
        }
      }
    }
  }
done:
  pto_run_free(run);
  return res;
}

static rp_outcome run_impl(rp_env *env, const rp_case *c, int ext,
                           const pto_config *ext_cfg, char *msg, size_t size);

rp_outcome rp_run(rp_env *env, const rp_case *c, char *msg, size_t size) {
  return run_impl(env, c, 0, NULL, msg, size);
}

rp_outcome rp_run_config(rp_env *env, const rp_case *c, const pto_config *cfg,
                         char *msg, size_t size) {
  return run_impl(env, c, 1, cfg, msg, size);
}

/* Known bug 4 fixed: an op deriving a shape of 2^40 elements or more is
 * refused with a message, as pto_input refuses one. */
static rp_outcome check_huge(int kind, char *msg, size_t size) {
  pto_program *p = pto_program_new("huge");
  const int64_t k20 = INT64_C(1) << 20, k21 = INT64_C(1) << 21;
  pto_tensor *r = NULL;
  const char *what = "";
  if (kind == 1) {
    what = "add of [2^20,1] and [1,2^21]";
    r = pto_add(p, pto_input(p, "a", PTO_F32, 2, (const int64_t[]){k20, 1}),
                pto_input(p, "b", PTO_F32, 2, (const int64_t[]){1, k21}));
  } else if (kind == 2) {
    what = "matmul of [2^21,1] and [1,2^21]";
    r = pto_matmul(p, pto_input(p, "a", PTO_F32, 2, (const int64_t[]){k21, 1}),
                   pto_input(p, "b", PTO_F32, 2, (const int64_t[]){1, k21}), 0);
  } else if (kind == 3) {
    what = "gather of table [4,2^21] by index [2^20]";
    r = pto_gather(p, pto_input(p, "t", PTO_F32, 2, (const int64_t[]){4, k21}),
                   pto_input(p, "i", PTO_I32, 1, (const int64_t[]){k20}), 0);
  } else if (kind == 4) {
    what = "concat of two [2^39+1]";
    pto_tensor *a = pto_input(p, "a", PTO_F32, 1,
                              (const int64_t[]){(INT64_C(1) << 39) + 1});
    r = pto_concat(p, 2, (pto_tensor *const[]){a, a}, 0);
  } else {
    what = "cmp of [2^21,1] and [1,2^21]";
    r = pto_cmp(p, pto_input(p, "a", PTO_F32, 2, (const int64_t[]){k21, 1}),
                pto_input(p, "b", PTO_F32, 2, (const int64_t[]){1, k21}),
                PTO_CMP_LT);
  }
  rp_outcome res = RP_PASS;
  if (r || pto_program_status(p) == PTO_OK || !pto_program_error(p)[0])
    res = fail_msg(msg, size,
                   "build: %s accepted (status %s, numel %" PRId64
                   "): a 2^40-element shape must be refused",
                   what, pto_status_name(pto_program_status(p)),
                   pto_tensor_numel(r));
  pto_program_free(p);
  return res;
}

/* Known bug 5 fixed: fusion leaves the workers something to do. The
 * partitioner's rule (pto__fuse_split_for_parallelism) keeps a fused
 * cluster at least as wide as min(workers, the most tasks one of its ops
 * has alone); fusing independent siblings of two tiles each into one
 * cluster of two subgraphs is within it, however wide the unfused graph of
 * all those siblings is. So with nbuffer auto, a fused graph narrower than
 * min(workers, 4, the most tasks one op has in the unfused executable),
 * where the unfused graph is at least twice as wide as the workers and
 * moves 64 KiB per worker, is a failure. */
static uint32_t most_tasks_of_one_op(const pto_executable *u) {
  uint32_t best = 0, n = u->n_tasks;
  uint32_t *per = calloc(n + 1, sizeof *per);
  uint32_t *node = malloc((n + 1) * sizeof *node);
  if (!per || !node)
    abort();
  uint32_t nn = 0; /* distinct nodes seen, in node[] */
  for (uint32_t t = 0; t < n; t++) {
    uint32_t v = u->tasks[t].node, i = 0;
    if (v == PTO_NONE)
      continue;
    while (i < nn && node[i] != v)
      i++;
    if (i == nn)
      node[nn++] = v;
    if (++per[i] > best)
      best = per[i];
  }
  free(per);
  free(node);
  return best;
}

static rp_outcome check_parallel(const rp_case *c, pto_program *p,
                                 const pto_config *cfg, const pto_executable *e,
                                 char *msg, size_t size) {
  const rp_cfg *f = &c->cfg;
  if ((f->knob_set & (1 << PTO_KNOB_NBUFFER)) && f->knob[PTO_KNOB_NBUFFER])
    return RP_PASS;
  for (int i = 0; i < f->n_labels; i++)
    if (f->labels[i].knob_set & (1 << PTO_KNOB_NBUFFER))
      return RP_PASS;
  pto_config *nf = cfg ? pto_config_clone(cfg) : pto_config_new();
  char labels[64][96];
  int n = case_labels(c, 0, labels, 64);
  pto_config_set_knob(nf, NULL, PTO_KNOB_FUSE, 0);
  for (int i = 0; i < n; i++)
    pto_config_set_knob(nf, labels[i], PTO_KNOB_FUSE, 0);
  const pto_machine *m = pto_config_machine(nf);
  uint32_t w = m->shared ? m->workers[0] : m->workers[0] + m->workers[1];
  w = w > 4 ? 4 : w;
  pto_executable *u = NULL;
  rp_outcome res = RP_PASS;
  if (pto_compile(p, nf, &u) == PTO_OK) {
    uint32_t fused, unfused;
    graph_order(e, &fused);
    graph_order(u, &unfused);
    pto_exe_stats us;
    pto_executable_stats(u, &us);
    /* only where there is work to share: 64 KiB moved per worker */
    uint32_t alone = most_tasks_of_one_op(u), need = alone < w ? alone : w;
    if (unfused >= 2 * w && fused < need &&
        us.boundary_bytes >= (uint64_t)w << 16)
      res = fail_msg(msg, size,
                     "compile: fusion leaves %u tasks at once for %u workers "
                     "where the unfused graph has %u and one op alone %u",
                     fused, w, unfused, alone);
  }
  pto_executable_free(u);
  pto_config_free(nf);
  return res;
}

static rp_outcome run_impl(rp_env *env, const rp_case *c, int ext,
                           const pto_config *ext_cfg, char *msg, size_t size) {
  rp_outcome res = RP_PASS;
  if (c->huge && (res = check_huge(c->huge, msg, size)) != RP_PASS)
    return res;
  msg[0] = 0;
  stage(env, RP_STAGE_BUILD);
  pto_program *p = pto_program_new("random");
  pto_tensor **T = calloc((size_t)c->n_vals + 1, sizeof *T);
  run_bufs b;
  memset(&b, 0, sizeof b);
  for (int i = 0; i < c->n_steps; i++) {
    b.n_in += c->steps[i].kind == S_INPUT;
    b.n_out += c->steps[i].kind == S_OUTPUT;
  }
  b.in = calloc((size_t)b.n_in + 1, sizeof *b.in);
  b.want = calloc((size_t)b.n_out + 1, sizeof *b.want);
  b.got = calloc((size_t)b.n_out + 1, sizeof *b.got);
  b.outv = calloc((size_t)b.n_out + 1, sizeof *b.outv);
  b.names = calloc((size_t)b.n_out + 1, sizeof *b.names);
  pto_config *cfg = NULL;
  pto_executable *e = NULL;
  if (!p || !T || !b.in || !b.want || !b.got || !b.outv || !b.names)
    abort();
  emit_program(c, p, T, NULL);
  if (pto_program_status(p) != PTO_OK) {
    res =
        fail_msg(msg, size, "build: %s: %s",
                 pto_status_name(pto_program_status(p)), pto_program_error(p));
    goto done;
  }
  int ki = 0, ko = 0;
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    if (s->kind == S_INPUT) {
      int64_t n = numel_of(s->nd, s->shape);
      b.in[ki] = malloc((size_t)n * 4 + 64);
      rp_fill(b.in[ki], s->dt, n, s->fill_seed, s->fill_kind, s->fill_q,
              s->fill_lo, s->fill_hi);
      ki++;
    } else if (s->kind == S_OUTPUT) {
      const rp_val *v = &c->vals[s->in[0]];
      int64_t n = numel_of(v->nd, v->shape);
      b.outv[ko] = v;
      b.names[ko] = s->name;
      b.want[ko] = calloc((size_t)n, 4);
      b.got[ko] = calloc((size_t)n, 4);
      ko++;
    }
  }
  stage(env, RP_STAGE_EVAL);
  /* a dynamic case evaluates at each binding (run_dynamic) */
  pto_status est = c->n_dims
                       ? PTO_OK
                       : pto_program_eval(p, (const void *const *)b.in, b.want);
  if (est != PTO_OK && est != PTO_ERANGE) {
    res = fail_msg(msg, size, "eval: %s: %s", pto_status_name(est),
                   pto_program_error(p));
    goto done;
  }
  char cmsg[512] = "";
  stage(env, RP_STAGE_COMPILE);
  if (ext) {
    cfg = ext_cfg ? pto_config_clone(ext_cfg) : pto_config_new();
    if (!cfg)
      abort();
    if (c->sw.l1_reuse_hang) { /* known bug 3: no l1_reuse >= 2 at all */
      char labels[64][96];
      int n = case_labels(c, 0, labels, 64);
      pto_config_set_knob(cfg, NULL, PTO_KNOB_L1_REUSE, 1);
      for (int i = 0; i < n; i++)
        pto_config_set_knob(cfg, labels[i], PTO_KNOB_L1_REUSE, 1);
    }
  } else if (c->cfg.mode != CFG_NULL) {
    cfg = emit_config(c, NULL, 0, cmsg, sizeof cmsg);
    if (!cfg) {
      res = fail_msg(msg, size, "%s", cmsg);
      goto done;
    }
  }
  if (!ext && c->sw.l1_reuse_hang && cfg_has_l1_reuse(&c->cfg)) {
    /* known bug 3: l1_reuse >= 2 may loop forever where l1_reuse 1 fails
     * with ECAPACITY (probed here, with every l1_reuse at 1), and also
     * where it compiles (K slices of 1: the supervisor's timeout in stage
     * COMPILE_L1_REUSE classifies those as known) */
    pto_config *probe = emit_config(c, NULL, 1, cmsg, sizeof cmsg);
    pto_executable *pe = NULL;
    pto_status pst = pto_compile(p, probe, &pe);
    pto_executable_free(pe);
    pto_config_free(probe);
    if (pst == PTO_ECAPACITY) {
      res = RP_KNOWN;
      snprintf(msg, size,
               "known bug l1_reuse_hang: l1_reuse >= 2 and the "
               "l1_reuse 1 compile overflows: %s",
               pto_program_error(p));
      goto done;
    }
    stage(env, RP_STAGE_COMPILE_L1_REUSE);
  }
  pto_status st = pto_compile(p, cfg, &e);
  if (st != PTO_OK) {
    const char *em = pto_program_error(p);
    if (!em[0]) {
      res = fail_msg(msg, size, "compile: %s with an empty message",
                     pto_status_name(st));
    } else if (st == PTO_ECAPACITY && c->untiled && !ext &&
               c->cfg.machine != M_CUSTOM) {
      res = fail_msg(msg, size,
                     "compile: the tiles the compiler chose do not fit: %s",
                     em);
    } else if (st == PTO_ECAPACITY) {
      res = RP_SKIP;
      snprintf(msg, size, "compile: %s", em);
    } else if (st == PTO_ERANGE && strstr(em, "fit a program") &&
               (ext || cfg_fuses(&c->cfg)) && c->sw.fusion_parallelism) {
      res = RP_KNOWN;
      snprintf(msg, size, "known bug fusion_parallelism: %s", em);
    } else {
      res = fail_msg(msg, size, "compile: %s: %s", pto_status_name(st), em);
    }
    goto done;
  }
  if (!c->sw.fusion_parallelism &&
      (res = check_parallel(c, p, cfg, e, msg, size)) != RP_PASS)
    goto done;
  if (graph_order(e, NULL) != pto_executable_num_tasks(e)) {
    if (c->sw.fusion_cycle) {
      res = RP_KNOWN;
      snprintf(msg, size, "known bug fusion_cycle: the task graph has a cycle");
    } else
      res = fail_msg(msg, size, "compile: the task graph has a cycle");
    goto done;
  }
  if (c->n_dims) {
    res = run_dynamic(env, c, p, e, &b, msg, size);
    goto done;
  }
  stage(env, RP_STAGE_SERIAL);
  fill_pattern(&b, 0xa5);
  st = pto_executable_run_serial(e, (const void *const *)b.in, b.got);
  if (st != est) {
    res = fail_msg(msg, size, "serial: %s (%s), eval: %s (%s)",
                   pto_status_name(st), pto_executable_error(e),
                   pto_status_name(est), pto_program_error(p));
    goto done;
  }
  if (est == PTO_OK &&
      (res = check_outputs(&b, "serial", msg, size)) != RP_PASS)
    goto done;
  for (int i = 0; i < c->n_rts && !env->serial_only; i++) {
    const rp_rt_spec *r = &c->rts[i];
    stage(env, RP_STAGE_RUNTIME);
    pto_runtime *rt = env_runtime(env, r, msg, size);
    if (!rt) {
      res = RP_FAIL;
      goto done;
    }
    for (int rep = 0; rep <= r->repeat + env->repeat; rep++) {
      fill_pattern(&b, 0x5a + (rep & 1));
      st = pto_runtime_run(rt, e, (const void *const *)b.in, b.got);
      char what[96];
      uint32_t cu, ve;
      rt_machine(r, &cu, &ve);
      snprintf(what, sizeof what, "runtime (%u cube + %u vector%s, %s%s)", cu,
               ve, r->shared ? " shared" : "",
               pto_policy_name((pto_policy)r->policy), rep ? ", again" : "");
      if (st != est) {
        res = fail_msg(msg, size, "%s: %s (%s), eval: %s", what,
                       pto_status_name(st), pto_executable_error(e),
                       pto_status_name(est));
        goto done;
      }
      if (est == PTO_OK &&
          (res = check_outputs(&b, what, msg, size)) != RP_PASS)
        goto done;
      if (r->variant == 2) { /* the trace of a traced run summarises */
        st = summarise(e, NULL);
        if (st != PTO_OK) {
          res = fail_msg(msg, size, "%s: trace summary: %s (%s)", what,
                         pto_status_name(st), pto_executable_error(e));
          goto done;
        }
      }
    }
  }
done:
  stage(env, RP_STAGE_IDLE);
  pto_executable_free(e);
  pto_config_free(cfg);
  pto_program_free(p);
  for (int i = 0; i < b.n_in; i++)
    free(b.in[i]);
  for (int i = 0; i < b.n_out; i++) {
    free(b.want[i]);
    free(b.got[i]);
  }
  free(b.in);
  free(b.want);
  free(b.got);
  free(b.outv);
  free(b.names);
  free(T);
  return res;
}
