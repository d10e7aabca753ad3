#!/usr/bin/env bash
# Installs what building and testing libkernels needs, only what is missing:
#  - Debian packages with apt-get (as root, or through sudo), listed first;
#  - Python packages, pinned in tests/requirements.txt, into the project's
#    own virtual environment .venv/ (KERNELS_VENV names another folder),
#    never into the system's interpreter. pip shows its progress and keeps
#    its downloads in its cache (~/.cache/pip), so a second environment on
#    the same machine downloads nothing.
# Two runs at once are safe: the second waits for the first (a lock in the
# environment's folder) and then finds everything installed.
# Other scripts use the environment through scripts/venv.sh.
# Environment: KERNELS_VENV (the environment's folder), KERNELS_REQUIREMENTS
# (another pins file), KERNELS_NO_APT=1 (leave the Debian packages alone:
# they are managed elsewhere).
set -euo pipefail
source "$(dirname "$0")/venv.sh"
here=$kernels_root
requirements=${KERNELS_REQUIREMENTS:-$here/tests/requirements.txt}

mkdir -p "$kernels_venv"
exec 9>"$kernels_venv/.install-deps.lock"
if ! flock -n 9; then
  echo "== install-deps: another install-deps.sh is installing into $kernels_venv; waiting for it"
  flock 9
fi

# What each package is for: the compiler and build tools; the libraries
# libkernels links; the test framework and the examples' libpng; clang and
# its runtime for the fuzzer; valgrind for the end-to-end tests; python3
# with venv for the environment below; zsh and fish for the completion
# tests; debhelper and lintian to build and check the Debian packages;
# abigail-tools (abidw, abidiff) to check the ABI against abi/libkernels.abi.
debs=(build-essential cmake pkg-config git python3 python3-venv
      libcurl4-openssl-dev libgit2-dev libjansson-dev libarchive-dev libssl-dev
      libcmocka-dev libpng-dev clang libclang-rt-14-dev valgrind zsh fish debhelper lintian
      abigail-tools)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ "${KERNELS_NO_APT:-}" = 1 ]; then
  echo "== install-deps: KERNELS_NO_APT=1, not installing the missing Debian packages ${missing[*]}"
elif [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  echo "== apt-get install ${missing[*]}"
  $SUDO apt-get update -q
  # Another apt-get (not ours) may hold dpkg's lock: wait for it.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q -o DPkg::Lock::Timeout=600 "${missing[@]}"
fi

# The environment: made once from python3; remade when it no longer runs
# (its base interpreter gone), keeping the lock file held above.
if ! "$kernels_python" -c '' 2>/dev/null; then
  echo "== creating the virtual environment $kernels_venv ($(python3 --version))"
  find "$kernels_venv" -mindepth 1 -maxdepth 1 ! -name .install-deps.lock -exec rm -rf {} +
  python3 -m venv "$kernels_venv"
fi

# pip runs only when the pins changed since the last install.
stamp=$kernels_venv/.requirements.sha256
want=$(cat "$requirements" <("$kernels_python" -c 'import sys; print(sys.version)') | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "== pip install -r ${requirements#"$here"/} into $kernels_venv (torch and its CUDA libraries: about 4 GB the first time)"
  start=$(date +%s)
  "$kernels_python" -m pip install --disable-pip-version-check --progress-bar on -r "$requirements"
  echo "$want" >"$stamp"
  echo "== Python packages installed in $(( $(date +%s) - start )) s"
else
  echo "== Python packages: up to date in $kernels_venv"
fi
