"""Checks libtcgd_torch.so against the real torch on a GPU, without the agent.

    python3 tests/torch/gpu_bridge_check.py --bridge build/lib/libtcgd_torch.so \\
        --harness build/tests/torch/libtcgd_bridge_harness.so

tests/torch/bridge_harness.c plays the agent's side of the ABI (records and
blobs kept in memory). Each scenario runs in its own process (the allocator
backend is chosen when torch starts): default, expandable segments, Python
stacks, and the cudaMallocAsync backend. For each, the bridge must:
  - refuse to attach before the caching allocator exists, attach after;
  - emit one allocator record per TraceEntry with address, size, stream,
    pool and device matching the tensors made (alloc, free_requested,
    free_completed, segment_alloc or segment_map, graph-pool allocations in
    the capture's pool, OOM with the observer's record);
  - produce snapshots whose per device / pool / stream figures equal
    torch.cuda.memory._snapshot() taken right after;
  - with stacks, store the allocating Python frames of live blocks, interned;
  - with cudaMallocAsync, say "backend cudaMallocAsync" and attach nothing.
Exit 0 when every check passes, 1 otherwise, 77 when there is no GPU or no
torch (ctest skips).
"""
import argparse
import ctypes
import json
import os
import struct
import subprocess
import sys

MiB = 1 << 20
ALLOC, FREE_REQ, FREE_DONE, SEG_ALLOC, SEG_FREE, SEG_MAP, SEG_UNMAP, SNAP, OOM = range(1024, 1033)
OOM_OBSERVED, SNAPSHOT, STATUS = 1040, 1041, 1042
KIND_STRING, KIND_STACK, KIND_SNAPSHOT = 0, 3, 4
STACKS = {"none": 0, "python": 2, "all": 3}


class Harness:
    def __init__(self, path, bridge, stacks, max_blob):
        self.lib = ctypes.CDLL(path)
        self.lib.harness_load.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32]
        self.lib.harness_bridge_torch_version.restype = ctypes.c_char_p
        self.lib.harness_snapshot.argtypes = [ctypes.c_uint64, ctypes.c_uint32]
        self.lib.harness_record_count.restype = ctypes.c_uint64
        self.lib.harness_record_drops.restype = ctypes.c_uint64
        self.lib.harness_record.argtypes = [ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint16),
                                            ctypes.POINTER(ctypes.c_uint8),
                                            ctypes.POINTER(ctypes.c_uint64)]
        self.lib.harness_blob.argtypes = [ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint16),
                                          ctypes.POINTER(ctypes.c_uint32), ctypes.c_char_p,
                                          ctypes.c_uint32]
        self.init_result = self.lib.harness_load(bridge.encode(), STACKS[stacks], max_blob)
        self.seen = 0

    def records(self, since=None):
        """Records emitted since the last call (or since index `since`)."""
        start = self.seen if since is None else since
        n = self.lib.harness_record_count()
        out = []
        t, f, a = ctypes.c_uint16(), ctypes.c_uint8(), (ctypes.c_uint64 * 5)()
        for i in range(start, n):
            self.lib.harness_record(i, ctypes.byref(t), ctypes.byref(f), a)
            out.append((t.value, f.value, list(a)))
        if since is None:
            self.seen = n
        return out

    def blob(self, blob_id):
        kind, length = ctypes.c_uint16(), ctypes.c_uint32()
        if not self.lib.harness_blob(blob_id, ctypes.byref(kind), ctypes.byref(length), None, 0):
            return None, None
        buf = ctypes.create_string_buffer(max(1, length.value))
        self.lib.harness_blob(blob_id, ctypes.byref(kind), ctypes.byref(length), buf, len(buf))
        return kind.value, buf.raw[:length.value]


def decode_snapshot(data):
    """The layout of docs/torch-bridge.md, "Snapshot blob", independently."""
    magic, version, header_bytes, flags, ordinal, time_ns, nseg, nblk, seg_bytes, blk_bytes = \
        struct.unpack_from("<8sHHIQQIIIH", data, 0)
    assert magic == b"TCGDSNAP" and version == 1, (magic, version)
    segs, at = [], header_bytes
    for _ in range(nseg):
        (addr, total, alloc, active, req, stream, p0, p1, nb, dev, sflags, _pad,
         stack) = struct.unpack_from("<QQQQQQQQIhBBQ", data, at)
        segs.append(dict(address=addr, total_size=total, allocated_size=alloc, active_size=active,
                         requested_size=req, stream=stream, pool=(p0, p1), nblocks=nb, device=dev,
                         is_large=bool(sflags & 1), is_expandable=bool(sflags & 2), stack=stack,
                         blocks=[]))
        at += seg_bytes
    for seg in segs:
        for _ in range(seg["nblocks"]):
            baddr, size, req, stack, bflags = struct.unpack_from("<QQQQI", data, at)
            seg["blocks"].append(dict(address=baddr, size=size, requested_size=req, stack=stack,
                                      allocated=bool(bflags & 1), active=bool(bflags & 2)))
            at += blk_bytes
    assert at == len(data), (at, len(data))
    return dict(flags=flags, ordinal=ordinal, segments=segs)


def figures(segments, key):
    out = {}
    for s in segments:
        f = out.setdefault(key(s), [0, 0, 0, 0, 0, 0])
        f[0] += s["total_size"]
        f[1] += s["allocated_size"]
        f[2] += s["active_size"]
        f[3] += s["requested_size"]
        f[4] += 1
        f[5] += len(s["blocks"])
    return out


class Checker:
    def __init__(self, name):
        self.name, self.failures, self.passed = name, [], 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failures.append(what)
            print(f"  FAIL [{self.name}] {what}", flush=True)


def take_snapshot(h, c, torch, ordinal, label):
    torch.cuda.synchronize()
    rc = h.lib.harness_snapshot(ordinal, 0)
    truth = torch.cuda.memory._snapshot()
    recs = [r for r in h.records() if r[0] == SNAPSHOT and r[2][0] == ordinal]
    c.check(rc == 0, f"{label}: snapshot result {rc}")
    c.check(len(recs) >= 1, f"{label}: no allocator_snapshot record")
    if not recs:
        return None, truth
    parts = sorted(recs, key=lambda r: r[2][2] & 0xFFFFFFFF)
    nparts = parts[0][2][2] >> 32
    c.check(len(parts) == nparts, f"{label}: {len(parts)} parts of {nparts}")
    data = b"".join(h.blob(r[2][1])[1] or b"" for r in parts)
    c.check(len(data) == parts[0][2][3], f"{label}: {len(data)} bytes, record says {parts[0][2][3]}")
    snap = decode_snapshot(data)
    c.check(snap["ordinal"] == ordinal, f"{label}: ordinal {snap['ordinal']}")
    ours = figures(snap["segments"], lambda s: (s["device"], s["pool"]))
    theirs = figures(truth["segments"], lambda s: (s["device"], tuple(s["segment_pool_id"])))
    c.check(ours == theirs, f"{label}: per pool figures differ: ours {ours} torch {theirs}")
    ours = figures(snap["segments"], lambda s: (s["device"], s["stream"]))
    theirs = figures(truth["segments"], lambda s: (s["device"], s["stream"]))
    c.check(ours == theirs, f"{label}: per stream figures differ: ours {ours} torch {theirs}")
    return snap, truth


def scenario(args):
    try:
        import torch
    except ImportError:
        print("no torch: skipped")
        return 77
    if not torch.cuda.is_available():
        print("no GPU: skipped")
        return 77
    c = Checker(args.scenario)
    stacks = "python" if args.scenario == "stacks" else "none"
    h = Harness(args.harness, args.bridge, stacks, args.max_blob)
    c.check(h.init_result == 0, f"init result {h.init_result}")
    release = torch.__version__.split("+")[0]
    c.check(h.lib.harness_bridge_torch_version().decode() == release,
            f"bridge built for {h.lib.harness_bridge_torch_version()} runs on {torch.__version__}")
    # Before the allocator exists: not ready (a tracker attached now would be dropped).
    c.check(h.lib.harness_try_attach() == 1, "attach before CUDA init was not refused as not ready")
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    attach = h.lib.harness_try_attach()
    statuses = [r for r in h.records() if r[0] == STATUS]

    if args.scenario == "async":
        c.check(attach == 2, f"attach on cudaMallocAsync returned {attach}")
        c.check(any(r[2][0] == 2 for r in statuses), "no backend-unavailable status record")
        texts = [h.blob(r[2][1])[1] or b"" for r in statuses]
        c.check(any(b"backend cudaMallocAsync" in t for t in texts), f"status texts {texts}")
        rc = h.lib.harness_snapshot(1, 0)
        c.check(rc == 1, f"snapshot on cudaMallocAsync returned {rc}")
        x = torch.empty(8 * MiB, dtype=torch.uint8, device="cuda")
        del x
        c.check(not [r for r in h.records() if ALLOC <= r[0] <= OOM], "trace records without a tracker")
        return report(c)

    c.check(attach == 0, f"attach after CUDA init returned {attach}")
    c.check(any(r[2][0] == 1 for r in statuses), "no attached status record")
    c.check(h.lib.harness_try_attach() == 0, "second attach not idempotent")

    x = torch.empty(8 * MiB, dtype=torch.uint8, device="cuda")
    x.fill_(1)
    torch.cuda.synchronize()
    recs = h.records()
    allocs = [r for r in recs if r[0] == ALLOC and r[2][0] == x.data_ptr()]
    c.check(len(allocs) == 1, f"alloc records for the 8 MiB tensor: {allocs}")
    if allocs:
        t, dev, a = allocs[0]
        c.check(a[1] == 8 * MiB and dev == 0 and a[3:] == [0, 0],
                f"alloc record fields {a} device {dev}")
        c.check(a[2] == torch.cuda.current_stream().cuda_stream, f"stream {a[2]:#x}")
    grow = SEG_MAP if args.scenario == "expandable" else SEG_ALLOC
    c.check(any(r[0] == grow for r in recs), f"no record of type {grow} for the new segment")
    ptr = x.data_ptr()
    del x
    recs = h.records()
    c.check(any(r[0] == FREE_REQ and r[2][0] == ptr for r in recs), "no free_requested")
    c.check(any(r[0] == FREE_DONE and r[2][0] == ptr for r in recs), "no free_completed")

    keep = torch.empty(3 * MiB, dtype=torch.uint8, device="cuda").fill_(2)
    snap, truth = take_snapshot(h, c, torch, 1, "eager")

    if args.scenario == "stacks" and snap is not None:
        c.check(snap["flags"] & 1, f"snapshot flags {snap['flags']}: no stacks")
        block = next((b for s in snap["segments"] for b in s["blocks"]
                      if b["address"] == keep.data_ptr() and b["allocated"]), None)
        c.check(block is not None and block["stack"] != 0, f"no stack on the live block {block}")
        if block and block["stack"]:
            kind, text = h.blob(block["stack"])
            c.check(kind == KIND_STACK and text.startswith(b"torch-stack v1\n"), f"stack blob {text[:80]}")
            c.check(os.path.basename(__file__).encode() in text,
                    f"this script is not in the stack: {text[:400]}")
        before = h.lib.harness_record_count()
        snap2, _ = take_snapshot(h, c, torch, 2, "eager again")
        blobs_of_second = [r for r in h.records(since=before) if r[0] == SNAPSHOT]
        c.check(snap2 is not None and block is not None and any(
            b["stack"] == block["stack"] for s in snap2["segments"] for b in s["blocks"]),
            "the same stack was not interned (different blob id at the second snapshot)")
        del blobs_of_second

    # The seed's quick start: a capture allocating 16 MiB lands in the graph's pool.
    static_in = torch.randn(1024, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        (static_in * 2).sum()
    torch.cuda.current_stream().wait_stream(side)
    h.records()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        big = torch.empty(16 * MiB, dtype=torch.uint8, device="cuda")
        big.fill_(3)
    pool = tuple(graph.pool())
    recs = h.records()
    graph_allocs = [r for r in recs if r[0] == ALLOC and r[2][0] == big.data_ptr()]
    c.check(len(graph_allocs) == 1 and tuple(graph_allocs[0][2][3:5]) == pool,
            f"graph alloc records {graph_allocs}, pool {pool}")
    snap, truth = take_snapshot(h, c, torch, 3, "captured")
    if snap is not None:
        reserved = sum(s["total_size"] for s in snap["segments"] if s["pool"] == pool)
        allocated = sum(s["allocated_size"] for s in snap["segments"] if s["pool"] == pool)
        c.check(allocated >= 16 * MiB and reserved >= allocated,
                f"graph pool {pool}: reserved {reserved} allocated {allocated}")

    total = torch.cuda.get_device_properties(0).total_memory
    try:
        torch.empty(2 * total, dtype=torch.uint8, device="cuda")
        c.check(False, "the oversized allocation succeeded")
    except torch.cuda.OutOfMemoryError:
        pass
    recs = h.records()
    c.check(any(r[0] == OOM and r[2][1] >= 2 * total for r in recs), "no allocator_oom record")
    observed = [r for r in recs if r[0] == OOM_OBSERVED]
    c.check(len(observed) == 1 and observed[0][2][1] >= 2 * total, f"oom observed records {observed}")
    c.check(h.lib.harness_oom_count() == 1, f"oom_observed calls {h.lib.harness_oom_count()}")
    take_snapshot(h, c, torch, 4, "after oom")
    c.check(h.lib.harness_record_drops() == 0, "the harness dropped records")
    del keep, big
    return report(c)


def report(c):
    print(json.dumps(dict(scenario=c.name, passed=c.passed, failed=len(c.failures),
                          failures=c.failures)), flush=True)
    return 0 if not c.failures else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bridge", required=True)
    parser.add_argument("--harness", required=True)
    parser.add_argument("--scenario", choices=["default", "expandable", "stacks", "async"])
    parser.add_argument("--max-blob", type=int, default=1 << 20,
                        help="blob limit given to the bridge (small values force multi-part snapshots)")
    args = parser.parse_args()
    if args.scenario:
        return scenario(args)
    settings = {"default": "", "expandable": "expandable_segments:True", "stacks": "",
                "async": "backend:cudaMallocAsync"}
    results = {}
    for name, conf in settings.items():
        env = dict(os.environ)
        if conf:
            env["PYTORCH_CUDA_ALLOC_CONF"] = conf
        cmd = [sys.executable, __file__, "--bridge", args.bridge, "--harness", args.harness,
               "--scenario", name, "--max-blob", str(4096 if name == "default" else args.max_blob)]
        print(f"== {name}", flush=True)
        results[name] = subprocess.call(cmd, env=env)
    if all(rc == 77 for rc in results.values()):
        return 77
    print("summary:", results)
    return 0 if all(rc == 0 for rc in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
