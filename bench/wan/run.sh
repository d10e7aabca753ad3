#!/usr/bin/env bash
# libkernels vs the Python `kernels` package over a slow network (see wan.py):
#   bash bench/wan/run.sh BUILD_DIR [--rtt 0,40,100] [--runs 3] [--tls] [--variants DIR] [--no-cdn-hint]
# Needs libkernels and the img2gray variants built in BUILD_DIR (or --variants
# naming a folder of them), nginx and openssl; the table goes to stdout
# (bench/results/wan.txt).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=$(cd "${1:?build dir}" && pwd)
shift
exec python3 -W ignore "$src/bench/wan/wan.py" --build "$build" "$@"
