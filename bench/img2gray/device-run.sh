#!/usr/bin/env bash
# Everything img2gray needs a GPU for, in one go (the H200 machine has torch
# and nvcc but not libkernels' dependencies, so cuda/ is configured on its
# own): build the variants against the machine's torch, run the CUDA
# entry-point test (ctest), the Python tests, compute-sanitizer
# (memcheck, initcheck, racecheck, synccheck), list the fatbin's contents, then
# the benchmark. Logs go to $OUT (or ./img2gray-device-out).
#   bash bench/img2gray/device-run.sh [iterations]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/img2gray-device-out}
mkdir -p "$out"
b=/tmp/img2gray-build
iters=${1:-100}
status=0
step() { echo; echo "=== $*"; }

step environment
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'
  nvcc --version | tail -1
  cmake --version | head -1
} 2>&1

step build
t0=$(date +%s)
cmake -S cuda -B "$b" -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
  cmake --build "$b" -j"$(nproc)" >>"$out/build.log" 2>&1 || { status=1; tail -40 "$out/build.log"; }
grep -E 'img2gray:|warning|error|assembled' "$out/build.log"
echo "build took $(( $(date +%s) - t0 )) s"
cuda_variant=$(ls -d "$b"/variants/img2gray/build/torch*-cu* 2>/dev/null | head -1)
exe() { find "$b" -name "$1" -type f -perm -u+x | head -1; }

step fatbin contents
cuobjdump --list-elf --list-ptx "$cuda_variant"/*.so 2>&1
cuobjdump --dump-sass "$cuda_variant"/*.so 2>/dev/null | grep -oE '(LDG|STG)\.E[.A-Z0-9]*' | sort | uniq -c

step ctest
(cd "$b" && ctest --output-on-failure 2>&1) | tee "$out/ctest.log" | tail -15
grep -q "100% tests passed" "$out/ctest.log" || status=1
grep -q "Skipped" "$out/ctest.log" && { echo "a test was skipped on the GPU machine"; status=1; }

step pytest
KERNELS_BINARY_DIR=$b PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider -rs tests/python/test_img2gray.py 2>&1 |
  tee "$out/pytest.log" | tail -8
grep -qE "^[0-9]+ passed" "$out/pytest.log" && ! grep -qE "failed|error" "$out/pytest.log" || status=1

step compute-sanitizer
for tool in memcheck initcheck racecheck synccheck; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  timeout 120 compute-sanitizer --tool $tool $extra --error-exitcode 9 "$(exe test_img2gray_cuda)" >/tmp/san.log 2>&1
  rc=$?; cat /tmp/san.log >>"$out/sanitizer.log"
  echo "$tool on test_img2gray_cuda: rc=$rc, $(grep -E 'ERROR SUMMARY|passed' /tmp/san.log | tr '\n' ' ')"
  [ $rc -eq 0 ] || status=1
done
# The hosts (torch op through libkernels, tvm-ffi from C) run under
# compute-sanitizer in scripts/device-img2gray.sh.

step benchmark
bash bench/img2gray/run.sh "$b" "$iters" 2>&1 | tee "$out/bench.txt"

echo; echo "device-run status: $status"
exit $status
