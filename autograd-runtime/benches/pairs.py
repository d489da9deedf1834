#!/usr/bin/env python3
"""Times two builds of the chain bench against each other in alternating pairs of processes.

Wall-clock time on the project's shared 2-core VM moves by 10-20% between runs, so single
runs cannot show a 5% change. Running the two binaries alternately, one process each, and
taking the median of the per-pair ratios (with its interquartile range, and the ratio of the
two minima, which noise can only raise) can.

Usage (docs/runtime.md, "The chain benchmark"):

    python3 autograd-runtime/benches/pairs.py OLD NEW runtime [PAIRS] [PROFILE_RUNS]

OLD and NEW are chain bench binaries (copy one aside before rebuilding); the third argument
is the `--profile` implementation (`runtime`, `runtime-inline`, `tape`, ...). Prints the
median ratio NEW / OLD of the processes' times. Standard library only.
"""

import os
import statistics
import subprocess
import sys
import time


def timed(binary, impl, runs):
    env = dict(os.environ, PROFILE_RUNS=str(runs))
    start = time.perf_counter()
    subprocess.run([binary, "--profile", impl], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    old, new, impl = sys.argv[1:4]
    pairs = int(sys.argv[4]) if len(sys.argv) > 4 else 25
    runs = int(sys.argv[5]) if len(sys.argv) > 5 else 8
    a, b = [], []
    for _ in range(pairs):
        a.append(timed(old, impl, runs))
        b.append(timed(new, impl, runs))
    ratios = sorted(y / x for x, y in zip(a, b))
    q = len(ratios) // 4
    print(f"{impl}: new / old median {statistics.median(ratios):.3f} "
          f"(interquartile range {ratios[q]:.3f}-{ratios[-q - 1]:.3f}; "
          f"ratio of minima {min(b) / min(a):.3f}; {pairs} pairs, PROFILE_RUNS={runs}; "
          f"old median {statistics.median(a) * 1e3:.1f} ms, new {statistics.median(b) * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
