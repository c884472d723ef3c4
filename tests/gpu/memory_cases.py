"""The memory collection gate's programs, one per argv[1]. Each marks explicit
points with the tcgd Python module and, right after each, takes PyTorch's own
view (gpu_common.mem_point): the gate compares the bundle's allocator snapshot
per pool and stream, and CUDA used, with it.

    quickstart    a capture that allocates 16 MiB: +16 MiB in a graph-private pool
    expandable    the same with expandable_segments:True
    transformer   a small transformer's training step captured whole, replayed
    compile       torch.compile(mode="reduce-overhead") training-free inference
    two-streams   allocations on two streams
    dataloader    a DataLoader with fork workers feeding the GPU
    oom           an out-of-memory the job catches
    failed-capture  a capture that fails: its private pool stays reserved
    nccl          a 1-rank NCCL process group: its memory outside the allocator
"""
import inspect
import os
import sys

CASE = sys.argv[1] if len(sys.argv) > 1 else "quickstart"
if CASE == "expandable":
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"

import torch  # noqa: E402

import gpu_common as g  # noqa: E402

MiB = 1 << 20
torch.manual_seed(0)


def source_lines(fn, text=None):
    """The file lines of `fn` (first, last), or of its line holding `text`:
    where the stacks cases expect the bundle's python stacks to point."""
    lines, first = inspect.getsourcelines(fn)
    if text is None:
        return first, first + len(lines) - 1
    return next(first + i for i, line in enumerate(lines) if text in line)


def warm():
    """Context, cuBLAS and the kernels used below, before the first point."""
    w = torch.randn(256, 256, device="cuda")
    return (w @ w).relu_()


def quickstart():
    base = warm()
    g.mem_point("before_capture")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        state = torch.empty(16 * MiB, dtype=torch.uint8, device="cuda")
        state.fill_(1)
    g.mem_point("after_capture")
    for _ in range(3):
        graph.replay()
    g.mem_point("after_replays")
    return g.digest(state[:4096], base), {
        "graph_bytes": 16 * MiB,
        "graph_alloc_site": {"file": os.path.basename(__file__), "function": "quickstart",
                             "line": source_lines(quickstart, "state = torch.empty(16 * MiB")}}


def transformer():
    import tcgd
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256,
                                             dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    x = torch.randn(8, 32, 128, device="cuda")
    y = torch.randn(8, 32, 128, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    g.mem_point("after_warmup")
    graph = torch.cuda.CUDAGraph()
    with tcgd.phase("capture"):
        with torch.cuda.graph(graph):
            loss = step()
    g.mem_point("after_capture")
    losses = []
    for _ in range(10):
        graph.replay()
        losses.append(loss.clone())
    g.mem_point("after_replays")
    return g.digest(torch.stack(losses)), {
        "replays": 10,
        "step_site": {"file": os.path.basename(__file__), "function": "step",
                      "lines": source_lines(step)}}


def compiled():
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                torch.nn.Linear(512, 256)).cuda()
    x = torch.randn(64, 256, device="cuda")
    fn = torch.compile(model, mode="reduce-overhead")
    with torch.no_grad():
        fn(x)
        g.mem_point("after_first_call")
        outs = [fn(x).clone() for _ in range(8)]
    g.mem_point("after_steps")
    return g.digest(outs[-1]), {"steps": 9}


def two_streams():
    base = warm()
    s1 = torch.cuda.Stream()
    g.mem_point("before")
    a = torch.full((8 * MiB,), 1, dtype=torch.uint8, device="cuda")
    with torch.cuda.stream(s1):
        b = torch.full((24 * MiB,), 2, dtype=torch.uint8, device="cuda")
        c = torch.full((3000,), 3, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    g.mem_point("allocated", side_stream=s1.cuda_stream)
    del b
    torch.cuda.synchronize()
    g.mem_point("side_freed")
    return g.digest(a[:4096], c, base), {}


def dataloader():
    from torch.utils.data import DataLoader, TensorDataset
    base = warm()
    data = TensorDataset(torch.arange(4096 * 64, dtype=torch.float32).view(4096, 64))
    loader = DataLoader(data, batch_size=256, num_workers=2,
                        multiprocessing_context="fork", shuffle=False)
    g.mem_point("before_epoch")
    total = torch.zeros(64, device="cuda")
    for (batch,) in loader:
        total += batch.to("cuda").sum(dim=0)
    g.mem_point("after_epoch")
    return g.digest(total, base), {"batches": len(loader)}


def oom():
    base = warm()
    keep = torch.empty(64 * MiB, dtype=torch.uint8, device="cuda")
    g.mem_point("before_oom")
    caught = False
    try:
        torch.empty(1 << 45, dtype=torch.uint8, device="cuda")  # 32 TiB
    except torch.cuda.OutOfMemoryError:
        caught = True
    g.mem_point("after_oom")
    return g.digest(base), {"caught": caught, "kept": keep.numel()}


def failed_capture():
    base = warm()
    g.mem_point("before_capture")
    graph = torch.cuda.CUDAGraph()
    failed = False
    try:
        with torch.cuda.graph(graph):
            t = torch.ones(8 * MiB, device="cuda")
            float(t.sum())  # a host sync: illegal while capturing
    except Exception:
        failed = True
    del graph
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    g.mem_point("after_failed_capture")
    return g.digest(base), {"failed": failed}


def nccl():
    import tempfile
    import torch.distributed as dist
    torch.cuda.set_device(0)
    base = warm()
    g.mem_point("before_nccl")
    store = dist.FileStore(os.path.join(tempfile.mkdtemp(), "store"), 1)
    dist.init_process_group("nccl", store=store, rank=0, world_size=1)
    t = torch.arange(1024, dtype=torch.float32, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    g.mem_point("after_allreduce")
    correct = bool(torch.equal(t, torch.arange(1024, dtype=torch.float32, device="cuda")))
    dist.destroy_process_group()
    return g.digest(t, base), {"allreduce_correct": correct}


CASES = {"quickstart": quickstart, "expandable": quickstart, "transformer": transformer,
         "compile": compiled, "two-streams": two_streams, "dataloader": dataloader,
         "oom": oom, "failed-capture": failed_capture, "nccl": nccl}

if __name__ == "__main__":
    result, facts = CASES[CASE]()
    g.finish(result, case=CASE, **facts)
