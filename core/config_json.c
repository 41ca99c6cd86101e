/* The config's JSON: loading a file or string into a config (validated,
 * every error naming its key path) and writing one out. The object itself
 * is core/config.c. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/config_impl.h"

/* ---- JSON in ------------------------------------------------------------- */

typedef struct load_ctx {
  pto_error *err;
  const char *src; /* the file name, NULL for a string */
} load_ctx;

/* Records "src: path: message" and returns st. */
__attribute__((format(printf, 4, 5))) static pto_status
load_fail(const load_ctx *x, pto_status st, const char *path, const char *fmt,
          ...) {
  char msg[PTO_ERROR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (x->src)
    return pto__error_set(x->err, st, "%s: %s: %s", x->src, path, msg);
  return pto__error_set(x->err, st, "%s: %s", path, msg);
}

/* A short rendering of a JSON value for messages. */
static const char *describe(const json_t *v, char *buf, size_t n) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY: /* its length: a tile of the wrong rank says so */
    snprintf(buf, n, "an array of %zu", json_array_size(v));
    return buf;
  case JSON_STRING:
    snprintf(buf, n, "\"%.40s%s\"", json_string_value(v),
             json_string_length(v) > 40 ? "..." : "");
    return buf;
  case JSON_INTEGER:
    snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return buf;
  case JSON_REAL:
    snprintf(buf, n, "%g", json_real_value(v));
    return buf;
  case JSON_TRUE:
    return "true";
  case JSON_FALSE:
    return "false";
  case JSON_NULL:
    return "null";
  }
  return "?";
}

/* "a, b, c" from the first n entries of list. */
static const char *join(char *buf, size_t size, const char *const *list,
                        size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && used < size; i++) {
    int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", list[i]);
    if (w < 0)
      break;
    used += (size_t)w;
  }
  return buf;
}

static int key_index(const char *key, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(key, list[i]))
      return (int)i;
  return -1;
}

static pto_status unknown_key(const load_ctx *x, const char *path,
                              const char *const *list, size_t n) {
  char expected[256];
  return load_fail(x, PTO_ECONFIG, path, "unknown key (expected %s)",
                   join(expected, sizeof expected, list, n));
}

static void path_join(char *buf, size_t size, const char *parent,
                      const char *key) {
  if (parent[0])
    snprintf(buf, size, "%s.%s", parent, key);
  else
    snprintf(buf, size, "%s", key);
}

/* Sizes: non-negative integers of bytes, or "<digits>[ ][unit]" with unit
 * B, K/KB/KiB, M/MB/MiB, G/GB/GiB (any case, all powers of 1024). */
static int parse_size_string(const char *s, size_t *out) {
  static const struct {
    const char *unit;
    size_t mult;
  } units[] = {{"", 1},      {"B", 1},    {"K", KIB},  {"KB", KIB},
               {"KiB", KIB}, {"M", MIB},  {"MB", MIB}, {"MiB", MIB},
               {"G", GIB},   {"GB", GIB}, {"GiB", GIB}};
  size_t n = 0;
  if (!isdigit((unsigned char)*s))
    return -1;
  for (; isdigit((unsigned char)*s); s++) {
    size_t d = (size_t)(*s - '0');
    if (n > (SIZE_MAX - d) / 10)
      return -1;
    n = n * 10 + d;
  }
  while (*s == ' ')
    s++;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(s, units[i].unit))
      continue;
    if (n > SIZE_MAX / units[i].mult)
      return -1;
    *out = n * units[i].mult;
    return 0;
  }
  return -1;
}

static pto_status parse_size(const load_ctx *x, const char *path, json_t *v,
                             size_t *out) {
  char vb[64];
  if (json_is_integer(v) && json_integer_value(v) >= 0 &&
      (unsigned long long)json_integer_value(v) <= SIZE_MAX) {
    *out = (size_t)json_integer_value(v);
    return PTO_OK;
  }
  if (json_is_string(v) && !parse_size_string(json_string_value(v), out))
    return PTO_OK;
  return load_fail(x, PTO_ECONFIG, path,
                   "expected a size (bytes, or a string like \"192KiB\"), "
                   "got %s",
                   describe(v, vb, sizeof vb));
}

static pto_status parse_workers(const load_ctx *x, const char *path, json_t *v,
                                uint32_t *out) {
  char vb[64];
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return load_fail(x, PTO_ECONFIG, path,
                     "expected a non-negative integer, got %s",
                     describe(v, vb, sizeof vb));
  if (json_integer_value(v) > (json_int_t)UINT32_MAX)
    return load_fail(x, PTO_ECONFIG, path, "%s workers is too many",
                     describe(v, vb, sizeof vb));
  *out = (uint32_t)json_integer_value(v);
  return PTO_OK;
}

static const char *const machine_keys[] = {
    "name", "cube_workers", "vector_workers", "shared", "memory", "panel"};
enum { MK_NAME, MK_CUBE, MK_VECTOR, MK_SHARED, MK_MEMORY, MK_PANEL, MK_COUNT };

static pto_status parse_memory(const load_ctx *x, json_t *v, pto_machine *m) {
  const char *key;
  json_t *val;
  char vb[64], path[128];
  const char *names[PTO_MEM_LEVEL_COUNT];
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    names[l] = pto_mem_level_name((pto_mem_level)l);
  if (!json_is_object(v))
    return load_fail(x, PTO_ECONFIG, "machine.memory",
                     "expected an object of sizes, got %s",
                     describe(v, vb, sizeof vb));
  json_object_foreach(v, key, val) {
    int l = key_index(key, names, PTO_MEM_LEVEL_COUNT);
    pto_status st;
    path_join(path, sizeof path, "machine.memory", key);
    if (l < 0)
      return unknown_key(x, path, names, PTO_MEM_LEVEL_COUNT);
    st = parse_size(x, path, val, &m->mem[l]);
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

/* "host", "ascend", or an object. An object with a name describes a new
 * machine (omitted fields are the host's); one without a name amends cur. */
static pto_status parse_machine(const load_ctx *x, json_t *v,
                                const pto_machine *cur, pto_machine *out) {
  char vb[64], path[128], where[PTO_ERROR_MSG];
  const char *key;
  json_t *val;
  int given_cube = 0, given_vector = 0;

  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (!strcmp(s, "host")) {
      if (pto_machine_host(out) != PTO_OK)
        return load_fail(x, PTO_EIO, "machine", "%s", pto__host_error());
      return PTO_OK;
    }
    if (!strcmp(s, "ascend")) {
      *out = pto_machine_ascend();
      return PTO_OK;
    }
    return load_fail(x, PTO_ECONFIG, "machine",
                     "unknown machine %s (expected \"host\", \"ascend\" or an "
                     "object)",
                     describe(v, vb, sizeof vb));
  }
  if (!json_is_object(v))
    return load_fail(x, PTO_ECONFIG, "machine",
                     "expected \"host\", \"ascend\" or an object, got %s",
                     describe(v, vb, sizeof vb));

  if (json_object_get(v, "name"))
    pto__host_or_fallback(out);
  else
    *out = *cur;
  json_object_foreach(v, key, val) {
    pto_status st = PTO_OK;
    path_join(path, sizeof path, "machine", key);
    switch (key_index(key, machine_keys, MK_COUNT)) {
    case MK_NAME: {
      const char *s = json_string_value(val);
      if (!s || !s[0])
        return load_fail(x, PTO_ECONFIG, path,
                         "expected a non-empty string, got %s",
                         describe(val, vb, sizeof vb));
      if (strlen(s) >= sizeof out->name)
        return load_fail(x, PTO_ECONFIG, path,
                         "%s is too long (at most %zu characters)",
                         describe(val, vb, sizeof vb), sizeof out->name - 1);
      memset(out->name, 0, sizeof out->name);
      memcpy(out->name, s, strlen(s));
      break;
    }
    case MK_CUBE:
      st = parse_workers(x, path, val, &out->workers[PTO_CORE_CUBE]);
      given_cube = 1;
      break;
    case MK_VECTOR:
      st = parse_workers(x, path, val, &out->workers[PTO_CORE_VECTOR]);
      given_vector = 1;
      break;
    case MK_SHARED:
      if (!json_is_boolean(val))
        return load_fail(x, PTO_ECONFIG, path, "expected a boolean, got %s",
                         describe(val, vb, sizeof vb));
      out->shared = json_is_true(val);
      break;
    case MK_MEMORY:
      st = parse_memory(x, val, out);
      break;
    case MK_PANEL: {
      json_t *r = json_array_get(val, 0), *c = json_array_get(val, 1);
      if (!json_is_array(val) || json_array_size(val) != 2 ||
          !json_is_integer(r) || !json_is_integer(c) ||
          json_integer_value(r) < 0 || json_integer_value(r) > 256 ||
          json_integer_value(c) < 0 || json_integer_value(c) > 256 ||
          (json_integer_value(r) == 0) != (json_integer_value(c) == 0))
        return load_fail(x, PTO_ECONFIG, path,
                         "expected [rows, cols] of the cube's panels, each "
                         "1..256 ([0, 0]: the host's), got %s",
                         describe(val, vb, sizeof vb));
      out->panel[0] = (uint32_t)json_integer_value(r);
      out->panel[1] = (uint32_t)json_integer_value(c);
      break;
    }
    default:
      return unknown_key(x, path, machine_keys, MK_COUNT);
    }
    if (st != PTO_OK)
      return st;
  }
  /* Shared workers serve both types: one count given sets both. */
  if (out->shared && given_cube != given_vector) {
    if (given_cube)
      out->workers[PTO_CORE_VECTOR] = out->workers[PTO_CORE_CUBE];
    else
      out->workers[PTO_CORE_CUBE] = out->workers[PTO_CORE_VECTOR];
  }
  if (x->src)
    snprintf(where, sizeof where, "%s: machine", x->src);
  else
    snprintf(where, sizeof where, "machine");
  return pto__machine_check(out, x->err, where);
}

static pto_status parse_knob(const load_ctx *x, const char *path, pto_knob k,
                             json_t *v, int64_t *out) {
  const char *const *names = pto__knob_value_names(k);
  char vb[64], expected[192];
  int64_t value;

  if (names) {
    size_t n = 0;
    int w;
    while (names[n])
      n++;
    join(expected, sizeof expected, names, n);
    w = (int)strlen(expected);
    snprintf(expected + w, sizeof expected - (size_t)w,
             " or %" PRId64 "..%" PRId64, pto__knob_min(k), pto__knob_max(k));
  } else if (pto__knob_is_flag(k)) {
    snprintf(expected, sizeof expected, "a boolean or 0/1");
  } else {
    snprintf(expected, sizeof expected,
             "an integer in [%" PRId64 ", %" PRId64 "]", pto__knob_min(k),
             pto__knob_max(k));
  }

  if (json_is_integer(v)) {
    value = json_integer_value(v);
  } else if (json_is_boolean(v) && pto__knob_is_flag(k)) {
    value = json_is_true(v);
  } else if (json_is_string(v) && names) {
    int i = 0;
    while (names[i] && strcmp(names[i], json_string_value(v)))
      i++;
    if (!names[i])
      return load_fail(x, PTO_ECONFIG, path, "unknown value %s (expected %s)",
                       describe(v, vb, sizeof vb), expected);
    value = i;
  } else {
    return load_fail(x, PTO_ECONFIG, path, "expected %s, got %s", expected,
                     describe(v, vb, sizeof vb));
  }
  if (value < pto__knob_min(k) || value > pto__knob_max(k))
    return load_fail(
        x, PTO_EINVAL, path,
        "%s = %" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]",
        pto_knob_name(k), value, pto__knob_min(k), pto__knob_max(k));
  *out = value;
  return PTO_OK;
}

static pto_status parse_knobs(const load_ctx *x, json_t *v, pto_config *c) {
  const char *key;
  json_t *val;
  char vb[64], path[128];
  const char *names[PTO_KNOB_COUNT];
  for (int k = 0; k < PTO_KNOB_COUNT; k++)
    names[k] = pto_knob_name(k);
  if (!json_is_object(v))
    return load_fail(x, PTO_ECONFIG, "knobs", "expected an object, got %s",
                     describe(v, vb, sizeof vb));
  json_object_foreach(v, key, val) {
    int k = key_index(key, names, PTO_KNOB_COUNT);
    pto_status st;
    path_join(path, sizeof path, "knobs", key);
    if (k < 0)
      return unknown_key(x, path, names, PTO_KNOB_COUNT);
    st = parse_knob(x, path, (pto_knob)k, val, &c->knob[k]);
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

/* [a, b] or [a, b, c] of uint32 into out[0..n). */
static pto_status parse_tile(const load_ctx *x, const char *path, json_t *v,
                             size_t n, const char *form, uint32_t *out) {
  char vb[64];
  if (!json_is_array(v) || json_array_size(v) != n)
    return load_fail(x, PTO_ECONFIG, path, "expected %s, got %s", form,
                     describe(v, vb, sizeof vb));
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    if (!json_is_integer(e) || json_integer_value(e) < 0 ||
        json_integer_value(e) > (json_int_t)UINT32_MAX)
      return load_fail(x, PTO_ECONFIG, path,
                       "expected %s of non-negative integers, element %zu is "
                       "%s",
                       form, i, describe(e, vb, sizeof vb));
    out[i] = (uint32_t)json_integer_value(e);
  }
  return PTO_OK;
}

static const char *const label_keys[] = {
#define PTO__KNOB_KEY(name, str, def, lo, hi) str,
    PTO_KNOB_MAP(PTO__KNOB_KEY)
#undef PTO__KNOB_KEY
        "vec_tile",
    "cube_tile"};
enum {
  LK_VEC = PTO__SET_VEC_TILE,
  LK_CUBE = PTO__SET_CUBE_TILE,
  LK_COUNT = PTO__SET_COUNT
};
_Static_assert(sizeof label_keys / sizeof label_keys[0] == LK_COUNT,
               "label_keys lists a label's settings in PTO__SET_* order");

const char *pto__config_setting_name(int setting) {
  return setting >= 0 && setting < LK_COUNT ? label_keys[setting] : "?";
}

static pto_status parse_label(const load_ctx *x, pto_config *c,
                              const char *label, json_t *v) {
  const char *key;
  json_t *val;
  char vb[64], lpath[160], path[192];
  path_join(lpath, sizeof lpath, "labels", label);
  if (!label[0])
    return load_fail(x, PTO_ECONFIG, "labels", "empty label");
  if (!json_is_object(v))
    return load_fail(x, PTO_ECONFIG, lpath, "expected an object, got %s",
                     describe(v, vb, sizeof vb));
  json_object_foreach(v, key, val) {
    int i = key_index(key, label_keys, LK_COUNT);
    pto_status st;
    config_label *l;
    int64_t value = 0;
    uint32_t t[3] = {0, 0, 0};
    path_join(path, sizeof path, lpath, key);
    if (i < 0) { /* list what a label may set */
      const char *allowed[LK_COUNT];
      size_t n = 0;
      for (int j = 0; j < LK_COUNT; j++)
        if (j >= PTO_KNOB_COUNT || pto__knob_per_label((pto_knob)j))
          allowed[n++] = label_keys[j];
      return unknown_key(x, path, allowed, n);
    }
    if (i < PTO_KNOB_COUNT && !pto__knob_per_label((pto_knob)i))
      return load_fail(x, PTO_ECONFIG, path, "%s",
                       pto__knob_not_per_label((pto_knob)i));
    if (i < PTO_KNOB_COUNT)
      st = parse_knob(x, path, (pto_knob)i, val, &value);
    else if (i == LK_VEC)
      st = parse_tile(x, path, val, 2, "[rows, cols]", t);
    else
      st = parse_tile(x, path, val, 3, "[m, n, k]", t);
    if (st != PTO_OK)
      return st;
    l = pto__config_label_get(c, label);
    if (!l)
      return load_fail(x, PTO_ENOMEM, path, "out of memory");
    if (i < PTO_KNOB_COUNT) {
      l->knob[i] = value;
      l->knob_set |= UINT32_C(1) << i;
    } else if (i == LK_VEC) {
      l->tile.vec_rows = t[0];
      l->tile.vec_cols = t[1];
      l->tile_set |= TILE_VEC;
    } else {
      l->tile.cube_m = t[0];
      l->tile.cube_n = t[1];
      l->tile.cube_k = t[2];
      l->tile_set |= TILE_CUBE;
    }
  }
  return PTO_OK;
}

/* "stage_barriers": an array of label prefixes; it replaces the list. */
static pto_status parse_stages(const load_ctx *x, pto_config *c, json_t *v) {
  char vb[64], path[48], msg[128];
  size_t n = json_is_array(v) ? json_array_size(v) : 0;
  const char **list;
  pto_status st = PTO_OK;
  long bad;
  if (!json_is_array(v))
    return load_fail(x, PTO_ECONFIG, "stage_barriers",
                     "expected an array of label prefixes, got %s",
                     describe(v, vb, sizeof vb));
  if (n > UINT32_MAX / 2)
    return load_fail(x, PTO_ECONFIG, "stage_barriers", "too many stages");
  list = calloc(n + 1, sizeof *list);
  if (!list)
    return load_fail(x, PTO_ENOMEM, "stage_barriers", "out of memory");
  for (size_t i = 0; i < n && st == PTO_OK; i++) {
    json_t *e = json_array_get(v, i);
    snprintf(path, sizeof path, "stage_barriers[%zu]", i);
    if (!json_is_string(e))
      st = load_fail(x, PTO_ECONFIG, path,
                     "expected a label prefix (a string), got %s",
                     describe(e, vb, sizeof vb));
    else
      list[i] = json_string_value(e);
  }
  if (st == PTO_OK &&
      (bad = pto__stages_bad(list, (uint32_t)n, msg, sizeof msg)) >= 0) {
    snprintf(path, sizeof path, "stage_barriers[%ld]", bad);
    st = load_fail(x, PTO_ECONFIG, path, "%s", msg);
  }
  if (st == PTO_OK && pto__stages_set(c, list, (uint32_t)n))
    st = load_fail(x, PTO_ENOMEM, "stage_barriers", "out of memory");
  free(list);
  return st;
}

static const char *const root_keys[] = {"machine", "knobs", "labels",
                                        "stage_barriers"};

static pto_status apply_json(const load_ctx *x, pto_config *c, json_t *root) {
  const char *key, *lkey;
  json_t *val, *lval;
  char vb[64];
  if (!json_is_object(root))
    return load_fail(x, PTO_ECONFIG, "top level", "expected an object, got %s",
                     describe(root, vb, sizeof vb));
  json_object_foreach(root, key, val) {
    pto_status st = PTO_OK;
    switch (key_index(key, root_keys, 4)) {
    case 0: {
      pto_machine m;
      st = parse_machine(x, val, &c->machine, &m);
      if (st == PTO_OK)
        c->machine = m;
      break;
    }
    case 1:
      st = parse_knobs(x, val, c);
      break;
    case 2:
      if (!json_is_object(val))
        return load_fail(x, PTO_ECONFIG, "labels",
                         "expected an object of labels, got %s",
                         describe(val, vb, sizeof vb));
      json_object_foreach(val, lkey, lval) {
        st = parse_label(x, c, lkey, lval);
        if (st != PTO_OK)
          break;
      }
      break;
    case 3:
      st = parse_stages(x, c, val);
      break;
    default:
      return unknown_key(x, key, root_keys, 4);
    }
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

/* Applies root to a copy of c, then commits: c is unchanged on error. */
static pto_status config_apply(pto_config *c, json_t *root, const char *src) {
  load_ctx x = {&c->err, src};
  pto_config *tmp = pto_config_clone(c);
  pto_status st;
  if (!tmp)
    return pto__error_set(&c->err, PTO_ENOMEM, "out of memory");
  st = apply_json(&x, tmp, root);
  if (st != PTO_OK) {
    pto_config_free(tmp);
    return st;
  }
  pto__config_commit(c, tmp);
  return PTO_OK;
}

/* Duplicate keys are errors too: a repeated knob is most likely a typo. */
#define LOAD_FLAGS JSON_REJECT_DUPLICATES

pto_status pto_config_load_string(pto_config *c, const char *json) {
  json_error_t je;
  json_t *root;
  pto_status st;
  if (!c)
    return PTO_EINVAL;
  pto__error_clear(&c->err);
  if (!json)
    return pto__error_set(&c->err, PTO_EINVAL,
                          "pto_config_load_string: json is NULL");
  root = json_loads(json, LOAD_FLAGS, &je);
  if (!root)
    return pto__error_set(&c->err, PTO_ECONFIG,
                          "<string>:%d:%d: syntax error: %s", je.line,
                          je.column, je.text);
  st = config_apply(c, root, NULL);
  json_decref(root);
  return st;
}

pto_status pto_config_load_file(pto_config *c, const char *path) {
  json_error_t je;
  json_t *root;
  FILE *f;
  pto_status st;
  char eb[128];
  int read_err;
  if (!c)
    return PTO_EINVAL;
  pto__error_clear(&c->err);
  if (!path)
    return pto__error_set(&c->err, PTO_EINVAL,
                          "pto_config_load_file: path is NULL");
  f = fopen(path, "rb");
  if (!f)
    return pto__error_set(&c->err, PTO_EIO, "%s: cannot open: %s", path,
                          strerror_r(errno, eb, sizeof eb));
  errno = 0;
  root = json_loadf(f, LOAD_FLAGS, &je);
  read_err = ferror(f) ? (errno ? errno : EIO) : 0;
  fclose(f);
  if (read_err) {
    json_decref(root);
    return pto__error_set(&c->err, PTO_EIO, "%s: cannot read: %s", path,
                          strerror_r(read_err, eb, sizeof eb));
  }
  if (!root)
    return pto__error_set(&c->err, PTO_ECONFIG, "%s:%d:%d: syntax error: %s",
                          path, je.line, je.column, je.text);
  st = config_apply(c, root, path);
  json_decref(root);
  return st;
}

/* ---- JSON out ------------------------------------------------------------ */

/* Bytes as "512KiB" when a whole number of KiB/MiB/GiB, else an integer. */
static json_t *size_json(size_t n) {
  static const struct {
    size_t mult;
    const char *unit;
  } units[] = {{GIB, "GiB"}, {MIB, "MiB"}, {KIB, "KiB"}};
  char buf[48];
  for (size_t i = 0; n && i < sizeof units / sizeof units[0]; i++)
    if (n % units[i].mult == 0) {
      snprintf(buf, sizeof buf, "%zu%s", n / units[i].mult, units[i].unit);
      return json_string(buf);
    }
  if (n > (size_t)LLONG_MAX) { /* beyond json_int_t */
    snprintf(buf, sizeof buf, "%zu", n);
    return json_string(buf);
  }
  return json_integer((json_int_t)n);
}

static json_t *knob_json(pto_knob k, int64_t v) {
  const char *const *names = pto__knob_value_names(k);
  if (names) {
    for (int64_t i = 0; names[i]; i++)
      if (i == v)
        return json_string(names[i]);
  }
  if (pto__knob_is_flag(k))
    return json_boolean(v);
  return json_integer((json_int_t)v);
}

static json_t *machine_json(const pto_machine *m) {
  json_t *o = json_object(), *mem = json_object();
  int bad = !o || !mem;
  bad |= json_object_set_new(o, "name", json_string(m->name));
  bad |= json_object_set_new(o, "cube_workers",
                             json_integer(m->workers[PTO_CORE_CUBE]));
  bad |= json_object_set_new(o, "vector_workers",
                             json_integer(m->workers[PTO_CORE_VECTOR]));
  bad |= json_object_set_new(o, "shared", json_boolean(m->shared));
  for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
    bad |= json_object_set_new(mem, pto_mem_level_name((pto_mem_level)l),
                               size_json(m->mem[l]));
  bad |= json_object_set_new(o, "memory", mem);
  json_t *panel = json_pack("[ii]", (int)m->panel[0], (int)m->panel[1]);
  bad |= !panel || json_object_set_new(o, "panel", panel);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *tile_json(const uint32_t *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, json_integer(v[i]))) {
      json_decref(a);
      return NULL;
    }
  return a;
}

static json_t *label_json(const config_label *l) {
  json_t *o = json_object();
  int bad = !o;
  for (int k = 0; k < PTO_KNOB_COUNT; k++)
    if (l->knob_set & (UINT32_C(1) << k))
      bad |= json_object_set_new(o, pto_knob_name(k),
                                 knob_json((pto_knob)k, l->knob[k]));
  if (l->tile_set & TILE_VEC) {
    uint32_t v[2] = {l->tile.vec_rows, l->tile.vec_cols};
    bad |= json_object_set_new(o, "vec_tile", tile_json(v, 2));
  }
  if (l->tile_set & TILE_CUBE) {
    uint32_t v[3] = {l->tile.cube_m, l->tile.cube_n, l->tile.cube_k};
    bad |= json_object_set_new(o, "cube_tile", tile_json(v, 3));
  }
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

char *pto_config_to_json(const pto_config *c) {
  json_t *root, *kn, *labels;
  char *out = NULL;
  size_t n;
  int bad;
  if (!c)
    return NULL;
  root = json_object();
  kn = json_object();
  labels = json_object();
  bad = !root || !kn || !labels;
  for (int k = 0; k < PTO_KNOB_COUNT; k++)
    bad |= json_object_set_new(kn, pto_knob_name(k),
                               knob_json((pto_knob)k, c->knob[k]));
  for (uint32_t i = 0; i < c->n_labels; i++)
    bad |= json_object_set_new(labels, c->labels[i].name,
                               label_json(&c->labels[i]));
  bad |= json_object_set_new(root, "machine", machine_json(&c->machine));
  bad |= json_object_set_new(root, "knobs", kn);
  bad |= json_object_set_new(root, "labels", labels);
  if (c->n_stages) { /* only when set: configs without stages read as before */
    json_t *st = json_array();
    bad |= !st;
    for (uint32_t i = 0; st && i < c->n_stages; i++)
      bad |= json_array_append_new(st, json_string(c->stages[i]));
    bad |= json_object_set_new(root, "stage_barriers", st);
  }
  if (bad)
    goto done;
  n = json_dumpb(root, NULL, 0, JSON_INDENT(2));
  if (!n)
    goto done;
  out = malloc(n + 1);
  if (!out)
    goto done;
  if (json_dumpb(root, out, n, JSON_INDENT(2)) != n) {
    free(out);
    out = NULL;
    goto done;
  }
  out[n] = '\0';
done:
  json_decref(root);
  return out;
}
