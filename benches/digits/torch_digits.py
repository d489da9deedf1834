#!/usr/bin/env python3
"""The `train_digits` example's network in PyTorch (eager, CPU, one thread), on the same
data and split, with its own initial values and batch order: `Conv2d(1, 16, 3, padding=1) ->
BatchNorm2d -> ReLU -> MaxPool2d(2) -> Conv2d(16, 32, 3, padding=1) -> BatchNorm2d -> ReLU ->
MaxPool2d(2) -> Flatten -> Linear(128, 10)`, cross entropy, Adam(lr=0.01), batch 64.

    ~/.cache/torch/bin/python benches/digits/torch_digits.py            # train, print accuracy
    ~/.cache/torch/bin/python benches/digits/torch_digits.py --bench 200 # time per step

The data is read from the repository's `examples/ndtensor/examples/digits/data/digits.bin`
and split as the Rust example splits it (its seeded shuffle is reproduced here with the
same generator, `autograd::types::Generator`, a SplitMix64), so both train on the same
1,438 images and test on the same 359. `--bench N` runs N warm-up steps, then N timed
steps, and prints the median, min and max microseconds per step (forward, loss, backward,
Adam step) on one line.
"""

import os
import statistics
import sys
import time

import torch

torch.set_num_threads(1)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "examples", "ndtensor", "examples", "digits", "data", "digits.bin")
BATCH, SPLIT_SEED = 64, 42
M64 = (1 << 64) - 1


class Generator:
    """`autograd::types::Generator`'s `next_u64` (SplitMix64)."""

    def __init__(self, seed):
        self.s = seed & M64

    def next_u64(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)


def load():
    raw = open(DATA, "rb").read()
    recs = [(raw[i], list(raw[i + 1:i + 65])) for i in range(0, len(raw), 65)]
    n = len(recs)
    g = Generator(SPLIT_SEED)
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = g.next_u64() % (i + 1)
        order[i], order[j] = order[j], order[i]
    test_idx, train_idx = order[: n // 5], order[n // 5:]
    px = torch.tensor([recs[i][1] for i in train_idx], dtype=torch.float64)
    mean, std = px.mean(), px.std(unbiased=False)

    def images(idx):
        x = torch.tensor([recs[i][1] for i in idx], dtype=torch.float64)
        return ((x - mean) / std).float().reshape(-1, 1, 8, 8)

    def labels(idx):
        return torch.tensor([recs[i][0] for i in idx], dtype=torch.long)

    return images(train_idx), labels(train_idx), images(test_idx), labels(test_idx)


def net():
    torch.manual_seed(1)
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(128, 10))


def step(model, opt, x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def main():
    x_train, y_train, x_test, y_test = load()
    model = net()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(3)
    if len(sys.argv) > 2 and sys.argv[1] == "--bench":
        n = int(sys.argv[2])
        idx = torch.randperm(len(y_train), generator=g)[:BATCH]
        xb, yb = x_train[idx], y_train[idx]
        for _ in range(n):
            step(model, opt, xb, yb)
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            step(model, opt, xb, yb).item()
            times.append((time.perf_counter() - t0) * 1e6)
        print(f"pytorch step_us median {statistics.median(times):.1f} min {min(times):.1f} max {max(times):.1f}")
        return
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] == "--epochs" else 15
    for epoch in range(1, epochs + 1):
        model.train()
        t0 = time.perf_counter()
        perm = torch.randperm(len(y_train), generator=g)
        for k in range(0, len(perm), BATCH):
            b = perm[k:k + BATCH]
            if len(b) > 1:
                step(model, opt, x_train[b], y_train[b])
        took = time.perf_counter() - t0
        model.eval()
        with torch.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        if epoch % 5 == 0 or epoch == 1:
            print(f"epoch {epoch:3}: test acc {100 * acc:.1f}%, {took * 1e3:.0f}ms/epoch")
    print(f"pytorch: test accuracy {100 * acc:.1f}% of {len(y_test)}")


if __name__ == "__main__":
    main()
