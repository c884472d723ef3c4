"""Launch-bound loops, timed: 100k small kernel launches and 10k graph
replays. The gate runs this with and without the agent in one call and
reports the ratios."""
import json
import sys
import time

import torch

import gpu_common as g

launches = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
replays = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
x = torch.zeros(16, device="cuda")
for _ in range(1000):
    x.add_(1)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(launches):
    x.add_(1)
torch.cuda.synchronize()
t_launch = time.perf_counter() - t0

graph = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    x.add_(1)
torch.cuda.synchronize()
with torch.cuda.graph(graph):
    for _ in range(10):
        x.add_(1)
for _ in range(100):
    graph.replay()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(replays):
    graph.replay()
torch.cuda.synchronize()
t_replay = time.perf_counter() - t0
print("BENCH " + json.dumps({"launch_s": t_launch, "replay_s": t_replay,
                             "launches": launches, "replays": replays}), flush=True)
g.finish(g.digest(x))
