"""Allocations of known sizes with the allocator setting chosen by argv[1]:
default, expandable (expandable_segments:True) or async
(backend:cudaMallocAsync). The gate compares the driver allocation bytes in
the bundle with what PyTorch and cuMemGetInfo report at each point."""
import os
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "default"
setting = {"default": "", "expandable": "expandable_segments:True",
           "async": "backend:cudaMallocAsync"}[mode]
if setting:
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = setting

import torch  # noqa: E402

import gpu_common as g  # noqa: E402

torch.manual_seed(0)
# Warm up the context, cuBLAS and the kernels used below, so that the points
# measure the allocations alone.
w = torch.randn(256, 256, device="cuda")
(w @ w).relu_()
g.point("start")

sizes = [1 << 20, 7 << 20, 64 << 20, 300 << 20] + [2048] * 10
tensors = [torch.empty(n, dtype=torch.uint8, device="cuda").fill_(i % 251)
           for i, n in enumerate(sizes)]
g.point("allocated", requested_bytes=sum(sizes), tensors=len(sizes))

del tensors[2:4]
torch.cuda.empty_cache()
g.point("after_empty_cache")

out = (w @ w).relu_().sum(dim=0)
g.finish(g.digest(out, *tensors), mode=mode)
