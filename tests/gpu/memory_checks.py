"""Checks of the memory collection gate (memory_cases.py): the bundle's
allocator snapshot at every explicit point against torch's own snapshot taken
right after it, CUDA used against torch.cuda.mem_get_info(), and what each
case is about. `b` is run_gate.Bundle (info, records, memory summary JSON)."""

MiB = 1 << 20
FIELDS = ("reserved", "allocated", "active", "requested", "segments")
LAUNCH_APIS = {"cudaGraphLaunch", "cudaGraphLaunch_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz"}


def mib(n):
    return f"{n / MiB:.2f} MiB"


def summary_point(b, name):
    for p in b.memory.get("points", []):
        if p["name"] == name:
            return p
    return None


def summary_device(point, device=0):
    for d in point.get("devices", []):
        if d["device"] == device:
            return d
    return None


def bundle_pools(dev):
    pools = {}
    for pool in dev.get("pools", []):
        key = "{},{}".format(*pool["pool"])
        pools[key] = {f: pool[f] for f in FIELDS}
        pools[key]["streams"] = {str(s["stream"]): {f: s[f] for f in FIELDS}
                                 for s in pool.get("streams", [])}
    return pools


def truth_pools(tpoint, device="0"):
    return tpoint["pools"].get(device, {})


def graph_allocated(pools):
    return sum(p["allocated"] for k, p in pools.items() if k.split(",")[0] != "0")


def check_points_match(b, truth, expect, device=0):
    """Per pool and stream, every figure equal at every explicit point; CUDA
    used equal to mem_get_info; history complete after the first interval.
    `device`: the ordinal the job ran on (a rank's LOCAL_RANK)."""
    names = list(truth["points"])
    for i, name in enumerate(names):
        t = truth["points"][name]
        p = summary_point(b, name)
        if p is None:
            expect(False, f"{name}: point in the bundle")
            continue
        expect(t.get("tcgd_ok") is True, f"{name}: tcgd.point returned True")
        expect(p["snapshot"] == "taken", f"{name}: snapshot {p['snapshot']}")
        dev = summary_device(p, device)
        if dev is None:
            expect(False, f"{name}: device {device} in the summary")
            continue
        mine, theirs = bundle_pools(dev), truth_pools(t, str(device))
        diffs = []
        for key in sorted(set(mine) | set(theirs)):
            a, z = mine.get(key), theirs.get(key)
            if a is None or z is None:
                diffs.append(f"pool {key} only in {'torch' if a is None else 'bundle'}")
                continue
            diffs += [f"pool {key} {f}: bundle {a[f]} torch {z[f]}" for f in FIELDS if a[f] != z[f]]
            for s in sorted(set(a["streams"]) | set(z["streams"])):
                sa, sz = a["streams"].get(s), z["streams"].get(s)
                if sa is None or sz is None or any(sa[f] != sz[f] for f in FIELDS):
                    diffs.append(f"pool {key} stream {s}: bundle {sa} torch {sz}")
        summary = ", ".join(f"{k}: {mib(v['reserved'])}/{mib(v['allocated'])}" for k, v in sorted(mine.items()))
        expect(not diffs, f"{name}: {len(mine)} pools (reserved/allocated {summary}) equal torch's snapshot"
               + (f"; differs: {'; '.join(diffs[:4])}" if diffs else ""))
        used = t["mem_get_info_total"] - t["mem_get_info_free"]
        src = dev.get("cuda_used_from", {}).get("api")
        expect(dev.get("cuda_used") == used and src == "point_device_memory",
               f"{name}: CUDA used {mib(dev.get('cuda_used') or 0)} ({src}) == mem_get_info {mib(used)}")
        if i > 0:
            expect(p["history"] == "complete", f"{name}: history of the interval {p['history']}")


def auto_points(b):
    return [p["name"] for p in b.info.get("points", [])]


def check_auto_points(b, expect, captures):
    names = auto_points(b)
    for n in range(1, captures + 1):
        for prefix in ("capture-begin", "capture-end", "instantiate"):
            expect(f"{prefix}/{n}" in names, f"automatic point {prefix}/{n}")
    exit_point = summary_point(b, "exit")
    expect(exit_point is not None and names and names[-1] == "exit",
           "automatic point exit is the last point")
    if exit_point is not None:
        expect(exit_point["snapshot"] == "taken", f"exit: snapshot {exit_point['snapshot']}")
    late = [p["name"] for p in b.memory.get("points", []) if p["snapshot"] == "late"]
    expect(not late, f"no deferred snapshot taken after a later point ({late})")
    # A hook-made point's snapshot is deferred to the watcher; capture-end's
    # usually coalesces into the instantiate that follows it (docs/points.md).
    for name in names:
        if name.startswith(("capture-end", "instantiate")):
            p = summary_point(b, name)
            status = p["snapshot"] if p else "none"
            at = summary_point(b, p.get("snapshot_at", "")) if p else None
            ok = status == "taken" or (status == "coalesced" and at is not None
                                       and at["snapshot"] == "taken")
            expect(ok, f"{name}: snapshot {status}"
                   + (f" into {p['snapshot_at']}" if p and p.get("snapshot_at") else ""))


def check_graph_inventory(b, expect, captures, eager_until=None):
    """The inventory recorded at each capture end: every graph read whole,
    its kernel nodes named; with eager_until, the kernels the graph holds
    are the ones the same step launched eagerly before that point."""
    graphs = b.info.get("graphs", [])
    expect(len(graphs) == captures, f"{len(graphs)} graph inventories == {captures} captures")
    for i, gr in enumerate(graphs):
        kernels = gr.get("kernels", [])
        named = sum(1 for k in kernels if k.get("name"))
        expect(gr.get("status") == 0 and not gr.get("truncated")
               and gr["counts"].get("kernel", 0) == len(kernels) > 0 and named == len(kernels),
               f"graph {i}: {gr.get('nodes')} nodes, {len(kernels)} kernel nodes, {named} named, "
               f"{gr.get('alloc_bytes', 0)} B in alloc nodes, status {gr.get('status')}")
        if eager_until is None or not kernels:
            continue
        names = b.kernel_names()
        until = b.seq(eager_until)
        eager_handles = {r.get("function") for r in b.launches() if r["seq"] < until}
        eager_names = {names.get(h) for h in eager_handles} - {None}
        node_names = [k["name"] for k in kernels]
        seen = sum(1 for n in node_names if n in eager_names)
        same_handle = sum(1 for k in kernels if k.get("function") in eager_handles)
        kinds = sorted({k.get("handle_kind") for k in kernels})
        expect(seen == len(node_names),
               f"graph {i}: {seen}/{len(node_names)} kernel nodes ran eagerly by name "
               f"({same_handle} by the same handle; node handles {', '.join(kinds)})")


def check_quickstart(b, truth, expect):
    check_points_match(b, truth, expect)
    pts = {n: bundle_pools(summary_device(summary_point(b, n)) or {})
           for n in ("before_capture", "after_capture")}
    growth = graph_allocated(pts["after_capture"]) - graph_allocated(pts["before_capture"])
    expect(growth == truth["graph_bytes"],
           f"graph-private pool allocated grew {mib(growth)} == {mib(truth['graph_bytes'])}")
    check_auto_points(b, expect, 1)
    check_graph_inventory(b, expect, 1)


def check_transformer(b, truth, expect):
    check_points_match(b, truth, expect)
    launches = [r for r in b.between("after_capture", "after_replays") if r.get("api") in LAUNCH_APIS]
    expect(len(launches) == truth["replays"], f"{len(launches)} graph launches == {truth['replays']}")
    names = auto_points(b)
    expect("capture/begin" in names and "capture/end" in names, "tcgd.phase points capture/begin, /end")
    pools = bundle_pools(summary_device(summary_point(b, "after_capture")))
    expect(graph_allocated(pools) > 0, f"graph-private pool holds the step's memory "
           f"({mib(graph_allocated(pools))} allocated)")
    check_auto_points(b, expect, 1)
    check_graph_inventory(b, expect, 1, eager_until="after_warmup")


def check_compile(b, truth, expect):
    check_points_match(b, truth, expect)
    pools = bundle_pools(summary_device(summary_point(b, "after_steps")))
    # cudagraph trees allocate through a pool id of their own ("0,1" on
    # torch 2.11: the user-pool form), not a capture's "N,0".
    graph = {k: mib(v["reserved"]) for k, v in pools.items() if k != "0,0" and v["reserved"] > 0}
    expect(graph, f"cudagraph trees' private pool in the bundle ({graph})")
    launches = [r for r in b.between("after_first_call", "after_steps") if r.get("api") in LAUNCH_APIS]
    expect(len(launches) >= 8, f"{len(launches)} graph launches for 8 calls")


def check_two_streams(b, truth, expect):
    check_points_match(b, truth, expect)
    side = str(truth["points"]["allocated"]["side_stream"])
    pools = bundle_pools(summary_device(summary_point(b, "allocated")))
    side_reserved = pools.get("0,0", {}).get("streams", {}).get(side, {}).get("reserved", 0)
    expect(side_reserved >= 24 * MiB, f"side stream {side} holds {mib(side_reserved)} (>= 24 MiB)")


def check_dataloader(b, truth, expect):
    check_points_match(b, truth, expect)
    expect(truth["batches"] == 16, f"{truth['batches']} batches")


def check_oom(b, truth, expect):
    check_points_match(b, truth, expect)
    expect(truth["caught"], "the job caught torch.cuda.OutOfMemoryError")
    oom = [r for r in b.records if r.get("type") in ("allocator_oom", "allocator_oom_observed")]
    expect(len(oom) >= 2, f"OOM trace entry and observer call recorded ({len(oom)})")
    expect("oom" in auto_points(b), "automatic point oom")


def check_failed_capture(b, truth, expect):
    check_points_match(b, truth, expect)
    expect(truth["failed"], "the capture failed")
    pools = bundle_pools(summary_device(summary_point(b, "after_failed_capture")))
    # torch 2.11 keeps the failed capture's pool, and the block of the tensor
    # allocated in it stays allocated (its Python object lives on): the
    # bundle must show the pool; per-figure equality with torch is checked
    # above.
    leaked = {k: v for k, v in pools.items() if k != "0,0" and v["reserved"] > 0}
    expect(leaked, "the failed capture's private pool stays reserved: "
           + ", ".join(f"{k} reserved {mib(v['reserved'])}, allocated {mib(v['allocated'])}"
                       for k, v in leaked.items()))
    expect(not b.info.get("graphs"), "no graph inventory for the failed capture")


def check_nccl(b, truth, expect, device=0):
    check_points_match(b, truth, expect, device)
    expect(truth["allreduce_correct"], "all_reduce result correct")
    dev = summary_device(summary_point(b, "after_allreduce"), device)
    split = dev.get("residual_split") or {}
    by_lib = split.get("outside_allocator", {}).get("by_library", {})
    nccl = sum(v for k, v in by_lib.items() if "nccl" in k.lower())
    expect(nccl > 0, f"residual under NCCL {mib(nccl)}; split {by_lib}, rest {split.get('rest')}")
    before = summary_device(summary_point(b, "before_nccl"), device)
    before_lib = (before.get("residual_split") or {}).get("outside_allocator", {}).get("by_library", {})
    grew = nccl - sum(v for k, v in before_lib.items() if "nccl" in k.lower())
    used = (truth["points"]["before_nccl"]["mem_get_info_free"]
            - truth["points"]["after_allreduce"]["mem_get_info_free"])
    expect(0 < grew <= used, f"NCCL's {mib(grew)} within the {mib(used)} cuMemGetInfo grew by")


def site_text(site):
    """How tcgd-analyze names a python frame: "function (file:line)"."""
    return f"{site['function']} ({site['file']}:{site['line']})"


def check_attribution_exact(b, p1, p2, expect):
    """`memory attribute` from p1 to p2: every pool's attributed growth equals
    the change its two allocator snapshots show."""
    a = b.analyze("memory", "attribute", "--from", p1, "--to", p2, "--stack-depth", "32")
    for pool in a["pools"]:
        expect(pool["difference"] == 0,
               f"attribute {p1}->{p2} pool {pool['pool']}: attributed {pool['attributed']} == "
               f"snapshots {pool['snapshot_growth']}")
    return a


def check_quickstart_stacks(b, truth, expect):
    """TCGD_MEMORY_STACKS=all: the graph's 16 MiB is attributed to the line
    that allocated it (python stack), its segment to PyTorch's allocator
    calling the driver (native stack)."""
    check_quickstart(b, truth, expect)
    want = site_text(truth["graph_alloc_site"])
    a = check_attribution_exact(b, "before_capture", "after_capture", expect)
    at_site = sum(s["bytes"] for s in a["stacks"]
                  if s["pool"] and s["pool"][0] != 0 and s["stack"] and want in s["stack"])
    expect(at_site == truth["graph_bytes"],
           f"attribute: {mib(at_site)} of the graph-private growth at {want} == {mib(truth['graph_bytes'])}")
    life = b.analyze("memory", "allocation-lifetimes", "--born-between", "before_capture", "after_capture",
                     "--stack-depth", "32")
    blocks = [x for x in life["lifetimes"] if x["level"] == "block" and x["pool"] and x["pool"][0] != 0]
    expect(any(x["size"] == truth["graph_bytes"] and want in x["stack"] for x in blocks),
           f"lifetimes: the 16 MiB block born in the capture carries the stack of {want}")
    cohort = [c for c in life["cohorts"] if c["level"] == "block" and c["stack"]
              and want in c["stack"]["text"]]
    expect(len(cohort) == 1 and cohort[0]["stack"]["kind"] == "python"
           and cohort[0]["survivor_bytes"] == truth["graph_bytes"],
           f"lifetimes: one python-stack cohort at {want} with {mib(truth['graph_bytes'])} surviving")
    drivers = [x for x in life["lifetimes"] if x["level"] == "driver" and x["pool"] and x["pool"][0] != 0
               and x["size"] >= truth["graph_bytes"]]
    expect(any("libc10_cuda" in x["stack"] for x in drivers),
           "lifetimes: the private pool's driver allocation has a native stack through libc10_cuda.so "
           f"({[x['stack'][:80] for x in drivers]})")


def check_transformer_stacks(b, truth, expect):
    """TCGD_MEMORY_STACKS=all on the captured training step: attribution exact
    over capture and replays, and the private pool's growth points into the
    step function."""
    check_transformer(b, truth, expect)
    site = truth["step_site"]
    first, last = site["lines"]
    a = check_attribution_exact(b, "after_warmup", "after_capture", expect)
    check_attribution_exact(b, "after_capture", "after_replays", expect)

    def in_step(text):
        return any(f"{site['function']} ({site['file']}:{n})" in text for n in range(first, last + 1))

    private = [s for s in a["stacks"] if s["pool"] and s["pool"][0] != 0 and s["bytes"] > 0]
    grown = sum(s["bytes"] for s in private)
    in_fn = sum(s["bytes"] for s in private if s["stack"] and in_step(s["stack"]))
    expect(grown > 0 and in_fn > 0,
           f"attribute: {mib(in_fn)} of the private pool's {mib(grown)} growth at lines {first}-{last} "
           f"of {site['file']} ({site['function']})")
    life = b.analyze("memory", "allocation-lifetimes", "--from", "after_warmup", "--to", "after_capture")
    kinds = {c["stack"]["kind"] for c in life["cohorts"] if c["stack"]}
    expect(kinds == {"python", "native"}, f"lifetimes: cohorts by python and native stacks ({sorted(kinds)})")


# (gate name, memory_cases.py argument, check, agent environment); the golden
# copy of a case lives in tests/golden/memory/<gate name without "mem-">/.
STACKS = {"TCGD_MEMORY_STACKS": "all"}
CASES = [
    ("mem-quickstart", "quickstart", check_quickstart, {}),
    ("mem-expandable", "expandable", check_quickstart, {}),
    ("mem-transformer", "transformer", check_transformer, {}),
    ("mem-compile", "compile", check_compile, {}),
    ("mem-two-streams", "two-streams", check_two_streams, {}),
    ("mem-dataloader", "dataloader", check_dataloader, {}),
    ("mem-oom", "oom", check_oom, {}),
    ("mem-failed-capture", "failed-capture", check_failed_capture, {}),
    ("mem-nccl", "nccl", check_nccl, {}),
    ("mem-quickstart-stacks", "quickstart", check_quickstart_stacks, STACKS),
    ("mem-transformer-stacks", "transformer", check_transformer_stacks, STACKS),
]
