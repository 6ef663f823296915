#!/usr/bin/env python3
"""Measure the kernel and page-cache memory a real kernel build allocates on this machine.

Samples /proc/meminfo, /proc/pagetypeinfo and the number of object files built once per
interval while a command (a kernel build) runs, and writes one CSV row per sample. It also
writes the slab caches that grew the most between the first and the last sample.

The numbers feed the kernel-build workload's defaults (crates/workload/src/kbuild.rs);
docs/kbuild-measurement.md has the method and the figures.

usage: probe.py --tree DIR --out PREFIX [--interval S] [--limit S] -- COMMAND...
"""
import argparse
import os
import subprocess
import sys
import time

MEMINFO_KEYS = [
    "MemFree", "Cached", "AnonPages", "SReclaimable", "SUnreclaim",
    "KernelStack", "PageTables",
]
BLOCK_TYPES = ["Unmovable", "Movable", "Reclaimable"]


def meminfo_kb(text, keys=None):
    """/proc/meminfo's values in kB from its text: every line's, or only `keys`'."""
    out = {}
    for line in text.splitlines():
        key, rest = line.split(":", 1)
        if keys is None or key in keys:
            out[key] = int(rest.split()[0])
    return out


def meminfo():
    with open("/proc/meminfo") as f:
        return meminfo_kb(f.read(), MEMINFO_KEYS)


def pagetypeinfo_counts(text, table="blocks"):
    """One of /proc/pagetypeinfo's per-type tables summed over zones: `blocks` (the
    pageblocks of each migrate type) or `mixed` (with page_owner on: the pageblocks of
    each type holding pages of another). Keys are the column names the kernel prints."""
    title = {"blocks": "Number of blocks type", "mixed": "Number of mixed blocks"}[table]
    counts, header = {}, None
    for line in text.splitlines():
        if line.startswith("Number of"):
            header = line.split()[4:] if line.startswith(title) else None
            if header:
                for name in header:
                    counts.setdefault(name, 0)
            continue
        if header and line.startswith("Node"):
            for name, value in zip(header, line.split()[4:]):
                counts[name] += int(value)
    return counts


def pageblocks():
    """Pageblocks per migrate type (BLOCK_TYPES), summed over zones."""
    with open("/proc/pagetypeinfo") as f:
        counts = pagetypeinfo_counts(f.read())
    return {name: counts.get(name, 0) for name in BLOCK_TYPES}


def slab_bytes():
    """Bytes held by each slab cache (slabs x pages per slab x 4 KiB)."""
    out = {}
    with open("/proc/slabinfo") as f:
        for line in f.readlines()[2:]:
            parts = line.split()
            name, pages_per_slab, num_slabs = parts[0], int(parts[5]), int(parts[14])
            out[name] = num_slabs * pages_per_slab * 4096
    return out


def count_objects(tree):
    n = 0
    for _root, _dirs, files in os.walk(tree):
        n += sum(1 for f in files if f.endswith(".o"))
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True, help="build tree to count *.o files in")
    ap.add_argument("--out", required=True, help="output prefix: PREFIX.csv, PREFIX-slab.txt")
    ap.add_argument("--interval", type=float, default=2.0, help="seconds between samples")
    ap.add_argument("--limit", type=float, default=0, help="stop the command after S seconds (0: never)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given after --")
    if not os.path.isdir(args.tree):
        ap.error(f"--tree {args.tree}: not a directory")

    slab_start = slab_bytes()
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=args.tree, stdout=subprocess.DEVNULL, start_new_session=True)
    with open(args.out + ".csv", "w") as csv:
        csv.write("t_s,objects," + ",".join(k + "_kB" for k in MEMINFO_KEYS) + ","
                  + ",".join("blocks_" + t for t in BLOCK_TYPES) + "\n")
        while True:
            t = time.monotonic() - start
            m, b = meminfo(), pageblocks()
            row = [f"{t:.1f}", str(count_objects(args.tree))]
            row += [str(m.get(k, 0)) for k in MEMINFO_KEYS]
            row += [str(b[k]) for k in BLOCK_TYPES]
            csv.write(",".join(row) + "\n")
            csv.flush()
            if proc.poll() is not None:
                break
            if args.limit and t > args.limit:
                os.killpg(proc.pid, 15)
                proc.wait()
                break
            time.sleep(args.interval)
    slab_end = slab_bytes()
    growth = sorted(((slab_end.get(k, 0) - v, k) for k, v in slab_start.items()), reverse=True)
    with open(args.out + "-slab.txt", "w") as f:
        f.write("# slab cache growth over the run, bytes (num_slabs x pagesperslab x 4 KiB)\n")
        for delta, name in growth[:25]:
            f.write(f"{name} {delta}\n")
    print(f"exit {proc.returncode}, {time.monotonic() - start:.0f} s; wrote {args.out}.csv", file=sys.stderr)


if __name__ == "__main__":
    main()
