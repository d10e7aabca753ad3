#!/usr/bin/env bash
# Runs every test: installs what is missing (scripts/install-deps.sh: Debian
# packages, and the pinned Python packages in .venv/), builds in a clean
# build folder, runs ctest (C tests, Python tests with the .venv's python,
# the local Hub they start), then the C tests again under AddressSanitizer
# + UBSan, even when the first stage failed. Exit status: non-zero when
# either stage failed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/install-deps.sh
source scripts/venv.sh

jobs=$(nproc)
rm -rf build-test build-asan
# Both stages run whatever the first one gives: a failure in the main stage
# must not hide what the sanitizers would say. The exit status is non-zero
# when either failed.
main_rc=0
{
  cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$kernels_python" >/dev/null &&
    cmake --build build-test -j"$jobs" &&
    (cd build-test && ctest --output-on-failure -j"$jobs")
} || main_rc=$?

asan_rc=0
{
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKERNELS_SANITIZE=ON -DKERNELS_BUILD_EXAMPLES=OFF \
    -DPython3_EXECUTABLE="$kernels_python" >/dev/null &&
    cmake --build build-asan -j"$jobs" &&
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --output-on-failure -j"$jobs" -L "^c$")
} || asan_rc=$?

echo "== main stage: $([ $main_rc = 0 ] && echo passed || echo "FAILED ($main_rc)"); sanitizer stage: $([ $asan_rc = 0 ] && echo passed || echo "FAILED ($asan_rc)")"
[ $main_rc = 0 ] && [ $asan_rc = 0 ]
