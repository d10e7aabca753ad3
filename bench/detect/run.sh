#!/usr/bin/env bash
# Builds bench/detect against a build tree and runs it: what system
# detection costs in fresh processes (see detect_bench.c).
#   bash bench/detect/run.sh BUILD_DIR [runs]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?build dir}" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -o "$out/detect_bench" "$here/bench/detect/detect_bench.c" -I"$here/include" -L"$build/lib" -lkernels -ldl \
  -Wl,-rpath,"$build/lib"
"$out/detect_bench" "${2:-7}"
