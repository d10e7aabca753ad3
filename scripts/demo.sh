#!/usr/bin/env bash
# The README's first command: set up a fresh machine, build what the main
# job needs, and run it on its embedded default: a local Hub on 127.0.0.1
# serving the bundled img2gray kernel (built here into Hub variants,
# published as v1.0.0 v1.1.0 v1.1.2 v2.0.0 with branches main v1 v2), then
# examples/img2gray_tvm_ffi.c, a plain C host (no torch, no Python),
# fetching it with kernels_get(">=1.1.2,<2") and converting
# examples/data/testcard.png to gray, twice (the second run from the
# cache); then the same from examples/img2gray_torch.cpp, a C++ host with
# libtorch and no Python.
#
# usage: scripts/demo.sh [--build-dir DIR] [--no-build]
#   --build-dir DIR  build into DIR (default: build); the output and the
#                    kernel cache go to DIR/demo/
#   --no-build       use what DIR holds: no install-deps, configure or build
#                    (the tests run the demo this way on their own build)
#
# Only the library, the CLI, the examples and the img2gray variants are
# built (the tests are scripts/test.sh's job), the CUDA variants only on a
# machine with a GPU. The cache (DIR/demo/cache) stays between invocations
# and the Hub's commits are the same each time (tests/hub/publish.py fixes
# their dates), so a second invocation loads everything from the cache.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build=build
do_build=1
cuda=OFF
if nvidia-smi -L >/dev/null 2>&1; then cuda=AUTO; fi
while [ $# -gt 0 ]; do
  case $1 in
  --build-dir) build=${2:?--build-dir needs a folder}; shift 2 ;;
  --no-build) do_build=0; shift ;;
  -h | --help) sed -n '12,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "demo.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
  esac
done

if [ $do_build = 1 ]; then
  bash scripts/install-deps.sh
  source scripts/venv.sh
  echo "== configure and build $build/ (the library, the CLI, the examples, the img2gray variants; CUDA: $cuda)"
  start=$(date +%s)
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKERNELS_BUILD_TESTS=OFF -DKERNELS_BUILD_EXAMPLES=ON \
    -DIMG2GRAY_CUDA=$cuda -DPython3_EXECUTABLE="$kernels_python" >/dev/null
  targets=(kernels_cli img2gray_repo_variants)
  avail=$(cmake --build "$build" --target help)
  for t in kernels_img2gray_tvm_ffi kernels_img2gray_torch; do
    grep -qE "(^|\.\.\. )$t(:|\$)" <<<"$avail" && targets+=("$t")
  done
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
  echo "== built in $(( $(date +%s) - start )) s"
else
  # The Python the build was configured with, first on PATH.
  py=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
  export PATH="$(dirname "$py"):$PATH"
fi
build=$(cd "$build" && pwd)
for exe in "$build/examples/kernels_img2gray_tvm_ffi" "$build/variants/img2gray/build"; do
  [ -e "$exe" ] || { echo "demo.sh: $exe was not built (see the configure messages above)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/kernels-demo-XXXXXX")
hub_pid=
trap '[ -z "$hub_pid" ] || { kill "$hub_pid" 2>/dev/null; wait "$hub_pid" 2>/dev/null || true; }; rm -rf "$work"' EXIT
python3 tests/hub/server.py --root "$work/hub" --port-file "$work/hub.json" --parent-pid $$ &
hub_pid=$!
for _ in $(seq 100); do [ -s "$work/hub.json" ] && break; sleep 0.1; done
endpoint=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["endpoint"])' "$work/hub.json")
echo "== local Hub at $endpoint"
# Every variant built: torch (for hosts with libtorch) and tvm-ffi (for
# hosts with libtvm_ffi); each client picks the one its process can load.
python3 scripts/publish-img2gray.py --root "$work/hub" --build "$build/variants/img2gray/build"

out=$build/demo
mkdir -p "$out"
# The cache stays in $out/cache: the README runs its C program against it.
export HF_ENDPOINT=$endpoint HF_HUB_CACHE=$out/cache
c_host() {
  "$build/examples/kernels_img2gray_tvm_ffi" examples/data/testcard.png "$out/testcard-gray.png"
}
echo "== a plain C host (libkernels + libtvm_ffi, no torch, no Python): resolve, download, verify, load, convert"
c_host
echo "== the same again: everything cached"
c_host
if [ -x "$build/examples/kernels_img2gray_torch" ]; then
  echo "== a C++ host with libtorch and no Python: the torch variant's op through the dispatcher"
  # With no GPU, the CPU variant: a CUDA torch otherwise asks for the CUDA one.
  device=(); [ "$cuda" = AUTO ] || device=(--device cpu)
  "$build/examples/kernels_img2gray_torch" "${device[@]}" examples/data/testcard.png "$out/testcard-gray-torch.png"
  if cmp -s "$out/testcard-gray.png" "$out/testcard-gray-torch.png"; then
    echo "== both hosts wrote the same image"
  else
    echo "== the two hosts' images differ ($out/testcard-gray*.png)"; exit 1
  fi
fi
rel() { case $1 in "$here"/*) echo "${1#"$here"/}" ;; *) echo "$1" ;; esac; }
echo "== the output"
echo "   image:   $(rel "$out/testcard-gray.png")$([ -e "$out/testcard-gray-torch.png" ] && echo " (and the C++ host's $(rel "$out/testcard-gray-torch.png"))")"
echo "   cache:   $(rel "$out/cache") (kept: the next invocation loads from it)"
echo "   library: $(rel "$build/lib"), CLI: $(rel "$build/bindings/cli/libkernels")"
