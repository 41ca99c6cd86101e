/* tests/spawn.h: running a helper program with extra environment
 * variables and reading what it printed, for the tests of environment
 * variables (read once per process) and of the command-line tools. */
#ifndef PTO_TESTS_SPAWN_H
#define PTO_TESTS_SPAWN_H

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct spawned {
  int status;      /* exit status, or -1 when it did not exit */
  char *out, *err; /* what it printed (malloc'ed, NUL-terminated) */
} spawned;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = s ? fread(s, 1, (size_t)n, f) : 0;
  if (s)
    s[got] = '\0';
  fclose(f);
  return s;
}

/* Runs argv[0] (a path) with env (NAME=VALUE strings, NULL-terminated)
 * added to this process's environment; unset: names to remove. */
static spawned run_with(char *const *argv, char *const *env,
                        const char *const *unset) {
  spawned r = {-1, NULL, NULL};
  char out_path[] = "/tmp/pto_spawn_out_XXXXXX",
       err_path[] = "/tmp/pto_spawn_err_XXXXXX";
  int fo = mkstemp(out_path), fe = mkstemp(err_path);
  size_t n_env = 0, n_add = 0;
  while (environ[n_env])
    n_env++;
  while (env && env[n_add])
    n_add++;
  char **envp = calloc(n_env + n_add + 1, sizeof *envp);
  size_t k = 0;
  for (size_t i = 0; i < n_env; i++) {
    int drop = 0;
    for (size_t j = 0; unset && unset[j]; j++) {
      size_t len = strlen(unset[j]);
      drop |= !strncmp(environ[i], unset[j], len) && environ[i][len] == '=';
    }
    for (size_t j = 0; j < n_add; j++) { /* replaced by env */
      const char *eq = strchr(env[j], '=');
      size_t len = eq ? (size_t)(eq - env[j]) : strlen(env[j]);
      drop |= !strncmp(environ[i], env[j], len) && environ[i][len] == '=';
    }
    if (!drop)
      envp[k++] = environ[i];
  }
  for (size_t j = 0; j < n_add; j++)
    envp[k++] = env[j];
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fo, 1);
  posix_spawn_file_actions_adddup2(&fa, fe, 2);
  pid_t pid;
  if (fo >= 0 && fe >= 0 &&
      posix_spawn(&pid, argv[0], &fa, NULL, argv, envp) == 0) {
    int st;
    if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
      r.status = WEXITSTATUS(st);
  }
  posix_spawn_file_actions_destroy(&fa);
  free(envp);
  close(fo);
  close(fe);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  unlink(out_path);
  unlink(err_path);
  return r;
}

static void spawned_free(spawned *r) {
  free(r->out);
  free(r->err);
}

#endif /* PTO_TESTS_SPAWN_H */
