#!/usr/bin/env bash
# The README's main job: build tcgd, run a real PyTorch CUDA-graph program
# under the agent and print the analyzer's report (memory), then a program
# with a bug a CUDA graph introduces, run eagerly and as a graph with tensor
# fingerprints, and the first divergence between the two. Without a GPU and
# torch, print the reports of example bundles recorded on a GPU and kept in
# the repo.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup-deps.sh
# The programs only (no tests): the agent, recorder, analyzer, launcher, the
# Python helper and, where torch is installed, the torch bridge.
build="${TCGD_BUILD_DIR:-build-demo}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTCGD_BUILD_TESTS=OFF -DTCGD_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"

report() {
  echo
  echo "== tcgd-analyze info $1"
  "$build/bin/tcgd-analyze" info "$1"
  echo
  echo "== tcgd-analyze memory summary $1"
  "$build/bin/tcgd-analyze" memory summary "$1"
}

# The first divergence of a graph run from its eager run (exit 1: one was
# found, which is what the demo shows).
divergence() {
  echo
  echo "== tcgd-analyze tensor first-divergence $1 $2"
  local rc=0
  "$build/bin/tcgd-analyze" tensor first-divergence "$1" "$2" || rc=$?
  if ((rc > 1)); then exit "$rc"; fi
}

python=${PYTHON:-python3}
if "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/tcgd-demo.XXXXXX")
  echo "== running tests/gpu/demo.py under tcgd (bundles in $out)"
  "$build/bin/tcgd" run -o "$out" --run demo -- "$python" tests/gpu/demo.py
  for bundle in "$out"/*.tcgd-memory; do
    report "$bundle"
  done
  echo
  echo "== a learning-rate schedule the graph froze: tests/gpu/tensor_cases.py baked-scalar,"
  echo "   eager and as a replayed graph, under tcgd run --tensor fingerprint"
  launcher=$(cd "$build/bin" && pwd)/tcgd
  for mode in eager graph; do
    (cd tests/gpu && "$launcher" run -o "$out/tensor" --run "$mode" --tensor fingerprint \
       -- "$python" tensor_cases.py baked-scalar "$mode")
  done
  divergence "$(ls "$out"/tensor/eager-*.tcgd-tensor | head -1)" "$(ls "$out"/tensor/graph-*.tcgd-tensor | head -1)"
else
  echo "== no GPU or no CUDA-enabled torch here: showing the analyzer on example bundles"
  echo "   recorded on an NVIDIA H200 with tests/gpu/demo.py (docs/examples/, see docs/validation.md)"
  for bundle in docs/examples/*.tcgd-memory; do
    report "$bundle"
  done
  echo
  echo "== tensor fingerprints recorded on the H200 with tests/gpu/tensor_cases.py baked-scalar"
  echo "   (a learning-rate schedule the graph froze), eager and as a replayed graph"
  divergence docs/examples/baked-scalar-eager-h200.tcgd-tensor docs/examples/baked-scalar-graph-h200.tcgd-tensor
fi
