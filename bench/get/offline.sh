#!/usr/bin/env bash
# The offline first load of a cached kernel and the system calls of that
# one kernels_get, for one library or two side by side (before/after):
#   bash bench/get/offline.sh BUILD_DIR [--other LIB_DIR] [--runs N] [--warm N] [--backend cpu|...]
# BUILD_DIR is a configured and built tree of this project, as for
# bench/get/run.sh (its lib/libkernels.so and variants/img2gray/build/).
# --other names a folder holding another libkernels.so.1 (another commit's
# build/lib), measured the same way and alternating with BUILD_DIR's run by
# run, so that both see the same machine load.
# The local Hub fixture (tests/hub) starts on a fresh root, img2gray is
# published there and fetched into a fresh cache once (BUILD_DIR's library).
# Then, per run and library, a fresh process with HF_HUB_OFFLINE=1
# (get_bench --once: libtorch loaded before the clock starts) times
# kernels_get alone: median and min over the runs. Last, when strace is
# installed, one more such process per library under strace -f, its trace
# cut to the call (get_bench --mark): the call's system calls by name, and
# the repeats it used to make: cache guard runs (its last walk opens
# .locks/<repo folder>), listings of the variant folder (opened as a
# directory), resolutions of the loaded libc10 (opened O_PATH).
# Then bench/get's in-process table per library (get_bench --warm N, each
# on a fresh cache): cold, warm, warm offline (the offline path with the
# kernel already loaded) and the re-get of a commit.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=$(cd "${1:?build dir}" && pwd)
shift
backend=cpu runs=9 warm=200 other=
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --warm) warm=$2; shift 2 ;;
    --other) other=$(cd "$2" && pwd); shift 2 ;;
    *) echo "offline.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
repo=kernels-community/img2gray rev=v1 variant=torch211-cxx11-cpu-x86_64-linux
source "$src/bench/get/hub.sh"
bench_world "$src" "$build" bench-get-offline "$other"  # sets tmp, libs, hub_pid, endpoint, torch_lib
export HF_ENDPOINT="$endpoint" HF_HUB_CACHE="$tmp/cache" HF_TOKEN= NO_PROXY=127.0.0.1,localhost
args=("$repo" "$rev" --torch-lib "$torch_lib" --once ${backend:+--backend "$backend"})
HF_HUB_OFFLINE=0 "$tmp/get_bench.0" "${args[@]}" >/dev/null   # fills the cache

for r in $(seq "$runs"); do
  for i in "${!libs[@]}"; do
    HF_HUB_OFFLINE=1 "$tmp/get_bench.$i" "${args[@]}" >>"$tmp/times.$i"
  done
done
for i in "${!libs[@]}"; do
  HF_HUB_OFFLINE=0 HF_HUB_CACHE="$tmp/cache-warm.$i" "$tmp/get_bench.$i" "$repo" "$rev" --torch-lib "$torch_lib" \
    --warm "$warm" ${backend:+--backend "$backend"} >"$tmp/table.$i"
done
if command -v strace >/dev/null; then
  for i in "${!libs[@]}"; do
    HF_HUB_OFFLINE=1 strace -f -o "$tmp/trace.$i" "$tmp/get_bench.$i" "${args[@]}" --mark >/dev/null 2>&1
  done
fi

echo "# bench/get/offline.sh: offline first load of $repo@$rev ($variant), libkernels" \
  "$(git -C "$src" describe --always --dirty 2>/dev/null || echo '?'), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" "$repo" "$variant" "${libs[@]}" <<'EOF'
import json, os, re, statistics, sys
from collections import Counter

tmp, repo, variant, libs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
print(f"{'library':<40} {'median ms':>10} {'min ms':>8} {'n':>3}   stages (resolve select download load, median ms)")
for i, lib in enumerate(libs):
    rows = [json.loads(line) for line in open(os.path.join(tmp, f"times.{i}"))]
    ms = [r["ms"] for r in rows]
    st = [statistics.median(r[k] for r in rows) for k in ("resolve_ms", "select_ms", "download_ms", "load_ms")]
    print(f"{lib:<40} {statistics.median(ms):>10.3f} {min(ms):>8.3f} {len(ms):>3}   "
          + " ".join(f"{v:.3f}" for v in st))
for i, lib in enumerate(libs):
    path = os.path.join(tmp, f"trace.{i}")
    if not os.path.exists(path):
        print("(no strace: system calls not counted)")
        break
    calls, on = [], False
    for line in open(path):
        if "get_bench: call begins" in line:
            on = True
        elif "get_bench: call ends" in line:
            on = False
        elif on:
            m = re.match(r"(?:\d+\s+)?(\w+)\(", line)
            if m:
                calls.append((m.group(1), line))
    names = Counter(name for name, _ in calls)
    locks = sum(1 for n, l in calls if n == "openat" and '".locks"' in l)
    listed = sum(1 for n, l in calls if n == "openat" and re.search(rf'/build/{variant}", O_RDONLY\|O_NONBLOCK\|O_CLOEXEC\|O_DIRECTORY', l))
    c10 = sum(1 for n, l in calls if n == "openat" and "/libc10.so\"" in l and "O_PATH" in l)
    print(f"{lib}: {len(calls)} system calls in the call: cache guard runs {locks}, variant folder listed {listed}, "
          f"libc10 resolved {c10}")
    print("  " + ", ".join(f"{n} {c}" for n, c in names.most_common()))
EOF
for i in "${!libs[@]}"; do
  echo "${libs[$i]}, in one process (bench/get):"
  sed 's/^/  /' "$tmp/table.$i"
done
