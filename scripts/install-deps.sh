#!/usr/bin/env bash
# Installs what building and testing libkernels needs, only where missing:
# Debian packages with apt-get, Python packages (pinned) with pip.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

debs=(build-essential cmake pkg-config git python3 python3-pip
      libcurl4-openssl-dev libgit2-dev libjansson-dev libarchive-dev libssl-dev
      libcmocka-dev libpng-dev clang libclang-rt-14-dev valgrind)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ -f "$here/tests/requirements.txt" ]; then
  python3 -m pip install -q --disable-pip-version-check -r "$here/tests/requirements.txt"
fi
