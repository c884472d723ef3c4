"""A 1-rank NCCL process group and one all_reduce."""
import os
import tempfile

import torch
import torch.distributed as dist

import gpu_common as g

torch.cuda.set_device(0)
torch.ones(1, device="cuda")
g.point("before_nccl")
store = dist.FileStore(os.path.join(tempfile.mkdtemp(), "store"), 1)
dist.init_process_group("nccl", store=store, rank=0, world_size=1)
t = torch.arange(1024, dtype=torch.float32, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
g.point("after_allreduce")
expected_ok = bool(torch.equal(t, torch.arange(1024, dtype=torch.float32, device="cuda")))
dist.destroy_process_group()
g.finish(g.digest(t), allreduce_correct=expected_ok)
