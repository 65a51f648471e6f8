# PyTorch's side of bench-cudnn on the same GPU: the same convolutions and
# pools (batch 64, fp32, TF32 off) in NCHW and channels_last (NHWC), with
# torch.backends.cudnn.benchmark off (heuristics) and on (timed choice),
# synchronised after each call, median of 20 after 5 warm-ups; the 32 -> 64
# layer also in fp16 and bf16. With --norm (bench-cudnn runs it so): only
# LAYER_NORM / RMSNORM rows as "name|ms" lines, F.layer_norm and F.rms_norm
# (a formula where this PyTorch has none) over the last axis of [8192, 1024]
# and [4096, 4096], forward and backward (dx, dweight, dbias), fp32 / fp16 /
# bf16.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench-common"))
from gpu_peer import fp32_without_tf32, median_ms  # noqa: E402

import torch
import torch.nn.functional as F

fp32_without_tf32()


def norm_rows():
    def rms_norm(x, w, eps):
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (x.shape[-1],), w, eps)
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype) * w

    for rows, cols in ((8192, 1024), (4096, 4096)):
        for dt, tn in ((torch.float32, "32F"), (torch.float16, "16F"), (torch.bfloat16, "16BF")):
            for rms in (False, True):
                x = torch.randn(rows, cols, device="cuda", dtype=dt, requires_grad=True)
                w = torch.ones(cols, device="cuda", dtype=dt, requires_grad=True)
                b = torch.zeros(cols, device="cuda", dtype=dt, requires_grad=True)
                if rms:
                    fwd = lambda: rms_norm(x, w, 1e-5)  # noqa: E731
                    params = [x, w]
                else:
                    fwd = lambda: F.layer_norm(x, (cols,), w, b, 1e-5)  # noqa: E731
                    params = [x, w, b]
                name = f"{'RMSNORM' if rms else 'LAYER_NORM'} %s {rows}x{cols} {tn}"
                with torch.no_grad():
                    print(f"{name % 'fwd'}|{median_ms(fwd):.5f}", flush=True)
                y = fwd()
                g = torch.randn_like(y)
                print(f"{name % 'bwd'}|{median_ms(lambda: torch.autograd.grad(y, params, g, retain_graph=True)):.5f}",
                      flush=True)


if "--norm" in sys.argv:
    norm_rows()
    sys.exit(0)


print(f"{'command (batch 64)':34s} {'heuristics':>12s} {'benchmark':>12s}")
for dt, dname in ((torch.float32, ""), (torch.float16, " 16F"), (torch.bfloat16, " 16BF")):
    for fmt in ("NHWC", "NCHW"):
        mf = torch.channels_last if fmt == "NHWC" else torch.contiguous_format
        for h, c, k in ((28, 1, 32), (14, 32, 64)):
            if dt != torch.float32 and c == 1:
                continue  # 16-bit rows: the 32 -> 64 layer only, as bench-cudnn
            x = torch.zeros(64, c, h, h, device="cuda", dtype=dt).to(memory_format=mf).requires_grad_(c != 1)
            w = torch.zeros(k, c, 5, 5, device="cuda", dtype=dt).to(memory_format=mf).requires_grad_()
            b = torch.zeros(k, device="cuda", dtype=dt, requires_grad=True)
            res = {}
            for bench in (False, True):
                torch.backends.cudnn.benchmark = bench
                y = F.conv2d(x, w, b, padding=2)
                g = torch.zeros_like(y)
                res.setdefault("fwd", []).append(median_ms(lambda: F.conv2d(x, w, b, padding=2)))
                res.setdefault("bwd", []).append(median_ms(lambda: torch.autograd.grad(F.conv2d(x, w, b, padding=2), [t for t in (x, w, b) if t.requires_grad], g)))
                yd = y.detach().requires_grad_()
                res.setdefault("pool", []).append(median_ms(lambda: F.max_pool2d(yd, 2)))
                p = F.max_pool2d(yd, 2)
                gp = torch.zeros_like(p)
                res.setdefault("poolb", []).append(median_ms(lambda: torch.autograd.grad(F.max_pool2d(yd, 2), [yd], gp)))
            tag = f" {c}->{k} {fmt}{dname}"
            print(f"{'conv fwd' + tag:34s} {res['fwd'][0]:12.4f} {res['fwd'][1]:12.4f}")
            print(f"{'conv bwd (fwd included)' + tag:34s} {res['bwd'][0]:12.4f} {res['bwd'][1]:12.4f}")
            print(f"{'max pool fwd ' + str(k) + ' ' + fmt + dname:34s} {res['pool'][0]:12.4f} {res['pool'][1]:12.4f}")
            print(f"{'max pool bwd (fwd incl.) ' + str(k) + ' ' + fmt + dname:34s} {res['poolb'][0]:12.4f} {res['poolb'][1]:12.4f}")
