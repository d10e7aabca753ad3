#!/usr/bin/env bash
# Prepares DIR (default .devrun, git-ignored through .git/info/exclude) for
# a run of gpu_check.py on a machine without libkernels' dependencies or a
# Hub: DIR/lib holds libkernels.so and the shared libraries it needs (not
# glibc's, libstdc++, and libxml2 with its 30 MB ICU: a CUDA machine has those), DIR/cache a huggingface_hub cache into which the binding fetched
# img2gray (version 1, the CUDA variant: torch here is a CUDA build) from a
# local Hub fixture. On the GPU machine:
#   LD_LIBRARY_PATH=DIR/lib KERNELS_LIBRARY=DIR/lib/libkernels.so.0 HF_HUB_CACHE=DIR/cache \
#     HF_HUB_OFFLINE=1 python3 bench/vs_python/gpu_check.py
#   bash bench/vs_python/prepare_gpu.sh BUILD_DIR [DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=$(cd "${1:?build dir}" && pwd)
dir=${2:-$src/.devrun}
rm -rf "$dir"; mkdir -p "$dir/lib" "$dir/cache"
cp -L "$build/lib/libkernels.so.0" "$dir/lib/"
ldd "$build/lib/libkernels.so.0" | awk '$3 ~ /^\// {print $3}' | grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libicu[a-z]*|libxml2)\.so' |
  while read -r l; do cp -L "$l" "$dir/lib/"; done
python3 - "$src" "$build" "$dir" <<'PY'
import os, subprocess, sys
src, build, d = sys.argv[1:]
sys.path.insert(0, os.path.join(src, "tests", "python"))
from hubclient import Hub
with Hub.start() as hub:
    subprocess.run([sys.executable, f"{src}/scripts/publish-img2gray.py", "--root", hub.root, "--build",
                    f"{build}/variants/img2gray/build"], check=True, capture_output=True)
    env = hub.hf_env(f"{d}/cache", KERNELS_LIBRARY=f"{build}/lib/libkernels.so", PYTHONPATH=f"{src}/bindings/python")
    code = ("import libkernels, json; k = libkernels.get_kernel('kernels-community/img2gray', version=1);"
            "print(k.__libkernels_kernel__.variant)")
    print(subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, check=True, capture_output=True,
                         text=True).stdout.strip())
PY
du -sh "$dir"
