#!/usr/bin/env bash
# The README's first command: set up a fresh machine, build, and run the
# main job on its embedded default: a local Hub on 127.0.0.1 serving the
# bundled img2gray kernel (built here into Hub variants, published as
# v1.0.0 v1.1.0 v1.1.2 v2.0.0 with branches main v1 v2), then
# examples/img2gray_tvm_ffi.c, a plain C host (no torch, no Python),
# fetching it with kernels_get(">=1.1.2,<2") and converting
# examples/data/testcard.png to gray, twice (the second run from the
# cache); then the same from examples/img2gray_torch.cpp, a C++ host with
# libtorch and no Python.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/install-deps.sh
source scripts/venv.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$kernels_python" >/dev/null
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

mkdir -p build/demo
# The cache stays in build/demo/cache: the README runs its C program against it.
export HF_ENDPOINT=$endpoint HF_HUB_CACHE=$here/build/demo/cache
c_host() {
  ./build/examples/kernels_img2gray_tvm_ffi examples/data/testcard.png build/demo/testcard-gray.png
}
echo "== a plain C host (libkernels + libtvm_ffi, no torch, no Python): resolve, download, verify, load, convert"
c_host
echo "== the same again: everything cached"
c_host
if [ -x build/examples/kernels_img2gray_torch ]; then
  echo "== a C++ host with libtorch and no Python: the torch variant's op through the dispatcher"
  ./build/examples/kernels_img2gray_torch examples/data/testcard.png build/demo/testcard-gray-torch.png
  if cmp -s build/demo/testcard-gray.png build/demo/testcard-gray-torch.png; then
    echo "== both hosts wrote the same image: build/demo/testcard-gray.png"
  else
    echo "== the two hosts' images differ (build/demo/testcard-gray*.png)"; exit 1
  fi
fi
