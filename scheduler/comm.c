/* The ranks of a job and their communication worker (pto/comm.h).
 *
 * A comm of one rank (no MPI in the build, or a process no MPI launcher
 * started) has no worker: its collectives copy at once. Otherwise the
 * worker thread initializes MPI, posts each queued collective as a
 * non-blocking request, tests the requests in flight every few tens of
 * microseconds (MPI over TCP progresses only inside MPI calls) and fails
 * those past their deadline, which breaks the comm. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "pto/comm.h"

#if PTO_HAVE_MPI
#include <mpi.h>
#endif

enum { REQ_QUEUED, REQ_POSTED, REQ_DONE, REQ_FAILED };

enum { KIND_ALLGATHER, KIND_ALLTOALL };
static const char *const kind_name[2] = {"all-gather", "all-to-all"};

struct pto_comm_req {
  pto_comm *c;
  int kind;
  const void *send;
  void *recv;
  size_t bytes;
  uint64_t post_ns, deadline_ns;
  int state;
  pto_status st;
  char msg[256];
  pto_comm_req *next;
#if PTO_HAVE_MPI
  MPI_Request mr;
#endif
};

struct pto_comm {
  int rank, size, mpi, broken, stop;
  double timeout_s;
  uv_thread_t worker;
  uv_mutex_t mu;
  uv_cond_t wake, done; /* the worker's; the waiters' */
  pto_comm_req *queue, *queue_tail, *inflight;
  pto_comm_stats stats;
  /* the worker's start: MPI_Init_thread's arguments and outcome */
  int *argc;
  char ***argv;
  int started;
  pto_status open_st;
  char open_msg[256];
#if PTO_HAVE_MPI
  MPI_Comm world;
#endif
};

static atomic_int comm_opened;

int pto_comm_available(void) {
  return PTO_HAVE_MPI ? 1 : 0;
}

static void say(char *msg, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *msg, size_t size, const char *fmt, ...) {
  if (!msg || !size)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, size, fmt, ap);
  va_end(ap);
}

/* Launched by an MPI launcher: Open MPI's and PMIx's environment. */
static int launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
         getenv("PMI_RANK");
}

#if PTO_HAVE_MPI
static void mpi_msg(int code, char *out, size_t size) {
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(code, s, &n) != MPI_SUCCESS)
    snprintf(s, sizeof s, "MPI error %d", code);
  snprintf(out, size, "%.120s", s);
}

static void fail_req(pto_comm_req *r, pto_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail_req(pto_comm_req *r, pto_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  va_end(ap);
  r->st = st;
  r->state = REQ_FAILED;
}

/* Posts the queued requests (called without the lock: the queue was taken
 * whole); a failed post fails its request. */
static void post_all(pto_comm *c, pto_comm_req *q, pto_comm_req **posted) {
  for (pto_comm_req *r = q, *nx; r; r = nx) {
    nx = r->next;
    r->next = NULL;
    int rc = r->kind == KIND_ALLTOALL
                 ? MPI_Ialltoall(r->send, (int)r->bytes, MPI_BYTE, r->recv,
                                 (int)r->bytes, MPI_BYTE, c->world, &r->mr)
                 : MPI_Iallgather(r->send, (int)r->bytes, MPI_BYTE, r->recv,
                                  (int)r->bytes, MPI_BYTE, c->world, &r->mr);
    if (rc != MPI_SUCCESS) {
      char e[128];
      mpi_msg(rc, e, sizeof e);
      fail_req(r, PTO_ECOMM, "%s of %zu bytes on rank %d of %d: %s",
               kind_name[r->kind], r->bytes, c->rank, c->size, e);
    } else {
      r->state = REQ_POSTED;
    }
    r->next = *posted;
    *posted = r;
  }
}

static void worker(void *arg) {
  pto_comm *c = arg;
  int provided = 0,
      rc = MPI_Init_thread(c->argc, c->argv, MPI_THREAD_FUNNELED, &provided);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->world);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_set_errhandler(c->world, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_rank(c->world, &c->rank);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_size(c->world, &c->size);
  uv_mutex_lock(&c->mu);
  if (rc != MPI_SUCCESS) {
    char e[128];
    mpi_msg(rc, e, sizeof e);
    c->open_st = PTO_ECOMM;
    snprintf(c->open_msg, sizeof c->open_msg, "comm: MPI failed to start: %s",
             e);
  }
  c->started = 1;
  uv_cond_broadcast(&c->done);
  uv_mutex_unlock(&c->mu);
  if (rc != MPI_SUCCESS)
    return;

  pto_comm_req *mine = NULL; /* in flight, the worker's own list */
  int gave_up = 0;           /* a request failed: the job is lost */
  for (;;) {
    uv_mutex_lock(&c->mu);
    while (!c->queue && !mine && !c->stop)
      uv_cond_wait(&c->wake, &c->mu);
    pto_comm_req *q = c->queue;
    c->queue = c->queue_tail = NULL;
    const int stop = c->stop && !q && !mine;
    uv_mutex_unlock(&c->mu);
    if (stop)
      break;
    if (gave_up) /* broken: nothing more reaches MPI */
      for (pto_comm_req *r = q; r; r = r->next)
        fail_req(r, PTO_ECOMM,
                 "%s of %zu bytes on rank %d of %d: "
                 "the comm is broken by an earlier failure",
                 kind_name[r->kind], r->bytes, c->rank, c->size);
    else
      post_all(c, q, &mine);
    if (gave_up) {
      for (pto_comm_req *r = q, *nx; r; r = nx) {
        nx = r->next;
        r->next = mine;
        mine = r;
      }
    }
    /* test what is in flight; the finished leave the list */
    const uint64_t now = uv_hrtime();
    int finished = 0;
    for (pto_comm_req **pp = &mine; *pp;) {
      pto_comm_req *r = *pp;
      if (r->state == REQ_POSTED && gave_up) {
        fail_req(r, PTO_ECOMM,
                 "%s of %zu bytes on rank %d of %d: abandoned "
                 "after an earlier collective failed",
                 kind_name[r->kind], r->bytes, c->rank, c->size);
      } else if (r->state == REQ_POSTED) {
        int flag = 0;
        rc = MPI_Test(&r->mr, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
          char e[128];
          mpi_msg(rc, e, sizeof e);
          fail_req(r, PTO_ECOMM, "%s of %zu bytes on rank %d of %d: %s",
                   kind_name[r->kind], r->bytes, c->rank, c->size, e);
        } else if (flag) {
          r->state = REQ_DONE;
        } else if (now > r->deadline_ns) {
          fail_req(r, PTO_ETIMEDOUT,
                   "%s of %zu bytes on rank %d of %d: no answer "
                   "from every rank within %g s (a rank failed, or "
                   "stopped calling it)",
                   kind_name[r->kind], r->bytes, c->rank, c->size,
                   c->timeout_s);
        }
      }
      if (r->state == REQ_FAILED && !gave_up) {
        /* MPI may still write a failed request's buffers, which its
         * caller frees: no MPI call touches the job from now on */
        gave_up = 1;
        pp = &mine;
        continue;
      }
      if (r->state == REQ_DONE || r->state == REQ_FAILED) {
        *pp = r->next;
        uv_mutex_lock(&c->mu);
        if (r->state == REQ_FAILED)
          c->broken = 1;
        else
          c->stats.inflight_s += (double)(now - r->post_ns) * 1e-9;
        r->next = NULL;
        uv_mutex_unlock(&c->mu);
        finished = 1;
      } else {
        pp = &r->next;
      }
    }
    if (finished) {
      uv_mutex_lock(&c->mu);
      uv_cond_broadcast(&c->done);
      uv_mutex_unlock(&c->mu);
    }
    if (mine && !finished) { /* let MPI progress without taking a core */
      uv_mutex_lock(&c->mu);
      if (!c->queue)
        uv_cond_timedwait(&c->wake, &c->mu, 20000);
      uv_mutex_unlock(&c->mu);
    }
  }
  /* a broken comm's peers may never reach the finalize: leave without it */
  if (!c->broken) {
    MPI_Comm_free(&c->world);
    MPI_Finalize();
  }
}
#endif

pto_status pto_comm_open(int *argc, char ***argv, double timeout_s,
                         pto_comm **out, char *msg, size_t size) {
  if (!out) {
    say(msg, size, "comm: the output pointer is NULL");
    return PTO_EINVAL;
  }
  *out = NULL;
  if (!(timeout_s > 0 && timeout_s <= 86400)) {
    say(msg, size, "comm: timeout %g s is outside (0, 86400]", timeout_s);
    return PTO_EINVAL;
  }
  int expect = 0;
  if (!atomic_compare_exchange_strong(&comm_opened, &expect, 1)) {
    say(msg, size, "comm: a comm is open already (one per process)");
    return PTO_ESTATE;
  }
  pto_comm *c = calloc(1, sizeof *c);
  if (!c || uv_mutex_init(&c->mu)) {
    free(c);
    atomic_store(&comm_opened, 0);
    say(msg, size, "comm: out of memory");
    return PTO_ENOMEM;
  }
  uv_cond_init(&c->wake);
  uv_cond_init(&c->done);
  c->size = 1;
  c->timeout_s = timeout_s;
  c->argc = argc;
  c->argv = argv;
  c->mpi = PTO_HAVE_MPI && launched();
#if PTO_HAVE_MPI
  if (c->mpi) {
    if (uv_thread_create(&c->worker, worker, c)) {
      c->mpi = 0;
      pto_comm_close(c);
      say(msg, size, "comm: cannot start the communication worker");
      return PTO_ENOMEM;
    }
    uv_mutex_lock(&c->mu);
    while (!c->started)
      uv_cond_wait(&c->done, &c->mu);
    uv_mutex_unlock(&c->mu);
    if (c->open_st) {
      const pto_status st = c->open_st;
      say(msg, size, "%s", c->open_msg);
      uv_thread_join(&c->worker);
      c->mpi = 0;
      pto_comm_close(c);
      return st;
    }
  }
#endif
  *out = c;
  return PTO_OK;
}

void pto_comm_close(pto_comm *c) {
  if (!c)
    return;
#if PTO_HAVE_MPI
  if (c->mpi) {
    uv_mutex_lock(&c->mu);
    c->stop = 1;
    uv_cond_signal(&c->wake);
    uv_mutex_unlock(&c->mu);
    uv_thread_join(&c->worker);
  }
#endif
  uv_cond_destroy(&c->wake);
  uv_cond_destroy(&c->done);
  uv_mutex_destroy(&c->mu);
  free(c);
  atomic_store(&comm_opened, 0);
}

int pto_comm_rank(const pto_comm *c) {
  return c ? c->rank : 0;
}
int pto_comm_size(const pto_comm *c) {
  return c ? c->size : 1;
}
double pto_comm_timeout(const pto_comm *c) {
  return c ? c->timeout_s : 0;
}

static pto_status post(pto_comm *c, int kind, const void *send, size_t bytes,
                       void *recv, pto_comm_req **req) {
  if (req)
    *req = NULL;
  if (!c || !req || (bytes && (!send || !recv)) || bytes > 0x7fffffffu)
    return PTO_EINVAL;
  pto_comm_req *r = calloc(1, sizeof *r);
  if (!r)
    return PTO_ENOMEM;
  r->c = c;
  r->kind = kind;
  r->send = send;
  r->recv = recv;
  r->bytes = bytes;
  r->post_ns = uv_hrtime();
  r->deadline_ns = r->post_ns + (uint64_t)(c->timeout_s * 1e9);
  uv_mutex_lock(&c->mu);
  if (c->broken) {
    uv_mutex_unlock(&c->mu);
    free(r);
    return PTO_ESTATE;
  }
  c->stats.collectives++;
  c->stats.bytes_sent += (uint64_t)bytes * (uint64_t)(c->size - 1);
  c->stats.bytes_received += (uint64_t)bytes * (uint64_t)(c->size - 1);
  if (!c->mpi) { /* one rank: either collective is a copy */
    uv_mutex_unlock(&c->mu);
    if (bytes && recv != send)
      memmove(recv, send, bytes);
    r->state = REQ_DONE;
    *req = r;
    return PTO_OK;
  }
  r->state = REQ_QUEUED;
  if (c->queue_tail)
    c->queue_tail->next = r;
  else
    c->queue = r;
  c->queue_tail = r;
  uv_cond_signal(&c->wake);
  uv_mutex_unlock(&c->mu);
  *req = r;
  return PTO_OK;
}

pto_status pto_comm_iallgather(pto_comm *c, const void *send, size_t bytes,
                               void *recv, pto_comm_req **req) {
  return post(c, KIND_ALLGATHER, send, bytes, recv, req);
}

pto_status pto_comm_ialltoall(pto_comm *c, const void *send, size_t bytes,
                              void *recv, pto_comm_req **req) {
  return post(c, KIND_ALLTOALL, send, bytes, recv, req);
}

pto_status pto_comm_wait(pto_comm_req *r, char *msg, size_t size) {
  if (!r) {
    say(msg, size, "comm: wait on a NULL request");
    return PTO_EINVAL;
  }
  pto_comm *c = r->c;
  const uint64_t t0 = uv_hrtime();
  /* the worker fails a request at its deadline; a second of slack covers
   * a worker stuck inside MPI itself */
  const uint64_t limit = r->deadline_ns + 1000000000u;
  uv_mutex_lock(&c->mu);
  while (r->state != REQ_DONE && r->state != REQ_FAILED) {
    const uint64_t now = uv_hrtime();
    if (now >= limit) {
      /* the worker still holds r: it is leaked, not freed under it */
      c->broken = 1;
      uv_mutex_unlock(&c->mu);
      say(msg, size,
          "%s of %zu bytes on rank %d of %d: the communication "
          "worker did not answer within %g s",
          kind_name[r->kind], r->bytes, c->rank, c->size, c->timeout_s + 1);
      return PTO_ETIMEDOUT;
    }
    uv_cond_timedwait(&c->done, &c->mu, limit - now);
  }
  c->stats.wait_s += (double)(uv_hrtime() - t0) * 1e-9;
  uv_mutex_unlock(&c->mu);
  const pto_status st = r->state == REQ_DONE ? PTO_OK : r->st;
  if (st)
    say(msg, size, "%s", r->msg);
  free(r);
  return st;
}

static pto_status blocking(pto_comm *c, int kind, const void *send,
                           size_t bytes, void *recv, char *msg, size_t size) {
  pto_comm_req *r = NULL;
  pto_status st = post(c, kind, send, bytes, recv, &r);
  if (st) {
    say(msg, size, "%s of %zu bytes: %s", kind_name[kind], bytes,
        st == PTO_ESTATE ? "the comm is broken by an earlier failure"
                         : pto_strerror(st));
    return st;
  }
  return pto_comm_wait(r, msg, size);
}

pto_status pto_comm_allgather(pto_comm *c, const void *send, size_t bytes,
                              void *recv, char *msg, size_t size) {
  return blocking(c, KIND_ALLGATHER, send, bytes, recv, msg, size);
}

pto_status pto_comm_alltoall(pto_comm *c, const void *send, size_t bytes,
                             void *recv, char *msg, size_t size) {
  return blocking(c, KIND_ALLTOALL, send, bytes, recv, msg, size);
}

pto_comm_stats pto_comm_stats_get(const pto_comm *c) {
  pto_comm_stats s = {0};
  if (c) {
    uv_mutex_lock((uv_mutex_t *)&c->mu);
    s = c->stats;
    uv_mutex_unlock((uv_mutex_t *)&c->mu);
  }
  return s;
}

void pto_comm_stats_reset(pto_comm *c) {
  if (!c)
    return;
  uv_mutex_lock(&c->mu);
  memset(&c->stats, 0, sizeof c->stats);
  uv_mutex_unlock(&c->mu);
}
