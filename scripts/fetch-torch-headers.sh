#!/usr/bin/env bash
# Caches the C++ headers of one torch release, taken from its wheel on the
# Python package index, so that the torch bridge (collectors/torch) compiles
# on machines without torch (CI) against exactly what the GPU machine runs.
#
#   scripts/fetch-torch-headers.sh [VERSION]      default 2.11.0
#
# Result: ${XDG_CACHE_HOME:-~/.cache}/tcgd/torch-VERSION/torch/{include/,version.py},
# which CMake finds by itself (collectors/torch/CMakeLists.txt, step 4).
# Idempotent: when the headers are there it only says so. Only torch/include/**
# and torch/version.py are unpacked (62 MB); the downloaded wheel (about
# 530 MB) is deleted afterwards unless TCGD_TORCH_KEEP_WHEEL=1.
#
# Environment:
#   TCGD_TORCH_WHEEL   a wheel already on disk: used instead of downloading
#   PYTHON             the interpreter whose pip downloads (default python3)
set -euo pipefail

version="${1:-2.11.0}"
cache_home="${XDG_CACHE_HOME:-$HOME/.cache}"
dest="$cache_home/tcgd/torch-$version"
marker="$dest/torch/include/c10/cuda/CUDACachingAllocator.h"

if [[ -f "$marker" && -f "$dest/torch/version.py" ]]; then
  echo "torch $version headers: already in $dest"
  exit 0
fi

mkdir -p "$dest"
wheel="${TCGD_TORCH_WHEEL:-}"
if [[ -z "$wheel" ]]; then
  wheel=$(ls "$dest"/torch-"$version"-*.whl 2>/dev/null | head -1 || true)
fi
if [[ -z "$wheel" ]]; then
  python="${PYTHON:-python3}"
  echo "torch $version headers: downloading the wheel (about 530 MB) into $dest"
  # Any CPython tag carries the same headers; pin the platform so that pip
  # picks the x86_64 manylinux wheel whatever the local interpreter is.
  "$python" -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.12 \
    --dest "$dest" "torch==$version"
  wheel=$(ls "$dest"/torch-"$version"-*.whl | head -1)
else
  echo "torch $version headers: using $wheel"
fi

# Unpack into a scratch directory first, so that an interrupted run never
# leaves a half-filled include tree that the check above would accept.
tmp=$(mktemp -d "$dest/.unpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if command -v unzip >/dev/null; then
  unzip -q -o "$wheel" 'torch/include/*' 'torch/version.py' -d "$tmp"
else
  "${PYTHON:-python3}" - "$wheel" "$tmp" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if n.startswith("torch/include/") or n == "torch/version.py"]
    z.extractall(sys.argv[2], names)
EOF
fi
rm -rf "$dest/torch"
mv "$tmp/torch" "$dest/torch"

if [[ "${TCGD_TORCH_KEEP_WHEEL:-0}" != 1 && -z "${TCGD_TORCH_WHEEL:-}" ]]; then
  rm -f "$wheel"
fi
echo "torch $version headers: unpacked into $dest/torch ($(du -sh "$dest/torch/include" | cut -f1)," \
     "$(grep -m1 '^__version__' "$dest/torch/version.py"))"
