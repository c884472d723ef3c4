"""The graphed training step's cost alone, for a short device call:
tensor_bench.py's replays (no eager steps, no launch loop) without the agent
and under each TCGD_TENSOR configuration, in interleaved rounds, and the
median ratios to no agent. run_gate.py --benches tensor is the full
benchmark (eager step, launch loop, the replay's bytes); this is its graphed
step, in about a fifth of the time.

    python3 step_ratio.py --build ../../build-gpu [--rounds 3] [--replays 50] [--out DIR]
                          [NAME=RULES ...]        (default: fingerprint=fingerprint)
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build directory (lib/libtcgd.so)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--replays", type=int, default=50)
    ap.add_argument("--out", help="where the runs' bundles go (default: a new folder under /tmp)")
    ap.add_argument("configs", nargs="*", help="NAME=TCGD_TENSOR value")
    args = ap.parse_args()
    lib = pathlib.Path(args.build).resolve() / "lib" / "libtcgd.so"
    if not lib.exists():
        sys.exit(f"step_ratio.py: {lib}: no agent there (build the tcgd target)")
    configs = {"none": None}
    for item in args.configs or ["fingerprint=fingerprint"]:
        name, sep, rules = item.partition("=")
        if not sep or not name or name == "none":
            sys.exit(f"step_ratio.py: {item!r}: expected NAME=TCGD_TENSOR value")
        configs[name] = rules
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="step-ratio."))
    times = {k: [] for k in configs}
    keys = list(configs)
    for i in range(args.rounds):
        for k in keys[i % len(keys):] + keys[:i % len(keys)]:
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)
            env.pop("TCGD_TENSOR", None)
            if configs[k] is not None:
                (out / k).mkdir(parents=True, exist_ok=True)
                env.update(LD_PRELOAD=str(lib), TCGD_OUTPUT=str(out / k), TCGD_TENSOR=configs[k])
            p = subprocess.run([sys.executable, str(HERE / "tensor_bench.py"), str(args.replays), "0"], env=env,
                               capture_output=True, text=True, timeout=600)
            line = next((ln for ln in p.stdout.splitlines() if ln.startswith("BENCH ")), None)
            if line is None:
                print(f"step_ratio.py: {k} round {i}: no BENCH line (exit {p.returncode}): {p.stderr[-2000:]}",
                      flush=True)
                continue
            times[k].append(json.loads(line[6:])["graph_step_s"])
    if not times["none"]:
        sys.exit("step_ratio.py: the run without the agent gave no time")
    base = statistics.median(times["none"])
    for k in keys[1:]:
        if not times[k]:
            print(f"graph_step {k:<12} no time")
            continue
        m = statistics.median(times[k])
        spread = " ".join(f"{t / b:.3f}" for t, b in zip(times[k], times["none"]))
        print(f"graph_step {k:<12} ratio {m / base:.3f} ({m * 1e3:.2f} ms / none {base * 1e3:.2f} ms; "
              f"per round {spread})", flush=True)


if __name__ == "__main__":
    main()
