#!/usr/bin/env bash
# Starts the local Hub (tests/hub/server.py) by itself, for experiments:
# on 127.0.0.1, serving kernels-community/img2gray as scripts/demo.sh
# publishes it (v1.0.0 v1.1.0 v1.1.2 v2.0.0, branches main v1 v2) when the
# img2gray variants are built, and whatever you publish into it with
# tests/hub/publish.py. It prints the endpoint and the lines to paste into
# another shell, then serves until Ctrl-C (or --background: it returns and
# leaves the Hub running; stop it with `kill PID`, the PID it printed).
#
# usage: scripts/local-hub.sh [--root DIR] [--build-dir DIR] [--no-img2gray] [--background]
#   --root DIR       the Hub's files (repos, LFS); default: a new temporary
#                    folder, removed when the Hub stops. An existing root
#                    is served as it is (publish again to change it).
#   --build-dir DIR  the build folder whose variants/img2gray/build to publish
#                    (default: build)
#   --no-img2gray    publish nothing: an empty Hub
#   --background     start it and return (the root is then kept)
#
# Then, in another shell:
#   export HF_ENDPOINT=<the endpoint it printed> HF_HUB_CACHE=/tmp/my-cache
#   build/bindings/cli/libkernels versions kernels-community/img2gray
#   python3 tests/hub/publish.py --root <root> --repo me/k --dir my-kernel-build --tag v1.0.0 --branch v1
#   python3 tests/hub/publish.py --root <root> --org me --trusted
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
root= build=build img2gray=1 background=0
while [ $# -gt 0 ]; do
  case $1 in
  --root) root=${2:?--root needs a folder}; shift 2 ;;
  --build-dir) build=${2:?--build-dir needs a folder}; shift 2 ;;
  --no-img2gray) img2gray=0; shift ;;
  --background) background=1; shift ;;
  -h | --help) sed -n '9,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "local-hub.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
  esac
done

# The project's Python (tests/hub needs only the standard library and git).
py=python3
[ -x .venv/bin/python3 ] && py=.venv/bin/python3
[ -n "${KERNELS_VENV:-}" ] && [ -x "$KERNELS_VENV/bin/python3" ] && py=$KERNELS_VENV/bin/python3
command -v git >/dev/null || { echo "local-hub.sh: git is needed (the Hub serves git repos)" >&2; exit 1; }

temp_root=0
if [ -z "$root" ]; then
  root=$(mktemp -d "${TMPDIR:-/tmp}/kernels-hub-XXXXXX")
  [ $background = 1 ] || temp_root=1
fi
mkdir -p "$root"
root=$(cd "$root" && pwd)
port_file=$(mktemp "${TMPDIR:-/tmp}/kernels-hub-port-XXXXXX")
rm -f "$port_file"

if [ $img2gray = 1 ]; then
  variants=$build/variants/img2gray/build
  if [ -d "$variants" ]; then
    "$py" scripts/publish-img2gray.py --root "$root" --build "$variants" >/dev/null
    published="kernels-community/img2gray (v1.0.0 v1.1.0 v1.1.2 v2.0.0; branches main v1 v2)"
  else
    published="nothing: $variants is not built (scripts/demo.sh builds it, or cmake --build $build --target img2gray_repo_variants)"
  fi
else
  published="nothing (--no-img2gray)"
fi

server_args=(tests/hub/server.py --root "$root" --port-file "$port_file")
if [ $background = 1 ]; then
  nohup "$py" "${server_args[@]}" >"$root/server.log" 2>&1 &
else
  [ $temp_root = 1 ] && server_args+=(--parent-pid $$)
  "$py" "${server_args[@]}" &
fi
hub_pid=$!
for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.1; done
[ -s "$port_file" ] || { echo "local-hub.sh: the Hub did not start" >&2; kill "$hub_pid" 2>/dev/null; exit 1; }
endpoint=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["endpoint"])' "$port_file")
rm -f "$port_file"

cat <<EOF
local Hub: $endpoint (pid $hub_pid)
root:      $root$([ $temp_root = 1 ] && echo " (removed when it stops)")
published: $published

In another shell:
  export HF_ENDPOINT=$endpoint HF_HUB_CACHE=\$(mktemp -d)
  $build/bindings/cli/libkernels versions kernels-community/img2gray
  $py tests/hub/publish.py --root $root --repo ORG/NAME --dir DIR --tag v1.0.0 --branch main --branch v1
  $py tests/hub/publish.py --root $root --org ORG --trusted
EOF

if [ $background = 1 ]; then
  echo "running in the background: stop it with 'kill $hub_pid'"
  exit 0
fi
echo "serving; Ctrl-C stops it"
stop() {
  kill "$hub_pid" 2>/dev/null || true
  wait "$hub_pid" 2>/dev/null || true
  if [ $temp_root = 1 ]; then rm -rf "$root"; fi
}
trap 'stop; exit 0' INT TERM
wait "$hub_pid" || true
stop
