/* core: workspaces are taken mapped and come back to a pool that the next
 * compile reuses (core/buffer.h). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "core/buffer.h"
#include "pto/runtime.h"

Test(core, workspace_pool_reuses_a_freed_workspace_that_fits) {
  size_t cap = 0, cap2 = 0, cap3 = 0;
  unsigned char *a = pto__workspace_take(3 * PTO_HUGE_PAGE + 5, &cap);
  cr_assert_not_null(a);
  cr_expect_geq(cap, 3 * PTO_HUGE_PAGE + 5);
  cr_expect_eq((uintptr_t)a % PTO_HUGE_PAGE, 0, "whole huge pages");
  memset(a, 7, cap); /* every byte is ours */
  pto__workspace_give(a, cap);
  /* a smaller need takes the pooled one back */
  unsigned char *b = pto__workspace_take(PTO_HUGE_PAGE, &cap2);
  cr_expect_eq(b, a);
  cr_expect_eq(cap2, cap);
  /* a larger one gets a new buffer */
  unsigned char *c = pto__workspace_take(cap + 1, &cap3);
  cr_assert_not_null(c);
  cr_expect_neq(c, b);
  cr_expect_geq(cap3, cap + 1);
  pto__workspace_give(b, cap2);
  pto__workspace_give(c, cap3);
  pto__workspace_give(NULL, 0); /* a no-op */
  size_t z = 1;
  cr_expect_null(pto__workspace_take(0, &z));
  cr_expect_eq(z, 0);
  cr_expect_null(pto__workspace_take(SIZE_MAX, &z));
}

Test(core, workspace_pool_keeps_at_most_eight) {
  void *p[12];
  size_t cap[12];
  for (int i = 0; i < 12; i++) {
    p[i] = pto__workspace_take(4096 * (size_t)(i + 1), &cap[i]);
    cr_assert_not_null(p[i]);
  }
  for (int i = 0; i < 12; i++)
    pto__workspace_give(p[i], cap[i]);
  /* the 4 oldest (smallest) were freed: the smallest need now takes the
   * smallest of the 8 newest */
  size_t c;
  void *q = pto__workspace_take(1, &c);
  cr_expect_eq(q, p[4]);
  cr_expect_eq(c, cap[4]);
  pto__workspace_give(q, c);
}
