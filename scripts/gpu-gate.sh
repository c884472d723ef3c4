#!/usr/bin/env bash
# The GPU gate: one call on a GPU machine builds everything, runs the CPU
# suite, runs the GPU programs of tests/gpu/ under the agent, checks them and
# prints a summary table last. Logs and bundles go under OUT (default
# ./gpu-gate-out; the device tool sets $OUT).
#
#   scripts/gpu-gate.sh [--only CASE ...] [--no-bench] [--skip-ctest]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/gpu-gate-out}"
mkdir -p "$out"
build="${TCGD_BUILD_DIR:-build-gpu}"
python=${PYTHON:-python3}
skip_ctest=0
args=()
for a in "$@"; do
  if [[ $a == --skip-ctest ]]; then skip_ctest=1; else args+=("$a"); fi
done

{
  echo "== versions"
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true
  g++ --version | head -1; cmake --version | head -1
} 2>&1 | tee "$out/versions.txt"

scripts/setup-deps.sh --check || exit 1
echo "== build"
t0=$(date +%s)
# Warnings do not stop the gate (the CPU suite builds with -Werror); they are
# counted and reported, since the GPU machine's compiler may differ.
if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTCGD_WERROR=OFF &&
       cmake --build "$build" -j "$(nproc)"; } >"$out/build.log" 2>&1; then
  tail -50 "$out/build.log"; echo "GATE: build failed"; exit 1
fi
warnings=$(grep -c "warning:" "$out/build.log")
echo "built in $(( $(date +%s) - t0 ))s, $warnings compiler warnings"
grep "warning:" "$out/build.log" | sort | uniq -c | sort -rn | head -5

ctest_status="skipped"
if (( ! skip_ctest )); then
  echo "== CPU suite"
  if ctest --test-dir "$build" -j "$(nproc)" --timeout 300 -LE gpu >"$out/ctest.log" 2>&1; then
    ctest_status="passed"
  else
    ctest_status="FAILED"; grep -E "Failed|\*\*\*" "$out/ctest.log" | head -30
  fi
  tail -3 "$out/ctest.log"
fi

echo "== GPU programs"
"$python" tests/gpu/run_gate.py --build "$build" --out "$out/cases" "${args[@]}" 2>&1 | tee "$out/gate.log"
gate_status=${PIPESTATUS[0]}
cp "$out/cases/summary.json" "$out/" 2>/dev/null
# The tensor bundles to keep as golden ones (tests/golden/tensor), apart:
# small enough to come back from a machine that returns few, small files.
if [[ -d "$out/cases/golden-tensor" ]]; then
  tar -C "$out/cases" -cJf "$out/golden-tensor.tar.xz" golden-tensor 2>/dev/null
fi
tar -C "$out" -czf "$out/cases.tar.gz" cases 2>/dev/null && rm -rf "$out/cases"
echo "CPU suite on this machine: $ctest_status; compiler warnings: $warnings"
exit "$gate_status"
