#!/usr/bin/env bash
# Builds and runs the img2gray benchmark on a CUDA machine with torch:
#   bash bench/img2gray/run.sh BUILD_DIR [iterations]
# BUILD_DIR is a configured build of this project (the torch CUDA variant and
# bench_img2gray targets must exist: needs nvcc and torch with CUDA).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=${1:?build dir}
iters=${2:-100}
cmake --build "$build" -j"$(nproc)" --target bench_img2gray img2gray_variants >/dev/null
variant=$(ls -d "$build"/variants/img2gray/build/torch*-cu* | head -1)
"$(find "$build" -name bench_img2gray -type f -perm -u+x | head -1)" "$iters" "$build/bench_img2gray.csv"
echo
python3 "$here/bench/img2gray/bench_torch.py" "$variant" "$build/bench_img2gray.csv" "$iters"
