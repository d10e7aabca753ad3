# Sourced by bench/get's scripts (run.sh, offline.sh, cold.sh, timeline.sh), after scripts/venv.sh.
# img2gray_hub SRC BUILD TMP: the local Hub fixture (tests/hub) on a fresh
# root, TMP/hub, stopped when this shell exits (--parent-pid), with img2gray
# published from BUILD's variants/img2gray/build; an empty cache folder
# TMP/cache beside it. Sets hub_pid, endpoint and torch_lib (the folder of
# the libtorch the project's Python has).
img2gray_hub() {
  local src=$1 build=$2 tmp=$3
  mkdir "$tmp/hub" "$tmp/cache"
  python3 "$src/tests/hub/server.py" --root "$tmp/hub" --port-file "$tmp/hub.json" --parent-pid $$ &
  hub_pid=$!
  for _ in $(seq 200); do [ -s "$tmp/hub.json" ] && break; sleep 0.05; done
  endpoint=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["endpoint"])' "$tmp/hub.json")
  python3 "$src/scripts/publish-img2gray.py" --root "$tmp/hub" --build "$build/variants/img2gray/build" >/dev/null
  torch_lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
}

# get_benches SRC TMP LIB...: TMP/get_bench.N, get_bench.c linked against
# the Nth LIB folder's libkernels.so.1 (-rpath: each program finds its own
# library, whatever LD_LIBRARY_PATH says).
get_benches() {
  local src=$1 tmp=$2 i=0 lib
  shift 2
  for lib in "$@"; do
    cc -std=c11 -O2 -Wall -Wextra -I"$src/include" "$src/bench/get/get_bench.c" \
      -L"$lib" -l:libkernels.so.1 -ldl -Wl,-rpath,"$lib" -o "$tmp/get_bench.$i"
    i=$((i + 1))
  done
}

# bench_world SRC BUILD NAME [OTHER_LIB]: what cold.sh and offline.sh start
# from: libkernels and the img2gray variants built, a folder /tmp/NAME.*
# removed (and the Hub stopped) when this shell exits, get_bench.0 for
# BUILD's library and get_bench.1 for OTHER_LIB's when given, and the Hub.
# Sets tmp, libs, hub_pid, endpoint and torch_lib.
bench_world() {
  local src=$1 build=$2 name=$3 other=${4:-}
  cmake --build "$build" --target kernels img2gray_variants >/dev/null
  tmp=$(mktemp -d "/tmp/$name.XXXXXX")
  trap 'kill "$hub_pid" 2>/dev/null || true; wait "$hub_pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
  libs=("$build/lib")
  [ -n "$other" ] && libs+=("$other")
  get_benches "$src" "$tmp" "${libs[@]}"
  img2gray_hub "$src" "$build" "$tmp"
}
