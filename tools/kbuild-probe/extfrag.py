#!/usr/bin/env python3
"""Record every fallback of the page allocator while a command runs.

Linux fires the `kmem:mm_page_alloc_extfrag` tracepoint each time an allocation finds no
free block of its own migrate type and takes one from another type's lists
(`__rmqueue_fallback`, or `__rmqueue_claim` / `__rmqueue_steal` since Linux 6.15). Each
event says the order asked for, the order of the block taken, both migrate types, and
whether the pageblock changed owner. These are the events the model counts in its
`FallbackStats`, so the two can be compared directly.

The script enables the tracepoint, streams `trace_pipe` while COMMAND runs, and writes a
JSON summary: events by (alloc type -> fallback type), by the order of the block taken,
and how many claimed their pageblock; and the distinct pageblocks a non-claiming
kernel fallback landed in (a steal that leaves a kernel page in a movable pageblock is
what taints it). `--raw FILE` also keeps every event as a CSV row.

`change_ownership` (summed as `claimed_pageblock`) is whether the pageblock has the
requested type after the fallback. Since 6.15 that is a claim by this fallback; in Linux
4.1 it is also set when the free page taken sat on another type's list while its
pageblock already had the requested type (4.1 keeps a free page on the list of the type
it was freed with), so there it overcounts claims.

usage: extfrag.py --out SUMMARY.json [--raw EVENTS.csv] [--buffer-kb N] -- COMMAND...
Needs root and tracefs (mounted at /sys/kernel/tracing, or under debugfs).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading

# Migrate type numbers as the tracepoint prints them. Linux 4.4 reordered the enum
# (commit 016c13daa5c9: MOVABLE became 1 and RECLAIMABLE 2; MIGRATE_RESERVE, 3 before,
# gave way to HIGHATOMIC); `types_for` picks the table from the running kernel's version.
TYPES_4_4 = {0: "unmovable", 1: "movable", 2: "reclaimable", 3: "highatomic"}
TYPES_BEFORE_4_4 = {0: "unmovable", 1: "reclaimable", 2: "movable", 3: "reserve"}
PAGEBLOCK_ORDER = 9
# Linux 4.1 prints the pfn in decimal (`pfn=%lu`), later kernels in hex (`pfn=0x%lx`).
EVENT = re.compile(
    r"pfn=(?P<pfn>0x[0-9a-f]+|\d+) alloc_order=(?P<ao>-?\d+) fallback_order=(?P<fo>-?\d+) "
    r"pageblock_order=\d+ alloc_migratetype=(?P<am>\d+) fallback_migratetype=(?P<fm>\d+) "
    r"fragmenting=\d+ change_ownership=(?P<co>\d+)"
)


def types_for(release):
    """The migrate-type table for a kernel release string such as `4.1.0` or `6.18.0`."""
    m = re.match(r"(\d+)\.(\d+)", release)
    if m is None:
        sys.exit(f"extfrag.py: cannot read a kernel version from {release!r}")
    return TYPES_4_4 if (int(m[1]), int(m[2])) >= (4, 4) else TYPES_BEFORE_4_4


def tracefs():
    for path in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        if os.path.exists(os.path.join(path, "trace_pipe")):
            return path
    sys.exit("extfrag.py: tracefs not found (mount -t tracefs nodev /sys/kernel/tracing)")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Summary:
    def __init__(self, types):
        self.types = types
        self.movable = next(k for k, v in types.items() if v == "movable")
        self.events = 0
        self.by_types = {}
        self.by_order = {}
        self.claimed = 0
        self.unparsed = 0
        self.kernel_steal_blocks = set()

    def add(self, m):
        ao, fo = int(m["ao"]), int(m["fo"])
        am, fm, co = int(m["am"]), int(m["fm"]), int(m["co"])
        pair = f"{self.types.get(am, am)}->{self.types.get(fm, fm)}"
        self.events += 1
        self.by_types[pair] = self.by_types.get(pair, 0) + 1
        key = f"{pair} order {fo}"
        self.by_order[key] = self.by_order.get(key, 0) + 1
        self.claimed += co
        pfn = int(m["pfn"], 0)
        if am != self.movable and fm == self.movable and not co:
            self.kernel_steal_blocks.add(pfn >> PAGEBLOCK_ORDER)
        return (pfn, ao, fo, am, fm, co)

    def json(self):
        return {
            "events": self.events,
            "claimed_pageblock": self.claimed,
            "by_types": dict(sorted(self.by_types.items())),
            "by_types_and_fallback_order": dict(sorted(self.by_order.items())),
            "pageblocks_with_unclaimed_kernel_steals": len(self.kernel_steal_blocks),
            "unparsed_lines": self.unparsed,
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="summary JSON file")
    ap.add_argument("--raw", help="also write every event to this CSV file")
    ap.add_argument("--buffer-kb", type=int, default=65536,
                    help="trace ring buffer per CPU, KiB (default 65536); the kernel "
                    "allocates it, unmovable, when the size changes: on a small machine "
                    "set it before the run's first snapshot")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        sys.exit("extfrag.py: no command given (usage: extfrag.py --out F -- COMMAND...)")
    t = tracefs()
    event = os.path.join(t, "events/kmem/mm_page_alloc_extfrag/enable")
    if args.buffer_kb < 1:
        sys.exit("extfrag.py: --buffer-kb must be at least 1")
    write(os.path.join(t, "buffer_size_kb"), str(args.buffer_kb))
    write(os.path.join(t, "trace"), "")
    summary = Summary(types_for(os.uname().release))
    raw = open(args.raw, "w") if args.raw else None
    if raw:
        raw.write("pfn,alloc_order,fallback_order,alloc_mt,fallback_mt,change_ownership\n")
    pipe = open(os.path.join(t, "trace_pipe"))

    def reader():
        for line in pipe:
            m = EVENT.search(line)
            if m is None:
                summary.unparsed += "mm_page_alloc_extfrag" in line
                continue
            row = summary.add(m)
            if raw:
                raw.write(",".join(map(str, row)) + "\n")

    th = threading.Thread(target=reader, daemon=True)
    write(event, "1")
    th.start()
    try:
        status = subprocess.call(cmd)
    finally:
        write(event, "0")
    # Let the reader drain what the buffer still holds, then stop it.
    th.join(timeout=5)
    overrun = 0
    for cpu in sorted(os.listdir(os.path.join(t, "per_cpu"))):
        with open(os.path.join(t, "per_cpu", cpu, "stats")) as f:
            overrun += sum(int(l.split()[1]) for l in f if l.startswith("overrun"))
    result = summary.json()
    # Events lost because the ring buffer filled faster than this script read it.
    result["ring_buffer_overrun"] = overrun
    result["command_exit"] = status
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    if raw:
        raw.close()
    print(json.dumps(result, indent=1))
    sys.exit(status)


if __name__ == "__main__":
    main()
