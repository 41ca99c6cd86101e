/* The single-threaded executor: every task on the calling thread, in a
 * topological order (Kahn's algorithm over the successor lists). It checks
 * compiled programs end to end without the parallel runtime. */
#include <stdlib.h>
#include <string.h>

#include "pto/executable.h"
#include "scheduler/exec.h"
#include "tileops/tileops.h"

pto_status pto_executable_run_serial(pto_executable *e,
                                     const void *const *inputs,
                                     void *const *outputs) {
  if (!e)
    return pto__last_error(PTO_EINVAL,
                           "pto_executable_run_serial: the executable is NULL");
  pto__error_clear(&e->err);
  char isa_msg[256];
  if (pto__isa_check(isa_msg, sizeof isa_msg))
    return pto__error_set(&e->err, PTO_EISA, "run: %s", isa_msg);
  if ((!inputs && e->n_inputs) || !outputs)
    return pto__error_set(&e->err, PTO_EINVAL,
                          "run: inputs and outputs arrays are required");
  pto_scratch s;
  unsigned char **base = malloc((e->n_storages + 1) * sizeof *base);
  uint32_t *pending = malloc((e->n_tasks + 1) * sizeof *pending);
  uint32_t *queue = malloc((e->n_tasks + 1) * sizeof *queue);
  pto_status st = PTO_ENOMEM;
  if (!base || !pending || !queue || pto__scratch_init(&s, e)) {
    free(base);
    free(pending);
    free(queue);
    return pto__error_set(&e->err, PTO_ENOMEM, "run: out of memory");
  }
  st = pto__bind(e, inputs, outputs, base);
  if (st) {
    pto__error_set(&e->err, st, "run: an input or output buffer is NULL");
    goto out;
  }
  uint32_t head = 0, tail = 0;
  for (uint32_t t = 0; t < e->n_tasks; t++) {
    pending[t] = e->tasks[t].n_pred;
    if (!pending[t])
      queue[tail++] = t;
  }
  while (head < tail) {
    uint32_t t = queue[head++];
    st = pto__task_exec(e, t, head < tail ? queue[head] : PTO_NO_TASK, &s,
                        base, NULL, &e->err);
    if (st)
      goto out;
    const pto_task *task = &e->tasks[t];
    for (uint32_t k = 0; k < task->n_succ; k++) {
      uint32_t v = e->succ[task->succ + k];
      if (--pending[v] == 0)
        queue[tail++] = v;
    }
  }
  if (tail != e->n_tasks) /* a cycle: a compiler bug, never user input */
    st = pto__error_set(&e->err, PTO_ESTATE,
                        "run: %u of %u tasks never became ready",
                        e->n_tasks - tail, e->n_tasks);
out:
  pto__scratch_free(&s);
  free(base);
  free(pending);
  free(queue);
  return st;
}
