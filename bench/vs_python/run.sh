#!/usr/bin/env bash
# libkernels (Python binding and C) vs the Python `kernels` package on one local Hub behind nginx:
#   bash bench/vs_python/run.sh BUILD_DIR [--runs 3] [--regets 50] [--backend cpu] [--big-runs 1] [--no-big]
# Builds libkernels and the img2gray variants in BUILD_DIR, then runs bench.py
# (see its docstring: it installs nginx with apt-get when missing); the table
# goes to stdout (bench/results/vs_python.txt).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=$(cd "${1:?build dir}" && pwd)
shift
cmake --build "$build" --target kernels img2gray_variants >/dev/null
exec python3 -W ignore "$src/bench/vs_python/bench.py" --build "$build" "$@"
