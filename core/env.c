/* The environment variables a compile reads: PTO_THREADS (workers of the
 * default host machine) and PTO_CONFIG (a config file merged into every
 * compile that gets no config of its own), so an engineer retunes an
 * application without rebuilding it. PTO_TRACE is the runtime's
 * (scheduler/trace_env.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/config.h"

int pto__env_threads(char *msg, size_t size) {
  const char *v = getenv("PTO_THREADS");
  if (!v)
    return 0;
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (!*v || *end || errno || n < 1 || n > PTO_THREADS_MAX) {
    snprintf(msg, size,
             "PTO_THREADS=%s: expected a number of workers from 1 to %d", v,
             PTO_THREADS_MAX);
    return -1;
  }
  return (int)n;
}

pto_config *pto__config_from_env(pto_error *err) {
  char msg[160];
  if (pto__env_threads(msg, sizeof msg) < 0) {
    pto__error_set(err, PTO_ECONFIG, "%s", msg);
    return NULL;
  }
  pto_config *c = pto_config_new();
  if (!c) {
    pto__error_set(err, PTO_ENOMEM, "out of memory");
    return NULL;
  }
  const char *path = getenv("PTO_CONFIG");
  if (!path)
    return c;
  pto_status st = *path ? pto_config_load_file(c, path) : PTO_ECONFIG;
  if (st) {
    /* the loader's message names the file, line and column or key path */
    pto__error_set(err, st, "PTO_CONFIG=%s: %s", path,
                   *path ? pto_config_error(c)
                         : "empty (expected a JSON file)");
    pto_config_free(c);
    return NULL;
  }
  return c;
}
