"""The demo job of scripts/demo.sh: a small CUDA-graph program, unmodified.

It warms up, captures a graph that allocates 16 MiB in its private pool,
replays it 20 times and checks the result against eager execution. Nothing
here knows about tcgd; the points come from the agent's automatic rules
(capture begin/end) and, when the agent is loaded, two explicit points marked
through the C API with ctypes."""
import ctypes

import torch

point = getattr(ctypes.CDLL(None), "tcgd_point", None)


def mark(name):
    if point is not None:
        point(name.encode())


torch.manual_seed(0)
x = torch.randn(1024, 1024, device="cuda")
w = torch.randn(1024, 1024, device="cuda")
eager = torch.relu(x @ w).sum()

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    torch.relu(x @ w).sum()
torch.cuda.current_stream().wait_stream(s)
mark("before-capture")

graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    state = torch.empty(16 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    state.fill_(1)
    out = torch.relu(x @ w).sum()
mark("after-capture")

for _ in range(20):
    graph.replay()
torch.cuda.synchronize()
print(f"graph result {out.item():.6e}, eager {eager.item():.6e}, "
      f"equal={bool(torch.equal(out, eager))}")
