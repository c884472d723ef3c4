#!/usr/bin/env bash
# The tensor benchmark of this tree beside variants of it built with other
# CMake options, side by side in one call on a GPU machine
# (docs/development.md, "Comparing builds on the GPU"). Each variant builds
# only the agent and the recorder, in a build directory of its own, from the
# same sources; the benchmark runs every configuration in interleaved rounds
# and prints the ratios to no agent. OUT (default ./gpu-ab-out; the device
# tool sets $OUT) gets at most seven files, each as soon as its stage ends:
# build.log, checks.log, bench.log, ranges.txt, cases.log, the training
# step's fingerprint bundle (bench-fingerprint.tcgd-tensor, when under
# 16 MiB) and summary.txt; the runs' own folders stay in a work folder
# (GPU_AB_WORK, default a new one under /tmp).
#
#   scripts/gpu-ab.sh [--rounds N] [--check] [--trace] [--rules NAME=RULES...] [--only CASE...] NAME=-DOPTION=VALUE[,...] ...
#     --rounds N   benchmark rounds (default 2)
#     --check      fingerprint_gpu_check --no-measure on this tree and every variant first
#     --trace      every configuration's training step also writes its replays' kernel
#                  timeline (tensor_bench.py TCGD_BENCH_TRACE), and the summary gets
#                  kernel_timeline.py's line for each: job only, both, tcgd only, idle
#     --rules ...  more configurations of this tree's agent, each NAME=TCGD_TENSOR value
#                  (run_gate.py --tensor-rules), e.g. d4=fingerprint:overlap-depth=4;
#                  NAME@VARIANT=RULES runs a variant's agent under those rules
#                  (c14d4@c14=fingerprint:overlap-depth=4)
#     --only ...   gate cases (tests/gpu/run_gate.py --only) to run on this tree after the benchmark
#   e.g.  scripts/gpu-ab.sh --check u8=-DTCGD_FINGERPRINT_UNROLL=8
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/gpu-ab-out}"
mkdir -p "$out"
work=${GPU_AB_WORK:-$(mktemp -d /tmp/gpu-ab.XXXXXX)}
mkdir -p "$work"
exec > >(tee "$out/summary.txt") 2>&1
rounds=2 check=0 trace=0 only=() variants=() extra_rules=()
while (( $# )); do
  case $1 in
    --rounds) rounds=${2:?--rounds takes a number}; shift 2 ;;
    --check) check=1; shift ;;
    --trace) trace=1; shift ;;
    --only) shift; while (( $# )) && [[ $1 != --* && $1 != *=* ]]; do only+=("$1"); shift; done ;;
    --rules) shift; while (( $# )) && [[ $1 != --* && $1 != *=-D* && $1 == *=* ]]; do extra_rules+=("$1"); shift; done ;;
    *=-D*) variants+=("$1"); shift ;;
    *) echo "gpu-ab.sh: $1: expected --rounds N, --check, --trace, --rules NAME=RULES..., --only CASE... or" \
            "NAME=-DOPTION=VALUE[,...]" >&2; exit 2 ;;
  esac
done
# Every build takes every core: the variants' few targets end early, and the
# tree's own build then has the machine.
jobs=$(nproc)
t0=$(date +%s)
configure() {  # DIR OPTIONS...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTCGD_WERROR=OFF "$@" >/dev/null
}
# GPU_AB_TARGETS (e.g. "tcgd tcgd-recorder tcgd_torch tcgd-analyze tcgd-python
# fingerprint_gpu_check"): this tree builds only those, when a call's device
# time is short.
read -r -a tree_targets <<<"${GPU_AB_TARGETS:-}"
( configure build-gpu && cmake --build build-gpu -j "$jobs" ${tree_targets[@]:+--target "${tree_targets[@]}"} ) \
  >"$work/build-gpu.log" 2>&1 &
pids=($!)
for v in "${variants[@]}"; do
  name=${v%%=*}; IFS=, read -r -a opts <<<"${v#*=}"
  # The agent, the recorder and the torch bridge (libtcgd_torch.so, which the
  # agent loads from beside itself: without it a torch job's ranges run to
  # the end of the driver's segments, not of the allocator's blocks).
  targets=(tcgd tcgd-recorder); (( check )) && targets+=(fingerprint_gpu_check)
  ( configure "build-ab-$name" "${opts[@]}" &&
    # grep reads the whole list (-q would stop at the first match, and
    # ninja's SIGPIPE would fail the pipeline under pipefail).
    if ninja -C "build-ab-$name" -t targets all | grep "^tcgd_torch:" >/dev/null; then targets+=(tcgd_torch); fi &&
    cmake --build "build-ab-$name" -j "$jobs" --target "${targets[@]}" ) \
    >"$work/build-ab-$name.log" 2>&1 &
  pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
for f in "$work"/build-*.log; do echo "== $(basename "$f")"; cat "$f"; done >"$out/build.log"
echo "built in $(( $(date +%s) - t0 ))s, $(grep -c "warning:" "$out/build.log") compiler warnings"
if (( failed )); then tail -20 "$work"/build-*.log; echo "AB: a build failed"; exit 1; fi
# A variant runs this tree's job with its own agent: it must have every
# library the agent loads that this tree has.
shopt -s nullglob
for v in "${variants[@]}"; do
  name=${v%%=*}
  for lib in build-gpu/lib/libtcgd*.so; do
    if [[ ! -e build-ab-$name/lib/$(basename "$lib") ]]; then
      echo "AB: build-ab-$name/lib lacks $(basename "$lib"), which build-gpu/lib has"; exit 1
    fi
  done
done

rows=() status=0
if (( check )); then
  for dir in build-gpu "${variants[@]/#/build-ab-}"; do
    dir=${dir%%=*}
    "$dir"/bin/fingerprint_gpu_check --no-measure >"$work/check-${dir}.log" 2>&1
    rc=$?
    (( rc == 0 )) || status=1
    { echo "== $dir: rc $rc"; cat "$work/check-${dir}.log"; } >>"$out/checks.log"
    rows+=("check ${dir}: rc $rc, $(grep "^RESULT" "$work/check-${dir}.log" | cut -c1-60)")
  done
fi
rules=() envs=()
for r in "${extra_rules[@]}"; do
  name=${r%%=*}
  if [[ $name == *@* ]]; then
    variant=${name#*@} name=${name%%@*}
    if [[ ! -d build-ab-$variant ]]; then echo "AB: --rules $r: no variant named $variant"; exit 2; fi
    envs+=("$name=LD_PRELOAD=$PWD/build-ab-$variant/lib/libtcgd.so")
  fi
  rules+=("$name=${r#*=}")
done
for v in "${variants[@]}"; do
  name=${v%%=*}
  rules+=("$name=fingerprint")
  envs+=("$name=LD_PRELOAD=$PWD/build-ab-$name/lib/libtcgd.so")
done
configs=(none tensor-off fingerprint)
for r in "${rules[@]}"; do configs+=("${r%%=*}"); done
if (( trace )); then
  for c in "${configs[@]}"; do envs+=("$c=TCGD_BENCH_TRACE=$work/trace-$c.json"); done
fi
args=(--build ../../build-gpu --out "$work/bench" --benches tensor --bench-rounds "$rounds" --only none-such)
(( ${#rules[@]} )) && args+=(--tensor-rules "${rules[@]}")
(( ${#envs[@]} )) && args+=(--tensor-env "${envs[@]}")
(cd tests/gpu && python3 run_gate.py "${args[@]}") >"$out/bench.log" 2>&1
grep -E "^bench tensor|^SKIP" "$out/bench.log"
# How the training step's fingerprint launches spread over the device, by
# chunking policy (tests/gpu/range_bytes.py --chunks).
if [[ -d "$work/bench/tensor-bench/fingerprint" ]]; then
  # The training step's bundle: the largest the configuration wrote under 16 MiB.
  bundle=$(find "$work/bench/tensor-bench/fingerprint" -name "*.tcgd-tensor" -size -16M -printf "%s %p\n" |
           sort -n | tail -1 | cut -d" " -f2)
  [[ -n $bundle ]] && cp "$bundle" "$out/bench-fingerprint.tcgd-tensor"
  (cd tests/gpu && python3 range_bytes.py "$work/bench/tensor-bench/fingerprint" --top 3 --writes \
     --chunks 16:64,14:256) >"$out/ranges.txt" 2>&1
  grep -A2 "captured sites fingerprinted" "$out/ranges.txt" | tail -6
  grep -h "read again within" "$out/ranges.txt" | head -3
fi
# Which joins the job waits for, and why (range_bytes.py --joins), in each
# configuration's bundles with captured sites (the training step's).
for d in "$work"/bench/tensor-bench/*/; do
  c=$(basename "$d")
  [[ $c == none || $c == tensor-off ]] && continue
  (cd tests/gpu && python3 range_bytes.py "$d" --joins --top 8) 2>&1 |
    awk -v c="$c" '/waits:/ {sub(/^.*captured sites/, "captured sites"); print "joins " c ": " $0; next}
                   /waits for/ {print "joins " c ":" $0}' | head -9 >>"$out/ranges.txt"
done
grep -h "^joins" "$out/ranges.txt" | head -40
if (( trace )); then
  for c in "${configs[@]}"; do
    [[ -f $work/trace-$c.json ]] || { echo "timeline $c: no trace"; continue; }
    echo "timeline $c: $(cd tests/gpu && python3 kernel_timeline.py "$work/trace-$c.json" --replays 5 2>&1 | head -1)"
  done
fi
if (( ${#only[@]} )); then
  (cd tests/gpu && python3 -u run_gate.py --build ../../build-gpu --out "$work/cases" --no-bench --only "${only[@]}") \
    >"$out/cases.log" 2>&1 || status=1
  rows+=("cases: $(grep -cE "^\S+ +PASS " "$out/cases.log") PASS, $(grep -cE "^\S+ +FAIL " "$out/cases.log") FAIL (cases.log)")
fi
echo "== summary ($(( $(date +%s) - t0 ))s)"
for r in "${rows[@]}"; do echo "$r"; done
exit $status
