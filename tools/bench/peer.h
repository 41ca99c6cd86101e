/* tools/bench/peer.h (internal to pto-bench): a Python peer (PyTorch) run
 * by the harness in the same invocation. The harness writes the inputs as
 * .npy files and meta.json into a private directory, runs
 *
 *   PYTHON pto_bench_torch.py WORKLOAD DIR --threads N --repeats R
 *          --warmup W [--quiet]
 *
 * which times every variant it has for WORKLOAD on those inputs, writes the
 * fastest variant's outputs as .npy files into DIR and DIR/result.json:
 *   {"workload": ..., "torch": "1.13.1", "threads": N, "best": "chunked",
 *    "variants": {"chunked": {"times_ms": [...], "median_ms": x},
 *                 "naive": {"times_ms": [...], "median_ms": y},
 *                 "other": {"skipped": "why"}},
 *    "outputs": ["indices", "values"]}
 * The script's stdout and stderr both go to the harness's stderr (stdout
 * may be carrying --json). */
#ifndef PTO_TOOLS_BENCH_PEER_H
#define PTO_TOOLS_BENCH_PEER_H

#include <jansson.h>
#include <stddef.h>

#define BENCH_PEER_SCRIPT "pto_bench_torch.py"

typedef struct bench_peer {
  char python[1024];  /* the interpreter that imports torch and numpy */
  char torch[64];     /* its torch.__version__ */
  char script[4096];  /* the peer script */
} bench_peer;

/* Finds the peer: the interpreter `python` alone when not NULL (--python),
 * else /usr/bin/python3 (Debian's, with python3-torch), then python3 on
 * PATH, the first that imports torch and numpy; and the script: `script`
 * when not NULL, else BENCH_PEER_SCRIPT beside this executable (the build
 * tree) or in ../share/pto/ from it (installed). 0, or -1 with one line in
 * why saying what was tried and what failed. */
int bench_peer_find(const char *python, const char *script, bench_peer *p,
                    char *why, size_t why_size);

/* Runs the script on dir (above); returns dir/result.json parsed, or NULL
 * after printing why on stderr ("pto-bench <cmd>: ..."). */
json_t *bench_peer_run(const char *cmd, const bench_peer *p,
                       const char *workload, const char *dir, int threads,
                       int repeats, int warmup, int quiet);

#endif /* PTO_TOOLS_BENCH_PEER_H */
