#!/usr/bin/env python3
"""Count the kernel's own page allocations (unmovable and reclaimable) while a command runs.

Linux fires the `kmem:mm_page_alloc` tracepoint for every block the buddy allocator hands
out, with its order, migrate type and GFP flags. This script enables it, filtered to the
non-movable migrate types (user memory and page cache are movable and would flood the
trace), runs the command, and prints how many blocks of each (migrate type, order, GFP
flags) it allocated, and per compilation unit when `--tree` names a build tree (units =
`*.o` files created meanwhile).

It answers what the kernel-build workload's `unmovable_per_unit` stands for: how much of
a unit's unmovable kernel memory is page allocations that come and go with each
compiler (page tables, kernel stacks, pipe buffers), and how much is new slab pages (slab
objects mostly reuse existing slabs). The GFP flags name the source: page tables are
`GFP_KERNEL_ACCOUNT|__GFP_ZERO`, pipe buffers `GFP_HIGHUSER|__GFP_ACCOUNT`, new slabs
carry `__GFP_COMP` (above order 0) and `__GFP_NOWARN|__GFP_NORETRY` on their first,
higher-order try.

With `--lifetimes` it also traces every free (`kmem:mm_page_free` and
`mm_page_free_batched`, unfiltered: those events carry no migrate type) and reports how
long the traced blocks lived, by the same key: the quantiles of the time from allocation
to free, and how many were still allocated when the command ended.

Needs root and tracefs (mounted at /sys/kernel/tracing).

    python3 pagealloc.py --tree /tmp/kb/linux-source-6.1 --out run.txt -- make -j2 fs/
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import threading

TRACING = "/sys/kernel/tracing"
EVENT = os.path.join(TRACING, "events/kmem/mm_page_alloc")
FREES = [os.path.join(TRACING, "events/kmem", e) for e in ("mm_page_free", "mm_page_free_batched")]
LINE = re.compile(
    r"\s(\d+\.\d+): (mm_page_alloc|mm_page_free_batched|mm_page_free): .*?pfn=0x([0-9a-f]+)"
    r"(?: order=(\d+) migratetype=(-?\d+) gfp_flags=(\S+))?"
)
TYPES = {0: "unmovable", 1: "movable", 2: "reclaimable"}


def objects(tree):
    count = 0
    for _, _, files in os.walk(tree):
        count += sum(f.endswith(".o") for f in files)
    return count


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", help="build tree whose new *.o files count the units")
    ap.add_argument("--out", required=True, help="summary file to write")
    ap.add_argument("--lifetimes", action="store_true", help="also trace frees: how long blocks lived")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        sys.exit("pagealloc.py: no command given (put it after --)")
    if not os.path.isdir(EVENT):
        sys.exit("pagealloc.py: no kmem:mm_page_alloc event (mount -t tracefs nodev %s)" % TRACING)

    before = objects(args.tree) if args.tree else 0
    counts = collections.Counter()
    write(os.path.join(TRACING, "trace"), "")
    write(os.path.join(EVENT, "filter"), "migratetype != 1")
    write(os.path.join(TRACING, "buffer_size_kb"), "16384")
    pipe = open(os.path.join(TRACING, "trace_pipe"))
    stop = threading.Event()

    live = {}
    lives = collections.defaultdict(list)

    def reader():
        for line in pipe:
            m = LINE.search(line)
            if not m:
                continue
            ts, event, pfn = float(m.group(1)), m.group(2), int(m.group(3), 16)
            if event == "mm_page_alloc":
                key = (int(m.group(5)), int(m.group(4)), m.group(6))
                counts[key] += 1
                live[pfn] = (ts, key)
            elif pfn in live:
                born, key = live.pop(pfn)
                lives[key].append(ts - born)
            if stop.is_set() and not line:
                break

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    events = [EVENT] + (FREES if args.lifetimes else [])
    for e in events:
        write(os.path.join(e, "enable"), "1")
    try:
        rc = subprocess.call(command, cwd=args.tree or None)
    finally:
        for e in events:
            write(os.path.join(e, "enable"), "0")
        write(os.path.join(EVENT, "filter"), "0")
    stop.set()
    t.join(timeout=5)
    lost = open(os.path.join(TRACING, "per_cpu/cpu0/stats")).read()
    units = (objects(args.tree) - before) if args.tree else 0

    out = ["command: %s (exit %d)" % (" ".join(command), rc), "units (new *.o): %d" % units]
    out.append("trace stats cpu0: " + " ".join(lost.split()[:6]))
    out.append("")
    out.append("| migrate type | order | gfp flags | blocks | KiB | KiB per unit |")
    out.append("|---|---|---|---|---|---|")
    totals = collections.Counter()
    for (mt, order, gfp), n in sorted(counts.items(), key=lambda kv: -kv[1] * (4 << kv[0][1])):
        kib = n * (4 << order)
        totals[mt] += kib
        per = "%.1f" % (kib / units) if units else "-"
        out.append("| %s | %d | %s | %d | %d | %s |" % (TYPES.get(mt, mt), order, gfp, n, kib, per))
    out.append("")
    for mt, kib in sorted(totals.items()):
        per = " (%.1f KiB per unit)" % (kib / units) if units else ""
        out.append("%s: %d KiB%s" % (TYPES.get(mt, mt), kib, per))
    if args.lifetimes:
        out.append("")
        out.append("Lifetimes (allocation to free), by the same key; still live = not freed by the end:")
        out.append("")
        out.append("| migrate type | order | gfp flags | freed | still live | p10 ms | p50 ms | p90 ms | mean ms |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        still = collections.Counter(key for _, key in live.values())
        for key, n in sorted(counts.items(), key=lambda kv: -kv[1] * (4 << kv[0][1])):
            got = sorted(lives.get(key, []))
            q = lambda f: "%.2f" % (1e3 * got[min(len(got) - 1, int(f * len(got)))]) if got else "-"
            mean = "%.2f" % (1e3 * sum(got) / len(got)) if got else "-"
            mt, order, gfp = key
            out.append("| %s | %d | %s | %d | %d | %s | %s | %s | %s |" % (
                TYPES.get(mt, mt), order, gfp, len(got), still[key], q(0.1), q(0.5), q(0.9), mean))
    text = "\n".join(out) + "\n"
    write(args.out, text)
    print(text)
    return rc


if __name__ == "__main__":
    sys.exit(main())
