"""Shared helpers of the GPU gate programs.

Every program computes something deterministic, prints one line
"RESULT <hex digest>" (compared between runs with and without the agent)
and, when GATE_TRUTH names a file, writes there the ground truth it took from
PyTorch in the same run, keyed by the tcgd point it marked just before.
"""
import ctypes
import hashlib
import json
import os

import torch

_lib = ctypes.CDLL(None)
_point = getattr(_lib, "tcgd_point", None)
if _point is not None:
    _point.argtypes = [ctypes.c_char_p]
    _point.restype = ctypes.c_int

truth = {"points": {}}


def under_agent():
    return _point is not None


def point(name, **facts):
    """Marks a tcgd point (when the agent is loaded) and stores ground truth."""
    torch.cuda.synchronize()
    if _point is not None:
        rc = _point(name.encode())
        facts["tcgd_rc"] = rc
    free, total = torch.cuda.mem_get_info()
    facts.update(
        mem_get_info_free=free,
        mem_get_info_total=total,
        reserved=torch.cuda.memory_reserved(),
        allocated=torch.cuda.memory_allocated(),
    )
    truth["points"][name] = facts


def digest(*tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().reshape(-1).to("cpu").contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:32]


def finish(result_digest, **facts):
    truth.update(facts)
    truth["result"] = result_digest
    print(f"RESULT {result_digest}", flush=True)
    path = os.environ.get("GATE_TRUTH")
    if path:
        with open(path, "w") as f:
            json.dump(truth, f, indent=1)


def pool_figures():
    """Per device, pool and stream figures from torch.cuda.memory._snapshot(),
    the ground truth that the bundle's snapshot at a point must equal."""
    devices = {}
    for seg in torch.cuda.memory._snapshot()["segments"]:
        pool = "{},{}".format(*seg.get("segment_pool_id", (0, 0)))
        dev = devices.setdefault(str(seg["device"]), {})
        entry = dev.setdefault(pool, {"reserved": 0, "allocated": 0, "active": 0, "requested": 0,
                                      "segments": 0, "streams": {}})
        stream = entry["streams"].setdefault(str(seg["stream"]), {
            "reserved": 0, "allocated": 0, "active": 0, "requested": 0, "segments": 0})
        for target in (entry, stream):
            target["reserved"] += seg["total_size"]
            target["allocated"] += seg["allocated_size"]
            target["active"] += seg["active_size"]
            target["requested"] += seg["requested_size"]
            target["segments"] += 1
    return devices


def mem_point(name, **facts):
    """An explicit point through the tcgd Python module, then, with no
    allocation in between, PyTorch's own view: the snapshot per pool and
    stream, and cuMemGetInfo through torch."""
    import tcgd
    torch.cuda.synchronize()
    facts["tcgd_ok"] = tcgd.point(name)
    pools = pool_figures()
    free, total = torch.cuda.mem_get_info()
    facts.update(pools=pools, mem_get_info_free=free, mem_get_info_total=total,
                 reserved=torch.cuda.memory_reserved(), allocated=torch.cuda.memory_allocated())
    truth["points"][name] = facts
