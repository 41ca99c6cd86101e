/* e2e: random programs over the whole builder API, compiled under random
 * configs (machines, knobs, label overrides), run serially and on runtimes
 * of 1-3 workers with every policy, compared with the reference evaluator
 * (tests/randprog.h). A fixed set of seeds; fuzz_diff runs more. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>

#include "tests/randprog.h"

/* Seeds [start, start + n): none may fail, hang or crash. */
static void run_seeds(uint64_t start, uint64_t n) {
  char msg[256];
  rp_switches sw;
  cr_assert_eq(rp_switches_from_env(&sw, msg, sizeof msg), 0, "%s", msg);
  rp_totals t;
  cr_assert_eq(rp_supervise(start, n, &sw, 30, NULL, 0, stderr, &t), 0);
  cr_expect_eq(t.seeds, n);
  cr_expect_gt(t.by[RP_PASS], n / 2, "only %" PRIu64 " of %" PRIu64
               " seeds compared anything", t.by[RP_PASS], n);
  cr_assert_eq(t.by[RP_FAIL], 0,
               "%" PRIu64 " of %" PRIu64 " seeds failed (%" PRIu64
               " hangs, %" PRIu64 " crashes), the first %" PRIu64
               "; each failing seed's C program is on stderr",
               t.by[RP_FAIL], n, t.hangs, t.crashes, t.first_fail);
}

#define E2E_SEEDS 100

Test(e2e, random_programs_first_half, .timeout = 300) {
  run_seeds(1, E2E_SEEDS);
}

Test(e2e, random_programs_second_half, .timeout = 300) {
  run_seeds(1 + E2E_SEEDS, E2E_SEEDS);
}
