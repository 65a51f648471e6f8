# PyTorch's side of bench-cuda on the same GPU: the same rows (same names,
# shapes and types; TF32 only where the row allows it), each call synchronised,
# median of 20 after 5 warm-ups. Prints "torch <row> <ms>" per row; bench-cuda
# runs it first and reads those lines.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench-common"))
from gpu_peer import median_ms  # noqa: E402

try:
    import torch
except ImportError:
    print("peer: PyTorch is not installed; no torch column")
    sys.exit(0)
if not torch.cuda.is_available():
    print("peer: PyTorch sees no GPU; no torch column")
    sys.exit(0)


def row(name, f):
    print(f"torch {name} {median_ms(f):.4f}", flush=True)


print("PyTorch", torch.__version__, "on", torch.cuda.get_device_name(0))
dev = "cuda"
for label, dtype, tf32 in [("fp32", torch.float32, False), ("fp32-tf32", torch.float32, True),
                           ("fp16", torch.float16, False), ("bf16", torch.bfloat16, False)]:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    # fp32 accumulation for fp16 / bf16, as NNC's default
    for flag in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        try:  # the bf16 one is newer than PyTorch 1.13
            setattr(torch.backends.cuda.matmul, flag, False)
        except (AssertionError, AttributeError):
            pass
    a = torch.zeros(4096, 4096, device=dev, dtype=dtype)
    b = torch.zeros(4096, 4096, device=dev, dtype=dtype)
    row(f"square4096-{label}", lambda: torch.mm(a, b))
torch.backends.cuda.matmul.allow_tf32 = False

q = torch.zeros(8, 16, 512, 64, device=dev, dtype=torch.float16)
k = torch.zeros(8, 16, 512, 64, device=dev, dtype=torch.float16)
v = torch.zeros(8, 16, 512, 64, device=dev, dtype=torch.float16)
s = torch.zeros(8, 16, 512, 512, device=dev, dtype=torch.float16)
row("attn-QKt-fp16", lambda: torch.matmul(q, k.transpose(-1, -2)))
row("attn-PV-fp16", lambda: torch.matmul(s, v))

for fin, fout in [(3136, 256), (256, 10)]:
    x = torch.zeros(64, fin, device=dev)
    w = torch.zeros(fout, fin, device=dev)
    bias = torch.zeros(fout, device=dev)
    row(f"dense{fin}-{fout}-fwd", lambda: torch.nn.functional.linear(x, w, bias))
    if fin == 3136:
        g = torch.zeros(64, fout, device=dev)

        def backward():
            torch.mm(g, w)         # dx
            torch.mm(g.t(), x)     # dW
            g.sum(0)               # dbias
        row(f"dense{fin}-{fout}-bwd", backward)
