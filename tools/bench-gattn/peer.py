# PyTorch's side of bench-gattn on the same GPU: scaled_dot_product_attention
# on [B, S, H, D] tensors (viewed as torch's [B, H, S, D]) at B 8, H 8, S 512,
# D 64 and D 128 and at B 2, H 8, S 2048, D 64 (scale 1 / sqrt(D)), fp32 (TF32 off) and fp16, causal and not, forward, and backward
# (torch.autograd.grad, which also runs the forward: "fwd incl."); and the
# U-Net's 2x2 / stride-2 conv_transpose2d at batch 16, channels_last (NHWC)
# and NCHW, fp32, cudnn.benchmark off (heuristics). Synchronised after each
# call, median of 20 after 5 warm-ups, as bench-gattn.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench-common"))
from gpu_peer import fp32_without_tf32, median_ms  # noqa: E402

import torch
import torch.nn.functional as F

fp32_without_tf32()
torch.backends.cudnn.benchmark = False


print(f"{'command':44s} {'ms':>12s}")
for B, H, S, D in ((8, 8, 512, 64), (8, 8, 512, 128), (2, 8, 2048, 64)):
    sc = 1.0 / D ** 0.5
    shape = f"B{B} H{H} S{S} D{D} "
    for dt, tag in ((torch.float32, "32F"), (torch.float16, "16F")):
        for causal in (False, True):
            q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=dt).transpose(1, 2).requires_grad_()
                       for _ in range(3))
            c = " causal" if causal else ""
            with torch.no_grad():
                fwd = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sc))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sc)
            g = torch.randn_like(o)
            bwd = median_ms(lambda: torch.autograd.grad(
                F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sc), (q, k, v), g))
            print(f"{'attn fwd ' + shape + tag + c:44s} {fwd:12.4f}")
            print(f"{'attn bwd (fwd incl.) ' + shape + tag + c:44s} {bwd:12.4f}")
# Decoding: one query row over 4096 keys, 32 heads (MHA; bench-gattn's GQA
# row has no peer line here), fp16, forward.
q = torch.randn(1, 32, 1, 128, device="cuda", dtype=torch.float16)
k, v = (torch.randn(1, 32, 4096, 128, device="cuda", dtype=torch.float16) for _ in range(2))
with torch.no_grad():
    dec = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, scale=1.0 / 128 ** 0.5))
print(f"{'attn fwd decode B1 H32/32 Sq1 Sk4096 D128 16F':44s} {dec:12.4f}")
N = 16
for fmt in ("NHWC", "NCHW"):
    mf = torch.channels_last if fmt == "NHWC" else torch.contiguous_format
    for h, c, k in ((16, 512, 256), (32, 256, 128), (64, 128, 64)):
        x = torch.randn(N, c, h, h, device="cuda").to(memory_format=mf).requires_grad_()
        w = torch.randn(c, k, 2, 2, device="cuda").to(memory_format=mf).requires_grad_()
        b = torch.randn(k, device="cuda", requires_grad=True)
        with torch.no_grad():
            fwd = median_ms(lambda: F.conv_transpose2d(x, w, b, stride=2))
        y = F.conv_transpose2d(x, w, b, stride=2)
        g = torch.randn_like(y)
        bwd = median_ms(lambda: torch.autograd.grad(F.conv_transpose2d(x, w, b, stride=2), (x, w, b), g))
        tag = f" N16 {h}x{h} {c}->{k} {fmt}"
        print(f"{'convT 2x2/2 fwd' + tag:44s} {fwd:12.4f}")
        print(f"{'convT 2x2/2 bwd (fwd incl.)' + tag:44s} {bwd:12.4f}")
