#!/usr/bin/env bash
# The README's first command: set up a fresh machine, build, and run the
# main job on its embedded default: a local Hub on 127.0.0.1 serving the
# bundled img2gray kernel (built here into Hub variants, published as
# v1.0.0 v1.1.0 v1.1.2 v2.0.0 with branches main v1 v2), then
# examples/img2gray.c fetching it with kernels_get(">=1.1.2,<2") and
# converting examples/data/testcard.png to gray; then the same from
# examples/img2gray_tvm_ffi.c, a plain C host of the tvm-ffi variant.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"

work=$(mktemp -d "${TMPDIR:-/tmp}/kernels-demo-XXXXXX")
trap 'kill "$hub_pid" 2>/dev/null || true; wait "$hub_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
python3 tests/hub/server.py --root "$work/hub" --port-file "$work/hub.json" --parent-pid $$ &
hub_pid=$!
for _ in $(seq 100); do [ -s "$work/hub.json" ] && break; sleep 0.1; done
endpoint=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["endpoint"])' "$work/hub.json")
echo "== local Hub at $endpoint"
# Every variant built: torch (for hosts with libtorch) and tvm-ffi (for
# hosts with libtvm_ffi); each client picks the one its process can load.
python3 scripts/publish-img2gray.py --root "$work/hub" --build build/variants/img2gray/build

torch_lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null || true)
mkdir -p build/demo
run() {
  HF_ENDPOINT=$endpoint HF_HUB_CACHE=$work/cache ./build/examples/kernels_img2gray \
    ${torch_lib:+--torch-lib "$torch_lib"} examples/data/testcard.png build/demo/testcard-gray.png
}
echo "== first run: resolve, download, verify, load, convert"
run
echo "== second run: everything cached"
run
if [ -x build/examples/kernels_img2gray_tvm_ffi ]; then
  echo "== a plain C host (libkernels + libtvm_ffi, no torch, no Python): the tvm-ffi variant"
  HF_ENDPOINT=$endpoint HF_HUB_CACHE=$work/cache ./build/examples/kernels_img2gray_tvm_ffi \
    examples/data/testcard.png build/demo/testcard-gray-tvm-ffi.png
fi
