#!/usr/bin/env bash
# The cold kernels_get (an empty cache, the local Hub fixture), for one
# library or two alternating run by run (before/after), so that both see the
# same machine load:
#   bash bench/get/cold.sh BUILD_DIR [--other LIB_DIR] [--runs N] [--backend cpu|...]
# BUILD_DIR is a configured and built tree of this project, as for
# bench/get/run.sh (its lib/libkernels.so and variants/img2gray/build/);
# --other names a folder holding another libkernels.so.1 (another commit's
# build/lib). Each run is a fresh process (get_bench --once: libtorch loaded
# before the clock starts) on a fresh cache. Prints, per library, the medians
# of the call and its stages and of the client's CPU time, then the median of
# the paired differences (other minus BUILD_DIR's, run by run) and the load
# average seen before each run.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=$(cd "${1:?build dir}" && pwd)
shift
backend=cpu runs=20 other=
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --other) other=$(cd "$2" && pwd); shift 2 ;;
    *) echo "cold.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
repo=kernels-community/img2gray rev=v1
source "$src/bench/get/hub.sh"
bench_world "$src" "$build" bench-get-cold "$other"  # sets tmp, libs, hub_pid, endpoint, torch_lib
export HF_ENDPOINT="$endpoint" HF_TOKEN= NO_PROXY=127.0.0.1,localhost HF_HUB_OFFLINE=0
for r in $(seq "$runs"); do
  for i in "${!libs[@]}"; do
    rm -rf "$tmp/cache" && mkdir "$tmp/cache"
    cut -d' ' -f1 /proc/loadavg >>"$tmp/load"
    HF_HUB_CACHE="$tmp/cache" "$tmp/get_bench.$i" "$repo" "$rev" --torch-lib "$torch_lib" --once --json \
      ${backend:+--backend "$backend"} >>"$tmp/times.$i"
  done
done

echo "# bench/get/cold.sh: cold get of $repo@$rev, libkernels $(git -C "$src" describe --always --dirty 2>/dev/null || echo '?')," \
  "$(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
python3 - "$tmp" "${libs[@]}" <<'EOF'
import json, os, statistics as st, sys

tmp, libs = sys.argv[1], sys.argv[2:]
keys = ("ms", "resolve_ms", "select_ms", "download_ms", "load_ms", "cpu_ms")
rows = [[json.loads(line) for line in open(os.path.join(tmp, f"times.{i}"))] for i in range(len(libs))]
print(f"{'library':<40} {'n':>3} " + " ".join(f"{k:>12}" for k in keys) + "   (medians)")
for lib, r in zip(libs, rows):
    print(f"{lib:<40} {len(r):>3} " + " ".join(f"{st.median(x[k] for x in r):>12.3f}" for k in keys))
if len(rows) == 2:
    n = min(len(rows[0]), len(rows[1]))
    diff = [st.median(rows[1][j][k] - rows[0][j][k] for j in range(n)) for k in keys]
    print(f"{'paired difference, other - first':<40} {n:>3} " + " ".join(f"{d:>+12.3f}" for d in diff))
load = [float(x) for x in open(os.path.join(tmp, "load"))]
print(f"load average (1 min) before each run: min {min(load):.2f}, median {st.median(load):.2f}, max {max(load):.2f}")
EOF
