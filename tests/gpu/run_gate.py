#!/usr/bin/env python3
"""The GPU gate's runner: every program in this folder runs without and with
the agent; the bundle is checked against the ground truth the program took
from PyTorch in the same run; a summary table is printed last.

    run_gate.py --build BUILD_DIR --out OUT_DIR [--only NAME ...] [--no-bench]

Exit status: 0 when every check passed, 1 otherwise, 77 when there is no GPU
(ctest treats 77 as skipped).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import group_stage
import memory_checks
import tensor_checks

HERE = Path(__file__).resolve().parent
MiB = 1 << 20
LAUNCH_APIS = {"cudaGraphLaunch", "cudaGraphLaunch_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz"}


def have_gpu():
    try:
        import torch  # noqa: F401
        return torch.cuda.is_available()
    except Exception:
        return False


class Run:
    def __init__(self, argv, env, timeout):
        t0 = time.time()
        try:
            p = subprocess.run(argv, env=env, cwd=HERE, capture_output=True, text=True,
                               timeout=timeout)
            self.rc, self.stdout, self.stderr = p.returncode, p.stdout, p.stderr
            self.hung = False
        except subprocess.TimeoutExpired as e:
            self.rc, self.hung = None, True
            self.stdout = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            self.stderr = (e.stderr or b"").decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        self.seconds = time.time() - t0

    def result(self):
        """The RESULT line of a gate program, or the whole output of one that
        prints no such line (the demo job)."""
        for line in self.stdout.splitlines():
            if line.startswith("RESULT "):
                return line.split(None, 1)[1]
        return self.stdout.strip() or None


class _Rows(list):
    """The gate's case results; each is also printed as it comes (flushed),
    with its failed checks, so that a run cut by a time limit still says
    which cases finished and how. The details and the summary come at the
    end as before."""

    def append(self, row):
        super().append(row)
        name, ok, checks, secs = row
        print(f"done {name} {'PASS' if ok else 'FAIL'} {sum(1 for c in checks if c[0])}/{len(checks)} "
              f"({secs:.1f}s)", flush=True)
        for good, what in checks:
            if not good:
                print(f"   [FAIL] {what}", flush=True)


class Gate:
    def __init__(self, build, out):
        self.build = Path(build).resolve()
        self.out = Path(out).resolve()
        self.lib = self.build / "lib" / "libtcgd.so"
        self.analyze = self.build / "bin" / "tcgd-analyze"
        self.rows = _Rows()
        self.out.mkdir(parents=True, exist_ok=True)  # summary.json even when no case ran

    def env(self, agent, case_dir=None, truth=None, extra=None):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(
            [str(HERE), str(HERE.parent.parent / "tools" / "python"), env.get("PYTHONPATH", "")])
        if agent:
            env["LD_PRELOAD"] = str(self.lib)
            env["TCGD_OUTPUT"] = str(case_dir)
        if truth:
            env["GATE_TRUTH"] = str(truth)
        env.update(extra or {})
        return env

    def analyze_json(self, *args):
        p = subprocess.run([str(self.analyze), *args], capture_output=True, text=True, timeout=300)
        return p

    def command_line(self, bundle):
        p = self.analyze_json("info", "--json", str(bundle))
        try:
            return " ".join(json.loads(p.stdout).get("provenance", {}).get("command_line", []))
        except ValueError:
            return ""

    def run_pair(self, name, cmd, extra_env=None, agent_env=None, truth_name="truth.json", timeout=300):
        """Runs `cmd` without and then with the agent (extra_env in both,
        agent_env with the agent only) into a fresh case folder, keeping
        their output there, and makes the checks every case makes: no hang,
        exit code unchanged. Returns (case_dir, truth_path, plain, traced,
        checks, expect)."""
        case_dir = self.out / name
        shutil.rmtree(case_dir, ignore_errors=True)
        case_dir.mkdir(parents=True)
        plain = Run(cmd, self.env(False, extra=extra_env), timeout)
        truth_path = case_dir / truth_name
        traced = Run(cmd, self.env(True, case_dir, truth_path, {**(extra_env or {}), **(agent_env or {})}),
                     timeout)
        (case_dir / "agent.stdout").write_text(traced.stdout)
        (case_dir / "agent.stderr").write_text(traced.stderr)
        (case_dir / "plain.stderr").write_text(plain.stderr)
        checks = []

        def expect(ok, what):
            checks.append((bool(ok), what))

        expect(not plain.hung and not traced.hung, "no hang")
        expect(plain.rc == traced.rc, f"exit code unchanged ({plain.rc} vs {traced.rc})")
        return case_dir, truth_path, plain, traced, checks, expect

    def run_case(self, name, argv, check, timeout=300, extra_env=None, agent_env=None):
        case_dir, truth_path, plain, traced, checks, expect = self.run_pair(
            name, [sys.executable, *argv], extra_env, agent_env, timeout=timeout)
        expect(plain.result() is not None and plain.result() == traced.result(),
               f"output identical ({plain.result()} vs {traced.result()})")
        # One bundle per process that used CUDA: the job's, plus one for each
        # child that touched CUDA (Inductor's compile workers call cuInit).
        bundles = sorted(case_dir.glob("*.tcgd-memory"))
        script = argv[0]
        job_bundles = [b for b in bundles if script in self.command_line(b)]
        others = len(bundles) - len(job_bundles)
        expect(len(job_bundles) == 1,
               f"one bundle of the job ({len(job_bundles)}; {others} of child processes)")
        if job_bundles and (truth_path.exists() or check is check_demo):
            bundle = job_bundles[0]
            v = self.analyze_json("validate", str(bundle))
            expect(v.returncode == 0, f"validate exit 0 ({v.returncode}: {v.stdout.strip()[:120]})")
            info = json.loads(self.analyze_json("info", "--json", str(bundle)).stdout or "{}")
            dump = self.analyze_json("dump", "--json", str(bundle))
            records = [json.loads(line) for line in dump.stdout.splitlines() if line.strip()]
            truth = json.loads(truth_path.read_text()) if truth_path.exists() else {}
            summary = self.analyze_json("memory", "summary", "--json", str(bundle))
            memory = json.loads(summary.stdout) if summary.returncode == 0 else {}
            (case_dir / "memory-summary.json").write_text(summary.stdout)
            try:
                check(Bundle(info, records, memory, self.analyze, bundle), truth, expect)
            except Exception as e:  # a check that crashes is a failed check
                expect(False, f"check raised {type(e).__name__}: {e}")
        ok = all(c[0] for c in checks)
        self.rows.append((name, ok, checks, traced.seconds))
        return ok


class Bundle:
    def __init__(self, info, records, memory=None, analyzer=None, path=None):
        self.info = info
        self.records = records
        self.memory = memory or {}
        self.points = {p["name"]: p for p in info.get("points", [])}
        self.analyzer = analyzer
        self.path = path

    def analyze(self, *args):
        """`tcgd-analyze ARGS --json BUNDLE`, parsed; raises on a failed run."""
        p = subprocess.run([str(self.analyzer), *args, "--json", str(self.path)], capture_output=True,
                           text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"tcgd-analyze {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return json.loads(p.stdout)

    def seq(self, point):
        return self.points[point]["sequence"]

    def between(self, a=None, b=None):
        lo = self.seq(a) if a else -1
        hi = self.seq(b) if b else float("inf")
        return [r for r in self.records if lo < r["seq"] < hi]

    def apis(self, recs, prefix):
        return [r for r in recs if str(r.get("api", "")).startswith(prefix)]

    def live(self, upto, alloc_apis, free_apis, key="ptr"):
        """Bytes of driver allocations alive just before point `upto`."""
        live = {}
        hi = self.seq(upto)
        for r in self.records:
            if r["seq"] >= hi:
                break
            api = r.get("api")
            if api in alloc_apis and r.get("result", 0) == 0:
                live[r[key]] = r["size"]
            elif api in free_apis:
                live.pop(r.get(key), None)
        return sum(live.values())

    def kernel_names(self):
        named = {}
        for r in self.records:
            if "name" in r and isinstance(r.get("name"), str) and r.get("class") == "kernel_launch":
                h = r.get("handle", r.get("function", r.get("kernel")))
                if h is not None:
                    named[h] = r["name"]
        return named

    def launches(self):
        return [r for r in self.records
                if r.get("class") == "kernel_launch" and str(r.get("api", "")).startswith("cuLaunchKernel")]


def mib(n):
    return f"{n / MiB:.1f} MiB"


def check_memory_deltas(b, truth, expect, allocs, frees, key, torch_key):
    p = truth["points"]
    for a, z in (("start", "allocated"), ("allocated", "after_empty_cache")):
        drv = b.live(z, allocs, frees, key) - b.live(a, allocs, frees, key)
        torch_delta = p[z][torch_key] - p[a][torch_key]
        info_delta = p[a]["mem_get_info_free"] - p[z]["mem_get_info_free"]
        expect(drv == torch_delta,
               f"{a}->{z}: driver {mib(drv)} == torch {torch_key} {mib(torch_delta)}")
        expect(abs(drv - info_delta) <= 4 * MiB,
               f"{a}->{z}: driver {mib(drv)} ~ cuMemGetInfo {mib(info_delta)} (4 MiB)")
    expect(all(r.get("caller") for r in b.records if r.get("api") in allocs),
           "allocations carry a caller library")


def check_alloc_default(b, truth, expect):
    check_memory_deltas(b, truth, expect, {"cuMemAlloc_v2"}, {"cuMemFree_v2"}, "ptr", "reserved")


def check_alloc_expandable(b, truth, expect):
    expect(b.apis(b.records, "cuMemAddressReserve"), "cuMemAddressReserve recorded")
    expect(b.apis(b.records, "cuMemMap"), "cuMemMap recorded")
    check_memory_deltas(b, truth, expect, {"cuMemCreate"}, {"cuMemRelease"}, "handle", "reserved")


def check_alloc_async(b, truth, expect):
    allocs = {"cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync",
              "cuMemAllocFromPoolAsync_ptsz"}
    frees = {"cuMemFreeAsync", "cuMemFreeAsync_ptsz"}
    n = len([r for r in b.between("start", "allocated") if r.get("api") in allocs])
    expect(n >= truth["points"]["allocated"]["tensors"],
           f"cuMemAllocAsync per tensor ({n} >= {truth['points']['allocated']['tensors']})")
    p = truth["points"]
    drv = b.live("allocated", allocs, frees) - b.live("start", allocs, frees)
    torch_delta = p["allocated"]["allocated"] - p["start"]["allocated"]
    expect(drv == torch_delta, f"start->allocated: driver {mib(drv)} == torch allocated {mib(torch_delta)}")


def check_graph(b, truth, expect):
    launches = [r for r in b.between("after_capture", "after_replays") if r.get("api") in LAUNCH_APIS]
    expect(len(launches) == truth["replays"], f"{len(launches)} graph launches == {truth['replays']}")
    cap = b.between("before_capture", "after_capture")
    expect(b.apis(cap, "cuStreamBeginCapture"), "capture begin recorded")
    expect(b.apis(cap, "cuStreamEndCapture"), "capture end recorded")
    expect(b.apis(cap, "cuGraphInstantiate"), "instantiation recorded")
    check_kernel_names(b, expect)


def check_kernel_names(b, expect):
    launches = b.launches()
    names = b.kernel_names()
    handles = {r.get("handle", r.get("function", r.get("kernel"))) for r in launches}
    unnamed = [h for h in handles if h not in names]
    expect(launches and not unnamed,
           f"{len(launches)} kernel launches, {len(handles)} kernels, {len(unnamed)} without a name")


def check_compile(b, truth, expect):
    launches = [r for r in b.records if r.get("api") in LAUNCH_APIS]
    expect(len(launches) >= 5, f"cudagraph-tree replays recorded ({len(launches)})")
    expect(b.apis(b.records, "cuStreamBeginCapture"), "capture recorded")
    expect(b.apis(b.records, "cuGraphInstantiate"), "instantiation recorded")
    check_kernel_names(b, expect)


def check_nccl(b, truth, expect):
    expect(truth["allreduce_correct"], "all_reduce result correct")
    recs = b.between("before_nccl", "after_allreduce")
    nccl = [r for r in recs if "nccl" in str(r.get("caller", "")).lower()]
    expect(nccl, f"{len(nccl)} driver calls attributed to NCCL")
    # NCCL maps device memory through the VMM API and releases the handle
    # right after mapping, so what is live is what stays mapped: match each
    # cuMemMap to the cuMemCreate of its handle (device-located only).
    device_handles, live = {}, {}
    for r in recs:
        api = r.get("api")
        if api == "cuMemCreate" and r.get("result", 0) == 0 and r.get("location_type") == 1:
            device_handles[r["handle"]] = r["size"]
        elif api == "cuMemMap" and r.get("result", 0) == 0 and r.get("handle") in device_handles:
            live[r["ptr"]] = r["size"]
        elif api == "cuMemUnmap":
            live.pop(r.get("ptr"), None)
    mapped = sum(live.values())
    allocd = sum(r["size"] for r in recs if r.get("api") == "cuMemAlloc_v2" and r.get("result", 0) == 0)
    p = truth["points"]
    used = p["before_nccl"]["mem_get_info_free"] - p["after_allreduce"]["mem_get_info_free"]
    torch_delta = p["after_allreduce"]["reserved"] - p["before_nccl"]["reserved"]
    outside = used - torch_delta
    explained = mapped + allocd
    expect(0 < explained <= outside,
           f"NCCL device memory mapped {mib(mapped)} + cuMemAlloc {mib(allocd)} within the memory "
           f"outside the allocator {mib(outside)} (the rest, {mib(outside - explained)}, is context "
           f"and module memory that no allocation call made)")


def check_torch_idle(b, truth, expect):
    """The exit code and output are run_case's checks; here: the bundle is
    complete, with its exit point, and no point had a snapshot to take."""
    expect(b.info.get("complete") is True and b.info.get("end_reason") == "normal exit",
           f"bundle complete, end '{b.info.get('end_reason')}'")
    expect([p["name"] for p in b.info.get("points", [])] == ["exit"],
           f"one point, exit ({[p['name'] for p in b.info.get('points', [])]})")


def check_demo(b, truth, expect):
    check_graph_like = [r for r in b.records if r.get("api") in LAUNCH_APIS]
    expect(len(check_graph_like) == 20, f"{len(check_graph_like)} graph launches == 20")


# The launch benchmark's configurations: (agent?, extra env). "points-none"
# isolates what the default automatic points (and their watcher thread) cost.
LAUNCH_BENCH = {
    "none": (False, {}),
    "default": (True, {}),
    "points-none": (True, {"TCGD_POINTS": "none"}),
}


def bench(gate, rounds):
    """Launch-bound loops of each configuration, rounds interleaved (the
    order rotates each round) in one call. Returns, per configuration and
    measure, every round's time; medians are compared."""
    times = {k: [] for k in LAUNCH_BENCH}
    case_dir = gate.out / "bench"
    case_dir.mkdir(parents=True, exist_ok=True)
    keys = list(LAUNCH_BENCH)
    for i in range(rounds):
        for k in keys[i % len(keys):] + keys[:i % len(keys)]:
            agent, extra = LAUNCH_BENCH[k]
            r = Run([sys.executable, "launch_bench.py"], gate.env(agent, case_dir, extra=extra), 600)
            line = next((ln for ln in r.stdout.splitlines() if ln.startswith("BENCH ")), None)
            if line:
                times[k].append(json.loads(line[6:]))
    if not times["none"]:
        return None
    return {k: {m: [t[m] for t in v] for m in ("launch_s", "replay_s")} for k, v in times.items() if v}


# The memory cases run with the agent's defaults: the automatic points under
# test are the default TCGD_POINTS (capture,instantiate,exit,oom).
# The training-step benchmark's configurations: (agent?, extra env, argv mode).
MEMORY_BENCH = {
    "none": (False, {}, "plain"),
    "default": (True, {}, "plain"),
    "stacks-python": (True, {"TCGD_MEMORY_STACKS": "python"}, "plain"),
    "stacks-native": (True, {"TCGD_MEMORY_STACKS": "native"}, "plain"),
    "torch-history": (False, {}, "torch-history"),
}


def memory_bench(gate, rounds):
    """Median step time of each configuration, rounds interleaved (the order
    rotates each round) in one call."""
    times = {k: [] for k in MEMORY_BENCH}
    case_dir = gate.out / "memory-bench"
    case_dir.mkdir(parents=True, exist_ok=True)
    keys = list(MEMORY_BENCH)
    for i in range(rounds):
        for k in keys[i % len(keys):] + keys[:i % len(keys)]:
            agent, extra, mode = MEMORY_BENCH[k]
            r = Run([sys.executable, "memory_bench.py", mode], gate.env(agent, case_dir, extra=extra), 600)
            line = next((ln for ln in r.stdout.splitlines() if ln.startswith("BENCH ")), None)
            if line:
                times[k].append(json.loads(line[6:])["step_s"])
            else:
                (case_dir / f"{k}-{i}.stderr").write_text(r.stderr)
    if not times["none"]:
        return None
    return {k: statistics.median(v) for k, v in times.items() if v}


# The tensor probes' benchmark (tensor_bench.py and the launch loop):
# (agent?, extra env).
TENSOR_BENCH = {
    "none": (False, {}),
    "tensor-off": (True, {}),
    "fingerprint": (True, {"TCGD_TENSOR": "fingerprint"}),
}


def tensor_bench(gate, rounds, extra_rules=(), extra_env=()):
    """Median graphed-step, eager-step and launch-loop times per
    configuration, rounds interleaved (the order rotates each round) in one
    call, and the bytes one replay fingerprints (from the last bundle).
    extra_rules: more configurations, each "NAME=TCGD_TENSOR value";
    extra_env: "NAME=VAR=VALUE", one more variable of configuration NAME's
    environment (LD_PRELOAD names another build's agent, say)."""
    configs = {k: (agent, dict(env)) for k, (agent, env) in TENSOR_BENCH.items()}
    for item in extra_rules:
        name, _, rules = item.partition("=")
        configs[name] = (True, {"TCGD_TENSOR": rules})
    for item in extra_env:
        name, _, assignment = item.partition("=")
        var, sep, value = assignment.partition("=")
        if name not in configs or not sep:
            raise SystemExit(f"--tensor-env {item!r}: expected NAME=VAR=VALUE with NAME a configuration "
                             f"({', '.join(configs)})")
        configs[name][1][var] = value
    times = {k: {"graph_step_s": [], "eager_step_s": [], "launch_s": []} for k in configs}
    case_dir = gate.out / "tensor-bench"
    case_dir.mkdir(parents=True, exist_ok=True)
    keys = list(configs)
    for i in range(rounds):
        for k in keys[i % len(keys):] + keys[:i % len(keys)]:
            agent, extra = configs[k]
            for script, fields in (("tensor_bench.py", ("graph_step_s", "eager_step_s")),
                                   ("launch_bench.py", ("launch_s",))):
                (case_dir / k).mkdir(exist_ok=True)
                r = Run([sys.executable, script], gate.env(agent, case_dir / k, extra=extra), 600)
                line = next((ln for ln in r.stdout.splitlines() if ln.startswith("BENCH ")), None)
                if line:
                    for f in fields:
                        times[k][f].append(json.loads(line[6:])[f])
                else:
                    (case_dir / f"{k}-{script}-{i}.stderr").write_text(r.stderr)
    if not times["none"]["graph_step_s"]:
        return None
    res = {k: {f: statistics.median(v) for f, v in m.items() if v} for k, m in times.items()}
    from tensor_bundle import TensorBundle
    # Per configuration, from the training step's graph (the bundle whose
    # captured sites hold the most bytes; the launch loop's bundle has a small
    # graph of its own): the bytes one replay fingerprints and the overlap's
    # counters (capture_overlap.h).
    shapes = {}
    for k in keys:
        best = None
        for path in sorted((case_dir / k).rglob("*.tcgd-tensor")):
            try:
                b = TensorBundle(str(path))
            except ValueError:
                continue
            nbytes = sum(r["bytes"] for s in b.sites if s["capture"] > 0 for r in s["ranges"]
                         if not r["reuse_site"])
            if best is None or nbytes > best[0]:
                skipped = b.counters[-1]["skipped"] if b.counters else {}
                best = (nbytes, {c: skipped.get(c, 0) for c in
                                 ("overlap_nodes", "overlap_joins", "overlap_failed", "ranges_reused",
                                  "publish_nodes", "partials_full", "publish_failed", "overlap_joins_written",
                                  "overlap_joins_unseen", "overlap_joins_depth", "overlap_joins_newest", "batch_nodes",
                                  "batch_failed", "priority_raised", "priority_failed", "widened", "widen_failed")})
        if best is not None and best[0] > 0:
            shapes[k] = {"replay_bytes": best[0], **best[1]}
    res["shapes"] = shapes
    res["replay_bytes"] = shapes.get("fingerprint", {}).get("replay_bytes", 0)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--bench-rounds", type=int, default=3)
    ap.add_argument("--benches", nargs="*", default=["launch", "memory", "tensor"],
                    help="which benchmarks run (launch, memory, tensor); --no-bench runs none")
    ap.add_argument("--tensor-rules", nargs="*", default=[],
                    help="more configurations of the tensor benchmark, each NAME=TCGD_TENSOR value")
    ap.add_argument("--tensor-env", nargs="*", default=[],
                    help="NAME=VAR=VALUE: one more environment variable of tensor benchmark configuration "
                         "NAME (LD_PRELOAD=another build's libtcgd.so compares two builds side by side)")
    ap.add_argument("--group-world", type=int, default=2,
                    help="ranks of the run-group stage (group_stage.py); 1 smoke-tests it on one GPU")
    args = ap.parse_args()
    if not have_gpu():
        print("SKIP: no CUDA GPU or no CUDA-enabled torch here; the GPU gate needs both")
        return 77
    gate = Gate(args.build, args.out)
    cases = [
        ("alloc-default", ["alloc.py", "default"], check_alloc_default),
        ("alloc-expandable", ["alloc.py", "expandable"], check_alloc_expandable),
        ("alloc-async", ["alloc.py", "async"], check_alloc_async),
        ("graph-replay-50", ["graph_replay.py"], check_graph),
        ("compile-reduce-overhead", ["compile_graphs.py"], check_compile),
        ("nccl-1rank", ["nccl_allreduce.py"], check_nccl),
        ("demo", ["demo.py"], check_demo),
        ("torch-idle", ["torch_idle.py"], check_torch_idle),
    ]
    for name, argv, check in cases:
        if args.only and name not in args.only:
            continue
        gate.run_case(name, argv, check)
    for name, case, check, agent_env in memory_checks.CASES:
        if args.only and name not in args.only:
            continue
        gate.run_case(name, ["memory_cases.py", case], check, agent_env=agent_env)
    skipped = []  # (case, why)
    tensor_checks.run(gate, args.only)
    group_stage.run(gate, Bundle, args.only, skipped, args.group_world)
    benches = set() if args.no_bench else set(args.benches)
    bench_res = bench(gate, args.bench_rounds) if "launch" in benches else None
    mem_bench = memory_bench(gate, args.bench_rounds) if "memory" in benches else None
    tensor_b = tensor_bench(gate, args.bench_rounds, args.tensor_rules, args.tensor_env) if "tensor" in benches else None

    print("\n== GPU gate details")
    for name, ok, checks, secs in gate.rows:
        print(f"-- {name} ({secs:.1f}s)")
        for good, what in checks:
            print(f"   [{'ok' if good else 'FAIL'}] {what}")
    print("\n== GPU gate summary")
    print(f"{'case':28} {'result':8} checks")
    for name, ok, checks, _ in gate.rows:
        print(f"{name:28} {'PASS' if ok else 'FAIL':8} {sum(c[0] for c in checks)}/{len(checks)}")
    for name, why in skipped:
        print(f"{name:28} {'SKIP':8} {why}")
    if bench_res:
        for m in ("launch_s", "replay_s"):
            base = statistics.median(bench_res["none"][m])
            for k in (k for k in bench_res if k != "none"):
                agent = statistics.median(bench_res[k][m])
                rounds = " ".join(f"{t:.3f}" for t in bench_res[k][m])
                print(f"{'bench ' + m + ' ' + k:28} {'ratio':8} {agent / base:.3f} "
                      f"(agent {agent:.3f}s / none {base:.3f}s; rounds {rounds}; none "
                      + " ".join(f"{t:.3f}" for t in bench_res["none"][m]) + ")")
    if mem_bench:
        base = mem_bench["none"]
        for k in ("default", "stacks-python", "stacks-native", "torch-history"):
            if k in mem_bench:
                print(f"{'bench step ' + k:28} {'ratio':8} {mem_bench[k] / base:.3f} "
                      f"({mem_bench[k] * 1e3:.2f} ms / none {base * 1e3:.2f} ms)")
    if tensor_b:
        base = tensor_b["none"]
        for k in (k for k in tensor_b if k not in ("none", "replay_bytes", "shapes")):
            for f in ("graph_step_s", "eager_step_s", "launch_s"):
                if f in tensor_b.get(k, {}) and f in base:
                    print(f"{'bench tensor ' + f[:-2] + ' ' + k:28} {'ratio':8} "
                          f"{tensor_b[k][f] / base[f]:.3f} ({tensor_b[k][f] * 1e3:.2f} ms / none "
                          f"{base[f] * 1e3:.2f} ms)")
        for k, sh in tensor_b.get("shapes", {}).items():
            print(f"{'bench tensor graph ' + k:28} {'shape':8} {sh['replay_bytes'] / 1e9:.2f} GB a replay, "
                  + ", ".join(f"{c} {sh[c]}" for c in ("overlap_nodes", "overlap_joins", "overlap_failed",
                                                       "ranges_reused", "publish_nodes", "partials_full",
                                                       "overlap_joins_written", "overlap_joins_unseen",
                                                       "overlap_joins_depth", "overlap_joins_newest",
                                                       "batch_nodes", "batch_failed", "priority_raised",
                                                       "priority_failed", "widened", "widen_failed")))
        fp = tensor_b.get("fingerprint", {})
        if tensor_b["replay_bytes"] and "graph_step_s" in fp and fp["graph_step_s"] > base["graph_step_s"]:
            extra = fp["graph_step_s"] - base["graph_step_s"]
            print(f"{'bench tensor bytes/replay':28} {'rate':8} {tensor_b['replay_bytes'] / 1e9:.2f} GB "
                  f"fingerprinted per replay, {tensor_b['replay_bytes'] / extra / 1e12:.2f} TB/s of added time")
    summary = {"cases": [{"name": n, "ok": ok, "checks": [[g, w] for g, w in c]} for n, ok, c, _ in gate.rows],
               "skipped": [{"name": n, "why": w} for n, w in skipped],
               "bench": bench_res, "memory_bench": mem_bench, "tensor_bench": tensor_b}
    (gate.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0 if all(r[1] for r in gate.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
