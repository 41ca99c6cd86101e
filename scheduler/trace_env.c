/* PTO_TRACE=FILE: trace every run of every runtime, written to FILE, or to
 * a pattern with %p (the process id) and %n (the run's number in this
 * process, from 0) for several, e.g. "trace-%p-%n.json". */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scheduler/trace.h"

/* Expands pattern for run n into buf; -1 on an unknown escape or when buf
 * is too small. */
static int expand(const char *pattern, unsigned long n, char *buf,
                  size_t size) {
  size_t k = 0;
  for (const char *c = pattern; *c; c++) {
    char piece[32];
    const char *add = piece;
    if (*c != '%') {
      piece[0] = *c, piece[1] = '\0';
    } else if (c[1] == 'p') {
      snprintf(piece, sizeof piece, "%ld", (long)getpid()), c++;
    } else if (c[1] == 'n') {
      snprintf(piece, sizeof piece, "%lu", n), c++;
    } else if (c[1] == '%') {
      add = "%", c++;
    } else {
      return -1;
    }
    size_t len = strlen(add);
    if (k + len + 1 > size)
      return -1;
    memcpy(buf + k, add, len);
    k += len;
  }
  buf[k] = '\0';
  return 0;
}

pto_status pto__trace_env(char **pattern, char *msg, size_t size) {
  *pattern = NULL;
  const char *v = getenv("PTO_TRACE");
  if (!v)
    return PTO_OK;
  char path[PATH_MAX];
  if (!*v) {
    snprintf(msg, size,
             "PTO_TRACE is empty (expected a file name, e.g. "
             "trace.json or trace-%%p-%%n.json)");
    return PTO_ECONFIG;
  }
  if (expand(v, 0, path, sizeof path)) {
    snprintf(msg, size,
             "PTO_TRACE=%s: only %%p (process id), %%n (run number) and %%%% "
             "may follow a %%, and the path must be shorter than %d bytes",
             v, PATH_MAX);
    return PTO_ECONFIG;
  }
  /* its directory must exist and be writable now, not at the first run */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  if (access(dir, W_OK | X_OK)) {
    snprintf(msg, size, "PTO_TRACE=%s: cannot write in directory %s: %s", v,
             dir, strerror(errno));
    return PTO_ECONFIG;
  }
  *pattern = strdup(v);
  if (!*pattern) {
    snprintf(msg, size, "PTO_TRACE: out of memory");
    return PTO_ENOMEM;
  }
  return PTO_OK;
}

void pto__trace_write_env(const pto_trace *t, const char *pattern) {
  static atomic_ulong runs;
  static atomic_flag warned = ATOMIC_FLAG_INIT;
  /* relaxed: only the numbers need to differ */
  unsigned long n = atomic_fetch_add_explicit(&runs, 1, memory_order_relaxed);
  char path[PATH_MAX] = "";
  pto_error err = {PTO_OK, ""};
  if (expand(pattern, n, path, sizeof path) == 0 &&
      pto__trace_write_path(t, path, &err) == PTO_OK)
    return;
  if (!atomic_flag_test_and_set(&warned))
    fprintf(stderr, "pto: PTO_TRACE=%s: cannot write %s: %s\n", pattern, path,
            err.msg[0] ? err.msg : strerror(errno));
}
