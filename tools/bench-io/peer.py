# PyTorch's side of bench-io: torch.save / torch.load of a state dict with the
# same tensors (shapes from the command line), median of the repetitions, and
# the file's size. torch.save does not fsync; the "+ fsync" row adds one so that
# it compares with a durable SQLite commit. Prints "key value" lines.
import os
import sys
import time

import torch

torch.set_num_threads(2)
path, reps = sys.argv[1], int(sys.argv[2])
shapes = [[int(d) for d in s.split("x")] for s in sys.argv[3:]]
g = torch.Generator().manual_seed(1)
state = {f"p{i}": torch.rand(s, generator=g) for i, s in enumerate(shapes)}


def median(f):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2]


def save():
    torch.save(state, path)


def save_fsync():
    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())


def load():
    return torch.load(path)


print("version", torch.__version__)
print("save_ms", median(save))
print("save_fsync_ms", median(save_fsync))
print("load_ms", median(load))
loaded = load()
assert all(torch.equal(loaded[k], v) for k, v in state.items())
print("size", os.path.getsize(path))
os.remove(path)
