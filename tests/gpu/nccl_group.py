"""A run group of the GPU gate (tests/gpu/group_stage.py): one rank of a
2-rank NCCL job started by torchrun, one GPU per rank (LOCAL_RANK). It marks
explicit points around NCCL's setup, captures a CUDA graph holding an
all_reduce and replays it, taking PyTorch's own view at every point
(gpu_common.mem_point) into its own truth file: GATE_TRUTH with "{rank}" in
it replaced by the rank.

    torchrun --nproc-per-node 2 nccl_group.py [normal|kill]

kill: right after the capture's point, rank 1 kills itself with SIGKILL
(after writing its truth); rank 0 marks one more point, writes its truth and
waits for torchrun to stop it, so rank 1's recording is a prefix of rank 0's.
"""
import os
import signal
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])
LOCAL = int(os.environ["LOCAL_RANK"])
if os.environ.get("GATE_TRUTH"):
    os.environ["GATE_TRUTH"] = os.environ["GATE_TRUTH"].replace("{rank}", str(RANK))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import gpu_common as g  # noqa: E402

ELEMENTS = 1 << 20
torch.manual_seed(0)
torch.cuda.set_device(LOCAL)
w = torch.randn(256, 256, device="cuda")
(w @ w).relu_()
g.mem_point("before_nccl")

dist.init_process_group("nccl", device_id=torch.device("cuda", LOCAL))
x = torch.full((ELEMENTS,), float(RANK + 1), device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
g.mem_point("after_allreduce")
total = float(sum(range(1, WORLD + 1)))
allreduce_ok = bool((x == total).all())

# The step to capture: a product and a collective, warmed up on the side
# stream the capture will use.
static = torch.full((ELEMENTS,), float(RANK + 1), device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        warm = static * 2
        dist.all_reduce(warm)
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    out = static * 2
    dist.all_reduce(out)
torch.cuda.synchronize()
g.mem_point("after_capture")
facts = {"rank": RANK, "world_size": WORLD, "device": LOCAL, "allreduce_correct": allreduce_ok}

if MODE == "kill":
    dist.barrier(device_ids=[LOCAL])
    torch.cuda.synchronize()
    if RANK == 1:
        g.finish(g.digest(x), killed=True, **facts)
        os.kill(os.getpid(), signal.SIGKILL)
    g.mem_point("after_peer_killed")
    g.finish(g.digest(x), killed=False, **facts)
    time.sleep(300)  # torchrun stops this rank once rank 1 has died
    sys.exit(0)

for _ in range(5):
    graph.replay()
torch.cuda.synchronize()
g.mem_point("after_replays")
replay_ok = bool((out == 2 * total).all())
dist.destroy_process_group()
g.finish(g.digest(out), replays=5, replay_correct=replay_ok, **facts)
