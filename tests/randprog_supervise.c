/* Random programs (randprog.h): the supervisor that runs seeds in a child
 * process and turns hangs and crashes into reports naming the seed, and the
 * minimizer of a failing case. */
#include "tests/randprog_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the supervisor
 * ---------------------------------------------------------------- */

typedef struct shared_state {
  rp_progress prog;
  volatile uint64_t next; /* the seed the child works on next */
  volatile int in_seed;   /* the child is inside prog.seed */
  volatile int l1_reuse;  /* that case compiles with l1_reuse >= 2 */
  rp_totals tot;
} shared_state;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void report_case(const rp_case *c, const char *kind, const char *msg,
                        const char *dir, FILE *out) {
  fprintf(out, "==== %s: seed %" PRIu64 ": %s\n", kind, c->seed, msg);
  rp_print_c(c, out);
  fprintf(out, "==== end of seed %" PRIu64 "\n", c->seed);
  fflush(out);
  if (dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/seed-%" PRIu64 ".c", dir, c->seed);
    FILE *f = fopen(path, "w");
    if (f) {
      fprintf(f, "/* %s: %s */\n", kind, msg);
      rp_print_c(c, f);
      fclose(f);
    }
  }
}

static void child_loop(shared_state *sh, uint64_t end, const rp_switches *sw,
                       const char *dir, int verbose, FILE *out) {
  rp_env *env = rp_env_new(&sh->prog);
  char msg[1024];
  while (sh->next < end) {
    uint64_t seed = sh->next;
    sh->prog.seed = seed;
    sh->prog.stage = RP_STAGE_GENERATE;
    sh->prog.beat++;
    sh->in_seed = 1;
    rp_case *c = rp_generate(seed, sw);
    sh->l1_reuse = cfg_has_l1_reuse(&c->cfg);
    rp_outcome r = rp_run(env, c, msg, sizeof msg);
    sh->tot.by[r]++;
    sh->tot.seeds++;
    sh->tot.ops += (uint64_t)c->n_ops;
    sh->tot.dynamic += c->n_dims > 0;
    sh->tot.binds += (uint64_t)c->n_binds;
    if (r == RP_FAIL) {
      if (sh->tot.first_fail == UINT64_MAX)
        sh->tot.first_fail = seed;
      report_case(c, "FAIL", msg, dir, out);
    } else if (verbose > 1 || (verbose && r != RP_PASS)) {
      fprintf(out, "seed %" PRIu64 ": %s %s\n", seed,
              r == RP_PASS   ? "pass"
              : r == RP_SKIP ? "skip"
                             : "known",
              msg);
      fflush(out);
    }
    rp_case_free(c);
    sh->in_seed = 0;
    sh->next = seed + 1;
  }
  rp_env_free(env);
}

int rp_supervise(uint64_t start, uint64_t count, const rp_switches *sw,
                 double timeout_s, const char *dir, int verbose, FILE *out,
                 rp_totals *totals) {
  shared_state *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED)
    return -1;
  memset(sh, 0, sizeof *sh);
  sh->tot.first_fail = UINT64_MAX;
  sh->next = start;
  uint64_t end = start + count;
  while (sh->next < end) {
    fflush(out);
    pid_t pid = fork();
    if (pid < 0) {
      munmap(sh, sizeof *sh);
      return -1;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphan when the watcher dies */
      child_loop(sh, end, sw, dir, verbose, out);
      fflush(out);
      _exit(0);
    }
    uint64_t beat = sh->prog.beat;
    double since = now_s();
    int status = 0, hung = 0;
    for (;;) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid)
        break;
      if (w < 0 && errno != EINTR)
        break;
      if (sh->prog.beat != beat) {
        beat = sh->prog.beat;
        since = now_s();
      } else if (sh->in_seed && now_s() - since > timeout_s) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        hung = 1;
        break;
      }
      usleep(20000);
    }
    if (!hung && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !sh->in_seed)
      continue; /* the child finished its seeds */
    uint64_t seed = sh->prog.seed;
    int st = sh->prog.stage;
    rp_case *c = rp_generate(seed, sw);
    char msg[256];
    if (hung && st == RP_STAGE_COMPILE_L1_REUSE && sw->l1_reuse_hang) {
      sh->tot.by[RP_KNOWN]++;
      if (verbose)
        fprintf(out,
                "seed %" PRIu64 ": known l1_reuse_hang (compile did not "
                "return in %.0f s)\n",
                seed, timeout_s);
    } else {
      if (hung) {
        snprintf(msg, sizeof msg, "no progress for %.0f s in stage %s",
                 timeout_s, rp_stage_name(st));
        sh->tot.hangs++;
      } else {
        snprintf(msg, sizeof msg, "the process died in stage %s (%s %d)",
                 rp_stage_name(st), WIFSIGNALED(status) ? "signal" : "exit",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        sh->tot.crashes++;
      }
      sh->tot.by[RP_FAIL]++;
      if (sh->tot.first_fail == UINT64_MAX)
        sh->tot.first_fail = seed;
      report_case(c, hung ? "HANG" : "CRASH", msg, dir, out);
    }
    sh->tot.seeds++;
    rp_case_free(c);
    sh->in_seed = 0;
    sh->next = seed + 1;
  }
  if (totals)
    *totals = sh->tot;
  munmap(sh, sizeof *sh);
  return 0;
}

/* ---- minimizing a failing case
 * ----------------------------------------------------- */

static rp_case *case_copy(const rp_case *c) {
  rp_case *d = malloc(sizeof *d);
  if (!d)
    abort();
  *d = *c;
  d->steps = malloc((size_t)c->cap_steps * sizeof *d->steps);
  d->vals = malloc((size_t)c->cap_vals * sizeof *d->vals);
  if (!d->steps || !d->vals)
    abort();
  memcpy(d->steps, c->steps, (size_t)c->n_steps * sizeof *d->steps);
  memcpy(d->vals, c->vals, (size_t)c->n_vals * sizeof *d->vals);
  return d;
}

/* Drops ops no output needs and inputs nothing reads. */
void prune(rp_case *c) {
  mark_live(c);
  int n = 0;
  c->n_ops = 0;
  for (int i = 0; i < c->n_steps; i++) {
    rp_step *s = &c->steps[i];
    if (s->kind == S_OP && !step_live(c, s))
      continue;
    if (s->kind == S_INPUT && !c->vals[s->out].live)
      continue;
    if (s->kind == S_OP && s->op != O_SLICE && s->op != O_RESHAPE &&
        s->op != O_TRANSPOSE)
      c->n_ops++;
    c->steps[n++] = *s;
  }
  c->n_steps = n;
}

/* rp_run in a child process, so that a crash or a hang is an outcome. */
static rp_outcome run_isolated(const rp_case *c, double timeout_s, char *msg,
                               size_t size) {
  typedef struct {
    volatile int done, outcome;
    char msg[1024];
    rp_progress prog;
  } box;
  box *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED)
    abort();
  memset(b, 0, sizeof *b);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) { /* sanitizer reports of candidates would drown the log */
      dup2(fd, 2);
      close(fd);
    }
    rp_env *env = rp_env_new(&b->prog);
    b->outcome = rp_run(env, c, b->msg, sizeof b->msg);
    b->done = 1;
    _exit(0); /* without freeing the runtimes: quicker */
  }
  double t0 = now_s();
  int status = 0, hung = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (now_s() - t0 > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      hung = 1;
      break;
    }
    usleep(2000);
  }
  rp_outcome r;
  if (b->done) {
    r = (rp_outcome)b->outcome;
    snprintf(msg, size, "%s", b->msg);
  } else {
    r = RP_FAIL;
    if (hung)
      snprintf(msg, size, "hang: no end in %.0f s in stage %s", timeout_s,
               rp_stage_name(b->prog.stage));
    else
      snprintf(msg, size, "crash: %s %d in stage %s",
               WIFSIGNALED(status) ? "signal" : "exit",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
               rp_stage_name(b->prog.stage));
  }
  munmap(b, sizeof *b);
  return r;
}

/* Failures are the same when their messages agree up to the first ':'
 * ("serial", "compile", "crash", ...) and, for output mismatches, in being
 * one. */
static int same_failure(const char *a, const char *b) {
  size_t la = strcspn(a, ":"), lb = strcspn(b, ":");
  if (la != lb || strncmp(a, b, la))
    return 0;
  return (strstr(a, ": output ") != NULL) == (strstr(b, ": output ") != NULL) &&
         (strstr(a, "signal") != NULL) == (strstr(b, "signal") != NULL);
}

static int still_fails(const rp_case *c, const char *want, double timeout_s) {
  char msg[1024];
  return run_isolated(c, timeout_s, msg, sizeof msg) == RP_FAIL &&
         same_failure(msg, want);
}

/* d, a smaller *c, takes its place if it still fails as wanted (1, and a
 * line to log unless NULL); else d is freed (0). */
static int adopt_if_fails(rp_case **c, rp_case *d, const char *want,
                          double timeout_s, FILE *log) {
  if (!still_fails(d, want, timeout_s)) {
    rp_case_free(d);
    return 0;
  }
  rp_case_free(*c);
  *c = d;
  if (log)
    fprintf(log, "minimize: %d steps, %d ops\n", d->n_steps, d->n_ops);
  return 1;
}

rp_case *rp_minimize(const rp_case *orig, double timeout_s, char *msg,
                     size_t size, FILE *log) {
  char want[1024];
  if (run_isolated(orig, timeout_s, want, sizeof want) != RP_FAIL) {
    snprintf(msg, size, "the case does not fail");
    return NULL;
  }
  rp_case *c = case_copy(orig);
  prune(c);
  if (!still_fails(c, want, timeout_s)) {
    rp_case_free(c);
    c = case_copy(orig);
  }
  for (int changed = 1; changed;) {
    changed = 0;
    /* one step at a time, from the end: outputs, ops (a bypass would change
     * what the tracker knows, so ops go only as dead code), scopes */
    for (int i = c->n_steps - 1; i >= 0; i--) {
      if (i >= c->n_steps)
        continue;
      int kind = c->steps[i].kind;
      mark_live(c);
      if (kind == S_OP && step_live(c, &c->steps[i]))
        continue; /* a bypass would change what the tracker knows */
      if (kind == S_INPUT && c->vals[c->steps[i].out].live)
        continue;
      if (kind == S_OUTPUT) {
        int outs = 0;
        for (int j = 0; j < c->n_steps; j++)
          outs += c->steps[j].kind == S_OUTPUT;
        if (outs < 2)
          continue;
      }
      rp_case *d = case_copy(c);
      memmove(&d->steps[i], &d->steps[i + 1],
              (size_t)(d->n_steps - i - 1) * sizeof *d->steps);
      d->n_steps--;
      rp_case *e = case_copy(d);
      prune(e);
      adopt_if_fails(&d, e, want, timeout_s, NULL); /* pruned, if it can be */
      changed |= adopt_if_fails(&c, d, want, timeout_s, log);
    }
    /* where values do not matter (a crash, a hang, a compile error): an op
     * becomes an input of its shape, cutting the graph above it */
    int any_values = strstr(want, ": output ") != NULL;
    for (int i = c->n_steps - 1; i >= 0 && !any_values; i--) {
      if (i >= c->n_steps)
        continue;
      const rp_step *s = &c->steps[i];
      if (s->kind != S_OP || s->out2 >= 0 || s->op == O_SLICE ||
          s->op == O_RESHAPE || s->op == O_TRANSPOSE)
        continue;
      rp_case *d = case_copy(c);
      rp_step *t = &d->steps[i];
      const rp_val *v = &d->vals[t->out];
      int out = t->out;
      memset(t, 0, sizeof *t);
      t->kind = S_INPUT;
      t->out = out;
      t->out2 = -1;
      t->dt = v->dt;
      t->nd = v->nd;
      memcpy(t->shape, v->shape, sizeof t->shape);
      memcpy(t->dim, v->dim, sizeof t->dim); /* whole dims stay dynamic */
      snprintf(t->name, sizeof t->name, "m%d", out);
      t->fill_seed = (uint64_t)out * 7919u;
      t->fill_kind = v->dt == PTO_I32 ? RP_FILL_INT : RP_FILL_GRID;
      t->fill_q = 2;
      t->fill_lo = v->dt == PTO_I32 ? 0 : -4;
      t->fill_hi = v->dt == PTO_I32 ? 3 : 4;
      prune(d);
      changed |= adopt_if_fails(&c, d, want, timeout_s, log);
    }
    /* the dims (each made static) and the bindings, one at a time */
    for (int k = 0; k < c->n_dims; k++) {
      rp_case *d = case_copy(c);
      dims_drop(d, k);
      changed |= adopt_if_fails(&c, d, want, timeout_s, log);
    }
    for (int i = 0; c->n_binds > 1 && i < c->n_binds; i++) {
      rp_case *d = case_copy(c);
      memmove(&d->binds[i], &d->binds[i + 1],
              (size_t)(d->n_binds - i - 1) * sizeof d->binds[0]);
      d->n_binds--;
      changed |= adopt_if_fails(&c, d, want, timeout_s, NULL);
    }
    /* the config and the runs, one setting at a time */
    for (int k = 0; k < 12; k++) {
      rp_case *d = case_copy(c);
      rp_cfg *f = &d->cfg;
      int did = 1;
      if (k == 0 && f->mode != CFG_NULL)
        f->mode = CFG_NULL;
      else if (k == 1 && f->mode != CFG_NULL && f->machine != M_HOST)
        f->machine = M_HOST;
      else if (k >= 2 && k < 2 + PTO_KNOB_COUNT &&
               (f->knob_set & (1 << (k - 2))))
        f->knob_set &= ~(1 << (k - 2));
      else if (k == 6 && f->n_labels)
        f->n_labels--;
      else if (k == 7 && d->n_rts)
        d->n_rts--;
      else if (k == 8 && f->n_labels && f->labels[0].knob_set)
        f->labels[0].knob_set = 0;
      else if (k == 9 && f->n_labels &&
               (f->labels[0].vec_set || f->labels[0].cube_set))
        f->labels[0].vec_set = f->labels[0].cube_set = 0;
      else if (k == 10 && d->n_rts && d->rts[0].repeat)
        d->rts[0].repeat = 0;
      else
        did = 0;
      if (did)
        changed |= adopt_if_fails(&c, d, want, timeout_s, NULL);
      else
        rp_case_free(d);
    }
  }
  snprintf(msg, size, "%s", want);
  return c;
}
