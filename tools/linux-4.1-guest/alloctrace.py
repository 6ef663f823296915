#!/usr/bin/env python3
"""How a real kernel handed out page frames, from the guest's allocation trace
(guest-init.sh's ALLOC_TRACE_AT: `alloc-trace.txt.gz`, the kmem events mm_page_alloc,
mm_page_alloc_zone_locked, mm_page_free, mm_page_free_batched, mm_page_pcpu_drain).

    alloctrace.py [--json] TRACE

For order-0 movable allocations it prints how many were anonymous (GFP_ZERO: page
faults) or page cache, and how many reused a frame freed earlier in the trace; and, per
CPU, the lengths of the runs of consecutive frame numbers (a frame one above or below
the one before) in three sequences: the frames handed out (mm_page_alloc), the frames
the per-CPU lists took from the buddy allocator (mm_page_alloc_zone_locked with
percpu_refill=1) and the frames freed. Run lengths are given as the share of frames in
runs of 1, 2-3, 4-7, ..., 512 or more. A trace cut short (the guest powered off while
it was being written) is read up to where it ends.
"""
import argparse
import gzip
import json
import re
import sys
from collections import Counter, defaultdict

LINE = re.compile(r"^\s*(\S+)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$")
BINS = 10  # 1, 2-3, ..., 256-511, 512+


def events(lines):
    """(cpu, event, fields) of each trace line that is an event."""
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        _, _, cpu, _, name, rest = m.groups()
        fields = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
        yield int(cpu), name, fields


def run_shares(seqs):
    """Share of frames in runs of consecutive frame numbers, by run-length bin."""
    h = Counter()
    for seq in seqs.values():
        n = 1
        for a, b in zip(seq, seq[1:] + [None]):
            if b is not None and abs(b - a) == 1:
                n += 1
            else:
                h[min(n.bit_length() - 1, BINS - 1)] += n
                n = 1
    total = sum(h.values())
    return [round(h[i] / total, 3) if total else 0.0 for i in range(BINS)]


def analyse(lines):
    freed = set()
    kinds = Counter()
    handed, refilled, frees = defaultdict(list), defaultdict(list), defaultdict(list)
    n = 0
    for cpu, name, f in events(lines):
        n += 1
        if f.get("order") != "0":
            continue
        pfn = int(f["pfn"])
        if name in ("mm_page_free", "mm_page_free_batched"):
            if name == "mm_page_free":
                frees[cpu].append(pfn)
            freed.add(pfn)
        elif name == "mm_page_alloc_zone_locked" and f.get("percpu_refill") == "1":
            refilled[cpu].append(pfn)
        elif name == "mm_page_alloc" and f.get("migratetype") == "2":
            kind = "anon" if "GFP_ZERO" in f.get("gfp_flags", "") else "file"
            kinds[(kind, pfn in freed)] += 1
            handed[cpu].append(pfn)
    return {
        "events": n,
        "movable_order0": {
            kind: {"all": kinds[(kind, False)] + kinds[(kind, True)],
                   "freed_before_in_trace": kinds[(kind, True)]}
            for kind in ("anon", "file")
        },
        "runs_handed_out": run_shares(handed),
        "runs_refilled": run_shares(refilled),
        "runs_freed": run_shares(frees),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", help="alloc-trace.txt(.gz)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    opener = gzip.open if a.trace.endswith(".gz") else open
    lines = []
    try:
        with opener(a.trace, "rt") as f:
            for line in f:
                lines.append(line)
    except EOFError:
        print(f"alloctrace.py: {a.trace} ends early; read {len(lines)} lines", file=sys.stderr)
    except OSError as e:
        sys.exit(f"alloctrace.py: {e}")
    r = analyse(lines)
    if r["events"] == 0:
        sys.exit(f"alloctrace.py: {a.trace} has no kmem events")
    if a.json:
        print(json.dumps(r))
        return
    print(f"{r['events']} events")
    for kind, c in r["movable_order0"].items():
        print(f"  {kind}: {c['all']} order-0 movable allocations, "
              f"{c['freed_before_in_trace']} of them frames freed earlier in the trace")
    labels = "1 2-3 4-7 8-15 16-31 32-63 64-127 128-255 256-511 512+"
    print(f"  share of frames in runs of consecutive frames ({labels}):")
    for key in ("runs_handed_out", "runs_refilled", "runs_freed"):
        print(f"    {key[5:]:11} " + " ".join(f"{100 * x:.0f}" for x in r[key]))


if __name__ == "__main__":
    main()
