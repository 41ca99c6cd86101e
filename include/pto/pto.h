/* pto/pto.h: the whole public API: the library, and the operators built
 * with it (attention.h, dsa.h, gemm.h, indexer.h,
 * softmax.h). */
#ifndef PTO_PTO_H
#define PTO_PTO_H

#include "pto/attention.h"
#include "pto/config.h"
#include "pto/dsa.h"
#include "pto/executable.h"
#include "pto/export.h"
#include "pto/gemm.h"
#include "pto/indexer.h"
#include "pto/isa.h"
#include "pto/program.h"
#include "pto/runtime.h"
#include "pto/softmax.h"
#include "pto/status.h"
#include "pto/tileop.h"
#include "pto/tileprog.h"
#include "pto/types.h"

#define PTO_VERSION_MAJOR 0
#define PTO_VERSION_MINOR 1
#define PTO_VERSION_PATCH 0

#endif /* PTO_PTO_H */
