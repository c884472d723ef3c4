"""What `tcgd-analyze tensor first-divergence EAGER GRAPH --json` must report
on the planted bugs of tensor_cases.py, written from each program's bug (not
from what some build of the analyzer printed). The GPU gate checks it on the
pairs it records (tensor_checks.planted), the CPU suite on the pairs kept in
tests/golden/tensor (tests/golden/check_golden_tensor.py). No torch import:
it runs where there is no GPU.

    check_first_divergence(case, completed_process_or_json) -> [(ok, text)]
    check_truth(case, truth) -> [(ok, text)]   the program's truth.json agrees with the expectation

The candidate step is the graph run's replay index (0-based), the step
tensor_cases.py calls k.
"""
import json
import re
import struct
import subprocess

SCHEMA = "tcgd.tensor.first-divergence"
EXIT_MATCH, EXIT_DIVERGES = 0, 1

# Kernels that draw random numbers in these programs (ATen's dropout, the
# memory-efficient attention's dropout, philox/curand generators). Their
# outputs may differ legitimately, so they are never a first divergence:
# the analyzer lists them under random_kernels.
RANDOM_KERNEL = re.compile(r"philox|curand|dropout|bernoulli|uniform_|normal_|randperm", re.I)


class Expect:
    """One planted case: `exit_code` and `cause` of first-divergence, the
    candidate `step`, a regex `kernel` the first divergence's launch on
    `side` ("reference" or "candidate") must match, and `extras`, functions
    of the whole report (its JSON) giving more [(ok, text)]."""

    def __init__(self, exit_code, cause=None, step=None, kernel=None, side="reference", extras=()):
        self.exit_code, self.cause, self.step = exit_code, cause, step
        self.kernel, self.side, self.extras = kernel, side, tuple(extras)


def _launch_names(launch):
    if not launch:
        return ""
    return " ".join(str(launch.get(k) or "") for k in ("kernel", "demangled"))


def _numbers(text):
    return [float(x) for x in re.findall(r"(?<![0-9A-Za-z_.])[-+]?\d+\.\d+(?:[eE][-+]?\d+)?", text or "")]


def _float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _names_value(values, want):
    """Whether one of `values` is the float32 nearest `want` (as printed:
    0.05 or 0.0500000007)."""
    f = _float32(want)
    return any(abs(v - f) <= 1e-6 * abs(f) for v in values)


def _deciding(fd):
    return next((a for a in fd.get("arguments") or [] if a.get("decides")), None)


# ---- case extras: each takes the report (its whole JSON), returns [(ok, text)] ----

def _stale_value_of_step_1(report):
    fd = report["first_divergence"]
    arg = _deciding(fd) or {}
    v = fd.get("value_of_reference_step")
    # In the reference's numbering: the eager step paired with replay 1 (the
    # eager run may have run the graph run's warm-up iteration as a step).
    want = 1 + (report.get("pairing") or {}).get("offset", 0)
    return [(arg.get("role") == "input",
             f"the deciding argument is one the GEMM reads (static_x): role {arg.get('role')}"),
            (v == want, f"the stale buffer holds the batch the reference read at its step {want} (paired with "
                        f"replay 1, the last one fed) (value_of_reference_step {v})")]


def _baked_values(report):
    fd = report["first_divergence"]
    nums = _numbers(fd.get("explanation"))
    words = (fd.get("scalars") or {}).get("differing") or []
    ref = [n for w in words for n in _numbers(w.get("reference_text"))]
    cand = [n for w in words for n in _numbers(w.get("candidate_text"))]
    return [(_names_value(nums, 0.05) and _names_value(nums, 0.1),
             f"the explanation names both values of the baked word, 0.05 and 0.1 float32 ({nums})"),
            (_names_value(ref, 0.05) and _names_value(cand, 0.1),
             f"the differing scalar word is 0.05 in the reference (lr at step 1) and 0.1 in the candidate "
             f"(lr at capture) ({[(w.get('reference_text'), w.get('candidate_text')) for w in words]})")]


def _frozen_names(report):
    fd = report["first_divergence"]
    seq = fd.get("sequence") or {}
    ref = _launch_names(fd.get("reference")) + " " + str(seq.get("reference_only") or "")
    cand = _launch_names(fd.get("candidate")) + " " + str(seq.get("candidate_only") or "")
    return [(re.search(r"sigmoid", ref, re.I) is not None,
             f"the reference side names sigmoid, the branch eager step 1 takes ({ref.strip()[:120]})"),
            (re.search(r"relu|clamp", cand, re.I) is not None,
             f"the candidate side names relu (launch_clamp_scalar), the branch frozen at capture "
             f"({cand.strip()[:120]})")]


def _padding_nan(report):
    fd = report["first_divergence"]
    arg = _deciding(fd)
    if arg is None:
        return [(False, "a deciding argument with fingerprints on both sides")]
    r, c = arg.get("reference_fingerprint") or {}, arg.get("candidate_fingerprint") or {}
    rn, cn = r.get("nan"), c.get("nan")
    out = [(rn == 0 and isinstance(cn, int) and cn > 0,
            f"NaN counts differ: none in the reference (zeroed padding), some in the candidate ({rn} -> {cn})")]
    if c.get("elements") == 32 * 64:
        out.append((cn == 8 * 64, f"the whole buffer: its 8 padding rows of 64 are NaN ({cn})"))
    w = (fd.get("writers") or {}).get("reference")
    out.append((w is not None and re.search(r"fill", _launch_names(w), re.I) is not None,
                f"the write the candidate lacks is the reference's zero fill (torch.zeros) "
                f"({(w or {}).get('kernel')})"))
    return out


def _moved_row(report):
    fd = report["first_divergence"]
    moved = fd.get("moved_pointers") or []
    m = moved[0] if moved else {}
    return [(m.get("reference_into") == 4096 and m.get("candidate_into") == 0,
             f"a pointer moved in its allocation: row 1 (4096 bytes in) eagerly, row 0 in the graph ({moved})")]


def _random_listed(report):
    listed = report.get("random_kernels_compared") or []
    return [(any(re.search(r"dropout", _launch_names(r), re.I) for r in listed),
             f"the dropout kernels are listed as random-number kernels ({[r.get('kernel') for r in listed]})")]


def _no_random(report):
    names = [r.get("kernel") for r in report.get("random_kernels_compared") or []]
    return [(not names, f"no random-number kernels in a dropout-free program ({names})")]


PLANTED = {
    # static_x @ w: the loop stops copying into static_x after replay 1, so
    # replay 2's GEMM reads batch 1 where the eager step reads batch 2.
    "stale-input": Expect(EXIT_DIVERGES, "stale_input", 2, r"gemm",
                          extras=[_stale_value_of_step_1]),
    # x * lr: lr halves each step (0.1, 0.05, ...); the graph keeps the 0.1
    # it was captured with, so replay 1's mul differs.
    "baked-scalar": Expect(EXIT_DIVERGES, "scalar_baked_at_capture", 1, r"MulFunctor",
                           extras=[_baked_values]),
    # relu on even steps, sigmoid on odd ones eagerly; the graph froze relu.
    "frozen-branch": Expect(EXIT_DIVERGES, "control_flow", 1, r"sigmoid",
                            extras=[_frozen_names]),
    # The graph's buffer is never zeroed: the sum reads NaN padding rows from
    # replay 0 on.
    "unwritten-padding": Expect(EXIT_DIVERGES, "missing_write", 0, r"reduce_kernel.*sum",
                                extras=[_padding_nan]),
    # Dropout: random numbers may differ, legitimately; nothing else does.
    "dropout": Expect(EXIT_MATCH, extras=[_random_listed]),
    # A correct graphed program: no divergence.
    "correct": Expect(EXIT_MATCH, extras=[_no_random]),
    # The gate's two-layer transformer (tensor_cases.py transformer), eager
    # and graphed: no divergence (cuBLAS's and attention's workspaces differ,
    # as scratch).
    "transformer": Expect(EXIT_MATCH, extras=[_no_random]),
}


def _report(result):
    """(exit code or None, parsed JSON or None, error text)."""
    rc, text = None, result
    if isinstance(result, subprocess.CompletedProcess):
        rc, text = result.returncode, result.stdout
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
    if isinstance(result, dict):
        return rc, result, ""
    try:
        return rc, json.loads(text or ""), ""
    except ValueError as e:
        err = getattr(result, "stderr", "") or ""
        return rc, None, f"{e}; output {str(text).strip()[:200]!r} {str(err).strip()[:200]!r}"


def _kernel_of(d):
    return (d.get("reference") or d.get("candidate") or {}).get("kernel")


def _random_rules(report):
    """Random-number kernels go under random_kernels, never as a divergence."""
    out = []
    divs = ([report["first_divergence"]] if report.get("first_divergence") else []) + \
        list(report.get("next_divergences") or [])
    on_random = [d for d in divs if d.get("cause") == "random_numbers" or any(
        RANDOM_KERNEL.search(_launch_names(d.get(s))) for s in ("reference", "candidate"))]
    out.append((not on_random, "no divergence is a random-number kernel's "
                f"({[(d.get('cause'), _kernel_of(d)) for d in on_random][:2]})"))
    compared = report.get("random_kernels_compared") or []
    diverging = {r.get("kernel") for r in compared if r.get("diverging", 0) > 0}
    reported = {_kernel_of(d) for d in report.get("random_kernels") or []}
    causes = {d.get("cause") for d in report.get("random_kernels") or []}
    out.append((diverging == reported and causes <= {"random_numbers"},
                f"random-number kernels whose launches differ are reported under random_kernels "
                f"(diverging {sorted(diverging)}, reported {sorted(reported)}, causes {sorted(causes)})"))
    return out


# The same classes inside a small training step (tensor_cases.py, "variants"):
# programs written after the planted ones, to see the analysis hold on
# kernels and layouts it was not developed on. Run by the GPU gate
# (tensor-variant-*); not kept as golden bundles.
VARIANTS = {
    # The graph loop rebinds x to a new tensor from step 1: the replay's first
    # reader of the captured input (the first LayerNorm) sees step 0's batch.
    "stale-batch-train": Expect(EXIT_DIVERGES, "stale_input", 1, r"layer_norm"),
    # SGD(foreach)'s alpha = -lr in the update kernel: 0.05 eagerly at step 1,
    # 0.1 as captured.
    "baked-lr-sgd": Expect(EXIT_DIVERGES, "scalar_baked_at_capture", 1, r"multi_tensor_apply|foreach|Alpha"),
    # clip_grad_norm_ from step 1 eagerly; the graph has no clipping kernels.
    "clip-branch": Expect(EXIT_DIVERGES, "control_flow", 1, r"norm|multi_tensor|foreach|reduce|clamp|mul"),
    # Padding rows of a bfloat16 buffer zeroed eagerly, old activations in
    # the graph: the eager fill has no counterpart.
    "unwritten-bf16": Expect(EXIT_DIVERGES, "missing_write", 0, r"copy|reduce|sum|elementwise"),
    # bfloat16 autocast, fused attention, capturable Adam: no divergence.
    "correct-autocast": Expect(EXIT_MATCH, extras=[_no_random]),
    # table[step] with a Python int: the mul reads row 1 eagerly at step 1,
    # row 0 (4096 bytes before) in every replay.
    "baked-index": Expect(EXIT_DIVERGES, "scalar_baked_at_capture", 1, r"Mul", extras=[_moved_row]),
}


def expectation(case):
    return PLANTED[case] if case in PLANTED else VARIANTS[case]


def summary(report):
    fd = report.get("first_divergence")
    if not fd:
        return f"{report.get('result')}, no first divergence"
    k = _kernel_of(fd) or ""
    return f"{report.get('result')}: {fd.get('cause')} at candidate step {fd.get('candidate_step')}, {k[:70]}"


def check_first_divergence(case, result):
    """The checks of `first-divergence --json` on planted case `case`:
    `result` is the subprocess.CompletedProcess of the command (its exit
    code checked too), its stdout, or the parsed JSON. Returns [(ok, text)]."""
    want = expectation(case)
    rc, report, err = _report(result)
    out = []
    if rc is not None:
        out.append((rc == want.exit_code, f"exit {rc} (want {want.exit_code})"))
    if report is None:
        out.append((False, f"JSON report: {err}"))
        return out
    out.append((report.get("schema") == SCHEMA, f"schema {report.get('schema')}"))
    want_result = "diverges" if want.exit_code == EXIT_DIVERGES else "match"
    out.append((report.get("result") == want_result, f"result {summary(report)} (want {want_result})"))
    fd = report.get("first_divergence")
    if want.cause is None:
        out.append((fd is None, f"no first divergence ({(fd or {}).get('cause')})"))
        nxt = report.get("next_divergences") or []
        out.append((not nxt, f"no further divergences ({[d.get('cause') for d in nxt][:3]})"))
    elif fd is None:
        out.append((False, f"a first divergence, {want.cause} at candidate step {want.step}"))
        return out
    else:
        out.append((fd.get("cause") == want.cause, f"cause {fd.get('cause')} (want {want.cause})"))
        out.append((fd.get("candidate_step") == want.step,
                    f"candidate step {fd.get('candidate_step')} (want {want.step}; reference step "
                    f"{fd.get('reference_step')})"))
        names = _launch_names(fd.get(want.side))
        out.append((re.search(want.kernel, names, re.I) is not None,
                    f"{want.side} kernel ~ /{want.kernel}/ ({(fd.get(want.side) or {}).get('kernel')})"))
    out += _random_rules(report)
    for extra in want.extras:
        try:
            out += extra(report)
        except (KeyError, TypeError, AttributeError) as e:
            out.append((False, f"{extra.__name__}: {type(e).__name__}: {e}"))
    return out


def check_truth(case, truth):
    """The program's own account of its bug (truth.json: bug, first_step,
    kernel) agrees with the expectation, so an edit of tensor_cases.py
    that moves the bug shows."""
    want = expectation(case)
    if case == "transformer":
        return [(truth.get("mode") in ("eager", "graph") and truth.get("steps", 0) > 0,
                 f"truth.json of the transformer ({truth.get('mode')}, {truth.get('steps')} steps)")]
    out = [(truth.get("bug") == (None if case.startswith("correct") else case), f"truth.json's bug {truth.get('bug')!r}")]
    if "first_step" in truth:
        out.append((truth["first_step"] == want.step,
                    f"truth.json's first_step {truth['first_step']} == expected step {want.step}"))
    if "kernel" in truth:
        # The program names the kernel by a word ("gemm", "mul") the
        # expectation's pattern looks for.
        out.append((want.kernel is not None and truth["kernel"].lower() in want.kernel.lower(),
                    f"truth.json's kernel {truth['kernel']!r} is what /{want.kernel}/ looks for"))
    return out
