/* Attention chains written as tensor ops (matmul, scale, causal mask,
 * softmax, matmul) compile as one op per block of queries with an online
 * softmax (core/tiling_flash.c): in every form the docs allow they give
 * the reference evaluator's results, serially and in parallel, with no
 * intermediate in global memory; forms that cannot be rewritten exactly
 * (a negative scale, a row hidden whole) compile op by op and still
 * agree. */
#include "tests/partitioner_test.h"

#include <stdint.h>

#define D2(a, b) ((const int64_t[]){a, b})
#define D3(a, b, c) ((const int64_t[]){a, b, c})

/* How the chain is written. */
typedef struct form {
  int64_t B, M, N, D, Dv;
  int kb;        /* k batch 1 (shared by every head) */
  int k_plain;   /* k given as [B, D, N], no TRANS_B */
  int softmax;   /* 0: exp / rowsum; 1: pto_softmax */
  int mask;      /* 0 none, 1 iota/cmp GT/select, 2 iota/cmp LE kept,
                    3 pto_matmul_masked, 4 PTO_MATMUL_CAUSAL */
  int64_t diag;  /* mask 1-3: query i sees key j <= i + diag */
  int divs;      /* the scale as pto_divs by sqrt(D) */
  double scale;  /* else pto_muls by it */
  int mask_first; /* the mask before the scale */
  int k_op;       /* k through a vector op first (which may fuse in) */
} form;

static pto_tensor *mask_of(pto_program *p, const form *f, pto_tensor *s) {
  pto_tensor *cols = pto_iota_axis(p, PTO_I32, 2, D2(1, f->N), 1, 0),
             *rows = pto_iota_axis(p, PTO_I32, 2, D2(f->M, 1), 0,
                                   (int32_t)f->diag);
  pto_tensor *ninf = pto_full(p, PTO_F32, 2, D2(1, 1), -INFINITY);
  if (f->mask == 1) /* hidden where j > i + diag */
    return pto_select(p, pto_cmp(p, cols, rows, PTO_CMP_GT), ninf, s);
  /* kept where j <= i + diag */
  return pto_select(p, pto_cmp(p, cols, rows, PTO_CMP_LE), s, ninf);
}

static pto_tensor *scale_of(pto_program *p, const form *f, pto_tensor *s) {
  return f->divs ? pto_divs(p, s, sqrt((double)f->D))
                 : pto_muls(p, s, f->scale);
}

static pto_program *chain(const form *f) {
  pto_program *p = pto_program_new("flash");
  pto_tensor *q = pto_input(p, "q", PTO_F32, 3, D3(f->B, f->M, f->D));
  pto_tensor *k =
      f->k_plain ? pto_input(p, "k", PTO_F32, 3, D3(f->kb ? 1 : f->B, f->D, f->N))
                 : pto_input(p, "k", PTO_F32, 3, D3(f->kb ? 1 : f->B, f->N, f->D));
  pto_tensor *v = pto_input(p, "v", PTO_F32, 3, D3(f->B, f->N, f->Dv));
  if (f->k_op)
    k = pto_maxs(p, k, -0.5);
  pto_program_push_label(p, "attn");
  const unsigned tb = f->k_plain ? 0 : PTO_MATMUL_TRANS_B;
  pto_tensor *s = f->mask == 3   ? pto_matmul_masked(p, q, k, tb, f->diag)
                  : f->mask == 4 ? pto_matmul(p, q, k, tb | PTO_MATMUL_CAUSAL)
                                 : pto_matmul(p, q, k, tb);
  const int ops_mask = f->mask == 1 || f->mask == 2;
  if (ops_mask && f->mask_first)
    s = mask_of(p, f, s);
  s = scale_of(p, f, s);
  if (ops_mask && !f->mask_first)
    s = mask_of(p, f, s);
  pto_tensor *pr;
  if (f->softmax) {
    pr = pto_softmax(p, s);
  } else {
    pto_tensor *e = pto_exp(p, pto_sub(p, s, pto_rowmax(p, s)));
    pr = pto_div(p, e, pto_rowsum(p, e));
  }
  pto_output(p, pto_matmul(p, pr, v, 0), "out");
  pto_program_pop_label(p);
  return p;
}

/* Compiles f's chain for 2 host workers, requires the results of the
 * evaluator (serially and on the runtime) and returns the workspace
 * bytes: 0 when the chain ran as one op. */
static uint64_t agrees(const form *f) {
  pto_program *p = chain(f);
  pto_config *c = host_config(2);
  pto_executable *e = compile_ok(p, c);
  const size_t nq = (size_t)(f->B * f->M * f->D),
               nk = (size_t)((f->kb ? 1 : f->B) * f->N * f->D),
               nv = (size_t)(f->B * f->N * f->Dv),
               no = (size_t)(f->B * f->M * f->Dv);
  float *q = filled(nq, 1), *k = filled(nk, 2), *v = filled(nv, 3);
  float *got = malloc(no * sizeof *got), *ref = malloc(no * sizeof *ref);
  cr_assert(got && ref);
  const void *in[] = {q, k, v};
  serial_parallel_and_eval_agree(e, p, in, got, ref, no, 2e-5f);
  pto_exe_stats st;
  cr_assert_eq(pto_executable_stats(e, &st), PTO_OK);
  free(q);
  free(k);
  free(v);
  free(got);
  free(ref);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
  return st.workspace_bytes;
}

Test(partitioner, attention_chain_runs_as_one_op_in_every_form,
     .timeout = 120) {
  const form base = {.B = 2, .M = 100, .N = 100, .D = 32, .Dv = 24,
                     .mask = 1, .scale = 0.125};
  form fs[16];
  int n = 0;
  fs[n++] = base;
  fs[n] = base, fs[n].mask = 0, n++;
  fs[n] = base, fs[n].softmax = 1, fs[n].divs = 1, n++;
  fs[n] = base, fs[n].mask = 2, fs[n].mask_first = 1, n++;
  fs[n] = base, fs[n].mask = 3, n++;
  /* end-aligned: 40 queries, the last 40 of 300 keys */
  fs[n] = base, fs[n].mask = 4, fs[n].M = 40, fs[n].N = 300, n++;
  fs[n] = base, fs[n].mask = 1, fs[n].diag = 7, fs[n].N = 260, n++;
  fs[n] = base, fs[n].k_plain = 1, fs[n].kb = 1, n++;
  fs[n] = base, fs[n].M = 7, fs[n].N = 5, fs[n].diag = 0, n++;
  fs[n] = base, fs[n].D = 130, fs[n].Dv = 70, fs[n].N = 333, n++;
  /* tiny, k from a vector op (which may join the chain's program) */
  fs[n] = base, fs[n].M = 2, fs[n].N = 3, fs[n].D = 11, fs[n].Dv = 37,
  fs[n].k_op = 1, fs[n].mask = 3, fs[n].diag = 1, n++;
  for (int i = 0; i < n; i++) {
    /* nothing in memory (but k's vector op's result, where there is one) */
    const uint64_t w = agrees(&fs[i]);
    if (!fs[i].k_op)
      cr_expect_eq(w, 0, "form %d: %llu bytes of intermediates in memory "
                         "(not one op)", i, (unsigned long long)w);
  }
}

/* What the online softmax could not reproduce runs op by op, right. */
Test(partitioner, attention_chain_it_cannot_rewrite_runs_op_by_op,
     .timeout = 120) {
  const form base = {.B = 1, .M = 48, .N = 64, .D = 16, .Dv = 16,
                     .mask = 1, .scale = 0.25};
  form f = base;
  f.scale = -0.25; /* a negative scale turns the -inf mask to +inf */
  cr_expect_gt(agrees(&f), 0);
  f = base;
  f.mask = 3;
  f.diag = -1; /* row 0 sees no key: its softmax is NaN */
  pto_program *p = chain(&f);
  pto_config *c = host_config(2);
  pto_executable *e = compile_ok(p, c);
  pto_exe_stats st;
  cr_assert_eq(pto_executable_stats(e, &st), PTO_OK);
  cr_expect_gt(st.workspace_bytes, 0);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}

/* A cube tile set on the chain's label (here in code) is its query rows a
 * task (m) and keys a block (k); the chooser's otherwise. */
Test(partitioner, attention_chain_takes_a_tile_set_on_its_label,
     .timeout = 60) {
  const form f = {.B = 1, .M = 96, .N = 96, .D = 16, .Dv = 16, .mask = 1,
                  .scale = 0.25};
  pto_program *p = chain(&f);
  pto_config *c = host_config(2);
  const pto_tile_shape t = {0, 0, 32, 16, 48};
  cr_assert_eq(pto_config_set_tile(c, "attn", &t), PTO_OK);
  pto_executable *e = compile_ok(p, c);
  cr_expect_eq(pto_executable_num_tasks(e), 96 / 32);
  pto_executable_free(e);
  pto_config_free(c);
  pto_program_free(p);
}
