/* Which CPU a calibration describes (pto/sim.h: pto_profile_is_this_host):
 * the processor's name and numbers, and the instruction table the
 * calibration timed. A profile kept in a cache from another CPU (a VM that
 * moved, a home directory shared between machines) or from another table
 * (PTO_ISA) prices the wrong machine: the tools calibrate again rather
 * than simulate with it. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/cost.h"
#include "tileops/calibrate.h"
#include "tileops/tileops.h"

/* The value of the first "key : value" line of /proc/cpuinfo's text, or
 * "" ("model" is not "model name") */
static void cpuinfo_field(const char *text, const char *key, char *buf,
                          size_t n) {
  buf[0] = 0;
  const size_t klen = strlen(key);
  for (const char *l = text; *l;) {
    const char *end = strchr(l, '\n');
    const size_t len = end ? (size_t)(end - l) : strlen(l);
    const char *v = l + klen;
    if (len > klen && !strncmp(l, key, klen)) {
      while (*v == ' ' || *v == '\t')
        v++;
      if (*v == ':') {
        v++;
        while (*v == ' ' || *v == '\t')
          v++;
        snprintf(buf, n, "%.*s", (int)(l + len - v), v);
        return;
      }
    }
    l += len + (end != NULL);
  }
}

void pto__host_cpu(char *buf, size_t n) {
  char text[16384]; /* the first processor's lines: not shared (threads) */
  size_t got = 0;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
  }
  text[got] = 0;
  char model[128], fam[16], mod[16], step[16];
  cpuinfo_field(text, "model name", model, sizeof model);
  cpuinfo_field(text, "cpu family", fam, sizeof fam);
  cpuinfo_field(text, "model", mod, sizeof mod);
  cpuinfo_field(text, "stepping", step, sizeof step);
  if (!model[0])
    snprintf(model, sizeof model, "unknown");
  if (fam[0])
    snprintf(buf, n, "%s (family %s, model %s, stepping %s)", model, fam,
             mod[0] ? mod : "?", step[0] ? step : "?");
  else
    snprintf(buf, n, "%s", model);
}

double pto_profile_age_s(const pto_profile *p) {
  const json_t *t =
      p ? json_object_get(json_object_get(p->doc, "calibration"), "time")
        : NULL;
  if (!json_is_number(t))
    return -1;
  const double age = difftime(time(NULL), (time_t)json_number_value(t));
  return age > 0 ? age : 0;
}

int pto_profile_is_this_host(const pto_profile *p, char *why, size_t size) {
  char tmp[8];
  if (!why || !size) {
    why = tmp;
    size = sizeof tmp;
  }
  why[0] = 0;
  if (!p) {
    snprintf(why, size, "no profile");
    return -1;
  }
  const json_t *cal = json_object_get(p->doc, "calibration");
  const char *cpu = json_string_value(json_object_get(cal, "cpu"));
  const char *isa = json_string_value(json_object_get(cal, "isa"));
  if (!cpu || !isa) {
    snprintf(why, size, "profile '%s' was not calibrated on a CPU (it has "
                        "no calibration.cpu and calibration.isa)",
             p->name);
    return -1;
  }
  char here[256];
  pto__host_cpu(here, sizeof here);
  const char *table = pto__isa_active()->name;
  if (!strcmp(cpu, here) && !strcmp(isa, table))
    return 1;
  snprintf(why, size,
           "profile '%s' was calibrated on %s with the %s instruction "
           "table; this is %s with the %s table",
           p->name, cpu, isa, here, table);
  return 0;
}
