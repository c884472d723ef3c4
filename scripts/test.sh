#!/usr/bin/env bash
# The README's test command: installs what is missing, builds warning-free,
# runs the CPU suite (unit + integration; GPU tests skip with a message when
# there is no GPU).
#
#   scripts/test.sh                 the suite, as CI runs it
#   TCGD_SANITIZE=address,undefined scripts/test.sh   the same under ASan/UBSan
#   TCGD_SANITIZE=thread scripts/test.sh              the same under TSan
#   TCGD_BUILD_DIR=dir              build directory (default: build, or build-<sanitizer>)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup-deps.sh

sanitize="${TCGD_SANITIZE:-}"
build="${TCGD_BUILD_DIR:-build${sanitize:+-${sanitize//,/-}}}"
jobs="${TCGD_JOBS:-$(nproc)}"

# Headers of the torch version the GPU machine runs, so the torch bridge is
# compiled here too and a break shows before the GPU (cached after the first run).
scripts/fetch-torch-headers.sh 2.11.0 || echo "torch headers unavailable: the torch bridge is not built"

cmake -S . -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTCGD_WERROR=ON \
  -DTCGD_SANITIZE="$sanitize" >/dev/null
cmake --build "$build" -j "$jobs"

# CI has no GPU: tests labelled gpu skip themselves with a message there.
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 300
