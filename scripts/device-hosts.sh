#!/usr/bin/env bash
# The three native host kinds on a GPU machine that has torch but neither
# libkernels' dependencies nor a Hub (the project's H200 machine):
#   here:  bash scripts/device-hosts.sh prepare BUILD_DIR     -> .devrun/
#   there: bash scripts/device-hosts.sh run                    (prints, compares)
# prepare copies the examples (the C++ host with libtorch, the plain C host
# with tvm-ffi), libkernels and the libraries they need into .devrun/, and
# fills .devrun/cache from a local Hub with the published img2gray: the
# CUDA and CPU variants of both kinds. run loads them offline from that
# cache: each host on the GPU and on the CPU, the images compared byte for
# byte (and across the two hosts), then each GPU run again under
# compute-sanitizer (memcheck, racecheck, initcheck, synccheck).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
source "$src/scripts/venv.sh"  # here: the project's Python (.venv); on the GPU machine there is none and python3 is its own
dev=$src/.devrun
card=$src/examples/data/testcard.png
case "${1:-}" in
prepare)
  build=$(cd "${2:?build dir}" && pwd)
  rm -rf "$dev"; mkdir -p "$dev/lib" "$dev/cache" "$dev/hub"
  cp "$build/examples/kernels_img2gray_torch" "$build/examples/kernels_img2gray_tvm_ffi" "$dev/"
  cp -L "$build/lib/libkernels.so.1" "$dev/lib/"
  # Everything they link but the C/C++ runtime, what the GPU machine has
  # (ICU, libxml2) and torch with its CUDA libraries (the machine's own torch).
  for bin in "$dev/lib/libkernels.so.1" "$dev/kernels_img2gray_torch" "$dev/kernels_img2gray_tvm_ffi"; do
    ldd "$bin" | awk '$3 ~ /^\// {print $3}' |
      grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libicu[a-z]*|libxml2|libkernels)\.so' |
      grep -v -E '/site-packages/(torch|nvidia)/' |
      while read -r l; do cp -L "$l" "$dev/lib/"; done
  done
  python3 "$src/tests/hub/server.py" --root "$dev/hub" --port-file "$dev/hub.json" --parent-pid $$ &
  pid=$!
  for _ in $(seq 100); do [ -s "$dev/hub.json" ] && break; sleep 0.1; done
  endpoint=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["endpoint"])' "$dev/hub.json")
  python3 "$src/scripts/publish-img2gray.py" --root "$dev/hub" --build "$build/variants/img2gray/build" >/dev/null
  export HF_ENDPOINT=$endpoint HF_HUB_CACHE=$dev/cache
  # This machine has no GPU: ask for the CUDA variants by name of backend.
  "$dev/kernels_img2gray_torch" "$card" "$dev/prepare-torch.png"
  "$dev/kernels_img2gray_torch" --device cpu "$card" "$dev/prepare-torch-cpu.png"
  KERNELS_BACKEND=cuda KERNELS_CUDA_VERSION=13.0 "$dev/kernels_img2gray_tvm_ffi" --cpu "$card" "$dev/prepare-tvm.png"
  "$dev/kernels_img2gray_tvm_ffi" "$card" "$dev/prepare-tvm-cpu.png"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$dev/hub" "$dev/hub.json" "$dev"/prepare-*.png
  du -sh "$dev";;
run)
  torch=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
  export LD_LIBRARY_PATH=$dev/lib:$torch/lib HF_HUB_OFFLINE=1 HF_HUB_CACHE=$dev/cache
  out=${OUT:-$dev}
  status=0
  same() { if cmp -s "$1" "$2"; then echo "  $3: bit-identical"; else echo "  $3: DIFFER"; status=1; fi; }
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "== C++ host, libtorch, no Python"
  "$dev/kernels_img2gray_torch" --device cuda "$card" "$out/torch-gpu.png"
  "$dev/kernels_img2gray_torch" --device cpu "$card" "$out/torch-cpu.png"
  echo "== plain C host, tvm-ffi, no torch, no Python"
  "$dev/kernels_img2gray_tvm_ffi" "$card" "$out/tvm-gpu.png"
  "$dev/kernels_img2gray_tvm_ffi" --cpu "$card" "$out/tvm-cpu.png"
  echo "== images"
  same "$out/torch-gpu.png" "$out/torch-cpu.png" "C++ host: GPU vs CPU"
  same "$out/tvm-gpu.png" "$out/tvm-cpu.png" "C host: GPU vs CPU"
  same "$out/torch-gpu.png" "$out/tvm-gpu.png" "C++ host vs C host on the GPU"
  echo "== compute-sanitizer"
  for tool in memcheck racecheck initcheck synccheck; do
    for host in "kernels_img2gray_torch --device cuda" "kernels_img2gray_tvm_ffi"; do
      set +e
      timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 $dev/$host "$card" /tmp/san.png >/tmp/san.log 2>&1
      rc=$?
      set -e
      echo "  $tool on ${host%% *}: rc=$rc, $(grep -E 'ERROR SUMMARY' /tmp/san.log | tr -d '=')"
      [ $rc -eq 0 ] || { status=1; tail -20 /tmp/san.log; }
    done
  done
  echo "device-hosts status: $status"
  exit $status;;
*)
  echo "usage: $0 prepare BUILD_DIR | run" >&2; exit 2;;
esac
