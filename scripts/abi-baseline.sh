#!/usr/bin/env bash
# usage: scripts/abi-baseline.sh [BUILD_DIR]   (default: build)
# Writes abi/libkernels.abi, the ABI baseline tests/python/test_abi.py
# compares every build with (abidiff), from the libkernels.so of a
# RelWithDebInfo or Debug build (abidw reads its DWARF), keeping only the
# types the public headers declare (abidw goes by a file's base name, so
# a lib/ header named like a public one slips through: the test leaves the
# opaque handles' structs out with abi/opaque-types.suppr). Rewrite it
# only with an intended ABI change: an addition, or an incompatible change
# in the same commit as a new SONAME (docs/api-stability.md).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
lib=$(readlink -f "$build/lib/libkernels.so")
command -v abidw >/dev/null || { echo "abidw is missing: run scripts/install-deps.sh (abigail-tools)" >&2; exit 1; }
abidw --no-corpus-path --no-comp-dir-path --short-locs --drop-private-types \
  --headers-dir "$here/include/kernels" --header-file "$here/include/kernels.h" \
  --out-file "$here/abi/libkernels.abi" "$lib"
echo "wrote abi/libkernels.abi from $lib"
