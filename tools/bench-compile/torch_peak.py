#!/usr/bin/python3
"""Peak bytes PyTorch allocates for one training step of the zoo's graphs.

    /usr/bin/python3 tools/bench-compile/torch_peak.py [MODEL...]

The peer column of bench-compile's training rows (issue 14): the same
networks (torchvision's resnet50, mobilenet_v2, densenet121, inception_v3
and a 2-layer LSTM of hidden 512 over 32 steps), fp32 on the CPU, batch 1
and 32; one step = forward, the loss (cross-entropy; the LSTM: the mean of
its outputs) and torch.autograd's backward with parameter gradients. The
peak is read from the profiler's memory events (every allocation and free
of the CPU allocator in time order, each op's own at its start), so it
counts the bytes live at once while the step runs: activations, gradients,
workspaces (an op's transient freed before it returns is not seen: a lower
estimate of PyTorch's peak); the parameters and
the input, which exist before the step starts, are added back, as NNC's
arena holds them too (bench-compile's "arena" column includes them).
Prints a table in MB (1e6 bytes).
"""
import sys

import torch
import torchvision

torch.set_num_threads(2)


class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(512, 512, num_layers=2)

    def forward(self, x):
        return self.lstm(x)[0]


def make(name):
    if name == "resnet50":
        return torchvision.models.resnet50(), (3, 224, 224)
    if name == "mobilenet_v2":
        return torchvision.models.mobilenet_v2(), (3, 224, 224)
    if name == "densenet121":
        return torchvision.models.densenet121(), (3, 224, 224)
    if name == "inception_v3":
        return torchvision.models.inception_v3(aux_logits=False, init_weights=False), (3, 299, 299)
    if name == "lstm2x512":
        return Lstm(), None
    raise SystemExit("unknown model " + name)


def step_peak(model, shape, batch):
    model.train()
    if shape is None:
        x = torch.randn(32, batch, 512)
    else:
        x = torch.randn(batch, *shape)
    labels = torch.randint(0, 1000, (batch,))
    const_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    const_bytes += sum(b.numel() * b.element_size() for b in model.buffers())
    const_bytes += x.numel() * x.element_size()
    for p in model.parameters():
        p.grad = None
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        y = model(x)
        if shape is None:
            loss = y.mean()
        else:
            loss = torch.nn.functional.cross_entropy(y, labels)
        loss.backward()
        del y, loss
    # Each op's own net allocation (its children's counted in theirs) at its
    # start, and the allocations and frees outside any op ("[memory]"): a
    # timeline of the bytes live. An op's transient inside itself (allocated
    # and freed before it returns) is not seen, so this is a lower estimate.
    events = [(e.time_range.start, e.self_cpu_memory_usage) for e in prof.events() if e.self_cpu_memory_usage]
    events.sort(key=lambda t: t[0])
    live = peak = 0
    for _, b in events:
        live += b
        peak = max(peak, live)
    return peak + const_bytes, const_bytes


def main():
    names = sys.argv[1:] or ["resnet50", "mobilenet_v2", "densenet121", "inception_v3", "lstm2x512"]
    print("PyTorch %s (torchvision %s), %d threads: one training step, peak bytes allocated" %
          (torch.__version__, torchvision.__version__, torch.get_num_threads()))
    print("%-16s %5s %12s %12s" % ("graph", "batch", "peak MB", "of it const"))
    for name in names:
        for batch in (1, 32):
            torch.manual_seed(0)
            model, shape = make(name)
            peak, const = step_peak(model, shape, batch)
            print("%-16s %5d %12.1f %12.1f" % (name + "+bwd", batch, peak / 1e6, const / 1e6), flush=True)


if __name__ == "__main__":
    main()
