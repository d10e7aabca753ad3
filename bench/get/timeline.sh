#!/usr/bin/env bash
# Where a cold kernels_get's time goes, event by event: one get_bench --once
# (a fresh process and cache, the local Hub fixture) with bench/get/timeline.c
# preloaded, which logs each connection, each request's and answer's first
# line, each answer's last byte, each fsync, the Python-free copy, the
# module's dlopen and each wait on a helper, with their durations. Prints,
# per run, the events in ms from the first connection, and get_bench's own
# figures (the stages, CPU):
#   bash bench/get/timeline.sh BUILD_DIR [--runs N] [--backend cpu|...]
# BUILD_DIR as for bench/get/cold.sh. The logger costs a few microseconds an
# event; the figures are the call's as it runs, not under a tracer.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=$(cd "${1:?build dir}" && pwd)
shift
backend=cpu runs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "timeline.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
repo=kernels-community/img2gray rev=v1
source "$src/bench/get/hub.sh"
bench_world "$src" "$build" bench-get-timeline  # sets tmp, libs, hub_pid, endpoint, torch_lib
cc -std=c11 -O2 -Wall -Wextra -shared -fPIC "$src/bench/get/timeline.c" -o "$tmp/timeline.so" -ldl
export HF_ENDPOINT="$endpoint" HF_TOKEN= NO_PROXY=127.0.0.1,localhost HF_HUB_OFFLINE=0
echo "# bench/get/timeline.sh: cold get of $repo@$rev, libkernels $(git -C "$src" describe --always --dirty 2>/dev/null || echo '?')," \
  "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
for r in $(seq "$runs"); do
  rm -rf "$tmp/cache" && mkdir "$tmp/cache"
  HF_HUB_CACHE="$tmp/cache" LD_PRELOAD="$tmp/timeline.so" "$tmp/get_bench.0" "$repo" "$rev" \
    --torch-lib "$torch_lib" --once --json ${backend:+--backend "$backend"} >"$tmp/figures" 2>"$tmp/events"
  echo "## run $r: $(cat "$tmp/figures")"
  # From the first connection on; of a socket's body reads, the last only.
  awk '$1 != "T" { next } NR == FNR { if ($4 == "data") last[$5] = FNR; next }
       t0 == "" && $4 != "connect" { next }
       $4 == "data" { if (last[$5] != FNR) next; $4 = "last byte"; $5 = $5 }
       { if (t0 == "") t0 = $2; $1 = sprintf("%8.2f", $2 - t0); $2 = ""; print }' "$tmp/events" "$tmp/events" |
    sed -E 's|/resolve/[0-9a-f]{40}/|/resolve/{commit}/|; s|/tree/[0-9a-f]{40}|/tree/{commit}|; s| HTTP/1\.1$||' | cut -c1-140
done
