"""Replays the GPU gate's memory checks (tests/gpu/memory_checks.py) on the
bundles the gate recorded on the H200 and committed here, with this build's
tcgd-analyze: what the analyzer reports from a bundle must still match what
the program measured from PyTorch in the same run (truth.json).

    check_golden.py TCGD_ANALYZE [CASE ...]

Exit 0 when every check of every case passes, 1 otherwise (each failed check
printed), 2 on bad usage or a missing file. Runs without a GPU or torch."""
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "gpu"))

import memory_checks  # noqa: E402
from run_gate import Bundle  # noqa: E402  (no torch import at module level)


def load(analyze, bundle):
    def run(*args):
        r = subprocess.run([analyze, *args, str(bundle)], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"tcgd-analyze {' '.join(args)} {bundle}: exit {r.returncode}: "
                               f"{r.stderr.strip()}")
        return r.stdout
    info = json.loads(run("info", "--json"))
    records = [json.loads(line) for line in run("dump", "--json").splitlines() if line.strip()]
    memory = json.loads(run("memory", "summary", "--json"))
    return Bundle(info, records, memory, analyze, bundle)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    analyze, wanted = argv[1], set(argv[2:])
    failed = 0
    ran = 0
    for name, _, check, _ in memory_checks.CASES:
        case = name.removeprefix("mem-")
        if wanted and case not in wanted:
            continue
        case_dir = HERE / "memory" / case
        bundle, truth = case_dir / "bundle.tcgd-memory", case_dir / "truth.json"
        if not bundle.exists() or not truth.exists():
            print(f"{case}: missing {bundle if not bundle.exists() else truth}", file=sys.stderr)
            return 2
        checks = []
        try:
            check(load(analyze, bundle), json.loads(truth.read_text()),
                  lambda ok, what: checks.append((bool(ok), what)))
        except Exception as e:  # a check that crashes is a failed check
            checks.append((False, f"check raised {type(e).__name__}: {e}"))
        ran += 1
        bad = [what for ok, what in checks if not ok]
        print(f"{case:16} {'PASS' if not bad else 'FAIL'} {len(checks) - len(bad)}/{len(checks)}")
        for what in bad:
            print(f"   [FAIL] {what}")
        failed += bool(bad)
    if wanted and ran != len(wanted):
        print(f"unknown case among {sorted(wanted)}", file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
