#!/usr/bin/env bash
# Builds and runs the cold-fetch benchmark against the local Hub fixture:
#   bash bench/fetch/run.sh BUILD_DIR [small_files] [large_files] [large_mib] [repeats]
# BUILD_DIR is a configured and built tree of this project (libkernels.a and
# the test support library are taken from it).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=$(cd "${1:?build dir}" && pwd)
shift
cmake --build "$build" --target kernels_static kernels_test_support >/dev/null
cc -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -I"$src/include" -I"$src/tests/support" \
  "$src/bench/fetch/fetch_bench.c" "$build/tests/libkernels_test_support.a" "$build/lib/libkernels.a" \
  $(pkg-config --libs libcurl libgit2 jansson libarchive libcrypto cmocka) -lpthread -ldl \
  -o "$build/fetch_bench"
KERNELS_SOURCE_DIR="$src" "$build/fetch_bench" "$@"
