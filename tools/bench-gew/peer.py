# PyTorch's side of bench-gew on the same GPU: the same rows (same names,
# 2^24 elements, 32F and 16F), each timed as bench-gew times its own: 20 calls
# queued, one synchronise, median of 7 such batches after a warm-up batch.
# Prints "torch <row> <ms>" per row; bench-gew runs it first and reads those
# lines (any other line it prints as it is). The optimiser rows use
# torch.optim's fused step where this PyTorch has one (fused=True), else its
# default (foreach) step; a line says which.
import os
import sys
import time

try:
    import torch
except ImportError:
    print("peer: PyTorch is not installed; no torch column")
    sys.exit(0)
if not torch.cuda.is_available():
    print("peer: PyTorch sees no GPU; no torch column")
    sys.exit(0)

N = 1 << 24
CALLS = 20


def batch_ms(f):
    for _ in range(CALLS):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(CALLS):
            f()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3 / CALLS)
    times.sort()
    return times[len(times) // 2]


def row(name, f):
    print(f"torch {name} {batch_ms(f):.4f}", flush=True)


def optimizer(cls, params, **kw):
    try:
        return cls(params, fused=True, **kw), "fused"
    except (TypeError, RuntimeError, ValueError):
        return cls(params, **kw), "default"


print("PyTorch", torch.__version__, "on", torch.cuda.get_device_name(0))
dev = "cuda"
for dt, tag in ((torch.float32, "32F"), (torch.float16, "16F")):
    a = torch.full((N,), 0.0115, device=dev, dtype=dt)
    b = torch.full((N,), 0.0115, device=dev, dtype=dt)
    y = torch.empty(N, device=dev, dtype=dt)
    row(f"ewsum-{tag}", lambda: torch.add(a, b, out=y))
    row(f"ewprod-{tag}", lambda: torch.mul(a, b, out=y))
    row(f"relu-fwd-{tag}", lambda: torch.relu(a))
    row(f"relu-bwd-{tag}", lambda: torch.ops.aten.threshold_backward(a, b, 0))
    x2 = torch.full((N // 1024, 1024), 0.0115, device=dev, dtype=dt)
    y2 = torch.empty(N // 1024, 1024, device=dev, dtype=dt)
    bias = torch.full((1024,), 0.0115, device=dev, dtype=dt)
    row(f"bias-add-{tag}", lambda: torch.add(x2, bias, out=y2))
    one = torch.full((1,), 0.0115, device=dev, dtype=dt)
    row(f"mul-1elem-{tag}", lambda: torch.mul(a, one, out=y))
    row(f"set-{tag}", lambda: y.fill_(0.5))
    p = torch.nn.Parameter(a.clone())
    p.grad = b.clone()
    sgd, how = optimizer(torch.optim.SGD, [p], lr=1e-6, momentum=0.9)
    print(f"peer: sgd-step-{tag}: torch.optim.SGD, {how} step")
    row(f"sgd-step-{tag}", sgd.step)
    q = torch.nn.Parameter(a.clone())
    q.grad = b.clone()
    adam, how = optimizer(torch.optim.Adam, [q], lr=1e-6)
    print(f"peer: adam-step-{tag}: torch.optim.Adam, {how} step")
    row(f"adam-step-{tag}", adam.step)
    del a, b, y, x2, y2, p, q, sgd, adam
    torch.cuda.empty_cache()
f32 = torch.full((N,), 0.0115, device=dev, dtype=torch.float32)
f16 = torch.empty(N, device=dev, dtype=torch.float16)
row("convert-32F-16F", lambda: f16.copy_(f32))
row("convert-16F-32F", lambda: f32.copy_(f16))
