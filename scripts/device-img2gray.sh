#!/usr/bin/env bash
# The main job on a GPU machine that has torch but neither libkernels'
# dependencies nor a Hub (the project's H200 machine).
#   here:    bash scripts/device-img2gray.sh prepare BUILD_DIR   -> .devrun/
#   there:   bash scripts/device-img2gray.sh run TORCH_DIR        (prints, compares)
# prepare: copies examples/kernels_img2gray, libkernels and the libraries they
# need into .devrun/lib, and fills .devrun/cache by running the example here
# against a local Hub with the published img2gray (torch here is a CUDA
# build, so it fetches the CUDA variant). run: the example offline from that
# cache on the GPU, then again with --cpu, and compares the two images.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dev=$src/.devrun
case "${1:-}" in
prepare)
  build=$(cd "${2:?build dir}" && pwd)
  rm -rf "$dev"; mkdir -p "$dev/lib" "$dev/cache" "$dev/hub"
  cp "$build/examples/kernels_img2gray" "$dev/"
  cp -L "$build/lib/libkernels.so.0" "$dev/lib/"
  for bin in "$build/lib/libkernels.so.0" "$build/examples/kernels_img2gray"; do
    ldd "$bin" | awk '$3 ~ /^\// {print $3}' |
      grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libicu[a-z]*|libxml2|libkernels)\.so' |
      while read -r l; do cp -L "$l" "$dev/lib/"; done
  done
  python3 "$src/tests/hub/server.py" --root "$dev/hub" --port-file "$dev/hub.json" --parent-pid $$ &
  pid=$!
  for _ in $(seq 100); do [ -s "$dev/hub.json" ] && break; sleep 0.1; done
  endpoint=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["endpoint"])' "$dev/hub.json")
  python3 "$src/scripts/publish-img2gray.py" --root "$dev/hub" --build "$build/variants/img2gray/build" \
    --variant torch211-cxx11-cu130-x86_64-linux --variant torch211-cxx11-cpu-x86_64-linux >/dev/null
  torch=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)
  HF_ENDPOINT=$endpoint HF_HUB_CACHE=$dev/cache "$dev/kernels_img2gray" --torch-lib "$torch/lib" \
    "$src/examples/data/testcard.png" "$dev/prepare.png"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$dev/hub" "$dev/hub.json"
  du -sh "$dev";;
run)
  torch=${2:?torch package dir}
  export LD_LIBRARY_PATH=$dev/lib HF_HUB_OFFLINE=1 HF_HUB_CACHE=$dev/cache
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  "$dev/kernels_img2gray" --torch-lib "$torch/lib" "$src/examples/data/testcard.png" "$dev/gpu.png"
  "$dev/kernels_img2gray" --torch-lib "$torch/lib" --cpu "$src/examples/data/testcard.png" "$dev/cpu.png"
  if cmp "$dev/gpu.png" "$dev/cpu.png"; then echo "GPU and CPU images are bit-identical"; else echo "images differ"; exit 1; fi;;
*)
  echo "usage: $0 prepare BUILD_DIR | run TORCH_DIR" >&2; exit 2;;
esac
