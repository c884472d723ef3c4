#!/usr/bin/env bash
# Installs what tcgd needs to build and test, from the system's packages.
# Idempotent: a machine that has everything is left alone (no apt-get at all).
#
#   scripts/setup-deps.sh            install what is missing (needs root or sudo)
#   scripts/setup-deps.sh --check    only report; exit 1 if something is missing
#
# Also locates the CUDA toolkit headers (cuda.h, CUPTI), which tcgd compiles
# against without needing a GPU, and says exactly what to do when they are not
# there.
set -euo pipefail

check_only=0
[[ "${1:-}" == "--check" ]] && check_only=1

say() { printf 'setup-deps: %s\n' "$*" >&2; }

# Debian/Ubuntu package -> a command on PATH or a file that proves it is
# installed. Checking these rather than dpkg state also accepts a machine that
# got them another way (a CMake or ninja from pip, a toolkit image).
declare -A probe=(
  [g++]=g++
  [cmake]=cmake
  [ninja-build]=ninja
  [pkg-config]=pkg-config
  [protobuf-compiler]=protoc
  [libprotobuf-dev]=/usr/include/google/protobuf/message.h
  [zlib1g-dev]=/usr/include/zlib.h
  [libspdlog-dev]=/usr/include/spdlog/spdlog.h
  [libfmt-dev]=/usr/include/fmt/format.h
  [libgtest-dev]=/usr/include/gtest/gtest.h
  [libgmock-dev]=/usr/include/gmock/gmock.h
  [libbenchmark-dev]=/usr/include/benchmark/benchmark.h
  [binutils]=nm
  [python3]=python3
)

missing=()
for pkg in "${!probe[@]}"; do
  p=${probe[$pkg]}
  if [[ $p == /* ]]; then [[ -e $p ]] || missing+=("$pkg")
  else command -v "$p" >/dev/null || missing+=("$pkg"); fi
done

if ((${#missing[@]})); then
  if ((check_only)); then
    say "missing packages: ${missing[*]}"
    say "run: scripts/setup-deps.sh   (or: apt-get install -y ${missing[*]})"
    exit 1
  fi
  if ! command -v apt-get >/dev/null; then
    say "missing: ${missing[*]}; this script knows apt-get only: install them with your package manager"
    exit 1
  fi
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      say "missing: ${missing[*]}; run as root: apt-get update && apt-get install -y ${missing[*]}"
      exit 1
    fi
  fi
  say "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- headless Chromium (optional) -------------------------------------------
# The test that opens report.html in a browser (tests/analyze/
# report_chromium_test.cpp) needs a headless Chromium. Debian ships it as a
# plain package, chromium-headless-shell; Ubuntu's chromium packages only
# install a snap, which this script does not use: there the test skips and
# says what is missing. TCGD_CHROMIUM may name another binary.
chromium_found() {
  local candidate
  for candidate in "${TCGD_CHROMIUM:-}" chromium-headless-shell chromium chrome-headless-shell; do
    [[ -n "$candidate" ]] && command -v "$candidate" >/dev/null &&
      "$candidate" --version >/dev/null 2>&1 && return 0
  done
  return 1
}
chromium_candidate() {
  # Read whole first: grep -q closing the pipe early would fail it under pipefail.
  local policy
  policy=$(apt-cache policy chromium-headless-shell 2>/dev/null || true)
  [[ $policy =~ Candidate:\ [0-9] ]]
}
if ! chromium_found; then
  if ((check_only)); then
    say "optional: no headless Chromium (the report.html browser test skips); run scripts/setup-deps.sh"
  elif ! command -v apt-get >/dev/null; then
    say "optional: no headless Chromium and no apt-get: install chromium-headless-shell for the report.html test"
  else
    csudo=""
    [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null && csudo="sudo"
    chromium_candidate || $csudo apt-get update -qq || true
    if chromium_candidate; then
      say "installing chromium-headless-shell (the report.html browser test)"
      DEBIAN_FRONTEND=noninteractive $csudo apt-get install -y -qq --no-install-recommends \
        chromium-headless-shell >/dev/null ||
        say "could not install chromium-headless-shell: the report.html browser test will skip"
    else
      say "no chromium-headless-shell package here (Ubuntu ships Chromium as a snap only): the report.html browser test will skip"
    fi
  fi
fi

# ---- Python packages the tests use --------------------------------------------
# tensorboard: the export test (tests/analyze/export/tensorboard_readback.py)
# reads `tcgd-analyze export tensorboard`'s event files with TensorBoard's own
# reader, and fails without it. Installed for the python3 on PATH (the one
# CMake's FindPython3 picks and ctest runs), into the user's site-packages,
# only when `import tensorboard` fails. A Python that refuses pip installs as
# "externally managed" (Debian's own python3, PEP 668) is retried with
# --break-system-packages, which a --user install permits safely.
python_packages=(tensorboard)
for module in "${python_packages[@]}"; do
  python3 -c "import $module" >/dev/null 2>&1 && continue
  if ((check_only)); then
    say "missing Python package: $module (the export test fails without it); run scripts/setup-deps.sh"
    exit 1
  fi
  if ! python3 -m pip --version >/dev/null 2>&1; then
    say "python3 has no pip: install it (apt-get install python3-pip), then run this script again"
    exit 1
  fi
  say "installing the Python package $module (python3 -m pip install --user $module)"
  if ! python3 -m pip install --user --quiet --disable-pip-version-check "$module" 2>/dev/null &&
     ! python3 -m pip install --user --quiet --disable-pip-version-check --break-system-packages "$module"; then
    say "could not install $module with pip; install it for $(command -v python3), then run this script again"
    exit 1
  fi
  python3 -c "import $module" >/dev/null 2>&1 || {
    say "$module was installed but python3 cannot import it (is the user site-packages disabled?)"
    exit 1
  }
done

# ---- CUDA toolkit headers ---------------------------------------------------
cuda_include=""
for dir in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-13.0 /usr/local/cuda-13 /usr; do
  [[ -n "$dir" && -f "$dir/include/cuda.h" ]] && { cuda_include="$dir/include"; break; }
done
if [[ -z "$cuda_include" ]]; then
  say "CUDA toolkit headers (cuda.h) not found in \$CUDA_HOME, /usr/local/cuda or /usr/include."
  say "tcgd builds against the CUDA 13 driver API headers (no GPU needed). Install the CUDA toolkit 13.x"
  say "(package cuda-toolkit-13-0 from NVIDIA's apt repository, or Debian's nvidia-cuda-toolkit from non-free),"
  say "or point CUDA_HOME at a toolkit, then run this script again."
  exit 1
fi
version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$cuda_include/cuda.h" | head -1)
if [[ -z "$version" || "$version" -lt 12000 ]]; then
  say "found $cuda_include/cuda.h with CUDA_VERSION=${version:-unknown}; tcgd needs 12.0 or newer (13.x tested)"
  exit 1
fi
# NVTX v3 (header-only, nvtx3/nvToolsExt.h): part of the CUDA toolkit since
# 10.0 (NVIDIA's package cuda-nvtx-13-0). The NVTX points
# (collectors/points/nvtx_injection.cpp) and their test build with it.
if [[ ! -f "$cuda_include/nvtx3/nvToolsExt.h" && ! -f /usr/include/nvtx3/nvToolsExt.h ]]; then
  say "NVTX v3 headers (nvtx3/nvToolsExt.h) not found in $cuda_include or /usr/include."
  say "Install the toolkit's NVTX component (cuda-nvtx-13-0 from NVIDIA's apt repository), then run this script again."
  exit 1
fi
say "ok: packages present; Python packages: ${python_packages[*]}; CUDA headers $cuda_include (CUDA_VERSION $version), NVTX v3 headers"
