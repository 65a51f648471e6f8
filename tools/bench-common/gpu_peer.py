# What the GPU benchmarks' PyTorch peers share (tools/bench-cuda, bench-cudnn,
# bench-gattn peer.py, which import it by path): the timing (each call
# synchronised, median of 20 after 5 warm-ups) and, for the convolution peers,
# TF32 off with the version line.
import time


def median_ms(f):
    import torch

    times = []
    for i in range(25):
        t = time.perf_counter()
        f()
        torch.cuda.synchronize()
        if i >= 5:
            times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2]


def fp32_without_tf32():
    """TF32 off for matmuls and cuDNN; prints PyTorch's, cuDNN's and the GPU's names."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print("PyTorch", torch.__version__, "cuDNN", torch.backends.cudnn.version(), "on", torch.cuda.get_device_name(0))
