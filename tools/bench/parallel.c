/* Rows over threads (bench/parallel.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/parallel.h"

#define MAX_THREADS 256
#define PROGRESS_NS 2000000000ull

typedef struct job {
  bench_rows_fn fn;
  void *ctx;
  int64_t rows, chunk;
  const char *progress;
  /* relaxed: a counter that hands out chunks; nothing else is published
   * through it (results go through the mutex and pthread_join) */
  _Atomic int64_t next, done;
  atomic_int failed; /* relaxed: only stops handing out chunks early */
  pthread_mutex_t lock; /* guards msg, bad_row, last_ns */
  char *msg;
  size_t msg_size;
  int64_t bad_row;
  uint64_t last_ns;
} job;

static void *worker(void *arg) {
  job *j = arg;
  char msg[1024];
  while (!atomic_load_explicit(&j->failed, memory_order_relaxed)) {
    int64_t r0 = atomic_fetch_add_explicit(&j->next, j->chunk,
                                           memory_order_relaxed);
    if (r0 >= j->rows)
      break;
    int64_t r1 = r0 + j->chunk < j->rows ? r0 + j->chunk : j->rows;
    msg[0] = 0;
    if (j->fn(j->ctx, r0, r1, msg, sizeof msg)) {
      atomic_store_explicit(&j->failed, 1, memory_order_relaxed);
      pthread_mutex_lock(&j->lock);
      if (r0 < j->bad_row) {
        j->bad_row = r0;
        snprintf(j->msg, j->msg_size, "%s", msg[0] ? msg : "failed");
      }
      pthread_mutex_unlock(&j->lock);
      break;
    }
    int64_t done = atomic_fetch_add_explicit(&j->done, r1 - r0,
                                             memory_order_relaxed) +
                   (r1 - r0);
    if (j->progress && done < j->rows && !pthread_mutex_trylock(&j->lock)) {
      uint64_t now = bench_now_ns();
      if (now - j->last_ns >= PROGRESS_NS) {
        j->last_ns = now;
        fprintf(stderr, "pto-bench: %s: %d%% (%lld of %lld rows)\n",
                j->progress, (int)(100 * done / j->rows), (long long)done,
                (long long)j->rows);
      }
      pthread_mutex_unlock(&j->lock);
    }
  }
  return NULL;
}

int bench_parallel_rows(int threads, int64_t rows, int64_t chunk,
                        bench_rows_fn fn, void *ctx, const char *progress,
                        char *msg, size_t msg_size) {
  job j;
  memset(&j, 0, sizeof j);
  if (threads < 1)
    threads = 1;
  if (threads > MAX_THREADS)
    threads = MAX_THREADS;
  if (!chunk)
    chunk = rows / ((int64_t)threads * 8);
  j.fn = fn;
  j.ctx = ctx;
  j.rows = rows;
  j.chunk = chunk < 1 ? 1 : chunk;
  j.progress = progress;
  j.msg = msg;
  j.msg_size = msg_size;
  j.bad_row = rows;
  j.last_ns = bench_now_ns();
  atomic_init(&j.next, 0);
  atomic_init(&j.done, 0);
  atomic_init(&j.failed, 0);
  pthread_mutex_init(&j.lock, NULL);
  if (msg_size)
    msg[0] = 0;
  pthread_t th[MAX_THREADS];
  int started = 0;
  while (started < threads - 1 &&
         !pthread_create(&th[started], NULL, worker, &j))
    started++;
  worker(&j); /* the caller works too; fewer threads only run slower */
  for (int t = 0; t < started; t++)
    pthread_join(th[t], NULL);
  pthread_mutex_destroy(&j.lock);
  return atomic_load_explicit(&j.failed, memory_order_relaxed) ? -1 : 0;
}
