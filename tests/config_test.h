/* tests/config_test.h (internal to the tests): what the config suites
 * (tests/test_config.c, tests/test_config_load.c) share: sizes in KiB and
 * MiB and the check that the config's error message holds a fragment.
 * Macros only: each file includes it once. */
#ifndef PTO_TESTS_CONFIG_TEST_H
#define PTO_TESTS_CONFIG_TEST_H

#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>

#include "pto/pto.h"

#define KIB ((size_t)1024)
#define MIB (KIB * 1024)

#define EXPECT_ERR_HAS(c, s)                                                   \
  cr_expect(strstr(pto_config_error(c), (s)) != NULL,                          \
            "message \"%s\" lacks \"%s\"", pto_config_error(c), (s))

#endif
