/* NumPy .npy files (format: numpy.lib.format): a magic string, a version,
 * the length of a header, the header (a Python dict literal with 'descr',
 * 'fortran_order' and 'shape', padded with spaces and ended by a newline),
 * then the raw elements. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/npy.h"

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const struct {
  const char *descr, *name;
  size_t size;
} dtypes[BENCH_DTYPE_COUNT] = {
    [BENCH_F32] = {"<f4", "float32", 4},   [BENCH_I32] = {"<i4", "int32", 4},
    [BENCH_F64] = {"<f8", "float64", 8},   [BENCH_I64] = {"<i8", "int64", 8},
    [BENCH_BF16] = {"<u2", "bfloat16", 2},
};

const char *bench_dtype_name(bench_dtype t) {
  return (unsigned)t < BENCH_DTYPE_COUNT ? dtypes[t].name : "?";
}

size_t bench_dtype_size(bench_dtype t) {
  return (unsigned)t < BENCH_DTYPE_COUNT ? dtypes[t].size : 0;
}

static void fail(char *err, size_t size, const char *path, const char *fmt,
                 ...) __attribute__((format(printf, 4, 5)));
static void fail(char *err, size_t size, const char *path, const char *fmt,
                 ...) {
  if (!err || !size)
    return;
  int n = snprintf(err, size, "%s: ", path);
  if (n < 0 || (size_t)n >= size)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err + n, size - (size_t)n, fmt, ap);
  va_end(ap);
}

void bench_npy_shape_str(int ndim, const int64_t *shape, char *buf,
                         size_t size) {
  size_t o = 0;
  int n = snprintf(buf, size, "(");
  o = n > 0 ? (size_t)n : 0;
  for (int i = 0; i < ndim && o < size; i++) {
    n = snprintf(buf + o, size - o, "%s%lld", i ? ", " : "",
                 (long long)shape[i]);
    o += n > 0 ? (size_t)n : 0;
  }
  if (o < size)
    snprintf(buf + o, size - o, ndim == 1 ? ",)" : ")");
}

/* count of elements, or 0 with *ok = 0 on a bad or overflowing shape */
static size_t shape_count(int ndim, const int64_t *shape, int *ok) {
  size_t c = 1;
  *ok = ndim >= 0 && ndim <= BENCH_NPY_MAX_DIMS;
  for (int i = 0; i < ndim && *ok; i++) {
    if (shape[i] < 0 || (shape[i] && c > SIZE_MAX / 8 / (size_t)shape[i]))
      *ok = 0;
    else
      c *= (size_t)shape[i];
  }
  return *ok ? c : 0;
}

int bench_npy_save(const char *path, bench_dtype t, int ndim,
                   const int64_t *shape, const void *data, char *err,
                   size_t err_size) {
  int ok;
  size_t count = shape_count(ndim, shape, &ok);
  if ((unsigned)t >= BENCH_DTYPE_COUNT || !ok || (count && !data)) {
    fail(err, err_size, path, "bad dtype, shape or data");
    return -1;
  }
  char shp[256], hdr[512];
  bench_npy_shape_str(ndim, shape, shp, sizeof shp);
  int n = snprintf(hdr, sizeof hdr,
                   "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                   dtypes[t].descr, shp);
  /* magic (6) + version (2) + length (2) + header + '\n': a multiple of 64 */
  size_t len = (size_t)n + 1, total = (10 + len + 63) / 64 * 64;
  if (total - 10 > sizeof hdr - 1) {
    fail(err, err_size, path, "header too long");
    return -1;
  }
  memset(hdr + n, ' ', total - 10 - (size_t)n);
  hdr[total - 11] = '\n';
  len = total - 10;
  unsigned char pre[10];
  memcpy(pre, magic, 6);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)(len & 0xff);
  pre[9] = (unsigned char)(len >> 8);
  FILE *f = fopen(path, "wb");
  if (!f) {
    fail(err, err_size, path, "%s", strerror(errno));
    return -1;
  }
  size_t bytes = count * dtypes[t].size;
  int bad = fwrite(pre, 1, 10, f) != 10 || fwrite(hdr, 1, len, f) != len ||
            (bytes && fwrite(data, 1, bytes, f) != bytes);
  int e = errno;
  if (fclose(f) && !bad) {
    bad = 1;
    e = errno;
  }
  if (bad) {
    fail(err, err_size, path, "write failed: %s", strerror(e));
    return -1;
  }
  return 0;
}

/* ---- reading ---------------------------------------------------------------- */

/* The value after 'key': in the header dict (either quote style), or NULL. */
static const char *dict_value(const char *h, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = h; (p = strpbrk(p, "'\"")); p++) {
    if (!strncmp(p + 1, key, kl) && p[1 + kl] == p[0]) {
      const char *v = p + 2 + kl;
      while (isspace((unsigned char)*v))
        v++;
      if (*v != ':')
        return NULL;
      v++;
      while (isspace((unsigned char)*v))
        v++;
      return v;
    }
  }
  return NULL;
}

static int parse_header(const char *path, const char *h, bench_npy *a,
                        char *err, size_t err_size) {
  const char *d = dict_value(h, "descr"), *fo = dict_value(h, "fortran_order"),
             *s = dict_value(h, "shape");
  if (!d || !fo || !s || (*d != '\'' && *d != '"') || *s != '(') {
    fail(err, err_size, path, "not an .npy header: %.80s", h);
    return -1;
  }
  char descr[16];
  size_t dl = strcspn(d + 1, "'\"");
  if (dl >= sizeof descr)
    dl = sizeof descr - 1;
  memcpy(descr, d + 1, dl);
  descr[dl] = 0;
  int t = 0;
  while (t < BENCH_DTYPE_COUNT && strcmp(descr, dtypes[t].descr))
    t++;
  if (t == BENCH_DTYPE_COUNT) {
    fail(err, err_size, path, "dtype '%s' is %s", descr,
         descr[0] == '>' ? "big-endian"
                         : "not one of '<f4' '<i4' '<f8' '<i8' '<u2'");
    return -1;
  }
  if (strncmp(fo, "False", 5)) {
    fail(err, err_size, path, "Fortran order is not supported");
    return -1;
  }
  a->dtype = (bench_dtype)t;
  a->ndim = 0;
  const char *p = s + 1;
  for (;;) {
    while (isspace((unsigned char)*p))
      p++;
    if (*p == ')')
      break;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || a->ndim == BENCH_NPY_MAX_DIMS) {
      fail(err, err_size, path, "bad shape %.40s", s);
      return -1;
    }
    a->shape[a->ndim++] = v;
    p = end;
    while (isspace((unsigned char)*p))
      p++;
    if (*p == ',')
      p++;
    else if (*p != ')') {
      fail(err, err_size, path, "bad shape %.40s", s);
      return -1;
    }
  }
  int ok;
  a->count = shape_count(a->ndim, a->shape, &ok);
  if (!ok) {
    fail(err, err_size, path, "shape too large");
    return -1;
  }
  return 0;
}

/* Opens path and reads its header into a (no data); the stream stands at
 * the first element. NULL on failure (err set). */
static FILE *open_npy(const char *path, bench_npy *a, char *err,
                      size_t err_size) {
  memset(a, 0, sizeof *a);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fail(err, err_size, path, "%s", strerror(errno));
    return NULL;
  }
  unsigned char pre[12];
  char *h = NULL;
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, magic, 6)) {
    fail(err, err_size, path, "not an .npy file (no \\x93NUMPY magic)");
    goto bad;
  }
  size_t len;
  if (pre[6] == 1) {
    if (fread(pre + 8, 1, 2, f) != 2)
      goto short_read;
    len = (size_t)pre[8] | (size_t)pre[9] << 8;
  } else if (pre[6] == 2 || pre[6] == 3) {
    if (fread(pre + 8, 1, 4, f) != 4)
      goto short_read;
    len = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
          (size_t)pre[11] << 24;
  } else {
    fail(err, err_size, path, ".npy version %u.%u is not supported", pre[6],
         pre[7]);
    goto bad;
  }
  if (len > (1u << 20) || !(h = malloc(len + 1)))
    goto short_read;
  if (fread(h, 1, len, f) != len)
    goto short_read;
  h[len] = 0;
  if (parse_header(path, h, a, err, err_size))
    goto bad;
  free(h);
  return f;
short_read:
  fail(err, err_size, path, "truncated header");
bad:
  free(h);
  fclose(f);
  return NULL;
}

static int read_data(FILE *f, const char *path, const bench_npy *a, void *data,
                     char *err, size_t err_size) {
  size_t bytes = a->count * dtypes[a->dtype].size;
  if (bytes && fread(data, 1, bytes, f) != bytes) {
    fail(err, err_size, path, "truncated: %zu bytes of data expected", bytes);
    return -1;
  }
  return 0;
}

int bench_npy_load(const char *path, bench_npy *a, char *err,
                   size_t err_size) {
  FILE *f = open_npy(path, a, err, err_size);
  if (!f)
    return -1;
  size_t bytes = a->count * dtypes[a->dtype].size;
  a->data = malloc(bytes ? bytes : 1);
  int rc = -1;
  if (!a->data)
    fail(err, err_size, path, "out of memory for %zu bytes", bytes);
  else
    rc = read_data(f, path, a, a->data, err, err_size);
  fclose(f);
  if (rc)
    bench_npy_free(a);
  return rc;
}

int bench_npy_load_into(const char *path, bench_dtype t, int ndim,
                        const int64_t *shape, void *data, char *err,
                        size_t err_size) {
  bench_npy a;
  FILE *f = open_npy(path, &a, err, err_size);
  if (!f)
    return -1;
  int same = a.dtype == t && a.ndim == ndim;
  for (int i = 0; same && i < ndim; i++)
    same = a.shape[i] == shape[i];
  int rc = -1;
  if (!same) {
    char got[128], want[128];
    bench_npy_shape_str(a.ndim, a.shape, got, sizeof got);
    bench_npy_shape_str(ndim, shape, want, sizeof want);
    fail(err, err_size, path, "holds %s %s, expected %s %s",
         bench_dtype_name(a.dtype), got, bench_dtype_name(t), want);
  } else {
    rc = read_data(f, path, &a, data, err, err_size);
  }
  fclose(f);
  return rc;
}

void bench_npy_free(bench_npy *a) {
  if (!a)
    return;
  free(a->data);
  a->data = NULL;
  a->count = 0;
}
