#!/usr/bin/python3
"""PyTorch eager's peak tensor memory over one training step of an MLP.

    torch_mlp_peak.py LAYERS WIDTH BATCH

The same step bench-dynamic runs on the dynamic graph: LAYERS x (linear,
relu), loss = sum((h - target)^2), backward, SGD with momentum 0.9, grads
set to None after the step (PyTorch's step holds no gradient between steps,
as ccv_nnc_dynamic_graph_minimize holds none). One step runs first (it makes
the momentum buffers); the next is measured.

Measured with torch.profiler (profile_memory=True): every CPU allocation and
free of tensor storage is a "[memory]" event with its byte count; the peak is
the largest running sum over the step, in event order. Prints one line:
    held BYTES peak_extra BYTES
held: parameters and momentum buffers before the step; peak_extra: the most
the step allocated above that.
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

layers, width, batch = (int(a) for a in sys.argv[1:4])
torch.set_num_threads(2)
torch.manual_seed(42)
bound = 1.0 / width ** 0.5
ws = [torch.empty(width, width).uniform_(-bound, bound).requires_grad_() for _ in range(layers)]
bs = [torch.empty(width).uniform_(-bound, bound).requires_grad_() for _ in range(layers)]
x = torch.empty(batch, width).uniform_(-1, 1)
target = torch.empty(batch, width).uniform_(-1, 1)
opt = torch.optim.SGD(ws + bs, lr=0.01, momentum=0.9)


def step():
    h = x
    for w, b in zip(ws, bs):
        h = torch.nn.functional.linear(h, w, b).relu()
    loss = ((h - target) ** 2).sum()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.item()


step()
held = sum(t.numel() * t.element_size() for t in ws + bs)
held += sum(s["momentum_buffer"].numel() * s["momentum_buffer"].element_size() for s in opt.state.values())
with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
    step()
events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
running = peak = 0
for e in sorted(events, key=lambda e: e.start_us()):
    running += e.nbytes()
    peak = max(peak, running)
print("held %d peak_extra %d" % (held, peak))
