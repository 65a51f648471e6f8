# PyTorch's side of bench-gpu-train: the reference network (conv 5x5 32 pad 2,
# ReLU, max pool 2; conv 5x5 64 pad 2, ReLU, max pool 2; dense 256, ReLU;
# dense 10), softmax cross-entropy, SGD lr 0.01 momentum 0.9, fp32 with TF32
# off, channels-last like NNC's NHWC. Prints one line per batch size:
#   torch BATCH MS_PER_STEP
# (median of 5 rounds of `steps` steps after a warm-up, synchronised).
import sys
import time
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
dev = torch.device("cuda")
print("# PyTorch", torch.__version__, "on", torch.cuda.get_device_name(0), flush=True)
for batch in [int(b) for b in (sys.argv[2:] or ["64", "256"])]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 7 * 7, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10),
    ).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, 1, 28, 28, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        rounds.append((time.perf_counter() - t) * 1e3 / steps)
    rounds.sort()
    print("torch", batch, f"{rounds[2]:.4f}", flush=True)
