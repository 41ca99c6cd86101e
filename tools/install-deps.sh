#!/usr/bin/env bash
# Installs what PTO needs from Debian's packages. Idempotent: installs only
# what is missing, and nothing when every package is present.
#
#   bash tools/install-deps.sh          the build and the main job (pto-bench
#                                       and its PyTorch and OpenBLAS peers)
#   bash tools/install-deps.sh --test   that, and what only the tests and CI
#                                       need (Criterion, clang and the
#                                       fuzzing runtimes, chromium, node)
set -euo pipefail

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
}

test_deps=0
for a in "$@"; do
  case "$a" in
    --test) test_deps=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install-deps: unknown option '$a'" >&2; usage >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config git
  libuv1-dev      # threads, semaphores, clock, event-loop completion
  libhwloc-dev    # topology and pinning
  libudev-dev     # -ludev: hwloc.pc's Libs.private, so `pkg-config --static pto` links
  libjansson-dev  # JSON config and dumps
  libxxhash-dev   # structural hashing of subgraphs
  libopenblas-dev # pto-bench gemm's peer (loaded at run time)
  python3-numpy python3-torch # pto-bench's PyTorch peer (tools/pto_bench_torch.py)
  libopenmpi-dev openmpi-bin  # scale-out over MPI ranks (pto/comm.h, mpirun)
)
if [ "$test_deps" = 1 ]; then
  packages+=(
    libcriterion-dev  # the test suites
    python3           # tools/docs_check.py, the checked docs build
    graphviz          # pto-trace graph: stage dumps to SVG (tools tests)
    chromium          # the swimlane viewer's browser test (headless)
    fonts-dejavu-core # a font for the page the browser test draws
    clang             # the libFuzzer targets (tests/fuzz, -DPTO_FUZZ=ON), .ci/run's clang build
    libclang-rt-14-dev # libFuzzer and the sanitizer runtimes for clang 14
    llvm-14           # llvm-symbolizer: fuzzer and sanitizer stacks with lines
  )
  # the browser test's driver (playwright-core, from npm): Debian's node and
  # npm unless a node is already installed (e.g. NodeSource's, whose nodejs
  # package carries npm and conflicts with Debian's)
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
