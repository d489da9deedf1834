"""PyTorch's side of jvp_overhead.rs: W1's chain (one-element float32 tensor, 20,000 steps of
y = tanh(y * 0.999 + 0.001), three ops a step) timed the same four ways in PyTorch eager,
interleaved in one process after two warm-ups, medians of 15 (min-max), ns per op.

Run: ~/.cache/torch/bin/python examples/ndtensor/benches/jvp_overhead.py
"""

import time

import torch
import torch.autograd.forward_ad as fwAD

STEPS = 20_000
REPS = 15


def chain(x, steps):
    y = x
    for _ in range(steps):
        y = torch.tanh(y * 0.999 + 0.001)
    return y


def run(mode, steps):
    """(value, derivative) of the chain of `steps` steps in `mode`."""
    x = torch.tensor([0.5], dtype=torch.float32, requires_grad=mode in ("reverse", "jvp+record"))
    if mode == "no_grad":
        with torch.no_grad():
            return chain(x, steps).item(), float("nan")
    if mode == "reverse":
        y = chain(x, steps)
        v = y.item()
        y.backward()
        return v, x.grad.item()
    with fwAD.dual_level():
        u = fwAD.unpack_dual(chain(fwAD.make_dual(x, torch.ones(1)), steps))
        return u.primal.item(), u.tangent.item()


def main():
    torch.set_num_threads(1)
    modes = ["no_grad", "reverse", "jvp", "jvp+record"]
    value, grad = run("reverse", 1_000)
    for m in modes:
        v, d = run(m, 1_000)
        assert v == value and (m == "no_grad" or abs(d - grad) <= 1e-5 * abs(grad)), (m, v, d)
        print(f"check {m:<10} y = {v:.7f}  dy/dx = {d:e}")
    times = {m: [] for m in modes}
    for rep in range(REPS + 2):
        for m in modes:
            t = time.perf_counter_ns()
            run(m, STEPS)
            if rep >= 2:
                times[m].append((time.perf_counter_ns() - t) / (3 * STEPS))
    print(f"torch {torch.__version__}, W1 chain, {STEPS} steps x 3 ops, f32, medians of {REPS} (min-max), ns/op:")
    base = sorted(times["no_grad"])[REPS // 2]
    for m in modes:
        t = sorted(times[m])
        print(f"  {m:<10} {t[REPS // 2]:>7.0f}  ({t[0]:.0f}-{t[-1]:.0f})  {t[REPS // 2] / base:.2f}x no_grad")


if __name__ == "__main__":
    main()
