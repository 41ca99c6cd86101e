#!/usr/bin/env bash
# Installs a PTO build into a temporary prefix, moves the install elsewhere
# (it must not depend on where it was put), and builds and runs
# tests/install/consumer.c against it four ways: pkg-config shared,
# pkg-config --static (libpto.a), find_package(pto) with pto::pto and with
# pto::pto_static. Checks that each binary uses the library it was meant to
# (the installed libpto.so, or none). Removes its temporary directory on any
# exit; the first failure stops it with a message and exit status 1.
#
#   tests/install/run.sh BUILD_DIR     (a configured and built tree)
set -euo pipefail

build=${1:?usage: tests/install/run.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pto-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "install test: FAILED: $*" >&2
  exit 1
}
step() { echo "-- install test: $*"; }

# Runs "$@" quietly; on failure shows its output and fails.
quiet() {
  local log=$tmp/log
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "$*"
  fi
}

step "cmake --install $build --prefix <tmp>/staged, then moved to <tmp>/prefix"
quiet cmake --install "$build" --prefix "$tmp/staged"
mv "$tmp/staged" "$tmp/prefix"
prefix=$tmp/prefix
pc=$(find "$prefix" -name pto.pc -path '*/pkgconfig/*' -print -quit)
[ -n "$pc" ] || fail "no pto.pc under the install"
for h in pto.h pto.hpp gemm.h softmax.h indexer.h runtime.h; do
  [ -f "$prefix/include/pto/$h" ] || fail "include/pto/$h is not installed"
done

# ---- pkg-config --------------------------------------------------------------
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir pto)
case "$(cd "$libdir" && pwd -P)/" in
"$(cd "$prefix" && pwd -P)/"*) ;;
*) fail "pkg-config's libdir $libdir is not in the install" ;;
esac
case "$(pkg-config --cflags pto)" in
*"$prefix/"*) ;;
*) fail "pkg-config --cflags pto does not point into the install: $(pkg-config --cflags pto)" ;;
esac

# Fails unless binary $1 loads libpto.so from the install ($2 = shared) or
# does not load it at all ($2 = static).
check_linkage() {
  local bin=$1 kind=$2 lib
  lib=$(ldd "$bin" | awk '/libpto\.so/ {print $3}')
  if [ "$kind" = static ]; then
    [ -z "$lib" ] || fail "$bin is meant to be static but loads $lib"
  else
    [ -n "$lib" ] || fail "$bin does not load libpto.so"
    [ "$(cd "$(dirname "$lib")" && pwd -P)" = "$(cd "$libdir" && pwd -P)" ] ||
      fail "$bin loads $lib, not the install's"
  fi
}

run() {
  local bin=$1 kind=$2
  check_linkage "$bin" "$kind"
  "$bin" || fail "$(basename "$bin") exited with status $?"
}

step "pkg-config pto (shared)"
quiet "$cc" -std=c11 -o "$tmp/pc_shared" "$here/consumer.c" \
  $(pkg-config --cflags pto) $(pkg-config --libs pto) -Wl,-rpath,"$libdir" -lm
run "$tmp/pc_shared" shared

# --static adds the private dependencies (libuv, hwloc and what hwloc.pc
# needs, jansson, xxhash); pkg-config cannot choose the archive over the
# shared library it finds beside it, so -lpto becomes -l:libpto.a.
step "pkg-config --static pto (libpto.a)"
static_libs="$(pkg-config --static --libs pto) "
static_libs=${static_libs//-lpto /-l:libpto.a }
case " $static_libs " in
*" -l:libpto.a "*) ;;
*) fail "no -lpto to replace in: $(pkg-config --static --libs pto)" ;;
esac
quiet "$cc" -std=c11 -o "$tmp/pc_static" "$here/consumer.c" \
  $(pkg-config --cflags pto) $static_libs -lm
run "$tmp/pc_static" static

# ---- find_package(pto) ------------------------------------------------------
step "find_package(pto): pto::pto and pto::pto_static"
quiet cmake -S "$here" -B "$tmp/cmake" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix"
quiet cmake --build "$tmp/cmake"
run "$tmp/cmake/consumer_shared" shared
run "$tmp/cmake/consumer_static" static

step "passed"
