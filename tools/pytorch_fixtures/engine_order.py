#!/usr/bin/env python3
"""Records the order in which PyTorch's engine runs a backward pass, for the runtime's
`tests/engine_order.rs`: random programs over one-dimensional float64 leaves (`mul`, `add`,
`mul` by a scalar, `exp`, `tanh`, `sum`), parts of them recorded on other threads, every
node with a pre-hook and, in half the programs, every leaf with a tensor hook, each of which
appends its value's number to a log. Writes `autograd-runtime/tests/fixtures/engine_order.txt`, one program a line.

    ~/.cache/torch/bin/python tools/pytorch_fixtures/engine_order.py

Each program is recorded on one new thread (`cuts` null) or as segments, each on a thread
of its own, the roots' sums on one more (a fresh thread numbers its nodes from 0, in
PyTorch as in the runtime), and its pass runs on the main thread:
`backward` (one root: the total of the roots' sums), `backward_roots` (several roots at once),
`grad` (some leaves and intermediates as inputs) or `backward_inputs`. The log is what the
hooks saw, in order: `n<k>` for the node of value `k`, `l<k>` for leaf `k`.
"""

import os
import random
import sys
import threading

import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "autograd-runtime", "tests",
                   "fixtures", "engine_order.txt")
UNARY = ["exp", "tanh", "mul_scalar"]
BINARY = ["mul", "add"]


def make_program(rng):
    n_leaves = rng.randint(1, 3)
    n_ops = rng.randint(2, 9)
    ops = []
    for k in range(n_ops):
        n = n_leaves + k
        kind = rng.choice(UNARY + BINARY)
        if kind in BINARY:
            ops.append([kind, rng.randrange(n), rng.randrange(n)])
        elif kind == "mul_scalar":
            ops.append([kind, rng.randrange(n), round(rng.uniform(-1.5, 1.5), 3)])
        else:
            ops.append([kind, rng.randrange(n)])
    # Segments: cut points in the op list, each part recorded on a new thread.
    # `None`: one thread records the whole program.
    cuts = None
    if rng.random() < 0.5:
        cuts = sorted(rng.sample(range(1, n_ops), k=min(rng.randint(0, 2), n_ops - 1)))
    n_values = n_leaves + n_ops
    n_roots = rng.randint(1, min(3, n_ops))
    roots = sorted(rng.sample(range(n_leaves, n_values), k=n_roots))
    pass_kind = rng.choice(["backward", "backward_roots", "grad", "backward_inputs"])
    inputs = []
    if pass_kind in ("grad", "backward_inputs"):
        candidates = list(range(n_values))
        inputs = sorted(rng.sample(candidates, k=rng.randint(1, min(3, n_values))))
    return {
        "leaves": n_leaves,
        "ops": ops,
        "cuts": cuts,
        "roots": roots,
        "pass": pass_kind,
        "inputs": inputs,
        "leaf_hooks": rng.random() < 0.5,
    }


def apply(op, values):
    kind = op[0]
    if kind == "mul":
        return values[op[1]] * values[op[2]]
    if kind == "add":
        return values[op[1]] + values[op[2]]
    if kind == "mul_scalar":
        return values[op[1]] * op[2]
    if kind == "exp":
        return values[op[1]].exp()
    if kind == "tanh":
        return values[op[1]].tanh()
    if kind == "sum":
        return values[op[1]].sum()
    raise ValueError(kind)


def run_on_thread(f):
    box = {}

    def body():
        try:
            box["value"] = f()
        except Exception as e:  # re-raised on the caller's thread
            box["error"] = e

    t = threading.Thread(target=body)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def add_all(sums):
    total = sums[0]
    for s in sums[1:]:
        total = total + s
    return total


def run(p):
    log = []
    gen = torch.Generator().manual_seed(0)
    leaves = [torch.rand(2, generator=gen, dtype=torch.float64).requires_grad_()
              for _ in range(p["leaves"])]
    values = list(leaves)
    if p["leaf_hooks"]:
        for k, leaf in enumerate(leaves):
            leaf.register_hook(lambda g, k=k: log.append(f"l{k}"))

    bounds = [0] + (p["cuts"] or []) + [len(p["ops"])]

    def segment(lo, hi):
        def go():
            for op in p["ops"][lo:hi]:
                values.append(apply(op, values))
        return go

    def roots():
        sums = [values[r].sum() for r in p["roots"]]
        return sums, (add_all(sums) if p["pass"] == "backward" else None)

    if p["cuts"] is None:
        # One thread records everything.
        sums, total = run_on_thread(lambda: (segment(0, len(p["ops"]))(), roots())[1])
    else:
        for lo, hi in zip(bounds, bounds[1:]):
            run_on_thread(segment(lo, hi))
        # The roots' sums (and, for `backward`, their total), on a thread of their own too.
        sums, total = run_on_thread(roots)
    for k, v in enumerate(values):
        if v.grad_fn is not None:
            v.grad_fn.register_prehook(lambda g, k=k: log.append(f"n{k}"))
    for j, s in enumerate(sums):
        s.grad_fn.register_prehook(lambda g, j=j: log.append(f"s{j}"))
    if p["pass"] == "backward":
        total.backward()
    elif p["pass"] == "backward_roots":
        torch.autograd.backward(sums)
    elif p["pass"] == "grad":
        torch.autograd.grad(sums, [values[i] for i in p["inputs"]], allow_unused=True)
    else:
        torch.autograd.backward(sums, inputs=[values[i] for i in p["inputs"]])
    return log


def line(p):
    """One program as `key=value` fields: lists comma-separated, an op's parts
    colon-separated, `-` for none."""
    def nums(xs):
        return ",".join(str(x) for x in xs) if xs else "-"
    fields = [
        f"leaves={p['leaves']}",
        "ops=" + ",".join(":".join(str(x) for x in op) for op in p["ops"]),
        "cuts=" + ("one-thread" if p["cuts"] is None else nums(p["cuts"])),
        f"roots={nums(p['roots'])}",
        f"pass={p['pass']}",
        f"inputs={nums(p['inputs'])}",
        f"leaf_hooks={int(p['leaf_hooks'])}",
        "order=" + (",".join(p["order"]) if p["order"] else "-"),
    ]
    return " ".join(fields)


def main():
    rng = random.Random(20261204)
    programs = []
    while len(programs) < 200:
        p = make_program(rng)
        p["order"] = run(p)
        programs.append(p)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write(f"# PyTorch {torch.__version__}: written by tools/pytorch_fixtures/engine_order.py\n")
        for p in programs:
            f.write(line(p) + "\n")
    print(f"wrote {len(programs)} programs to {os.path.normpath(OUT)}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
