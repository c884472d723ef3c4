"""A captured CUDA graph replayed 50 times."""
import torch

import gpu_common as g

torch.manual_seed(0)
static_x = torch.randn(512, 512, device="cuda")
weight = torch.randn(512, 512, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):  # warm-up outside the capture, as PyTorch advises
        y = torch.relu(static_x @ weight) * 0.5
torch.cuda.current_stream().wait_stream(s)
g.point("before_capture")

graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_y = torch.relu(static_x @ weight) * 0.5
g.point("after_capture")

acc = torch.zeros_like(static_y)
for i in range(50):
    static_x.mul_(0.999)
    graph.replay()
    acc.add_(static_y)
g.point("after_replays")
g.finish(g.digest(acc), replays=50, captures=1)
