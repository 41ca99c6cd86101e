#!/usr/bin/env bash
# Installs PTO's build and test dependencies from Debian's packages.
# Idempotent: does nothing when every package is already installed.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libuv1-dev      # threads, semaphores, clock, event-loop completion
  libhwloc-dev    # topology and pinning
  libudev-dev     # -ludev: hwloc.pc's Libs.private, so `pkg-config --static pto` links
  libjansson-dev  # JSON config and dumps
  libxxhash-dev   # structural hashing of subgraphs
  libcriterion-dev
  libopenblas-dev # pto-bench gemm's peer (loaded at run time)
  python3-numpy python3-torch # pto-bench indexer's peer (tools/pto_bench_torch.py)
  graphviz        # pto-trace graph: stage dumps to SVG
  chromium        # the swimlane viewer's browser test (headless)
  fonts-dejavu-core # a font for the page the browser test draws
  clang           # the libFuzzer targets (tests/fuzz, -DPTO_FUZZ=ON), .ci/run's clang build
  libclang-rt-14-dev # libFuzzer and the sanitizer runtimes for clang 14
  llvm-14         # llvm-symbolizer: fuzzer and sanitizer stacks with lines
)
# the browser test's driver (playwright-core, from npm): Debian's node and
# npm unless a node is already installed (e.g. NodeSource's, whose nodejs
# package carries npm and conflicts with Debian's)
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)

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
