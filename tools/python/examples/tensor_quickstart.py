"""tcgd's tensor quick start: two named tensors inside a captured dataflow.

    TCGD_TENSOR='print:probes=only' tcgd run -o out/ -- python tensor_quickstart.py

prints, from tcgd-recorder, one line per probe and replay with its values:

    tcgd print: after_scale #0 graph 0 replay 1 float32 [8]: min 0 max 14 ... values [0, 2, 4, 6, 8, 10, 12, 14]
    tcgd print: after_relu #0 graph 0 replay 1 float32 [8]: min 0 max 9 ... values [0, 0, 0, 1, 3, 5, 7, 9]

and `tcgd-analyze tensor values out/*.tcgd-tensor --name after_relu` shows them
again from the bundle. tcgd.probe returns the tensor it is given, so it sits
inside the dataflow; without the agent it does nothing.
"""
import torch

import tcgd

static_x = torch.arange(8, device="cuda", dtype=torch.float32)

graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    first_hidden = tcgd.probe(static_x * 2, "after_scale")
    second_hidden = tcgd.probe(torch.relu(first_hidden - 5), "after_relu")
    output = second_hidden.square()

graph.replay()
graph.replay()
torch.cuda.synchronize()
print("output", output.tolist())
