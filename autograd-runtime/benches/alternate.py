#!/usr/bin/env python3
"""Compares two builds of the chain bench in its own mode, whole runs alternating.

Each `--bench` run times every implementation interleaved in one process and reports the
runtime as a ratio to the enum tape measured in the same process, so the ratio carries less
of the VM's drift than a time does (this machine's speed moved by up to 30% within minutes).
Alternating whole runs of the two binaries and comparing them pair by pair says whether a
change shows: the issue 15 sessions report a change only where every pair (or nearly every)
moved the same way, and give the medians.

Usage (docs/runtime.md, "The chain benchmark"):

    python3 autograd-runtime/benches/alternate.py OLD NEW [RUNS]

OLD and NEW are chain bench binaries (copy one aside before rebuilding); RUNS runs of each
(default 6). Prints each pair's `HeapT` and `Inline` ratios, how many pairs NEW was lower in,
and the medians. Standard library only.
"""

import re
import statistics
import subprocess
import sys

# "  autograd-runtime   132.5 ns/op   (2.08x enum tape)": first the `HeapT` section's line,
# then the `Inline` one.
LINE = re.compile(r"^\s*autograd-runtime\s.*\(([0-9.]+)x enum tape\)", re.MULTILINE)


def ratios(binary):
    out = subprocess.run([binary, "--bench"], check=True, capture_output=True, text=True)
    found = [float(x) for x in LINE.findall(out.stdout)]
    if len(found) != 2:
        sys.exit(f"{binary} --bench: expected two autograd-runtime lines, found {len(found)}")
    return found


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old, new = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    pairs = []
    for i in range(runs):
        a, b = ratios(old), ratios(new)
        pairs.append((a, b))
        print(f"pair {i + 1}: HeapT {a[0]:.2f}x -> {b[0]:.2f}x   Inline {a[1]:.2f}x -> {b[1]:.2f}x",
              flush=True)
    for k, name in enumerate(["HeapT", "Inline"]):
        lower = sum(b[k] < a[k] for a, b in pairs)
        med_a = statistics.median(a[k] for a, _ in pairs)
        med_b = statistics.median(b[k] for _, b in pairs)
        print(f"{name}: median {med_a:.2f}x -> {med_b:.2f}x the tape; NEW lower in {lower} of {runs} pairs")


if __name__ == "__main__":
    main()
