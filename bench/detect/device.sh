#!/usr/bin/env bash
# bench/detect on a GPU machine that has neither libkernels' dependencies
# nor a compiler setup for them (the project's H200 machine):
#   here:  bash bench/detect/device.sh prepare BUILD_DIR   -> .devrun/detect/
#   there: bash bench/detect/device.sh run [runs] [rounds]
# prepare builds detect_bench and copies it with libkernels and the
# libraries it links (not those the GPU machine has: the C runtime, ICU,
# libxml2) into .devrun/detect; run prints the machine, where its CUDA
# libraries are, and `rounds` tables of detect_bench (each figure the
# median of `runs` fresh processes).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
dev=$src/.devrun/detect
case "${1:-}" in
prepare)
  build=$(cd "${2:?build dir}" && pwd)
  rm -rf "$dev"; mkdir -p "$dev/lib"
  so=$(basename "$(readlink "$build/lib/libkernels.so")")  # the SONAME's link
  cp -L "$build/lib/$so" "$dev/lib/"
  ldd "$dev/lib/$so" | awk '$3 ~ /^\// {print $3}' |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libicu[a-z]*|libxml2|libkernels)\.so' |
    while read -r l; do cp -L "$l" "$dev/lib/"; done
  cc -O2 -o "$dev/detect_bench" "$src/bench/detect/detect_bench.c" -I"$src/include" -L"$dev/lib" -l:"$so" -ldl
  echo "libkernels $(git -C "$src" describe --always --dirty)" > "$dev/VERSION"
  ;;
run)
  cat "$dev/VERSION"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  ldconfig -p | grep -E 'libcudart\.so|libcuda\.so|libnvidia-ml' || true
  for i in $(seq "${3:-3}"); do
    echo "== round $i"
    LD_LIBRARY_PATH=$dev/lib "$dev/detect_bench" "${2:-9}"
  done
  ;;
*)
  echo "usage: $0 prepare BUILD_DIR | run [runs] [rounds]" >&2
  exit 2
  ;;
esac
