/* --simulate MACHINE (tools/bench/sim.h): the profile a MACHINE names, and a
 * case simulated on it beside its measured run. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/harness.h"
#include "bench/sim.h"

#define ASCEND_PROFILE "ascend-profile.json"

/* ascend-profile.json beside pto-bench (the build tree) or in
 * ../share/pto/ (installed), into buf; 0 or -1. */
static int ascend_path(char *buf, size_t size) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return -1;
  exe[n] = 0;
  const char *dir = dirname(exe);
  snprintf(buf, size, "%s/%s", dir, ASCEND_PROFILE);
  if (!access(buf, R_OK))
    return 0;
  snprintf(buf, size, "%s/../share/pto/%s", dir, ASCEND_PROFILE);
  return access(buf, R_OK) ? -1 : 0;
}

/* PTO_PROFILE_MAX_HOURS: how old a calibration of this host may be (default
 * 12; 0: any age); -1 (printed) when it is not a number of hours. */
static double profile_max_hours(const char *cmd) {
  const char *v = getenv("PTO_PROFILE_MAX_HOURS");
  if (!v || !v[0])
    return 12;
  char *end;
  const double h = strtod(v, &end);
  if (*end || !(h >= 0) || h > 1e6) {
    fprintf(stderr,
            "pto-bench %s: PTO_PROFILE_MAX_HOURS=%s: expected hours, 0 for "
            "any age\n",
            cmd, v);
    return -1;
  }
  return h;
}

int bench_sim_open(const bench_opts *o, const char *cmd, const char *spec,
                   int threads, bench_sim *s) {
  memset(s, 0, sizeof *s);
  snprintf(s->spec, sizeof s->spec, "%s", spec);
  s->threads = threads;
  char path[4096];
  if (!strcmp(spec, "host") || !strncmp(spec, "host:", 5)) {
    long n = threads;
    if (spec[4] == ':') {
      char *end;
      n = strtol(spec + 5, &end, 10);
      if (*end || n < 1 || n > 65536) {
        fprintf(stderr,
                "pto-bench %s: --simulate %s: expected host:N with N in "
                "1..65536\n",
                cmd, spec);
        return -1;
      }
    }
    bench_sim_host_path(path, sizeof path);
    pto_profile *host = NULL;
    char why[768];
    if (!access(path, R_OK)) {
      if (pto_profile_load_file(path, &host)) {
        fprintf(stderr,
                "pto-bench %s: --simulate %s: %s (pto-bench "
                "calibrate writes it afresh)\n",
                cmd, spec, pto_last_error());
        return -1;
      }
      /* one written by hand is the user's: used as it is; one calibrated
       * here on fewer workers than this run's lacks what they share */
      const pto_machine *pm = pto_profile_machine(host);
      const int own = pto_profile_is_this_host(host, why, sizeof why);
      const int few =
          own == 1 && pm && pm->workers[PTO_CORE_CUBE] < (uint32_t)threads;
      if (few)
        snprintf(why, sizeof why,
                 "calibrated with %u workers, this run has %d (their shared "
                 "bandwidth is not in it)",
                 pm->workers[PTO_CORE_CUBE], threads);
      /* and one calibrated here long ago may describe another machine of
       * the same CPU model (a VM moved): PTO_PROFILE_MAX_HOURS */
      const double age = own == 1 && !few ? pto_profile_age_s(host) : 0,
                   max_h = profile_max_hours(cmd);
      if (max_h < 0) {
        pto_profile_free(host);
        return -1;
      }
      const int old = max_h > 0 && (age < 0 || age > max_h * 3600);
      if (old && age < 0)
        snprintf(why, sizeof why,
                 "it records no calibration time (made by an older PTO)");
      else if (old)
        snprintf(why, sizeof why,
                 "calibrated %.1f h ago, more than PTO_PROFILE_MAX_HOURS=%g "
                 "(a VM may run on another host of its CPU model since)",
                 age / 3600, max_h);
      if (!own || few || old) {
        char prev[sizeof path + 8];
        snprintf(prev, sizeof prev, "%s.prev", path);
        const int kept = !rename(path, prev);
        bench_progress(o, "%s: %s: %s: calibrating this host again%s%s%s", cmd,
                       path, why, kept ? " (the old profile kept as " : "",
                       kept ? prev : "", kept ? ")" : "");
        pto_profile_free(host);
        host = NULL;
      }
    } else {
      bench_progress(o,
                     "%s: no profile of this host at %s: calibrating it now "
                     "(pto-bench calibrate writes it once)",
                     cmd, path);
    }
    if (!host) {
      /* on every core, whatever this run's workers: the memory system's
       * shared bandwidth is the machine's, and a profile of fewer workers
       * would be calibrated again by the next run with more (a 1-worker
       * profile put softmax on 2 workers at +132% on a Xeon) */
      const long online = sysconf(_SC_NPROCESSORS_ONLN);
      const int every = online > threads ? (int)online : threads;
      if (bench_calibrate(o, every, o->quick ? 1 : 4, "host", 0, &host))
        return -1;
      char *text = pto_profile_to_json(host);
      bench_make_dirs(path);
      FILE *f = text ? fopen(path, "w") : NULL;
      if (f) { /* else the profile is still used, just not kept */
        fputs(text, f);
        fclose(f);
      }
      free(text);
    }
    if (spec[4] != ':') { /* the measured run's own workers */
      s->prof = host;
      s->same = 1;
    } else if (pto_profile_scale(host, (uint32_t)n, &s->prof)) {
      fprintf(stderr, "pto-bench %s: --simulate %s: %s\n", cmd, spec,
              pto_last_error());
      pto_profile_free(host);
      return -1;
    } else {
      pto_profile_free(host);
      s->same = n == threads;
    }
    snprintf(s->name, sizeof s->name, "%s", spec);
    return 0;
  }
  const char *file = spec;
  if (!strcmp(spec, "ascend")) {
    if (ascend_path(path, sizeof path)) {
      fprintf(stderr,
              "pto-bench %s: --simulate ascend: no %s beside pto-bench or in "
              "../share/pto/\n",
              cmd, ASCEND_PROFILE);
      return -1;
    }
    file = path;
  }
  if (pto_profile_load_file(file, &s->prof)) {
    fprintf(stderr, "pto-bench %s: --simulate %s: %s\n", cmd, spec,
            pto_last_error());
    return -1;
  }
  snprintf(s->name, sizeof s->name, "%s", pto_profile_name(s->prof));
  return 0;
}

void bench_sim_close(bench_sim *s) {
  if (!s)
    return;
  pto_profile_free(s->prof);
  s->prof = NULL;
}

const pto_machine *bench_sim_machine(const bench_sim *s) {
  return pto_profile_machine(s->prof);
}

/* cfg with the profile's machine (its knobs, labels, barriers kept). */
static pto_config *config_for(const char *cmd, const bench_sim *s,
                              const pto_config *cfg) {
  pto_config *c = cfg ? pto_config_clone(cfg) : pto_config_new();
  if (!c || pto_config_set_machine(c, bench_sim_machine(s))) {
    fprintf(stderr, "pto-bench %s: --simulate %s: %s\n", cmd, s->spec,
            c ? pto_config_error(c) : "out of memory");
    pto_config_free(c);
    return NULL;
  }
  return c;
}

int bench_sim_case(const char *cmd, const bench_sim *s, const pto_executable *e,
                   pto_program *p, const pto_config *cfg, int cold,
                   const char *trace, double *ms, uint32_t *tasks) {
  pto_executable *own = NULL;
  pto_machine m;
  pto_sim_params sp = pto_sim_params_default();
  sp.profile = s->prof;
  sp.policy = cfg ? (pto_policy)pto_config_knob(cfg, NULL, PTO_KNOB_POLICY)
                  : PTO_POLICY_CRITICAL_PATH;
  sp.cold = cold;
  sp.trace_path = trace;
  if (s->same && e) {
    /* the measured executable on the measured run's workers */
    if (bench_machine(cmd, s->threads, &m))
      return -1;
    sp.machine = &m;
  } else {
    pto_config *c = config_for(cmd, s, cfg);
    if (!c)
      return -1;
    pto_status st = p ? pto_compile(p, c, &own) : PTO_EINVAL;
    pto_config_free(c);
    if (st) {
      fprintf(stderr,
              "pto-bench %s: --simulate %s: compile for machine "
              "'%s': %s\n",
              cmd, s->spec, bench_sim_machine(s)->name,
              p ? pto_program_error(p) : "no program");
      return -1;
    }
    e = own;
  }
  pto_sim_result r;
  pto_status st = pto_simulate(e, &sp, &r);
  if (st)
    fprintf(stderr, "pto-bench %s: --simulate %s: %s\n", cmd, s->spec,
            pto_executable_error(e));
  else {
    *ms = r.makespan_ns * 1e-6;
    if (tasks)
      *tasks = r.tasks;
  }
  pto_executable_free(own);
  return st ? -1 : 0;
}

void bench_sim_case_of(const bench_sim *s, const char *cmd,
                       const char *trace_path, const char *preset, int several,
                       const pto_executable *e, pto_program *p,
                       const pto_config *cfg, double *ms) {
  char path[4096];
  const char *trace = NULL;
  if (trace_path && !bench_case_path(path, sizeof path - 16, trace_path, preset,
                                     several, 0)) {
    strcat(path, ".sim.json");
    trace = path;
  }
  if (bench_sim_case(cmd, s, e, p, cfg, 0, trace, ms, NULL))
    *ms = 0;
  else if (trace)
    fprintf(stderr, "pto-bench %s: %s: simulated swimlane (%s) in %s\n", cmd,
            preset, s->name, trace);
}

void bench_sim_report(FILE *f, json_t *j, const bench_sim *s, double sim_ms,
                      double measured_ms) {
  if (measured_ms > 0)
    fprintf(f,
            "  simulated on %s: %.3f ms (measured %.3f ms: simulated / "
            "measured %.3f)\n",
            s->name, sim_ms, measured_ms, sim_ms / measured_ms);
  else
    fprintf(f, "  simulated on %s: %.3f ms\n", s->name, sim_ms);
  if (j) {
    json_object_set_new(j, "sim_ms", json_real(sim_ms));
    json_object_set_new(j, "sim_machine", json_string(s->name));
    json_object_set_new(j, "sim_ratio",
                        measured_ms > 0 ? json_real(sim_ms / measured_ms)
                                        : json_null());
  }
}
