/* core/error.h (internal): a status plus a formatted message, kept per object. */
#ifndef PTO_CORE_ERROR_H
#define PTO_CORE_ERROR_H

#include "pto/status.h"

#define PTO_ERROR_MSG 512

typedef struct pto_error {
  pto_status status;
  char msg[PTO_ERROR_MSG];
} pto_error;

/* Records status and a printf-style message; returns status. Overwrites. */
pto_status pto__error_set(pto_error *e, pto_status status, const char *fmt,
                          ...) __attribute__((format(printf, 3, 4)));
/* As pto__error_set, but keeps an earlier error if one is recorded. */
pto_status pto__error_first(pto_error *e, pto_status status, const char *fmt,
                            ...) __attribute__((format(printf, 3, 4)));
void pto__error_clear(pto_error *e);

/* Records the message pto_last_error() returns on this thread (for calls
 * with no object to keep it); returns status. */
pto_status pto__last_error(pto_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* PTO_CORE_ERROR_H */
