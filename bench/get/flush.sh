#!/usr/bin/env bash
# What a flush costs on the disk a cache lives on (bench/get/flush.c): the
# floor under a cold get's last steps, where the downloaded module and its
# Python-free copy are each flushed before they take their names.
#   bash bench/get/flush.sh [DIR [SIZE [RUNS]]]
# DIR: a folder on the cache's file system (default: a temporary folder
# under $HF_HUB_CACHE's parent, else /tmp); SIZE: bytes (default 2809880,
# the img2gray CPU module); RUNS: default 9.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$(dirname "${HF_HUB_CACHE:-/tmp/x}")}
tmp=$(mktemp -d "$dir/bench-flush.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -std=c11 -O2 -Wall -Wextra -pthread "$src/bench/get/flush.c" -o "$tmp/flush"
echo "# bench/get/flush.sh: $(git -C "$src" describe --always --dirty 2>/dev/null || echo '?')," \
  "$(nproc) CPUs, $(df -T "$tmp" | awk 'NR == 2 { print $2 " on " $1 }'), load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "$(date -u +%Y-%m-%dT%H:%MZ)"
"$tmp/flush" "$tmp" "${2:-2809880}" "${3:-9}"
