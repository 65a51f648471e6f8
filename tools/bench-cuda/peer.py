# PyTorch's side of bench-cuda on the same GPU: torch.mm(a, b.t()) in fp32
# (TF32 off, as cuBLAS's default), synchronised after each call, median of 20
# after 5 warm-ups, the same shapes.
import time
import torch

torch.backends.cuda.matmul.allow_tf32 = False
print("PyTorch", torch.__version__, "on", torch.cuda.get_device_name(0))
for m, n, k in [(64, 64, 64), (512, 512, 512), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 1024, 4096)]:
    a = torch.zeros(m, k, device="cuda")
    b = torch.zeros(n, k, device="cuda")
    times = []
    for i in range(25):
        t = time.perf_counter()
        c = torch.mm(a, b.t())
        torch.cuda.synchronize()
        if i >= 5:
            times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    print(f"{m} x {n} x {k}: {times[len(times) // 2]:.4f} ms")
