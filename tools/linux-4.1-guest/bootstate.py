#!/usr/bin/env python3
"""A booted kernel's pageblocks as hugemm's `[kernel.boot]` settings.

Reads a /proc/pagetypeinfo (the guest's `pagetypeinfo-boot.txt`) and prints the
Unmovable and Reclaimable pageblock counts and their free blocks by order, every zone
added up, as `--set` arguments for `hugemm run` / `hugemm reproduce` (or, with --toml,
as a `[kernel.boot]` table).

usage: bootstate.py [--toml] PAGETYPEINFO
"""
import argparse
import re
import sys

TYPES = ("Unmovable", "Reclaimable")


def parse(text):
    """{type: (pageblocks, [free blocks by order])}, every zone added up."""
    free = {t: [] for t in TYPES}
    for m in re.finditer(r"zone\s+\S+, type\s+(\w+)\s+([\d ]+)$", text, re.M):
        if m.group(1) not in free:
            continue
        counts = [int(x) for x in m.group(2).split()]
        acc = free[m.group(1)]
        acc.extend([0] * (len(counts) - len(acc)))
        for order, n in enumerate(counts):
            acc[order] += n
    if "Number of blocks type" not in text:
        raise ValueError("no 'Number of blocks type' table: not a /proc/pagetypeinfo")
    table = text.split("Number of blocks type", 1)[1].split("Number of mixed", 1)[0]
    lines = table.strip().splitlines()
    header = lines[0].split()
    blocks = {t: 0 for t in TYPES}
    for line in lines[1:]:
        m = re.match(r"Node\s+\d+, zone\s+\S+\s+([\d\s]+)$", line.strip())
        if not m:
            continue
        counts = [int(x) for x in m.group(1).split()]
        for t in TYPES:
            blocks[t] += counts[header.index(t)]
    out = {}
    for t in TYPES:
        orders = free[t]
        while orders and orders[-1] == 0:
            orders.pop()
        out[t] = (blocks[t], orders)
    return out


def settings(state, sep):
    """The four `kernel.boot` keys and their values, orders joined by `sep`."""
    for t in TYPES:
        n, orders = state[t]
        key = t.lower()
        yield f"{key}_pageblocks", str(n)
        yield f"{key}_free", "[" + sep.join(map(str, orders)) + "]"


def as_args(state):
    return " ".join(f"--set kernel.boot.{k}={v}" for k, v in settings(state, ","))


def as_toml(state):
    return "\n".join(["[kernel.boot]"] + [f"{k} = {v}" for k, v in settings(state, ", ")])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--toml", action="store_true", help="print a [kernel.boot] table")
    ap.add_argument("pagetypeinfo")
    a = ap.parse_args()
    try:
        with open(a.pagetypeinfo) as f:
            state = parse(f.read())
    except (OSError, ValueError) as e:
        sys.exit(f"bootstate.py: {a.pagetypeinfo}: {e}")
    print(as_toml(state) if a.toml else as_args(state))


if __name__ == "__main__":
    main()
