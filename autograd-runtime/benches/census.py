#!/usr/bin/env python3
"""Per-op census of the chain bench: instructions, L1 data misses and atomic
read-modify-writes (x86 `lock`-prefixed instructions and `xchg`), each counted by
valgrind, so the same binary gives the same figures whatever the machine is doing
(wall-clock time on the project's shared 2-core VM moves by 10-20% between runs).

Usage (docs/runtime.md, "The chain benchmark"):

    CARGO_TARGET_DIR=/work/target-runtime cargo bench -p autograd-runtime --bench chain --no-run
    B=$(ls -t /work/target-runtime/release/deps/chain-* | grep -v '\\.d$' | head -1)
    python3 autograd-runtime/benches/census.py $B runtime        # or tape, runtime-inline, ...

Each figure is (3 runs - 1 run) / 120,000: the bench's `--profile <impl>` mode runs a
20,000-step chain (60,000 ops) PROFILE_RUNS times, and the difference removes start-up.
Needs valgrind and objdump (binutils); standard library only.
"""

import collections
import os
import re
import subprocess
import sys
import tempfile

OPS_PER_RUN = 60_000


def run(cmd, runs):
    env = dict(os.environ, PROFILE_RUNS=str(runs))
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def cachegrind(binary, impl, runs, out):
    run(["valgrind", "--tool=cachegrind", "--cache-sim=yes",
         f"--cachegrind-out-file={out}", binary, "--profile", impl], runs)
    events = totals = None
    for line in open(out):
        if line.startswith("events:"):
            events = line.split()[1:]
        if line.startswith("summary:"):
            totals = [int(x) for x in line.split()[1:]]
    return dict(zip(events, totals))


def locked_addresses(binary):
    """Address -> (function, mnemonic) of every locked instruction in the binary."""
    dis = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", binary],
                         capture_output=True, text=True, check=True).stdout
    found, fn = {}, None
    for line in dis.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:", line)
        if m:
            fn = m.group(2)
            continue
        m = re.match(r"\s*([0-9a-f]+):\s+(lock \S+|xchg\S*)\s*(\S*)", line)
        # `xchg` is atomic only with a memory operand: `xchg %ax,%ax` is a two-byte nop
        # the assembler pads code with.
        if m and (m.group(2).startswith("lock") or "(" in m.group(3)):
            found[int(m.group(1), 16)] = (fn, m.group(2))
    return found


def instruction_counts(binary, impl, runs, out):
    """Executions of each instruction of the binary (callgrind, per instruction)."""
    run(["valgrind", "--tool=callgrind", "--dump-instr=yes",
         f"--callgrind-out-file={out}", binary, "--profile", impl], runs)
    name = os.path.basename(binary)
    counts, objects = collections.Counter(), {}
    addr, in_binary, after_call = 0, False, False
    for line in open(out):
        line = line.rstrip("\n")
        m = re.match(r"^c?ob=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(2):
                objects[m.group(1)] = m.group(2)
            if line.startswith("ob="):
                in_binary = objects.get(m.group(1), "").endswith(name)
            continue
        if line.startswith("calls="):
            after_call = True  # the next cost line is the call's inclusive cost
            continue
        m = re.match(r"^(0x[0-9a-f]+|\+\d+|-\d+|\*)\s+\S+\s+(\d+)$", line)
        if not m:
            continue
        a = m.group(1)
        if a.startswith("0x"):
            addr = int(a, 16)
        elif a[0] == "+":
            addr += int(a[1:])
        elif a[0] == "-":
            addr -= int(a[1:])
        if after_call:
            after_call = False
        elif in_binary:
            counts[addr] += int(m.group(2))
    return counts


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, impl = sys.argv[1], sys.argv[2]
    per_op = 2 * OPS_PER_RUN
    with tempfile.TemporaryDirectory() as d:
        c1 = cachegrind(binary, impl, 1, f"{d}/c1")
        c3 = cachegrind(binary, impl, 3, f"{d}/c3")
        locks = locked_addresses(binary)
        i1 = instruction_counts(binary, impl, 1, f"{d}/i1")
        i3 = instruction_counts(binary, impl, 3, f"{d}/i3")
    print(f"{impl}, per op (valgrind; (3 runs - 1 run) / {per_op:,}):")
    for k, label in [("Ir", "instructions"), ("D1mr", "L1 data read misses"),
                     ("D1mw", "L1 data write misses")]:
        print(f"  {label:<28}{(c3[k] - c1[k]) / per_op:10.2f}")
    by_site = collections.Counter()
    for a, site in locks.items():
        n = i3.get(a, 0) - i1.get(a, 0)
        if n > 0:
            by_site[site] += n
    total = sum(by_site.values())
    print(f"  {'atomic read-modify-writes':<28}{total / per_op:10.2f}")
    for (fn, ins), n in by_site.most_common():
        if n / per_op >= 0.01:
            print(f"    {n / per_op:5.2f}  {ins:<14} {fn[:90]}")


if __name__ == "__main__":
    main()
