"""The tensor gate stage (issue: fingerprints of every kernel): tensor_cases.py
run unmodified without and with the agent (TCGD_TENSOR=fingerprint), the
.tcgd-tensor bundle checked against what PyTorch computed in the same run.

    tensor-quickstart      after replay 1, every captured kernel's ranges equal torch's tensors
    tensor-transformer     eager steps and graph replays: every observation equal, step by step
    tensor-compile         torch.compile reduce-overhead: cudagraph trees' replays observed
    tensor-two-streams     a capture forking onto a second stream: both branches observed per replay
    tensor-kill            SIGKILL after N synchronized replays: the bundle holds all N
    tensor-record          TCGD_TENSOR=record: a captured tensor's bytes in each of 3 replays equal torch's copies
    tensor-record-kernel   record_gpu_check: recorded bytes bit-exact, and the 1 GiB record rate vs a pinned copy
    tensor-planted-<bug>   the planted bugs of first-divergence, eager and graph (tensor_expect.py)
    tensor-variant-<bug>   the same classes inside a training step (tensor_expect.VARIANTS), eager and graph
    tensor-check-abort     baked-scalar eager under fingerprint, then as a long graph run under
                           check:reference=EAGER,abort: stopped at replay 1 with exit status 86
    tensor-probe-quickstart  the quick start with tcgd.probe under print:probes=only: the recorder's
                           lines carry the seed's values for both probes in both replays
    tensor-narrow-<bug>    tcgd narrow on the planted stale-input and baked-scalar pairs: the new pair's
                           first divergence carries element-level values and the relation that shows
                           the bug (stale: an earlier observation's values; baked scalar: a ratio)
    tensor-probe-grads     tcgd.watch_grad on an MLP under record:probes=only, eager and graph: the
                           probes come in backward order, each gradient's bytes equal torch's

The checks of a bundle (check_*: a TensorBundle, the program's truth.json and
expect(ok, text)) are separate from the runs, so the CPU suite replays them on
the bundles kept in tests/golden/tensor (tests/golden/check_golden_tensor.py).
"""
import json
from pathlib import Path
import math
import os
import shutil
import subprocess
import sys
import time

import tensor_expect
from tensor_bundle import TensorBundle

# GATE_FINGERPRINT_OPTIONS (e.g. "chain=off"): options added to the cases'
# fingerprint rules, to run them under a setting that is not the default.
_OPTIONS = os.environ.get("GATE_FINGERPRINT_OPTIONS", "")
FINGERPRINT_ENV = {"TCGD_TENSOR": "fingerprint" + (":" + _OPTIONS if _OPTIONS else "")}
NOREUSE_RULE = "fingerprint:reuse=off" + ("," + _OPTIONS if _OPTIONS else "")


def job_tensor_bundle(gate, case_dir, script):
    """The job's .tcgd-tensor bundle (child processes, e.g. compile workers,
    write their own)."""
    found = []
    paths = sorted(case_dir.glob("*.tcgd-tensor"))
    if len(paths) <= 1 or not gate.analyze.exists():
        return paths
    for path in paths:
        memory = path.with_suffix(".tcgd-memory")
        if not memory.exists() or script in gate.command_line(memory):
            found.append(path)
    return found


def captured(b):
    return [s for s in b.sites if s["capture"] > 0]


def same_stats(o, t):
    def close(a, b):
        if a is None or b is None:
            return a == b or (a is None and b == math.inf) or (a is None and b == -math.inf)
        return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(b))
    return (o["hash"] == t["hash"] and o["elements"] == t["elements"] and o["nan"] == t["nan"]
            and o["zero"] == t["zero"] and o["pos_inf"] == t["pos_inf"] and o["neg_inf"] == t["neg_inf"]
            and close(None if t["min"] is None and o["min"] == math.inf else o["min"], t["min"])
            and close(None if t["max"] is None and o["max"] == -math.inf else o["max"], t["max"])
            and close(o["sum"], t["sum"]) and close(o["sum_squares"], t["sum_squares"]))


def check_validate(analyze, path, expect):
    """`tcgd-analyze validate` reads the bundle (exit 1: a finding, such as
    a recording the recorder finished after the job's death)."""
    v = subprocess.run([str(analyze), "validate", str(path)], capture_output=True, text=True, timeout=300)
    expect(v.returncode in (0, 1), f"validate reads it ({v.returncode}: {v.stdout.strip()[:160]})")


def check_whole(b, expect):
    """What every tensor bundle must be: untorn, with a trailer, the probes
    available."""
    expect(not b.torn and b.trailer is not None, f"whole, with a trailer ({b.trailer})")
    expect(not any("unavailable" in (c.get("skipped") or {}) for c in b.counters[-1:]),
           f"probes available ({b.counters[-1]['skipped'] if b.counters else 'no counters'})")


def common(gate, name, argv, env=None, timeout=300):
    """run_pair plus the checks every tensor case makes; returns (case_dir,
    truth, bundle or None, expect, checks, traced)."""
    case_dir, truth_path, plain, traced, checks, expect = gate.run_pair(
        name, [sys.executable, "tensor_cases.py", *argv], agent_env={**FINGERPRINT_ENV, **(env or {})},
        timeout=timeout)
    expect(plain.result() is not None and plain.result() == traced.result(),
           f"output identical with and without the agent ({plain.result()} vs {traced.result()})")
    bundles = job_tensor_bundle(gate, case_dir, "tensor_cases.py")
    expect(len(bundles) == 1, f"one .tcgd-tensor bundle of the job ({len(bundles)})")
    b = None
    if bundles:
        if gate.analyze.exists():
            check_validate(gate.analyze, bundles[0], expect)
        b = TensorBundle(str(bundles[0]))
        check_whole(b, expect)
    truth = json.loads(truth_path.read_text()) if truth_path.exists() else {}
    return case_dir, truth, b, expect, checks, traced


def run_bundle_check(check, b, truth, expect):
    """A bundle check; one that crashes is a failed check."""
    try:
        check(b, truth, expect)
    except Exception as e:  # noqa: BLE001
        expect(False, f"{check.__name__} raised {type(e).__name__}: {e}")


def finish(gate, name, checks, traced):
    ok = all(c[0] for c in checks)
    gate.rows.append((name, ok, checks, traced.seconds))
    return ok


def check_quickstart(b, truth, expect):
    """After replay 1, every captured kernel's ranges equal a tensor torch
    saw at that address, and every tensor of the quick start is observed."""
    # A range is compared with the tensors that lived at its address:
    # the temporary first_hidden - 5 is freed after relu and its block
    # taken by square's output, so one address holds two tensors in turn.
    tensors = truth["tensors"]
    at = {}
    for n, t in tensors.items():
        at.setdefault(t["ptr"], []).append((n, t))
    sites = captured(b)
    kernels = [s for s in sites if s["kind"] in (1, 2)]
    expect(len(kernels) == truth["kernels"],
           f"{len(kernels)} captured kernel sites == {truth['kernels']} (x*2, -5, relu, square)")
    obs = b.by_site()
    compared = wrong = 0
    seen = set()
    for s in kernels:
        for r in s["ranges"]:
            rows = [o for o in obs.get(s["site"], []) if o["range"] == r["index"] and o["exec"] == 0]
            if len(rows) != 1:
                expect(False, f"site {s['site']} range {r['index']}: one observation at replay 0 ({len(rows)})")
                continue
            candidates = at.get(r["ptr"], []) + [("minus_five", tensors["minus_five"])]
            match = next((n for n, t in candidates if same_stats(rows[0], t)), None)
            compared += 1
            if match is None:
                wrong += 1
                expect(False, f"{b.kernel_name(s)[:60]} range {r['index']} equals a tensor torch saw there: "
                              f"{rows[0]} vs {[n for n, _ in candidates]}")
            else:
                seen.add(match)
    expect(compared >= 7 and wrong == 0, f"{compared} observations equal torch's tensors ({wrong} differ)")
    expect(seen == set(tensors), f"every tensor of the quick start observed ({sorted(seen)})")


def quickstart(gate, only):
    name = "tensor-quickstart"
    if only and name not in only:
        return
    case_dir, truth, b, expect, checks, traced = common(gate, name, ["quickstart"])
    if b and truth:
        run_bundle_check(check_quickstart, b, truth, expect)
    finish(gate, name, checks, traced)


def first_divergence(gate, reference, candidate, keep):
    """`tcgd-analyze tensor first-divergence --json` of two bundles, its
    output kept in `keep`: (the process, the parsed report or {})."""
    p = gate.analyze_json("tensor", "first-divergence", "--json", str(reference), str(candidate))
    keep.write_text(p.stdout + p.stderr)
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        return p, {}


def key(r):
    return (r["param"], r["offset"])


def transformer(gate, only):
    name = "tensor-transformer"
    if only and name not in only:
        return
    runs = {}
    checks_all, traced_last = [], None
    # "noreuse": the graph again with every range of every node fingerprinted
    # (reuse=off), against which the carried observations are checked.
    for mode, argv, env in (("eager", ["transformer", "eager"], None), ("graph", ["transformer", "graph"], None),
                            ("noreuse", ["transformer", "graph"], {"TCGD_TENSOR": NOREUSE_RULE})):
        case_dir, truth, b, expect, checks, traced = common(gate, f"{name}-{mode}", argv, env)
        runs[mode] = (b, truth)
        checks_all += [(ok, f"{mode}: {what}") for ok, what in checks]
        traced_last = traced
    checks = checks_all

    def expect(ok, what):
        checks.append((bool(ok), what))

    (e, te), (g, tg) = runs["eager"], runs["graph"]
    if e and g and te and tg:
        expect(te["losses"] == tg["losses"], f"eager and graph losses equal bit for bit ({te['losses'][:2]}...)")
        template = sorted(captured(g), key=lambda s: s["node"])
        names = [g.kernel_name(s) for s in template]
        expect(len(template) > 50, f"{len(template)} captured sites in the step")
        eager_sites = sorted(e.sites, key=lambda s: s["sequence"])
        eager_names = [e.kernel_name(s) for s in eager_sites]
        starts = [i for i in range(len(eager_names) - len(names) + 1)
                  if eager_names[i:i + len(names)] == names]
        # Non-overlapping occurrences: 3 warm-up steps, then the measured ones.
        steps, last = [], -len(names)
        for i in starts:
            if i >= last + len(names):
                steps.append(i)
                last = i
        # The first warm-up step also makes the optimizer's state, so it is
        # not the template: the last `steps` occurrences are the measured ones.
        expect(te["steps"] < len(steps) <= te["warmup"] + te["steps"],
               f"the captured step's {len(names)} launches found {len(steps)} times among the eager run's "
               f"(warm-up {te['warmup']} + steps {te['steps']})")
        # The comparison itself is the analyzer's: it pairs a launch's
        # arguments by offset and sets aside ghost pointer words (stale stack
        # values in unused slots of ATen's parameter structs), which a naive
        # pairing by parameter offset takes for ranges.
        p, fd = first_divergence(gate, e.path, g.path, gate.out / f"{name}-first-divergence.json")
        compared = fd.get("compared", {})
        first = (fd.get("first_divergence") or {})
        expect(p.returncode == 0 and fd.get("result") == "match",
               f"tcgd-analyze tensor first-divergence: no divergence (exit {p.returncode}, {fd.get('result')}; "
               f"first: {first.get('cause')} {(first.get('reference') or {}).get('kernel', '')[:60]})")
        expect(compared.get("equal", 0) > 1000,
               f"{compared.get('equal', 0)} observations equal of {compared.get('observations', 0)} compared "
               f"({compared.get('different', 0)} differ, none of them a divergence: scratch, workspaces)")
        keep = gate.out / "golden-tensor" / "transformer"
        keep.mkdir(parents=True, exist_ok=True)
        import shutil
        shutil.copy(e.path, keep / "eager.tcgd-tensor")
        shutil.copy(g.path, keep / "graph.tcgd-tensor")
        (keep / "eager.truth.json").write_text(json.dumps(te, indent=1))
        (keep / "graph.truth.json").write_text(json.dumps(tg, indent=1))
        rng = [n for n in set(names) if any(p in n.lower() for p in ("philox", "curand", "dropout", "bernoulli"))]
        expect(not rng, f"no random-number kernels in a dropout-free step ({rng[:2]})")
        n, _ = runs["noreuse"]
        if n:
            check_reuse(gate, name, g, n, expect)
    gate.rows.append((name, all(c[0] for c in checks), checks, traced_last.seconds if traced_last else 0))


def check_reuse(gate, name, g, n, expect):
    """Known inputs (docs/tensor.md): the graph run reuses earlier
    fingerprints for some ranges. Each reuse claims the reader's bytes equal
    the source's in every replay; the run without reuse (n) fingerprinted
    both, so there the claim is checked within one run (no run-to-run
    nondeterminism in it)."""
    counted = (g.counters[-1].get("skipped") or {}) if g.counters else {}
    reused = counted.get("ranges_reused", 0)
    expect(reused > 0, f"ranges reused in the capture: {reused}")
    carried = [o for o in g.observations if o.get("reused")]
    expect(carried, f"{len(carried)} observations carried to reused ranges")
    by_id = {s["site"]: s for s in captured(g)}
    claims = set()  # ((reader node, range key), (source node, range key))
    for s in by_id.values():
        for r in s["ranges"]:
            src = by_id.get(r["reuse_site"]) if r["reuse_site"] else None
            if src is None:
                continue
            sr = next((x for x in src["ranges"] if x["index"] == r["reuse_range"]), None)
            if sr is not None:
                claims.add(((s["node"], key(r)), (src["node"], key(sr))))
    expect(len(claims) > 0, f"{len(claims)} reused ranges name their source")
    fresh = {}
    obs = n.by_site()
    for s in captured(n):
        for r in s["ranges"]:
            for o in obs.get(s["site"], []):
                if o["range"] == r["index"]:
                    fresh[(s["node"], key(r), o["exec"])] = o
    execs = sorted({k[2] for k in fresh})
    checked = missing = 0
    wrong = []
    for reader, source in sorted(claims):
        for x in execs:
            a, b = fresh.get((*reader, x)), fresh.get((*source, x))
            if a is None or b is None:
                missing += 1
                continue
            checked += 1
            if a["hash"] != b["hash"]:
                wrong.append((reader, source, x))
    expect(checked > 0 and missing == 0,
           f"{checked} (reader, replay) pairs found in the run without reuse ({missing} missing)")
    expect(not wrong, f"without reuse, every reused range's fresh fingerprint equals its source's: "
                      f"{checked - len(wrong)} of {checked} (first different: {wrong[:1]})")
    fresh_here = sum(1 for o in g.observations if not o.get("reused"))
    expect(len(n.observations) > fresh_here,
           f"observations fingerprinted: {fresh_here} with reuse, {len(n.observations)} without")
    p, fd = first_divergence(gate, n.path, g.path, gate.out / f"{name}-reuse-first-divergence.json")
    expect(p.returncode == 0 and fd.get("result") == "match",
           f"first-divergence between the graph runs without and with reuse: {fd.get('result')} (exit {p.returncode})")


def check_compile(b, truth, expect):
    """cudagraph trees' captured sites observed at several replays, their
    replay indices without a gap."""
    sites = captured(b)
    expect(sites, f"{len(sites)} sites captured by cudagraph trees")
    obs = b.by_site()
    execs = {s["site"]: {o["exec"] for o in obs.get(s["site"], [])} for s in sites}
    most = max((len(v) for v in execs.values()), default=0)
    expect(most >= 4, f"captured sites observed at up to {most} replays (>= 4 of {truth.get('calls')} calls)")
    expect(all(v == set(range(len(v))) for v in execs.values() if v),
           "each captured site's replays are 0, 1, 2, ... without a gap")


def compile_case(gate, only):
    name = "tensor-compile"
    if only and name not in only:
        return
    case_dir, truth, b, expect, checks, traced = common(gate, name, ["compile"], timeout=600)
    if b:
        run_bundle_check(check_compile, b, truth, expect)
    finish(gate, name, checks, traced)


def check_two_streams(b, truth, expect):
    """Captured sites on both of the program's streams, one capture, each
    site observed at every replay."""
    sites = captured(b)
    streams = {s["stream"] for s in sites}
    expect(set(truth["streams"]) <= streams,
           f"captured sites on both streams ({len(streams)} streams: {sorted(streams)[:3]})")
    obs = b.by_site()
    wrong = [s["site"] for s in sites if {o["exec"] for o in obs.get(s["site"], [])} != set(range(truth["replays"]))]
    expect(sites and not wrong, f"{len(sites)} captured sites each observed at replays 0..{truth['replays'] - 1} "
                                f"({len(wrong)} not)")
    expect(len({s["capture"] for s in sites}) == 1, "one capture ordinal for both streams")


def two_streams(gate, only):
    name = "tensor-two-streams"
    if only and name not in only:
        return
    case_dir, truth, b, expect, checks, traced = common(gate, name, ["two-streams"])
    if b and truth:
        run_bundle_check(check_two_streams, b, truth, expect)
    finish(gate, name, checks, traced)


def check_kill(b, truth, expect):
    """A job SIGKILLed after truth["replays"] synchronized replays: the
    recorder finished its bundle (incomplete), every captured site observed
    at each of those replays."""
    n = truth["replays"]
    expect(b.trailer is not None and not b.trailer["complete"],
           f"finished by the recorder after the kill, incomplete ({b.trailer})")
    sites = captured(b)
    obs = b.by_site()
    execs = [sorted({o["exec"] for o in obs.get(s["site"], [])}) for s in sites]
    expect(sites and all(e[:n] == list(range(n)) for e in execs),
           f"{len(sites)} captured sites, each observed at every one of the {n} replays ({execs[:3]})")


def kill(gate, only):
    name = "tensor-kill"
    if only and name not in only:
        return
    n = 5
    case_dir, truth_path, plain, traced, checks, expect = gate.run_pair(
        name, [sys.executable, "tensor_cases.py", "kill", str(n)], agent_env=FINGERPRINT_ENV)
    expect(traced.rc == -9, f"the job died by SIGKILL ({traced.rc})")
    replayed = [ln for ln in traced.stdout.splitlines() if ln.startswith("replayed")]
    expect(len(replayed) == n, f"{len(replayed)} replays done before the kill")
    import time
    deadline = time.time() + 30
    bundles = []
    while time.time() < deadline:
        bundles = sorted(case_dir.glob("*.tcgd-tensor"))
        if bundles and TensorBundle(str(bundles[0])).trailer:
            break
        time.sleep(0.2)
    expect(len(bundles) == 1, f"one tensor bundle ({len(bundles)})")
    truth = json.loads(truth_path.read_text()) if truth_path.exists() else {}
    expect(truth.get("replays") == n, f"truth.json written before the kill ({truth})")
    if bundles:
        run_bundle_check(check_kill, TensorBundle(str(bundles[0])), {**truth, "replays": n}, expect)
    finish(gate, name, checks, traced)


def fingerprint_check(gate, only):
    """The fingerprint kernel against its CPU reference (tests/tensor)."""
    name = "tensor-fingerprint-kernel"
    if only and name not in only:
        return
    exe = gate.build / "bin" / "fingerprint_gpu_check"
    checks = []
    if not exe.exists():
        checks.append((False, f"{exe} built"))
        gate.rows.append((name, False, checks, 0))
        return
    import time
    t0 = time.time()
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    (gate.out / "fingerprint_gpu_check.txt").write_text(p.stdout + p.stderr)
    fails = [ln for ln in p.stdout.splitlines() if "FAIL" in ln]
    result = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")), "no RESULT line")
    checks.append((p.returncode == 0, f"exit {p.returncode}: {result}"))
    checks.append((not fails, f"{len(fails)} failing cases ({fails[:2]})"))
    for ln in p.stdout.splitlines():
        if "GB/s" in ln or "TB/s" in ln or "us per" in ln:
            checks.append((True, ln.strip()[:150]))
    gate.rows.append((name, all(c[0] for c in checks), checks, time.time() - t0))


def check_record(b, truth, expect):
    """The last captured kernel that names y (the add that writes it) recorded
    y's bytes in every replay, each equal to torch's copy after that replay."""
    ptr = truth["ptr"]
    sites = [s for s in captured(b) if s["kind"] in (1, 2) and any(r["ptr"] == ptr for r in s["ranges"])]
    expect(bool(sites), f"a captured kernel names y ({len(captured(b))} captured sites)")
    if not sites:
        return
    last = max(sites, key=lambda s: s["node"])
    index = next(r["index"] for r in last["ranges"] if r["ptr"] == ptr)
    for k, want in enumerate(truth["replays"]):
        got = b.recorded(last["site"], k, index)
        expect(got == bytes.fromhex(want),
               f"replay {k}: {len(got)} recorded bytes of y equal torch's copy ({truth['bytes']} bytes)")
    final = b.counters[-1] if b.counters else {}
    expect(final.get("slots_dropped", 0) == 0, f"nothing dropped ({final})")


def record_case(gate, only):
    name = "tensor-record"
    if only and name not in only:
        return
    case_dir, truth, b, expect, checks, traced = common(gate, name, ["record"],
                                                          env={"TCGD_TENSOR": "record:when=capture"})
    if b and truth:
        run_bundle_check(check_record, b, truth, expect)
    finish(gate, name, checks, traced)


def record_kernel_check(gate, only):
    """record_gpu_check (tests/tensor): the kernel's recording on the GPU."""
    name = "tensor-record-kernel"
    if only and name not in only:
        return
    exe = gate.build / "bin" / "record_gpu_check"
    checks = []
    if not exe.exists():
        gate.rows.append((name, False, [(False, f"{exe} built")], 0))
        return
    import time
    t0 = time.time()
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    (gate.out / "record_gpu_check.txt").write_text(p.stdout + p.stderr)
    result = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")), "no RESULT line")
    checks.append((p.returncode == 0, f"exit {p.returncode}: {result}"))
    for ln in p.stdout.splitlines():
        if ln.startswith("FAIL") or "GB/s" in ln or "bit-exact" in ln:
            checks.append((not ln.startswith("FAIL"), ln.strip()[:160]))
    gate.rows.append((name, all(c[0] for c in checks), checks, time.time() - t0))


# The bundle checks the CPU suite replays on tests/golden/tensor/<case>/.
BUNDLE_CASES = {
    "quickstart": check_quickstart,
    "compile": check_compile,
    "two-streams": check_two_streams,
    "kill": check_kill,
}


def planted(gate, only):
    """The planted bugs of first-divergence (tensor_cases.py), each run
    eagerly and as a graph under the agent; `tcgd-analyze tensor
    first-divergence` must find what tensor_expect.PLANTED says (the CPU
    suite checks the same on the bundles kept in tests/golden/tensor)."""
    import shutil
    cases = [(bug, "tensor-planted") for bug in tensor_expect.PLANTED] + \
        [(bug, "tensor-variant") for bug in tensor_expect.VARIANTS]
    for bug, prefix in cases:
        name = f"{prefix}-{bug}"
        if only and name not in only and prefix not in only:
            continue
        checks_all, paths, outputs, bugged = [], {}, {}, None
        started = time.time()  # the case's whole time: both modes with and without the agent, the analysis
        for mode in ("eager", "graph"):
            case_dir, truth, b, expect, checks, traced = common(gate, f"{name}-{mode}", [bug, mode])
            checks_all += [(ok, f"{mode}: {what}") for ok, what in checks]
            outputs[mode] = traced.result()
            bugged = truth.get("bug") if truth else bugged
            if truth:
                checks_all += [(ok, f"{mode}: {what}") for ok, what in tensor_expect.check_truth(bug, truth)]
            found = job_tensor_bundle(gate, case_dir, "tensor_cases.py")
            if found:
                paths[mode] = found[0]
                keep = gate.out / "golden-tensor" / bug
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(found[0], keep / f"{mode}.tcgd-tensor")
                if truth:
                    (keep / f"{mode}.truth.json").write_text(json.dumps(truth, indent=1))
        if prefix == "tensor-variant" and None not in outputs.values():
            # The program itself: a planted bug changes what the graph run
            # computes; a correct program computes the same bit for bit.
            same = outputs["eager"] == outputs["graph"]
            checks_all.append((same == (bugged is None),
                               f"the program's eager and graph outputs {'equal' if same else 'differ'} "
                               f"(want {'equal' if bugged is None else 'different'}: {outputs})"))
        if len(paths) == 2 and gate.analyze.exists():
            p = gate.analyze_json("tensor", "first-divergence", "--json", str(paths["eager"]), str(paths["graph"]))
            (gate.out / "golden-tensor" / bug / "first-divergence.json").write_text(p.stdout + p.stderr)
            checks_all += [(ok, f"first-divergence: {what}")
                           for ok, what in tensor_expect.check_first_divergence(bug, p)]
        elif gate.analyze.exists():
            checks_all.append((False, f"first-divergence: both bundles recorded ({sorted(paths)})"))
        gate.rows.append((name, all(c[0] for c in checks_all), checks_all, time.time() - started))


def check_abort(gate, only):
    """TCGD_TENSOR's check action with abort on the baked-scalar bug: the
    eager run is the reference; the graph run (200 replays, 20 ms apart) is
    checked against it as it goes and must stop where it first diverges,
    replay 1 (tensor_expect.PLANTED), with the check's exit status."""
    name = "tensor-check-abort"
    if only and name not in only:
        return
    case_dir, truth, b, expect, checks, traced = common(gate, f"{name}-eager", ["baked-scalar", "eager"])
    found = job_tensor_bundle(gate, case_dir, "tensor_cases.py")
    expect(len(found) == 1, f"the eager reference bundle ({[p.name for p in found]})")
    if len(found) != 1:
        gate.rows.append((name, False, checks, traced.seconds))
        return
    reference = found[0]
    graph_dir = gate.out / f"{name}-graph"
    shutil.rmtree(graph_dir, ignore_errors=True)
    graph_dir.mkdir(parents=True)
    env = gate.env(True, graph_dir, graph_dir / "truth.json",
                   {"TCGD_TENSOR": f"check:reference={reference},abort", "GATE_STEPS": "200", "GATE_PAUSE": "0.02"})
    run = type(traced)([sys.executable, "tensor_cases.py", "baked-scalar", "graph"], env, 300)  # run_gate.Run
    (graph_dir / "agent.stdout").write_text(run.stdout)
    (graph_dir / "agent.stderr").write_text(run.stderr)
    failed = [ln for ln in run.stderr.splitlines() if ln.startswith("tcgd check: FAILED")]
    expect(not run.hung, "no hang")
    expect(run.rc == 86, f"exit status 86, the check's ({run.rc})")
    expect(len(failed) == 1, f"one FAILED line ({failed})")
    expect(failed and "FAILED at replay 1 (" in failed[0] and "stopping the job (exit status 86)" in failed[0],
           f"stopped at replay 1 ({failed[:1]})")
    bundles = sorted(graph_dir.glob("*.tcgd-tensor"))
    expect(len(bundles) == 1, f"one tensor bundle ({len(bundles)})")
    if bundles:
        info = json.loads(gate.analyze_json("info", "--json", str(bundles[0])).stdout or "{}")
        tensor = info.get("tensor") or {}
        check = tensor.get("check") or {}
        expect(check.get("status") == "failed" and check.get("replay") == 1 and check.get("stopped_job"),
               f"the bundle's check: failed at replay 1, job stopped ({check})")
        replays = max([c.get("replays", 0) for c in tensor.get("captures", [])] or [0])
        expect(0 < replays < 200, f"stopped before the run's end: {replays} of 200 replays observed")
        p = gate.analyze_json("tensor", "first-divergence", "--json", str(reference), str(bundles[0]))
        (graph_dir / "first-divergence.json").write_text(p.stdout + p.stderr)
        fd = json.loads(p.stdout or "{}").get("first_divergence") or {}
        expect(p.returncode == 1 and fd.get("candidate_step") == check.get("step"),
               f"offline first-divergence agrees: step {fd.get('candidate_step')} ({fd.get('cause')})")
    gate.rows.append((name, all(c[0] for c in checks), checks, run.seconds))


def check_probe_quickstart(b, truth, expect, stderr=""):
    """Two captured probe sites named after_scale and after_relu, shape [8];
    the print lines of replays 0 and 1 end with the values torch holds."""
    probes = [s for s in b.sites if s["kind"] == 5]
    names = sorted(b.kernel_name(s) for s in probes)
    expect(names == ["after_relu", "after_relu/expected", "after_scale"],
           f"three probe sites, after_scale, after_relu and its check ({names})")
    passed = [ln for ln in stderr.splitlines() if ln.startswith("tcgd check: ")]
    expect(passed == ["tcgd check: passed: 2 executions of 1 explicit probes matched their expected values"],
           f"tcgd.check passed in both replays ({passed})")
    for s in probes:
        r = s["ranges"][0] if s["ranges"] else {}
        expect(s["capture"] == 1 and r.get("shape") == [8] and r.get("strides") == [1],
               f"{b.kernel_name(s)}: captured, shape {r.get('shape')} strides {r.get('strides')}")
    for name, values in truth["values"].items():
        text = ", ".join(f"{v:g}" for v in values)
        for replay in (0, 1):
            lines = [ln for ln in stderr.splitlines()
                     if ln.startswith(f"tcgd print: {name} #0 graph 0 replay {replay} float32 [8]:")]
            expect(len(lines) == 1 and lines[0].endswith(f"values [{text}]"),
                   f"{name} replay {replay}: values [{text}] ({lines[:1]})")


def probe_quickstart(gate, only):
    name = "tensor-probe-quickstart"
    if only and name not in only:
        return
    case_dir, truth, b, expect, checks, traced = common(gate, name, ["probe-quickstart"],
                                                          env={"TCGD_TENSOR": "print:probes=only"})
    expect(truth.get("agent") is True, f"tcgd.probe found the agent ({truth.get('agent')})")
    if b and truth:
        try:
            check_probe_quickstart(b, truth, expect, traced.stderr)
        except Exception as e:  # noqa: BLE001
            expect(False, f"check_probe_quickstart raised {type(e).__name__}: {e}")
    finish(gate, name, checks, traced)


def check_probe_grads(b, truth, expect, mode):
    """The probe sites of the steps (eager) or of the capture (graph), in
    issue order, are the hooks' backward order; each weight gradient's
    recorded bytes equal torch's after that step or replay."""
    probes = [s for s in b.sites if s["kind"] == 5]
    order = truth["order"]
    steps = truth["steps"]
    if mode == "graph":
        sites = sorted((s for s in probes if s["capture"] > 0), key=lambda s: s["node"])
        expect([b.kernel_name(s) for s in sites] == order,
               f"captured probes in backward order {[b.kernel_name(s) for s in sites]} == {order}")
        per_step = {b.kernel_name(s): s for s in sites}
        chosen = [(k, per_step, k) for k in range(steps)]
    else:
        sites = sorted((s for s in probes if s["capture"] == 0), key=lambda s: s["sequence"])
        expect(len(sites) == steps * len(order), f"{len(sites)} eager probe sites == {steps} x {len(order)}")
        expect([b.kernel_name(s) for s in sites[:len(order)]] == order,
               f"step 0's probes in backward order {[b.kernel_name(s) for s in sites[:len(order)]]} == {order}")
        chosen = []
        for k in range(steps):
            group = sites[k * len(order):(k + 1) * len(order)]
            chosen.append((k, {b.kernel_name(s): s for s in group}, 0))
    for k, by_name, exec_ in chosen:
        for pname, want in truth["grads"][k].items():
            s = by_name.get(f"grad/{pname}")
            got = b.recorded(s["site"], exec_, 0) if s else b""
            expect(got == bytes.fromhex(want), f"step {k} grad/{pname}: {len(got)} recorded bytes equal torch's")


def probe_grads(gate, only):
    name = "tensor-probe-grads"
    if only and name not in only:
        return
    checks_all, traced_last = [], None
    for mode in ("eager", "graph"):
        case_dir, truth, b, expect, checks, traced = common(gate, f"{name}-{mode}", ["probe-grads", mode],
                                                              env={"TCGD_TENSOR": "record:probes=only"})
        if b and truth:
            try:
                check_probe_grads(b, truth, expect, mode)
            except Exception as e:  # noqa: BLE001
                expect(False, f"check_probe_grads raised {type(e).__name__}: {e}")
        checks_all += [(ok, f"{mode}: {what}") for ok, what in checks]
        traced_last = traced
    gate.rows.append((name, all(c[0] for c in checks_all), checks_all, traced_last.seconds if traced_last else 0))


# The relation of the recorded values that shows each planted bug.
NARROW = {"stale-input": "stale", "baked-scalar": "ratio"}


def narrow(gate, only):
    """`tcgd narrow EAGER GRAPH` on a planted pair (the planted stage's
    bundles): both programs rerun recording the first divergence's launch
    and those before it; first-divergence on the new pair must find the
    same kernel with its values recorded on both sides and the relation
    that shows the bug."""
    import time
    for bug, relation in NARROW.items():
        name = f"tensor-narrow-{bug}"
        if only and name not in only and "tensor-narrow" not in only:
            continue
        keep = gate.out / "golden-tensor" / bug
        eager, graph = keep / "eager.tcgd-tensor", keep / "graph.tcgd-tensor"
        if not (eager.exists() and graph.exists()):
            planted(gate, [f"tensor-planted-{bug}"])
        checks = []

        def expect(ok, what):
            checks.append((bool(ok), what))

        t0 = time.time()
        out = gate.out / name
        shutil.rmtree(out, ignore_errors=True)
        launcher = gate.build / "bin" / "tcgd"
        p = subprocess.run([str(launcher), "narrow", "-o", str(out), str(eager), str(graph)], cwd=str(Path(__file__).resolve().parent),
                           env=gate.env(False), capture_output=True, text=True, timeout=600)
        (gate.out / f"{name}.txt").write_text(p.stdout + p.stderr)
        expect(p.returncode == 1, f"tcgd narrow exits 1, a divergence on the new pair ({p.returncode}: "
                                  f"{p.stderr.strip()[-200:]})")
        new = {side: sorted(out.glob(f"narrow-{side}*.tcgd-tensor")) for side in ("reference", "candidate")}
        expect(all(len(v) >= 1 for v in new.values()), f"the new pair ({ {k: len(v) for k, v in new.items()} })")
        if all(new.values()):
            fd_run = gate.analyze_json("tensor", "first-divergence", "--json", str(new["reference"][-1]),
                                       str(new["candidate"][-1]))
            (out / "first-divergence.json").write_text(fd_run.stdout + fd_run.stderr)
            fd = (json.loads(fd_run.stdout or "{}").get("first_divergence") or {})
            args = fd.get("arguments") or []
            both = [a for a in args if (a.get("values") or {}).get("presence") == "both"]
            expect(both, f"values recorded on both sides for {len(both)} of {len(args)} arguments of "
                         f"{(fd.get('reference') or {}).get('kernel', '?')[:60]}")
            relations = [((a.get("values") or {}).get("relation") or {}) for a in both]
            kinds = [r.get("kind") for r in relations] + [x.get("kind") for r in relations for x in r.get("also") or []]
            texts = [((a.get("values") or {}).get("relation") or {}).get("text") for a in both]
            expect(relation in kinds, f"a relation '{relation}' shows the bug ({kinds}; {texts})")
            mism = [((a.get("values") or {}).get("comparison") or {}).get("mismatches", 0) for a in both]
            expect(any(m and m > 0 for m in mism), f"element mismatches counted ({mism})")
        gate.rows.append((name, all(c[0] for c in checks), checks, time.time() - t0))


STAGE = [fingerprint_check, record_kernel_check, quickstart, record_case, transformer, compile_case, two_streams,
         kill, planted, check_abort, probe_quickstart, probe_grads, narrow]


def run(gate, only):
    for case in STAGE:
        case(gate, only)
