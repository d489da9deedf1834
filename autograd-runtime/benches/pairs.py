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
median ratio NEW / OLD of the processes' times: wall-clock and user CPU time. The second
leaves out the kernel's time, mostly page faults: a run of the chain frees its 64 KiB node
chunks, `malloc` gives the memory back to the system, and the next run faults it in again
(a third of an `Inline` profile run's time; the bench's own interleaved mode hardly pays
it). Standard library only.
"""

import os
import resource
import statistics
import subprocess
import sys
import time


def timed(binary, impl, runs):
    env = dict(os.environ, PROFILE_RUNS=str(runs))
    user = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    start = time.perf_counter()
    subprocess.run([binary, "--profile", impl], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - user


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
    for k, what in enumerate(["wall", "user"]):
        x, y = [t[k] for t in a], [t[k] for t in b]
        ratios = sorted(n / o for o, n in zip(x, y))
        q = len(ratios) // 4
        print(f"{impl} ({what}): new / old median {statistics.median(ratios):.3f} "
              f"(interquartile range {ratios[q]:.3f}-{ratios[-q - 1]:.3f}; "
              f"ratio of minima {min(y) / min(x):.3f}; {pairs} pairs, PROFILE_RUNS={runs}; "
              f"old median {statistics.median(x) * 1e3:.1f} ms, new {statistics.median(y) * 1e3:.1f} ms)")

if __name__ == "__main__":
    main()
