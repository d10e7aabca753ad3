#!/usr/bin/env bash
# kernels_get latency, cold then warm (cached; online and offline), in one run:
#   bash bench/get/run.sh BUILD_DIR [--warm N] [--backend cpu|...]
# BUILD_DIR is a configured and built tree of this project (its
# lib/libkernels.so and variants/img2gray/build/ are used). Starts the local
# Hub fixture (tests/hub) on a fresh root, publishes img2gray there
# (scripts/publish-img2gray.py) and fetches kernels-community/img2gray at
# branch v1 into a fresh cache, from a C program with libtorch loaded.
# Default backend: cpu (the torch CPU variant); pass --backend "" to let
# libkernels detect it.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=$(cd "${1:?build dir}" && pwd)
shift
backend=cpu
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
cmake --build "$build" --target kernels img2gray_variants >/dev/null
cc -std=c11 -O2 -Wall -Wextra -I"$src/include" "$src/bench/get/get_bench.c" \
  -L"$build/lib" -lkernels -ldl -Wl,-rpath,"$build/lib" -o "$build/get_bench"

tmp=$(mktemp -d /tmp/bench-get.XXXXXX)
trap 'kill "$hub_pid" 2>/dev/null || true; wait "$hub_pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
source "$src/bench/get/hub.sh"
img2gray_hub "$src" "$build" "$tmp"  # sets hub_pid, endpoint, torch_lib

echo "# bench/get: kernels_get latency, libkernels $(git -C "$src" describe --always --dirty 2>/dev/null || echo '?')," \
  "local Hub fixture ($endpoint), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# C host with libtorch loaded ($torch_lib), backend ${backend:-detected}"
env HF_ENDPOINT="$endpoint" HF_HUB_CACHE="$tmp/cache" HF_HUB_OFFLINE=0 HF_TOKEN= NO_PROXY=127.0.0.1,localhost \
  "$build/get_bench" kernels-community/img2gray v1 --torch-lib "$torch_lib" \
  ${backend:+--backend "$backend"} "${args[@]}"
