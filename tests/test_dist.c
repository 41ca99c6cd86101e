/* Scale-out (pto/comm.h, pto_dsa_cp_step): tests/dist_dsa's cases on one
 * rank alone and under mpirun on 2 and 3 ranks (oversubscribed, over
 * loopback), each rank checked against one rank's run and the reference.
 * Without MPI in the build, or without mpirun, the multi-rank runs are
 * skipped and say why; the one-rank runs always run. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "pto/comm.h"
#include "pto/pto.h"
#include "tests/spawn.h"

#define S(x) ((char *)(x)) /* spawn's argv and env are char *const[] */
static char *const mpi_env[] = {S("OMPI_ALLOW_RUN_AS_ROOT=1"),
                                S("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"),
                                S("OMPI_MCA_btl_tcp_if_include=lo"),
                                S("OMPI_MCA_oob_tcp_if_include=lo"),
                                S("PTO_THREADS=1"),
                                NULL};

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

/* Runs dist_dsa CASE on `ranks` ranks (0: alone, without mpirun) and
 * expects every rank's "ok". */
static void ranks_run(const char *name, int ranks, int recovery) {
  if (ranks && (!pto_comm_available() || !*MPIRUN))
    cr_skip_test("PTO is built without MPI, without mpirun or with a "
                 "sanitizer: the %d-rank run of %s runs in the plain build",
                 ranks, name);
  char n[8];
  snprintf(n, sizeof n, "%d", ranks);
  char *mpi[] = {S(MPIRUN),
                 S("-n"),
                 n,
                 S("--oversubscribe"),
                 S("--bind-to"),
                 S("none"),
                 S(recovery ? "--enable-recovery" : "--quiet"),
                 S("--quiet"),
                 S(DIST_DSA),
                 S(name),
                 NULL};
  char *alone[] = {S(DIST_DSA), S(name), NULL};
  spawned r = run_with(ranks ? mpi : alone, mpi_env, NULL);
  char needle[64];
  snprintf(needle, sizeof needle, ": %s: ok", name);
  const int want = ranks ? ranks : 1;
  if (recovery) /* the killed rank prints nothing */
    cr_expect_eq(count(r.out, needle), want - 1, "%s on %d ranks:\n%s\n%s",
                 name, ranks, r.out, r.err);
  else {
    cr_expect_eq(r.status, 0, "%s on %d ranks exited %d:\n%s\n%s", name, ranks,
                 r.status, r.out, r.err);
    cr_expect_eq(count(r.out, needle), want, "%s on %d ranks:\n%s\n%s", name,
                 ranks, r.out, r.err);
  }
  cr_expect_eq(count(r.out, "FAILED"), 0, "%s:\n%s", name, r.out);
  spawned_free(&r);
}

#define DIST_CASE(id, name)                                                    \
  Test(dist, id##_1, .timeout = 120) {                                         \
    ranks_run(name, 0, 0);                                                     \
  }                                                                            \
  Test(dist, id##_2, .timeout = 180) {                                         \
    ranks_run(name, 2, 0);                                                     \
  }                                                                            \
  Test(dist, id##_3, .timeout = 240) {                                         \
    ranks_run(name, 3, 0);                                                     \
  }

DIST_CASE(round_robin, "round-robin")
DIST_CASE(shuffled, "shuffled")
DIST_CASE(one_rank_seq, "one-rank-seq")
DIST_CASE(idle_rank, "idle-rank")
DIST_CASE(shorter_than_topk, "short")
DIST_CASE(prefill, "prefill")
DIST_CASE(bad_owner, "bad-owner")
DIST_CASE(bad_block, "bad-block")
DIST_CASE(mismatch, "mismatch")

/* More ranks than the small dims' 4 heads: the prologs' heads are not
 * split (every rank runs them all), the partials reduce-scatter. */
Test(dist, more_ranks_than_heads_5, .timeout = 240) {
  ranks_run("shuffled", 5, 0);
}

/* A rank killed before the step: the others return an error within the
 * comm's 3 s bound (mpirun --enable-recovery keeps them alive to say so;
 * without it mpirun ends the job at once). */
Test(dist, killed_rank_2, .timeout = 120) {
  ranks_run("kill", 2, 1);
}
Test(dist, killed_rank_3, .timeout = 120) {
  ranks_run("kill", 3, 1);
}

/* The comm alone: one rank without MPI, bad arguments refused. */
Test(dist, comm_one_rank) {
  pto_comm *c = NULL;
  char msg[256];
  cr_assert_eq(pto_comm_open(NULL, NULL, 0, &c, msg, sizeof msg), PTO_EINVAL);
  cr_expect(strstr(msg, "timeout"), "%s", msg);
  cr_assert_eq(pto_comm_open(NULL, NULL, 5, &c, msg, sizeof msg), PTO_OK, "%s",
               msg);
  pto_comm *d = NULL;
  cr_expect_eq(pto_comm_open(NULL, NULL, 5, &d, msg, sizeof msg), PTO_ESTATE);
  cr_expect_eq(pto_comm_size(c), 1);
  cr_expect_eq(pto_comm_rank(c), 0);
  int a[3] = {1, 2, 3}, b[3] = {0};
  cr_expect_eq(pto_comm_allgather(c, a, sizeof a, b, msg, sizeof msg), PTO_OK);
  cr_expect_arr_eq(a, b, sizeof a);
  pto_comm_req *r = NULL;
  cr_expect_eq(pto_comm_iallgather(c, NULL, 4, b, &r), PTO_EINVAL);
  cr_expect_eq(pto_comm_wait(NULL, msg, sizeof msg), PTO_EINVAL);
  int t[3] = {0};
  cr_expect_eq(pto_comm_alltoall(c, a, sizeof a, t, msg, sizeof msg), PTO_OK);
  cr_expect_arr_eq(a, t, sizeof a);
  cr_expect_eq(pto_comm_ialltoall(c, a, 4, NULL, &r), PTO_EINVAL);
  cr_expect_eq(pto_comm_ialltoall(c, a, (size_t)1 << 31, t, &r), PTO_EINVAL);
  cr_expect_eq(pto_comm_iallgather(c, a, 4, b, NULL), PTO_EINVAL);
  const pto_comm_stats st = pto_comm_stats_get(c);
  cr_expect_eq(st.collectives, 2);
  /* the step's bad arguments, on one rank */
  pto_dsa_cp *cp = NULL;
  cr_expect_eq(pto_dsa_cp_new(NULL, NULL, &cp), PTO_EINVAL);
  cr_expect_eq(pto_dsa_cp_new(c, NULL, NULL), PTO_EINVAL);
  cr_assert_eq(pto_dsa_cp_new(c, NULL, &cp), PTO_OK);
  const pto_dsa_dims dims = pto_dsa_dims_default();
  const pto_dsa_params prm = pto_dsa_params_default();
  int64_t n[1] = {1}, len[1] = {4};
  const pto_dsa_step s = {1, n, len, 0, 1};
  const void *in[PTO_DSA_INPUT_COUNT] = {0};
  void *out[PTO_DSA_OUTPUT_COUNT] = {0};
  cr_expect_eq(pto_dsa_cp_step(NULL, &dims, &s, &prm, NULL, in, out, NULL, msg,
                               sizeof msg),
               PTO_EINVAL);
  cr_expect(strstr(msg, "the session is NULL"), "%s", msg);
  cr_expect_eq(pto_dsa_cp_step(cp, &dims, &s, &prm, NULL, in, out, NULL, msg,
                               sizeof msg),
               PTO_EINVAL);
  cr_expect(strstr(msg, "the layout or its owner or block table is NULL"), "%s",
            msg);
  const int32_t owner[1] = {0}, block[1] = {0};
  const pto_dsa_cp_layout lay = {owner, block};
  cr_expect_eq(pto_dsa_cp_step(cp, &dims, &s, &prm, &lay, in, out, NULL, msg,
                               sizeof msg),
               PTO_EINVAL);
  cr_expect(strstr(msg, "input x is NULL"), "%s", msg);
  pto_dsa_cp_free(cp);
  pto_comm_close(c);
}
