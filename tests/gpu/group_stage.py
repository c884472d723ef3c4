"""The GPU gate's optional run-group stage (issue 6): a 2-rank torchrun job
with NCCL (nccl_group.py) under the agent, one bundle per rank, read back
with `memory group-summary` and `memory compare-run-group-phases`; then the
same job with rank 1 killed after the capture. It needs two GPUs: with fewer
it is skipped, and the gate says so. `run_gate.py --group-world 1` runs the
normal case as a 1-rank group on one GPU (a smoke test of the program and
the checks; the kill case needs a second rank).

Each case runs the job twice, without and with the agent, and checks that
the agent changed neither the exit code nor the results; then every rank's
bundle against the truth that rank took from PyTorch, and the group reports
against all of them."""
import json
import sys
from pathlib import Path

import memory_checks as mc

HERE = Path(__file__).resolve().parent
GROUP_ID = "gate-nccl-group"
# NVLink multicast stays off on shared multi-GPU hosts (the device docs).
NCCL_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def cases(world):
    """The stage's cases for a group of `world` ranks: name -> mode."""
    found = {f"mem-nccl-{world}rank": "normal"}
    if world >= 2:
        found[f"mem-nccl-{world}rank-kill"] = "kill"
    return found


def gpu_count():
    try:
        import torch
        return torch.cuda.device_count()
    except Exception:
        return 0


def results(stdout):
    return sorted(line.split(None, 1)[1] for line in stdout.splitlines() if line.startswith("RESULT "))


def torchrun(mode, world):
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(world),
            "nccl_group.py", mode]


def used(tpoint):
    return tpoint["mem_get_info_total"] - tpoint["mem_get_info_free"]


def stat_of(point_or_phase, key):
    for scope in point_or_phase["scopes"]:
        if scope["key"] == key:
            return scope
    return None


def check_stat(stat, values, what, expect):
    """A cross-rank statistic equals the per-rank values each rank measured."""
    if stat is None:
        expect(False, f"{what}: in the group report")
        return
    got = {int(r): v for r, v in stat["values"].items()}
    expect(got == values, f"{what}: per rank {got} == measured {values}")
    lo, hi = min(values.values()), max(values.values())
    owner_lo = min(r for r, v in values.items() if v == lo)
    owner_hi = min(r for r, v in values.items() if v == hi)
    expect((stat["min"], stat["min_rank"], stat["max"], stat["max_rank"], stat["spread"])
           == (lo, owner_lo, hi, owner_hi, hi - lo),
           f"{what}: min {stat['min']} (rank {stat['min_rank']}), max {stat['max']} (rank {stat['max_rank']}), "
           f"spread {stat['spread']}")


def run_case(gate, Bundle, name, mode, world):
    # Each rank writes its own truth: "{rank}" is replaced by nccl_group.py.
    case_dir, _, plain, traced, checks, expect = gate.run_pair(
        name, torchrun(mode, world), NCCL_ENV, {"TCGD_GROUP": GROUP_ID}, "truth-r{rank}.json", 600)
    if mode == "normal":
        expect(plain.rc == 0, f"the job succeeded ({plain.rc})")
    expect(len(results(plain.stdout)) == world and results(plain.stdout) == results(traced.stdout),
           f"results identical ({results(plain.stdout)} vs {results(traced.stdout)})")

    # One bundle per rank, and torchrun's launcher's own (no rank; it
    # touches CUDA): all into group/, where the group verbs leave the
    # launcher's out with a warning.
    group_dir = case_dir / "group"
    group_dir.mkdir()
    ranks, launchers = {}, []
    for path in sorted(case_dir.glob("*.tcgd-memory")):
        info = json.loads(gate.analyze_json("info", "--json", str(path)).stdout or "{}")
        prov = info.get("provenance", {})
        if "nccl_group.py" not in " ".join(prov.get("command_line", [])):
            continue
        moved = group_dir / path.name
        path.rename(moved)
        if prov.get("rank", -1) < 0:
            launchers.append(moved)
        else:
            ranks[prov.get("rank")] = (moved, prov)
    expect(sorted(ranks) == list(range(world)), f"one bundle per rank ({sorted(ranks)})")
    for path in launchers:
        v = gate.analyze_json("validate", str(path))
        expect(v.returncode in ((0,) if mode == "normal" else (0, 1)),
               f"the launcher's own bundle: validate exit {v.returncode} ({v.stdout.strip()[:100]})")
    for rank, (path, prov) in sorted(ranks.items()):
        expect(prov.get("world_size") == world and prov.get("group_id") == GROUP_ID,
               f"rank {rank}: world size {prov.get('world_size')}, group '{prov.get('group_id')}'")
    truths = {}
    for rank in range(world):
        tp = case_dir / f"truth-r{rank}.json"
        if tp.exists():
            truths[rank] = json.loads(tp.read_text())
    expect(sorted(truths) == list(range(world)), f"truth of every rank ({sorted(truths)})")

    # Each rank's bundle against what that rank measured.
    for rank, (path, _) in sorted(ranks.items()):
        truth = truths.get(rank)
        if truth is None:
            continue
        v = gate.analyze_json("validate", str(path))
        # The killed rank's bundle is readable but incomplete (1); rank 0 of
        # that job is stopped by torchrun, by a signal (1) or not (0).
        allowed = (1,) if mode == "kill" and rank == 1 else (0, 1) if mode == "kill" else (0,)
        expect(v.returncode in allowed, f"rank {rank}: validate exit {v.returncode} ({v.stdout.strip()[:100]})")
        info = json.loads(gate.analyze_json("info", "--json", str(path)).stdout or "{}")
        dump = gate.analyze_json("dump", "--json", str(path))
        records = [json.loads(line) for line in dump.stdout.splitlines() if line.strip()]
        summary = gate.analyze_json("memory", "summary", "--json", str(path))
        memory = json.loads(summary.stdout) if summary.returncode == 0 else {}
        b = Bundle(info, records, memory, gate.analyze, path)
        sub = []

        def rank_expect(ok, what, rank=rank):
            sub.append(ok)
            expect(ok, f"rank {rank}: {what}")

        try:
            mc.check_nccl(b, truth, rank_expect, device=truth["device"])
            if mode == "normal":
                rank_expect(truth["replay_correct"], "graph replays of the all_reduce correct")
            leaks = b.analyze("memory", "leaks")
            ok_captures = [c for c in leaks["captures"] if not c["failed"] and c["graph"]]
            rank_expect(len(ok_captures) == 1, f"{len(ok_captures)} capture with a graph == 1")
        except Exception as e:  # a check that crashes is a failed check
            rank_expect(False, f"check raised {type(e).__name__}: {e}")

    # The group reports against every rank's truth.
    summary = gate.analyze_json("memory", "group-summary", "--json", str(group_dir))
    expect(summary.returncode == 0, f"group-summary exit {summary.returncode} ({summary.stderr.strip()[:160]})")
    if summary.returncode == 0:
        s = json.loads(summary.stdout)
        left_out = [w for w in s["warnings"] if w.startswith("left out ")]
        expect(len(left_out) == len(launchers), f"the launcher's bundle left out ({left_out})")
        expect(s["world_size"] == world and sorted(r["rank"] for r in s["ranks"]) == list(range(world)),
               f"group of {s['world_size']}: ranks {[r['rank'] for r in s['ranks']]}")
        early = [e["rank"] for e in s["ended_early"]]
        if mode == "kill":
            expect(early == [1], f"rank 1 reported as ended early ({[e['text'] for e in s['ended_early']]})")
        else:
            expect(early == [], f"no rank ended early ({early})")
        for point in s["points"]:
            measured = {r: t["points"][point["name"]] for r, t in truths.items() if point["name"] in t["points"]}
            if not measured:
                continue
            check_stat(stat_of(point, "cuda_used"), {r: used(t) for r, t in measured.items()},
                       f"{point['name']} CUDA used", expect)
            check_stat(stat_of(point, "reserved"), {r: t["reserved"] for r, t in measured.items()},
                       f"{point['name']} allocator reserved", expect)
            if point["name"] == "after_allreduce":
                nccl = stat_of(point, "outside.libnccl.so.2")
                expect(nccl is not None and nccl["min"] > 0,
                       f"after_allreduce: NCCL's memory on every rank (min {nccl and nccl['min']})")
    if mode == "normal":
        phases = gate.analyze_json("memory", "compare-run-group-phases", "--json", str(group_dir), "--baseline",
                                   "before_nccl", "after_allreduce", "--candidate", "after_capture",
                                   "after_replays")
        expect(phases.returncode == 0, f"compare-run-group-phases exit {phases.returncode} "
               f"({phases.stderr.strip()[:160]})")
        if phases.returncode == 0:
            p = json.loads(phases.stdout)
            expect(p["ranks_compared"] == list(range(world)), f"ranks compared {p['ranks_compared']}")
            scope = stat_of(p, "cuda_used")
            names = ("before_nccl", "after_allreduce", "after_capture", "after_replays")
            for rank, t in truths.items():
                want = dict(zip(("b0", "b1", "c0", "c1"), (used(t["points"][n]) for n in names)))
                got = (scope or {}).get("per_rank", {}).get(str(rank), {})
                expect({k: got.get(k) for k in want} == want, f"rank {rank}: phase points' CUDA used {want}")
            check_stat((scope or {}).get("baseline_change"),
                       {r: used(t["points"]["after_allreduce"]) - used(t["points"]["before_nccl"])
                        for r, t in truths.items()}, "baseline change of CUDA used", expect)
    ok = all(c[0] for c in checks)
    gate.rows.append((name, ok, checks, traced.seconds))
    return ok


def run(gate, Bundle, only, skipped, world=2):
    """Runs the stage's cases (those in `only`, when given) as a group of
    `world` ranks, one GPU each; with fewer GPUs adds them to `skipped` with
    the reason instead."""
    wanted = {name: mode for name, mode in cases(world).items() if not only or name in only}
    if not wanted:
        return
    count = gpu_count()
    if count < world:
        for name in wanted:
            skipped.append((name, f"needs {world} GPUs, this machine has {count}"))
        return
    for name, mode in wanted.items():
        run_case(gate, Bundle, name, mode, world)
