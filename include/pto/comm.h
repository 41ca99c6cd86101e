/* pto/comm.h: the ranks of one job, over MPI (Debian's Open MPI), with a
 * communication worker.
 *
 * One process per rank. pto_comm_open joins the job and starts the
 * communication worker: the one thread that makes this process's MPI calls
 * (it initializes MPI with MPI_THREAD_FUNNELED, as the thread that calls
 * MPI_Init_thread, and finalizes it at pto_comm_close). Collectives are
 * posted to it and return at once; it drives MPI's non-blocking requests
 * (MPI_Iallgather, MPI_Test) while the compute workers run, so compute
 * never waits on an MPI call, and a wait returns when the collective is
 * complete or its bound has passed. Every wait is bounded: a rank that
 * died or stopped answering makes the others' waits return PTO_ETIMEDOUT
 * (or PTO_ECOMM when MPI reports the failure) naming the collective, its
 * size and the bound; the comm is then broken and every later call fails
 * at once.
 *
 * Without MPI (PTO built where Open MPI is absent, or a process not started
 * by mpirun) a comm has one rank and its collectives copy: a program run
 * under `mpirun -n 1` behaves exactly as one run without MPI.
 * pto_comm_available says which build this is.
 *
 *   pto_comm *c;
 *   if (pto_comm_open(&argc, &argv, 60.0, &c, msg, sizeof msg)) ...
 *   float mine[4], all[4 * 8];
 *   pto_comm_allgather(c, mine, sizeof mine, all, msg, sizeof msg);
 *   pto_comm_close(c);
 */
#ifndef PTO_COMM_H
#define PTO_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "pto/export.h"
#include "pto/status.h"

PTO_EXTERN_C_BEGIN

typedef struct pto_comm pto_comm;
typedef struct pto_comm_req pto_comm_req;

/* 1 when PTO was built with MPI, else 0 (every comm then has one rank). */
PTO_API int pto_comm_available(void);

/* Joins the job (argc and argv may be NULL; MPI may read and change them)
 * and starts the communication worker. timeout_s (> 0, at most a day)
 * bounds every wait of the comm. In a process not started by an MPI
 * launcher, or without MPI, the comm has one rank. One comm per process
 * (MPI is initialized once): a second open is PTO_ESTATE. PTO_EINVAL for a
 * bad bound, PTO_ECOMM when MPI fails to start, with msg. */
PTO_API pto_status pto_comm_open(int *argc, char ***argv, double timeout_s,
                                 pto_comm **out, char *msg, size_t size);

/* Stops the worker and leaves the job (MPI_Finalize, or MPI_Abort of the
 * job when a wait failed: its peers may never arrive). NULL is a no-op. */
PTO_API void pto_comm_close(pto_comm *c);

PTO_API int pto_comm_rank(const pto_comm *c);
PTO_API int pto_comm_size(const pto_comm *c);
/* The bound of every wait, in seconds. */
PTO_API double pto_comm_timeout(const pto_comm *c);

/* Posts an all-gather: every rank gives `bytes` bytes (the same count on
 * every rank, up to 2^31 - 1) from send; recv (size * bytes) receives rank
 * r's at r * bytes. Both buffers stay untouched by the caller until the
 * wait returns. *req is freed by pto_comm_wait. PTO_ESTATE on a broken
 * comm, PTO_EINVAL for bad arguments, PTO_ENOMEM. */
PTO_API pto_status pto_comm_iallgather(pto_comm *c, const void *send,
                                       size_t bytes, void *recv,
                                       pto_comm_req **req);

/* Waits for req (bounded by the comm's timeout) and frees it. PTO_OK, or
 * PTO_ETIMEDOUT / PTO_ECOMM with msg naming the collective and its size. */
PTO_API pto_status pto_comm_wait(pto_comm_req *req, char *msg, size_t size);

/* Posts an all-to-all: every rank sends block d of send (size blocks of
 * `bytes`, the same count on every rank) to rank d, and recv (size *
 * bytes) receives rank r's block for this rank at r * bytes. As
 * pto_comm_iallgather otherwise. */
PTO_API pto_status pto_comm_ialltoall(pto_comm *c, const void *send,
                                      size_t bytes, void *recv,
                                      pto_comm_req **req);

/* pto_comm_iallgather (pto_comm_ialltoall) then pto_comm_wait. */
PTO_API pto_status pto_comm_allgather(pto_comm *c, const void *send,
                                      size_t bytes, void *recv, char *msg,
                                      size_t size);
PTO_API pto_status pto_comm_alltoall(pto_comm *c, const void *send,
                                     size_t bytes, void *recv, char *msg,
                                     size_t size);

/* What the comm moved since it opened (or since the last reset): bytes
 * this rank sent (its share, counted once per peer) and received, the
 * collectives, the time the callers spent blocked in waits and the time
 * from each collective's post to its completion (seconds). */
typedef struct pto_comm_stats {
  uint64_t bytes_sent, bytes_received, collectives;
  double wait_s, inflight_s;
} pto_comm_stats;
PTO_API pto_comm_stats pto_comm_stats_get(const pto_comm *c);
PTO_API void pto_comm_stats_reset(pto_comm *c);

PTO_EXTERN_C_END

#endif /* PTO_COMM_H */
