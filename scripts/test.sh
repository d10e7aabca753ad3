#!/usr/bin/env bash
# Runs every test: installs what is missing (scripts/install-deps.sh: Debian
# packages, and the pinned Python packages in .venv/), builds in a clean
# build folder, runs ctest (C tests, Python tests with the .venv's python,
# the local Hub they start), then the C tests again under AddressSanitizer
# + UBSan.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/install-deps.sh
source scripts/venv.sh

jobs=$(nproc)
rm -rf build-test build-asan
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$kernels_python" >/dev/null
cmake --build build-test -j"$jobs"
(cd build-test && ctest --output-on-failure -j"$jobs")

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKERNELS_SANITIZE=ON -DKERNELS_BUILD_EXAMPLES=OFF \
  -DPython3_EXECUTABLE="$kernels_python" >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j"$jobs" -L "^c$")
