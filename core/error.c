/* Per-object error records. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>

static pto_status error_vset(pto_error *e, pto_status status, const char *fmt,
                             va_list ap) __attribute__((format(printf, 3, 0)));
static pto_status error_vset(pto_error *e, pto_status status, const char *fmt,
                             va_list ap) {
  e->status = status;
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  return status;
}

pto_status pto__error_set(pto_error *e, pto_status status, const char *fmt,
                          ...) {
  va_list ap;
  va_start(ap, fmt);
  error_vset(e, status, fmt, ap);
  va_end(ap);
  return status;
}

pto_status pto__error_first(pto_error *e, pto_status status, const char *fmt,
                            ...) {
  va_list ap;
  if (e->status != PTO_OK)
    return status;
  va_start(ap, fmt);
  error_vset(e, status, fmt, ap);
  va_end(ap);
  return status;
}

void pto__error_clear(pto_error *e) {
  e->status = PTO_OK;
  e->msg[0] = '\0';
}

/* The calling thread's last failure that had no object to keep it. */
static _Thread_local pto_error last_error;

pto_status pto__last_error(pto_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  error_vset(&last_error, status, fmt, ap);
  va_end(ap);
  return status;
}

const char *pto_last_error(void) {
  return last_error.msg;
}
