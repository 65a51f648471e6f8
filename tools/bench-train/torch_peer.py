#!/usr/bin/python3
"""The PyTorch side of bench-train: the reference network of
shared/reference-net.md trained with the same data order, initial weights,
batch size and thread count as nnc-demo, reporting the same figures as
`bench:` lines (epoch seconds, test accuracy, inference timings, peak RSS).

Usage: torch_peer.py EPOCHS THREADS DATA_DIR
"""
import gzip
import math
import resource
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MASK = (1 << 64) - 1


class SplitMix:
    def __init__(self, seed):
        self.state = seed

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform01(self):
        return (self.next() >> 40) * (2.0 ** -24)


def read_idx(path, magic):
    with gzip.open(path, "rb") as f:
        data = f.read()
    m, n = struct.unpack(">II", data[:8])
    assert m == magic, path
    header = 16 if magic == 0x803 else 8
    return np.frombuffer(data[header:], dtype=np.uint8), n


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(3136, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


def main():
    epochs, threads, data = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    torch.set_num_threads(threads)
    images, n_train = read_idx(data + "/train-images-idx3-ubyte.gz", 0x803)
    labels, _ = read_idx(data + "/train-labels-idx1-ubyte.gz", 0x801)
    test_images, n_test = read_idx(data + "/t10k-images-idx3-ubyte.gz", 0x803)
    test_labels, _ = read_idx(data + "/t10k-labels-idx1-ubyte.gz", 0x801)
    norm = lambda a, n: torch.from_numpy(((a.astype(np.float32) / 255.0 - 0.2860) / 0.3530).reshape(n, 1, 28, 28))
    train_x, test_x = norm(images, n_train), norm(test_images, n_test)
    train_y, test_y = torch.from_numpy(labels.astype(np.int64)), torch.from_numpy(test_labels.astype(np.int64))
    net = Net()
    rng = SplitMix(42)
    with torch.no_grad():
        for name, fan_in in (("conv1", 25), ("conv2", 800), ("fc1", 3136), ("fc2", 256)):
            layer = getattr(net, name)
            for p in (layer.weight, layer.bias):
                n = p.numel()
                v = np.array([rng.uniform01() for _ in range(n)], dtype=np.float64)
                p.copy_(torch.from_numpy(((2 * v - 1) / math.sqrt(fan_in)).astype(np.float32)).reshape(p.shape))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def accuracy():
        net.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, n_test, 100):
                correct += (net(test_x[i:i + 100]).argmax(1) == test_y[i:i + 100]).sum().item()
        net.train()
        return correct / n_test

    order_rng = SplitMix(1234)
    for epoch in range(1, epochs + 1):
        p = list(range(n_train))
        for i in range(n_train - 1, 0, -1):
            j = order_rng.next() % (i + 1)
            p[i], p[j] = p[j], p[i]
        index = torch.tensor(p)
        start = time.perf_counter()
        total, seen = 0.0, 0
        for s in range(0, n_train, 64):
            b = index[s:s + 64]
            x, y = train_x[b], train_y[b]
            opt.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            total += loss.item() * len(b)
            seen += len(b)
        seconds = time.perf_counter() - start
        acc = accuracy()
        print(f"bench: epoch {epoch} seconds {seconds:.3f} loss {total / seen:.4f} accuracy {acc:.4f}", flush=True)
    net.eval()
    with torch.no_grad():
        one = test_x[:1]
        for _ in range(20):
            net(one)
        reps = 200
        t = time.perf_counter()
        for _ in range(reps):
            net(one)
        print(f"bench: infer1_us {(time.perf_counter() - t) / reps * 1e6:.1f}")
        big = test_x[:256]
        net(big)
        reps = 10
        t = time.perf_counter()
        for _ in range(reps):
            net(big)
        print(f"bench: infer256_images_per_s {256 * reps / (time.perf_counter() - t):.0f}")
    print(f"bench: peak_rss_mb {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")


if __name__ == "__main__":
    main()
