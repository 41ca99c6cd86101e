/* Finding and running the Python peer (bench/peer.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/files.h"
#include "bench/peer.h"

extern char **environ;

/* Runs argv (argv[0] searched on PATH when it has no '/'), stdin from
 * /dev/null. With out: stdout and stderr captured into out (NUL-ended,
 * truncated to size); without: both go to this process's stderr. Returns
 * the exit status, 127 when it could not start (errno in *err), or 128 +
 * the signal that ended it. */
static int spawn(const char *const argv[], char *out, size_t size,
                 int *err) {
  int fd[2] = {-1, -1};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (out) {
    if (pipe(fd)) {
      *err = errno;
      posix_spawn_file_actions_destroy(&fa);
      return 127;
    }
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 2);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
  } else {
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
  }
  pid_t pid;
  *err = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv,
                      environ);
  posix_spawn_file_actions_destroy(&fa);
  if (out) {
    close(fd[1]);
    size_t n = 0;
    char sink[4096];
    for (;;) { /* read all of it, keep what fits */
      char *dst = n + 1 < size ? out + n : sink;
      size_t room = n + 1 < size ? size - 1 - n : sizeof sink;
      ssize_t r = read(fd[0], dst, room);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        break;
      if (dst != sink)
        n += (size_t)r;
    }
    close(fd[0]);
    if (size)
      out[n < size ? n : size - 1] = 0;
  }
  if (*err)
    return 127;
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return 127;
  if (WIFEXITED(st))
    return WEXITSTATUS(st);
  return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* The last non-empty line of s, trimmed, into buf. */
static void last_line(const char *s, char *buf, size_t size) {
  const char *end = s + strlen(s);
  while (end > s && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
    end--;
  const char *b = end;
  while (b > s && b[-1] != '\n')
    b--;
  snprintf(buf, size, "%.*s", (int)(end - b), b);
}

/* 0 when py imports numpy and torch (version into p->torch), else -1 with
 * the reason in why. */
static int probe(const char *py, bench_peer *p, char *why, size_t size) {
  const char *argv[] = {py, "-c",
                  "import numpy, torch; print(torch.__version__)", NULL};
  char out[8192];
  int err = 0, rc = spawn(argv, out, sizeof out, &err);
  if (rc == 127 && err) {
    snprintf(why, size, "%s", strerror(err));
    return -1;
  }
  char line[256];
  last_line(out, line, sizeof line);
  if (rc) {
    snprintf(why, size, "%s", line[0] ? line : "failed");
    return -1;
  }
  snprintf(p->torch, sizeof p->torch, "%.63s", line);
  snprintf(p->python, sizeof p->python, "%s", py);
  return 0;
}

static int readable(const char *path) {
  return access(path, R_OK) == 0;
}

static int find_script(const char *script, bench_peer *p, char *why,
                       size_t size) {
  if (script) {
    if (!readable(script)) {
      snprintf(why, size, "peer script %s: %s", script, strerror(errno));
      return -1;
    }
    snprintf(p->script, sizeof p->script, "%s", script);
    return 0;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(why, size, "cannot find this executable (/proc/self/exe): %s",
             strerror(errno));
    return -1;
  }
  exe[n] = 0;
  const char *dir = dirname(exe);
  snprintf(p->script, sizeof p->script, "%s/" BENCH_PEER_SCRIPT, dir);
  if (readable(p->script))
    return 0;
  snprintf(p->script, sizeof p->script, "%s/../share/pto/" BENCH_PEER_SCRIPT,
           dir);
  if (readable(p->script))
    return 0;
  snprintf(why, size, "no %s beside %s or in %s/../share/pto",
           BENCH_PEER_SCRIPT, dir, dir);
  return -1;
}

int bench_peer_find(const char *python, const char *script, bench_peer *p,
                    char *why, size_t why_size) {
  memset(p, 0, sizeof *p);
  why[0] = 0;
  if (find_script(script, p, why, why_size))
    return -1;
  static const char *const dflt[] = {"/usr/bin/python3", "python3"};
  const char *const *cand = python ? &python : dflt;
  size_t n_cand = python ? 1 : 2, o = 0;
  for (size_t i = 0; i < n_cand; i++) {
    char r[512];
    if (!probe(cand[i], p, r, sizeof r))
      return 0;
    int k = snprintf(why + o, why_size - o, "%s%s: %s", i ? "; " : "",
                     cand[i], r);
    if (k > 0 && o + (size_t)k < why_size)
      o += (size_t)k;
  }
  return -1;
}

json_t *bench_peer_run(const char *cmd, const bench_peer *p,
                       const char *workload, const char *dir, int threads,
                       int repeats, int warmup, int quiet) {
  char thr[16], rep[16], wu[16];
  snprintf(thr, sizeof thr, "%d", threads);
  snprintf(rep, sizeof rep, "%d", repeats);
  snprintf(wu, sizeof wu, "%d", warmup);
  const char *argv[] = {p->python, p->script, workload, dir,
                        "--threads", thr, "--repeats", rep,
                        "--warmup", wu, quiet ? "--quiet" : NULL, NULL};
  int err = 0, rc = spawn(argv, NULL, 0, &err);
  if (rc) {
    if (rc == 127 && err)
      fprintf(stderr, "pto-bench %s: cannot run %s: %s\n", cmd, p->python,
              strerror(err));
    else
      fprintf(stderr, "pto-bench %s: the PyTorch peer (%s %s) failed: %s %d\n",
              cmd, p->python, p->script, rc > 128 ? "signal" : "exit status",
              rc > 128 ? rc - 128 : rc);
    return NULL;
  }
  char path[4096];
  json_error_t je;
  json_t *res = NULL;
  if (bench_path(path, sizeof path, dir, "result.json") ||
      !(res = json_load_file(path, 0, &je)))
    fprintf(stderr, "pto-bench %s: the PyTorch peer wrote no result: %s\n",
            cmd, res ? path : je.text);
  else if (!json_is_object(res) || !json_is_string(json_object_get(res, "best")) ||
           !json_is_object(json_object_get(res, "variants"))) {
    fprintf(stderr, "pto-bench %s: %s: no \"best\" or \"variants\"\n", cmd,
            path);
    json_decref(res);
    res = NULL;
  }
  return res;
}
