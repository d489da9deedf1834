"""PyTorch's non-reentrant activation checkpointing (torch.utils.checkpoint.checkpoint,
use_reentrant=False), recorded for the Rust tests of autograd::checkpoint
(examples/ndtensor/tests/checkpoint.rs): gradients and second derivatives through a
checkpointed segment, and the CheckpointError texts of recomputations that differ from the
forward (the "Tip:" paragraph cut, which names PyTorch-only options).

    ~/.cache/torch/bin/python -W ignore tools/pytorch_fixtures/checkpoint.py
"""
import json
import os

import torch
import torch.utils.checkpoint as C

torch.manual_seed(0)
D = torch.float64
OUT = os.path.join(os.path.dirname(__file__), "../../examples/ndtensor/tests/checkpoint.json")


def segment(x, w):
    # tanh(exp(x) * w), then sin: saves exp's result, w, tanh's result and sin's input
    return torch.sin(torch.tanh(torch.exp(x) * w))


def grads():
    x = torch.randn(4, dtype=D, requires_grad=True)
    w = torch.randn(4, dtype=D, requires_grad=True)
    y = C.checkpoint(segment, x, w, use_reentrant=False)
    gx, gw = torch.autograd.grad(y.sum(), (x, w), create_graph=True)
    # second order through the recomputed tensors
    s = (gx * gx).sum() + (gw * gw).sum()
    hx, hw = torch.autograd.grad(s, (x, w))
    return {
        "x": x.tolist(), "w": w.tolist(), "y": y.tolist(),
        "grad_x": gx.tolist(), "grad_w": gw.tolist(),
        "grad2_x": hx.tolist(), "grad2_w": hw.tolist(),
    }


def error(kind, early_stop):
    calls = [0]

    def f(x):
        calls[0] += 1
        second = calls[0] > 1
        if kind == "more":  # one exp more in the recomputation
            y = x.exp()
            return (y.exp() if second else y).sin()
        if kind == "fewer":  # one exp fewer
            y = x.exp()
            return (y if second else y.exp()).sin()
        # "metadata": the recomputation sees the first two elements only
        return (x[:2] if second else x).exp().sin()

    x = torch.randn(3, dtype=D, requires_grad=True)
    try:
        with C.set_checkpoint_early_stop(early_stop):
            y = C.checkpoint(f, x, use_reentrant=False)
        y.sum().backward()
        return None
    except C.CheckpointError as e:
        return str(e).split("\nTip:")[0].rstrip("\n")


record = {
    "torch": torch.__version__,
    "grads": grads(),
    "errors": [
        {"kind": k, "early_stop": es, "message": error(k, es)}
        for k in ["more", "fewer", "metadata"]
        for es in [True, False]
    ],
}
with open(OUT, "w") as fh:
    json.dump(record, fh, indent=1)
    fh.write("\n")
print("wrote", os.path.normpath(OUT))
