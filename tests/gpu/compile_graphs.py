"""torch.compile(mode="reduce-overhead"): Inductor's CUDA graphs (cudagraph trees)."""
import torch

import gpu_common as g

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256)).cuda()
x = torch.randn(64, 256, device="cuda")
compiled = torch.compile(model, mode="reduce-overhead")
outs = []
with torch.no_grad():
    for _ in range(12):
        outs.append(compiled(x).clone())
g.point("after_steps")
# Inductor's kernels may legally differ from eager in the last bits; the
# gate compares this digest between runs with and without the agent only.
g.finish(g.digest(outs[-1]), steps=12)
