"""Ground truth for the torch bridge, taken from PyTorch in the same run.

Run under the agent (the GPU gate does; see docs/torch-bridge.md, "Checking
on a GPU"):

    LD_PRELOAD=build/lib/libtcgd.so TCGD_OUTPUT=out/ TCGD_RUN=tracker \\
      python3 tests/torch/gpu_tracker_check.py --out out/tracker-truth.json

It allocates and frees tensors of known sizes, uses a second stream and a
user MemPool, captures a CUDA graph that allocates 16 MiB, replays it, and
finally provokes an OOM it catches. Right after each tcgd point (tcgd.point,
tools/python/tcgd) it takes torch.cuda.memory._snapshot() and
torch.cuda.mem_get_info() with no allocation in between, and writes per
device / pool / stream reserved, allocated, active and requested bytes,
segment and block counts, and the addresses of the known tensors. The gate
compares them with the allocator_snapshot of the same point in the bundle
(and with the allocator_* event records between points).

Without the agent it still runs and writes the truth (points then say
"recorded": false). Exit status 0 unless PyTorch itself fails.
"""
import argparse
import json
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_here, "..", "..", "tools", "python"))

import torch  # noqa: E402

import tcgd  # noqa: E402

MiB = 1 << 20


def pool_figures(snapshot):
    """Per (device, pool) and per (device, stream) sums over _snapshot()'s
    segments, the way PyTorch computes them."""
    pools, streams = {}, {}
    for seg in snapshot["segments"]:
        pool = tuple(seg.get("segment_pool_id", (0, 0)))
        for table, key in ((pools, (seg["device"], pool)), (streams, (seg["device"], seg["stream"]))):
            f = table.setdefault(key, dict(reserved=0, allocated=0, active=0, requested=0,
                                           segments=0, blocks=0, inactive_blocks=0,
                                           largest_inactive=0, expandable_segments=0))
            f["reserved"] += seg["total_size"]
            f["allocated"] += seg["allocated_size"]
            f["active"] += seg["active_size"]
            f["requested"] += seg["requested_size"]
            f["segments"] += 1
            f["expandable_segments"] += int(bool(seg.get("is_expandable", False)))
            for block in seg["blocks"]:
                f["blocks"] += 1
                if block["state"] == "inactive":
                    f["inactive_blocks"] += 1
                    f["largest_inactive"] = max(f["largest_inactive"], block["size"])
    return (
        [dict(device=d, pool=list(p), **f) for (d, p), f in sorted(pools.items())],
        [dict(device=d, stream=s, **f) for (d, s), f in sorted(streams.items())],
    )


def block_frames(snapshot, address):
    """The frames PyTorch kept for the block at `address` (history on), or None."""
    for seg in snapshot["segments"]:
        for block in seg["blocks"]:
            if block["address"] == address and block["state"] == "active_allocated":
                frames = block.get("frames") or []
                return [f"{f['filename']}:{f['line']} {f['name']}" for f in frames[:8]]
    return None


class Truth:
    def __init__(self):
        self.points = []
        self.tensors = {}

    def point(self, name):
        torch.cuda.synchronize()
        recorded = tcgd.point(name)
        # Nothing may allocate device memory between the point and these.
        snapshot = torch.cuda.memory._snapshot()
        free, total = torch.cuda.mem_get_info()
        pools, streams = pool_figures(snapshot)
        self.points.append(dict(
            name=name, recorded=recorded, mem_get_info_free=free, mem_get_info_total=total,
            memory_reserved=torch.cuda.memory_reserved(),
            memory_allocated=torch.cuda.memory_allocated(),
            pools=pools, streams=streams,
            live_tensors={n: block_frames(snapshot, t["address"]) for n, t in self.tensors.items()
                          if t["freed_after"] is None},
        ))

    def tensor(self, name, t):
        self.tensors[name] = dict(address=t.data_ptr(), bytes=t.numel() * t.element_size(),
                                  allocated_after=self.points[-1]["name"], freed_after=None)
        return t

    def freed(self, *names):
        for n in names:
            self.tensors[n]["freed_after"] = self.points[-1]["name"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON here (also printed as the last line)")
    parser.add_argument("--no-oom", action="store_true", help="skip the caught OOM at the end")
    args = parser.parse_args()

    torch.manual_seed(0)
    truth = Truth()
    dev = torch.device("cuda")
    warm = torch.ones(256, 256, device=dev)
    (warm @ warm).relu_()
    truth.point("start")

    a = truth.tensor("a_1MiB", torch.empty(MiB, dtype=torch.uint8, device=dev).fill_(1))
    b = truth.tensor("b_7MiB", torch.empty(7 * MiB, dtype=torch.uint8, device=dev).fill_(2))
    c = truth.tensor("c_64MiB", torch.empty(64 * MiB, dtype=torch.uint8, device=dev).fill_(3))
    d = truth.tensor("d_2KiB", torch.empty(2048, dtype=torch.uint8, device=dev).fill_(4))
    truth.point("allocated")

    del b, c
    truth.freed("b_7MiB", "c_64MiB")
    truth.point("freed")  # cached: reserved unchanged, allocated down by 71 MiB

    torch.cuda.empty_cache()
    truth.point("emptied")

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        e = truth.tensor("e_3MiB_side_stream",
                         torch.empty(3 * MiB, dtype=torch.uint8, device=dev).fill_(5))
    torch.cuda.current_stream().wait_stream(side)
    truth.point("side_stream")

    pool_id = None
    if hasattr(torch.cuda, "MemPool") and hasattr(torch.cuda, "use_mem_pool"):
        user_pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(user_pool):
            f = truth.tensor("f_5MiB_user_pool",
                             torch.empty(5 * MiB, dtype=torch.uint8, device=dev).fill_(6))
        pool_id = list(user_pool.id)
        truth.point("user_pool")

    # The seed's memory quick start: a capture that allocates 16 MiB shows as
    # +16 MiB in a graph-private pool.
    static_in = torch.randn(1024, device=dev)
    capture_stream = torch.cuda.Stream()
    capture_stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(capture_stream):
        for _ in range(2):
            (static_in * 2).sum()
    torch.cuda.current_stream().wait_stream(capture_stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        big = torch.empty(16 * MiB, dtype=torch.uint8, device=dev)
        big.fill_(7)
        static_out = static_in * 3
    truth.tensor("g_16MiB_in_graph", big)
    truth.point("captured")
    graph_pool = list(graph.pool())
    graph.replay()
    truth.point("replayed")

    oom = None
    if not args.no_oom:
        total = torch.cuda.get_device_properties(dev).total_memory
        try:
            torch.empty(2 * total, dtype=torch.uint8, device=dev)
        except torch.cuda.OutOfMemoryError:
            oom = dict(requested=2 * total)
        truth.point("after_oom")

    keep = (a, d, e, static_out, big) + ((f,) if pool_id else ())
    result = dict(
        torch_version=torch.__version__,
        cuda=torch.version.cuda,
        backend=torch.cuda.memory.get_allocator_backend(),
        agent_loaded=tcgd.agent_loaded(),
        memory_stacks=os.environ.get("TCGD_MEMORY_STACKS", "none"),
        graph_pool=graph_pool,
        user_pool=pool_id,
        oom=oom,
        tensors=truth.tensors,
        points=truth.points,
        checksum=float(sum(t.float().sum().item() for t in keep)),
    )
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as out:
            out.write(text)
    print("TCGD_TRUTH " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
