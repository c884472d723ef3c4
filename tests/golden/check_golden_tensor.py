"""Replays the GPU gate's tensor checks on the .tcgd-tensor bundles the gate
recorded on the H200 and committed in tensor/, with this build's
tcgd-analyze: the bundle checks of tests/gpu/tensor_checks.py (quickstart,
compile, two-streams, kill: what the bundle holds against what the program
took from PyTorch, truth.json), and `tensor first-divergence` on the planted
pairs against what tests/gpu/tensor_expect.py says the program's bug is.

    check_golden_tensor.py [-v] TCGD_ANALYZE [CASE ...]

-v prints every check, not only the failed ones. Exit 0 when every check of
every case passes, 1 otherwise, 2 on bad usage or a missing file. Runs
without a GPU or torch."""
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "gpu"))

import tensor_checks  # noqa: E402  (no torch import)
import tensor_expect  # noqa: E402
from tensor_bundle import TensorBundle  # noqa: E402

TENSOR = HERE / "tensor"
CASES = list(tensor_checks.BUNDLE_CASES) + list(tensor_expect.PLANTED)


def bundle_checks(analyze, path, expect, what=""):
    """validate, and whole with its probes available; returns the bundle."""
    def tagged(ok, text):
        expect(ok, f"{what}{text}")
    tensor_checks.check_validate(analyze, path, tagged)
    b = TensorBundle(str(path))
    tensor_checks.check_whole(b, tagged)
    return b


def bundle_case(analyze, case, expect):
    d = TENSOR / case
    files = [d / "bundle.tcgd-tensor", d / "truth.json"]
    missing = [f for f in files if not f.exists()]
    if missing:
        return missing
    b = bundle_checks(analyze, files[0], expect)
    tensor_checks.run_bundle_check(tensor_checks.BUNDLE_CASES[case], b, json.loads(files[1].read_text()), expect)
    return []


def planted_case(analyze, case, expect):
    d = TENSOR / case
    files = [d / f"{m}.{x}" for m in ("eager", "graph") for x in ("tcgd-tensor", "truth.json")]
    missing = [f for f in files if not f.exists()]
    if missing:
        return missing
    for mode in ("eager", "graph"):
        bundle_checks(analyze, d / f"{mode}.tcgd-tensor", expect, f"{mode}: ")
        truth = json.loads((d / f"{mode}.truth.json").read_text())
        for ok, text in tensor_expect.check_truth(case, truth):
            expect(ok, f"{mode}: {text}")
    p = subprocess.run([str(analyze), "tensor", "first-divergence", "--json", str(d / "eager.tcgd-tensor"),
                        str(d / "graph.tcgd-tensor")], capture_output=True, text=True, timeout=300)
    for ok, text in tensor_expect.check_first_divergence(case, p):
        expect(ok, f"first-divergence: {text}")
    return []


def main(argv):
    args = argv[1:]
    verbose = "-v" in args
    args = [a for a in args if a != "-v"]
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    analyze, wanted = args[0], args[1:]
    unknown = [c for c in wanted if c not in CASES]
    if unknown:
        print(f"unknown case {unknown} (cases: {' '.join(CASES)})", file=sys.stderr)
        return 2
    failed = 0
    for case in wanted or CASES:
        checks = []

        def expect(ok, what):
            checks.append((bool(ok), what))

        run = bundle_case if case in tensor_checks.BUNDLE_CASES else planted_case
        try:
            missing = run(analyze, case, expect)
        except Exception as e:  # a check that crashes is a failed check
            missing = []
            expect(False, f"check raised {type(e).__name__}: {e}")
        if missing:
            print(f"{case}: missing {missing[0]}", file=sys.stderr)
            return 2
        bad = [what for ok, what in checks if not ok]
        print(f"{case:18} {'PASS' if not bad else 'FAIL'} {len(checks) - len(bad)}/{len(checks)}")
        for ok, what in checks:
            if verbose or not ok:
                print(f"   [{'ok' if ok else 'FAIL'}] {what}")
        failed += bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
