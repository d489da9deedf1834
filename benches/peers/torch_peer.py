"""PyTorch eager as a peer of `benches/peers` (`peers --torch PYTHON`): the same workloads,
run by the `peers` binary as child processes of this script, interleaved with the others.

Each command prints what the binary's own children print for a Rust backend:

  w1-check STEPS       value and dy/dx of W1's chain of STEPS steps
  w1-child FTZ         two warm-up W1 runs, one timed: ns per op (FTZ 1: flush denormals)
  w2-check             W2's loss, its loss without autograd, the sum of the gradients
  w2-child WARM N      N timed W2 steps after WARM: a line of µs per forward+backward step,
                       a line of µs per forward step without autograd
  w3-check STEPS       the sum of W3's gradient after STEPS steps
  w3-child             one W3 run: peak KiB above the baseline, ms, the sum of the gradient

The data are the binary's (`uniform` is the same xorshift); one compute thread, or
RAYON_NUM_THREADS (which the binary sets) threads. float32 throughout.
"""

import os
import sys
import time

import torch

W1_STEPS = 20_000
W3_STEPS = 2_000
W3_LEN = 10_000
MASK = (1 << 64) - 1


def uniform(n, scale, seed):
    """`uniform` of benches/peers/src/main.rs: values in [-scale, scale) as float32."""
    s = ((seed * 0x9E3779B97F4A7C15) & MASK) | 1
    out = []
    for _ in range(n):
        s ^= (s << 13) & MASK
        s ^= s >> 7
        s ^= (s << 17) & MASK
        out.append(s >> 40)
    t = torch.tensor(out, dtype=torch.float32) / float(1 << 24) * 2.0 - 1.0
    return t * scale


def inv_sqrt(n):
    """`1.0 / (n as f32).sqrt()` in float32, as a Python float (exactly that value)."""
    return (1.0 / torch.tensor(float(n), dtype=torch.float32).sqrt()).item()


def w1(steps):
    x = torch.tensor([0.5], dtype=torch.float32, requires_grad=True)
    y = x
    for _ in range(steps):
        y = torch.tanh(y * 0.999 + 0.001)
    value = y.item()
    y.backward()
    del y
    return value, x.grad.item()


class W2:
    def __init__(self):
        batch, inp, hidden, out = 64, 784, 128, 10
        self.x = uniform(batch * inp, 1.0, 1).view(batch, inp)
        self.params = [
            uniform(inp * hidden, inv_sqrt(inp), 2).view(inp, hidden).requires_grad_(),
            uniform(hidden, inv_sqrt(inp), 3).requires_grad_(),
            uniform(hidden * out, inv_sqrt(hidden), 4).view(hidden, out).requires_grad_(),
            uniform(out, inv_sqrt(hidden), 5).requires_grad_(),
        ]
        self.target = uniform(batch * out, 1.0, 6).view(batch, out)

    def forward(self):
        w1, b1, w2, b2 = self.params
        h = torch.relu(self.x @ w1 + b1)
        d = h @ w2 + b2 - self.target
        return (d * d).mean()

    def step(self, grad):
        if not grad:
            with torch.no_grad():
                return self.forward().item(), 0.0
        loss = self.forward()
        loss.backward()
        grad_sum = 0.0
        for p in self.params:
            grad_sum += p.grad.double().sum().item()
            p.grad = None
        return loss.item(), grad_sum


def w3_init():
    return torch.arange(W3_LEN, dtype=torch.float32) / float(W3_LEN)


def w3(init, steps):
    x = init.clone().requires_grad_()
    y = x
    for _ in range(steps):
        y = torch.exp(y * 0.5 - 1.0)
    s = y.sum()
    s.backward()
    del s, y
    return x.grad.sum().item()


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def w1_child(ftz):
    torch.set_flush_denormal(ftz)
    for _ in range(2):
        w1(W1_STEPS)
    t = time.perf_counter_ns()
    w1(W1_STEPS)
    print((time.perf_counter_ns() - t) / (W1_STEPS * 3))


def w2_child(warm, n):
    m = W2()
    a, f = [], []
    for r in range(warm + n):
        t = time.perf_counter_ns()
        m.step(True)
        x = time.perf_counter_ns() - t
        t = time.perf_counter_ns()
        m.step(False)
        y = time.perf_counter_ns() - t
        if r >= warm:
            a.append(x / 1e3)
            f.append(y / 1e3)
    print(" ".join(map(str, a)))
    print(" ".join(map(str, f)))


def w3_child():
    init = w3_init()
    w3(init[:16], 2)  # the allocator's and torch's first-use state, before the baseline
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # VmHWM back to VmRSS
    except OSError:
        pass
    base = status_kib("VmRSS:")
    t = time.perf_counter()
    g = w3(init, W3_STEPS)
    ms = (time.perf_counter() - t) * 1e3
    print(f"{max(status_kib('VmHWM:') - base, 0)} {ms:.1f} {g}")


def main(args):
    torch.set_num_threads(int(os.environ.get("RAYON_NUM_THREADS", "1")))
    cmd = args[0]
    if cmd == "w1-check":
        print(*w1(int(args[1])))
    elif cmd == "w1-child":
        w1_child(args[1] == "1")
    elif cmd == "w2-check":
        m = W2()
        loss, grad_sum = m.step(True)
        print(loss, m.step(False)[0], grad_sum)
    elif cmd == "w2-child":
        w2_child(int(args[1]), int(args[2]))
    elif cmd == "w3-check":
        print(w3(w3_init(), int(args[1])))
    elif cmd == "w3-child":
        w3_child()
    else:
        sys.exit(f"torch_peer.py: unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv[1:])
