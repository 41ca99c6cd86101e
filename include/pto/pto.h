/* pto/pto.h: the whole public API. */
#ifndef PTO_PTO_H
#define PTO_PTO_H

#include "pto/config.h"
#include "pto/executable.h"
#include "pto/export.h"
#include "pto/isa.h"
#include "pto/program.h"
#include "pto/runtime.h"
#include "pto/status.h"
#include "pto/tileop.h"
#include "pto/types.h"

#define PTO_VERSION_MAJOR 0
#define PTO_VERSION_MINOR 1
#define PTO_VERSION_PATCH 0

#endif /* PTO_PTO_H */
