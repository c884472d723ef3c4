"""The tensor probes' cost, timed: a GPT-2-like training step (4 layers, 512
wide, Adam capturable) as a replayed CUDA graph and eagerly. The gate runs it
without the agent, with the agent and tensor probes off, and with
TCGD_TENSOR=fingerprint (every kernel), in interleaved rounds of one call,
and reports the ratios.

TCGD_BENCH_AUTOCAST=bf16: the step's forward runs under torch.autocast with
bfloat16 (weights and optimizer stay float32), as mixed-precision jobs run;
unset, everything is float32.

TCGD_BENCH_TRACE=PATH: after the timed replays, five more run under
torch.profiler and their kernels' device timeline goes to PATH as a chrome
trace (kernel_timeline.py reads it: where a replay's time goes)."""
import json
import os
import sys
import time

import torch

replays = int(sys.argv[1]) if len(sys.argv) > 1 else 50
eager_steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
torch.manual_seed(0)
d, layers, seq, batch, vocab = 512, 4, 256, 8, 4096
layer = torch.nn.TransformerEncoderLayer(d_model=d, nhead=8, dim_feedforward=4 * d, dropout=0.0,
                                         batch_first=True, norm_first=True)
model = torch.nn.Sequential(torch.nn.Embedding(vocab, d), torch.nn.TransformerEncoder(layer, layers),
                            torch.nn.Linear(d, vocab)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-4, capturable=True)
tokens = torch.randint(0, vocab, (batch, seq), device="cuda")
targets = torch.randint(0, vocab, (batch, seq), device="cuda")
loss_fn = torch.nn.CrossEntropyLoss()
autocast = os.environ.get("TCGD_BENCH_AUTOCAST", "")
if autocast not in ("", "bf16"):
    sys.exit(f"tensor_bench.py: TCGD_BENCH_AUTOCAST={autocast!r}: expected bf16 or nothing")


def step():
    opt.zero_grad(set_to_none=True)
    # The cast cache off: casts made inside a graph capture must be replayed.
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast == "bf16", cache_enabled=False):
        loss = loss_fn(model(tokens).flatten(0, 1), targets.flatten())
    loss.backward()
    opt.step()
    return loss


side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        step()
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
with torch.cuda.graph(graph):
    static_loss = step()
for _ in range(5):
    graph.replay()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(replays):
    graph.replay()
torch.cuda.synchronize()
graph_s = (time.perf_counter() - t0) / replays
trace_path = os.environ.get("TCGD_BENCH_TRACE")
if trace_path:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            graph.replay()
        torch.cuda.synchronize()
    prof.export_chrome_trace(trace_path)

for _ in range(3 if eager_steps else 0):
    step()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(eager_steps):
    step()
torch.cuda.synchronize()
eager_s = (time.perf_counter() - t0) / max(1, eager_steps)
print("BENCH " + json.dumps({"graph_step_s": graph_s, "eager_step_s": eager_s, "replays": replays,
                             "loss": float(static_loss), "autocast": autocast or "off"}), flush=True)
