"""Where a replay's time goes, from the kernels' device timeline: a chrome trace
that torch.profiler wrote (tensor_bench.py with TCGD_BENCH_TRACE=PATH), read
as intervals of the job's kernels and of tcgd's (tcgd_fingerprint,
tcgd_publish). Prints, per replay:

  span      first kernel's start to last kernel's end
  job only  time when some job kernel runs and no tcgd kernel does
  both      time when kernels of both run (they share the device)
  tcgd only time when only tcgd's kernels run: the job waits for them
            (a join) or has nothing left to run
  idle      time when no kernel runs (launch and dependency latency)

and the job's and tcgd's kernels' own summed durations (the job's grows when
the two share the device: its kernels run slower beside fingerprints). Without the agent the trace has no
tcgd kernels: the job's own span and idle time, the room fingerprints could
fill.

  kernel_timeline.py TRACE.json [--replays N]
  kernel_timeline.py --self-test
"""
import argparse
import json
import sys

OURS = ("tcgd_fingerprint", "tcgd_publish")


def is_ours(name):
    return name.startswith(OURS)


def kernel_intervals(trace):
    """(name, start_us, end_us) of every kernel of a chrome trace, by start."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    out = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel" and "dur" in e:
            start = float(e["ts"])
            out.append((e.get("name", ""), start, start + float(e["dur"])))
    out.sort(key=lambda k: k[1])
    return out


def summarize(kernels, replays=1):
    """The span, job-only, both, tcgd-only and idle times (us, per replay) and
    tcgd's summed kernel time, by a sweep over the intervals' edges."""
    if not kernels:
        raise ValueError("no kernels in the trace (was it taken with CUDA activities?)")
    edges = []
    for name, start, end in kernels:
        ours = is_ours(name)
        edges.append((start, 1, ours))
        edges.append((end, -1, ours))
    # Ends before starts at the same instant: touching kernels do not overlap.
    edges.sort(key=lambda e: (e[0], e[1]))
    job = tcgd = 0
    totals = {"job_only": 0.0, "both": 0.0, "tcgd_only": 0.0, "idle": 0.0}
    last = edges[0][0]
    for t, step, ours in edges:
        width = t - last
        if width > 0:
            key = ("both" if tcgd else "job_only") if job else ("tcgd_only" if tcgd else "idle")
            totals[key] += width
        last = t
        if ours:
            tcgd += step
        else:
            job += step
    span = edges[-1][0] - edges[0][0]
    result = {k: v / replays for k, v in totals.items()}
    result["span"] = span / replays
    result["tcgd_kernel_time"] = sum(e - s for n, s, e in kernels if is_ours(n)) / replays
    result["job_kernel_time"] = sum(e - s for n, s, e in kernels if not is_ours(n)) / replays
    result["tcgd_kernels"] = sum(1 for n, _, _ in kernels if is_ours(n)) / replays
    result["job_kernels"] = sum(1 for n, _, _ in kernels if not is_ours(n)) / replays
    return result


def render(s):
    return (f"span {s['span']:.1f} us: job only {s['job_only']:.1f}, both {s['both']:.1f}, "
            f"tcgd only {s['tcgd_only']:.1f}, idle {s['idle']:.1f}; "
            f"{s['job_kernels']:.0f} job kernels ({s['job_kernel_time']:.1f} us summed), "
            f"{s['tcgd_kernels']:.0f} tcgd kernels ({s['tcgd_kernel_time']:.1f} us summed)")


def self_test():
    # job A 0-10, tcgd F 8-14 (overlaps A by 2, alone 10-12), job B 12-20
    # (overlaps F 12-14), gap 20-22, publish 22-23.
    k = [("gemm", 0, 10), ("tcgd_fingerprint", 8, 14), ("elementwise", 12, 20), ("tcgd_publish", 22, 23)]
    s = summarize(k)
    want = {"span": 23, "job_only": 14, "both": 4, "tcgd_only": 3, "idle": 2, "tcgd_kernel_time": 7,
            "job_kernel_time": 18, "tcgd_kernels": 2, "job_kernels": 2}
    for key, v in want.items():
        assert abs(s[key] - v) < 1e-9, (key, s[key], v)
    assert abs(s["job_only"] + s["both"] + s["tcgd_only"] + s["idle"] - s["span"]) < 1e-9
    # Per replay, and a trace in chrome's form with non-kernel events left out.
    trace = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": n, "ts": a, "dur": b - a} for n, a, b in k]
             + [{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 0, "dur": 50}]}
    s2 = summarize(kernel_intervals(trace), replays=2)
    assert abs(s2["span"] - 11.5) < 1e-9 and abs(s2["idle"] - 1) < 1e-9, s2
    try:
        summarize([])
    except ValueError:
        pass
    else:
        raise AssertionError("an empty trace must be refused")
    print("kernel_timeline self-test: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", nargs="?")
    ap.add_argument("--replays", type=int, default=1)
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        self_test()
        return 0
    if not a.trace:
        ap.error("a trace is needed (or --self-test)")
    try:
        with open(a.trace) as f:
            trace = json.load(f)
        s = summarize(kernel_intervals(trace), max(1, a.replays))
    except (OSError, ValueError, KeyError) as e:
        print(f"kernel_timeline.py: {a.trace}: {e}", file=sys.stderr)
        return 1
    print(render(s))
    print("TIMELINE " + json.dumps(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
