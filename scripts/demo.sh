#!/usr/bin/env bash
# The README's first command: set up a fresh machine, build, and run the
# main job on its embedded default.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
./build/examples/kernels_example_version
