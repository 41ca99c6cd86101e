/* Temporary and saved directories of named arrays. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/files.h"

char *bench_tmpdir_new(const char *tag) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base)
    base = "/tmp";
  size_t n = strlen(base) + strlen(tag) + 32;
  char *path = malloc(n);
  if (!path) {
    fprintf(stderr, "pto-bench %s: out of memory\n", tag);
    return NULL;
  }
  snprintf(path, n, "%s/pto-bench-%s-XXXXXX", base, tag);
  if (!mkdtemp(path)) {
    fprintf(stderr, "pto-bench %s: cannot create a temporary directory %s: %s\n",
            tag, path, strerror(errno));
    free(path);
    return NULL;
  }
  return path;
}

void bench_tmpdir_free(char *path) {
  if (!path)
    return;
  DIR *d = opendir(path);
  if (d) {
    struct dirent *de;
    char f[4096];
    while ((de = readdir(d))) {
      struct stat st;
      if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
          bench_path(f, sizeof f, path, de->d_name) || lstat(f, &st) ||
          !S_ISREG(st.st_mode))
        continue;
      unlink(f);
    }
    closedir(d);
  }
  rmdir(path);
  free(path);
}

int bench_path(char *buf, size_t size, const char *dir, const char *name) {
  int n = snprintf(buf, size, "%s/%s", dir, name);
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

int bench_mkdirs(const char *path, char *err, size_t err_size) {
  char p[4096];
  size_t n = strlen(path);
  if (!n || n >= sizeof p) {
    snprintf(err, err_size, "bad directory name '%s'", path);
    return -1;
  }
  memcpy(p, path, n + 1);
  for (char *s = p + 1;; s++) {
    char c = *s;
    if (c != '/' && c)
      continue;
    *s = 0;
    struct stat st;
    if (mkdir(p, 0777) && errno != EEXIST) {
      snprintf(err, err_size, "cannot create %s: %s", p, strerror(errno));
      return -1;
    }
    if (stat(p, &st) || !S_ISDIR(st.st_mode)) {
      snprintf(err, err_size, "%s is not a directory", p);
      return -1;
    }
    if (!c)
      return 0;
    *s = c;
    while (s[1] == '/')
      s++;
  }
}

size_t bench_array_count(const bench_array *a) {
  size_t n = 1;
  for (int d = 0; d < a->ndim; d++)
    n *= (size_t)a->shape[d];
  return n;
}

int bench_write_arrays(const char *dir, const bench_array *arrays, size_t n,
                       const json_t *meta, char *err, size_t err_size) {
  char path[4096], file[256];
  if (bench_mkdirs(dir, err, err_size))
    return -1;
  for (size_t i = 0; i < n; i++) {
    const bench_array *a = &arrays[i];
    snprintf(file, sizeof file, "%s.npy", a->name);
    if (bench_path(path, sizeof path, dir, file)) {
      snprintf(err, err_size, "path too long: %s/%s", dir, file);
      return -1;
    }
    if (bench_npy_save(path, a->dtype, a->ndim, a->shape, a->data, err,
                       err_size))
      return -1;
  }
  if (meta) {
    if (bench_path(path, sizeof path, dir, "meta.json")) {
      snprintf(err, err_size, "path too long: %s/meta.json", dir);
      return -1;
    }
    if (json_dump_file(meta, path, JSON_INDENT(1) | JSON_SORT_KEYS |
                                       JSON_REAL_PRECISION(17))) {
      snprintf(err, err_size, "%s: cannot write: %s", path, strerror(errno));
      return -1;
    }
  }
  return 0;
}
