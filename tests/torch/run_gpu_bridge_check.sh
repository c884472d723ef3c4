#!/usr/bin/env bash
# Builds the torch bridge against the installed torch and checks it on the
# GPU with gpu_bridge_check.py (no agent needed), then runs
# gpu_tracker_check.py once without the agent to show its ground truth works.
# Outputs under OUT (default ./torch-bridge-check-out).
#
#   tests/torch/run_gpu_bridge_check.sh            CMake build (build-torch-gpu)
#   TCGD_DIRECT=1 tests/torch/run_gpu_bridge_check.sh   plain g++ (no CMake deps)
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/torch-bridge-check-out}"
mkdir -p "$out"
python=${PYTHON:-python3}

"$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "abi", int(torch._C._GLIBCXX_USE_CXX11_ABI), "gpu", torch.cuda.get_device_name(0))' 2>&1 | tee "$out/versions.txt"
g++ --version | head -1 | tee -a "$out/versions.txt"

if [[ "${TCGD_DIRECT:-0}" == 1 ]]; then
  torch_dir=$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
  abi=$("$python" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
  release=$("$python" -c 'import torch; print(torch.__version__.split("+")[0])')
  cuda_inc=/usr/local/cuda/include
  [[ -f $cuda_inc/cuda_runtime_api.h ]] ||
    cuda_inc=$("$python" -c 'import nvidia.cuda_runtime, os; print(os.path.dirname(nvidia.cuda_runtime.__file__) + "/include")')
  bridge="$out/libtcgd_torch.so"
  harness="$out/libtcgd_bridge_harness.so"
  g++ -std=c++17 -O2 -g -fPIC -shared -fvisibility=hidden -fvisibility-inlines-hidden \
    -Wall -Wextra -Werror -I. -Iagent -isystem "$torch_dir/include" \
    -isystem "$torch_dir/include/torch/csrc/api/include" -isystem "$cuda_inc" \
    -D_GLIBCXX_USE_CXX11_ABI="$abi" -DTCGD_TORCH_BUILT_FOR="\"$release\"" \
    collectors/torch/bridge.cpp collectors/torch/tracker.cpp collectors/torch/snapshot_taker.cpp \
    collectors/torch/snapshot_codec.cpp \
    -Wl,--version-script=collectors/torch/libtcgd_torch.map -Wl,-z,now -Wl,-z,nodelete \
    -Wl,--no-undefined -L"$torch_dir/lib" -Wl,--push-state,--no-as-needed -lc10 -lc10_cuda \
    -ltorch_cpu -Wl,--pop-state -ldl -o "$bridge" 2>&1 | tee "$out/build.log" || exit 1
else
  build="${TCGD_BUILD_DIR:-build-torch-gpu}"
  { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTCGD_WERROR=ON &&
    cmake --build "$build" -j "$(nproc)" --target tcgd_torch; } >"$out/build.log" 2>&1 ||
    { tail -40 "$out/build.log"; exit 1; }
  grep "torch bridge" "$out/build.log"
  bridge="$build/lib/libtcgd_torch.so"
fi
# The harness is plain C; built directly so that this works before the lead's
# tests/CMakeLists.txt lists tests/torch.
harness="$out/libtcgd_bridge_harness.so"
gcc -std=c11 -O2 -fPIC -shared -I. tests/torch/bridge_harness.c -ldl -lpthread -o "$harness" || exit 1
readelf -d "$bridge" | grep -E "NEEDED|FLAGS" | tee "$out/readelf.txt"

"$python" tests/torch/gpu_bridge_check.py --bridge "$bridge" --harness "$harness" 2>&1 | tee "$out/bridge-check.log"
status=${PIPESTATUS[0]}
"$python" tests/torch/gpu_tracker_check.py --out "$out/truth-no-agent.json" >"$out/tracker-check.log" 2>&1
echo "gpu_tracker_check.py without the agent: exit $?"
echo "gpu_bridge_check.py: exit $status"
exit "$status"
