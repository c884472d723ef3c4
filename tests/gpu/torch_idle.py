"""A process that loads torch and asks about CUDA but never allocates:
torch's CUDA allocator is never initialized (torchrun's launcher, a script
that only checks torch.cuda.is_available()). The agent's torch helper keeps
polling for the allocator while the job exits; the job must exit as it
would without the agent (once it did not: "pure virtual method called",
SIGABRT at exit). It exits within the helper's polling time on purpose."""
import time

import torch

import gpu_common as g

available = torch.cuda.is_available()
count = torch.cuda.device_count()
time.sleep(0.3)
g.finish(f"{available}-{count}")
