"""A training step of a small transformer, eager (every step allocates and
frees through the caching allocator), timed. argv[1] says what else runs:
"plain" (nothing, or the agent when the gate preloads it) or
"torch-history" (PyTorch's own _record_memory_history with Python stacks).
The gate runs it without the agent, with the agent's default memory
collection, with TCGD_MEMORY_STACKS=python, and with torch-history, in
interleaved rounds of one call, and reports the ratios."""
import json
import sys
import time

import torch

mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024,
                                         dropout=0.0, batch_first=True)
model = torch.nn.TransformerEncoder(layer, num_layers=4).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
x = torch.randn(16, 128, 256, device="cuda")
y = torch.randn(16, 128, 256, device="cuda")


def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


if mode == "torch-history":
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python")
for _ in range(20):
    step()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    loss = step()
torch.cuda.synchronize()
elapsed = time.perf_counter() - t0
print("BENCH " + json.dumps({"step_s": elapsed / steps, "steps": steps, "mode": mode,
                             "loss": float(loss)}), flush=True)
