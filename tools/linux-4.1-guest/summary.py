#!/usr/bin/env python3
"""Summarise one run of the Linux 4.1 guest (a results folder copied out by run.sh).

Prints, as Markdown tables: each snapshot's tainted Movable pageblocks (owner.py's
count from page_owner, with Table 1's pollution bins, and taint.py's estimate from
/proc/kpageflags), the pageblocks of each migrate type and the mixed-block counts of
/proc/pagetypeinfo, free memory; each build's fallbacks (extfrag.py); and the timeline
of Movable mixed blocks sampled during the builds.

If the run kept /proc/slabinfo (since 2026-11-29), it prints the reclaimable slab caches
a build fills at each snapshot, and their objects over the timeline.

With `--model SUMMARY.json` (a hugemm run's summary) it also prints the model's
fallbacks (`system.fallback.events`) in extfrag.py's categories, to set beside the
guest's.

usage: summary.py RESULTS_DIR [--model SUMMARY.json]
"""
import csv
import gzip
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kbuild-probe"))
from probe import meminfo_kb, pagetypeinfo_counts  # noqa: E402

SNAPSHOTS = ["boot", "start", "build1", "clean", "build2", "compacted"]
TYPES = ["Unmovable", "Reclaimable", "Movable", "Reserve"]


def load(path):
    with open(path) as f:
        return json.load(f)


def pagetypeinfo_tables(text):
    """{'blocks': {type: count}, 'mixed': {type: count}} summed over zones."""
    return {table: pagetypeinfo_counts(text, table) for table in ("blocks", "mixed")}


SLAB_CACHES = ["dentry", "ext4_inode_cache", "buffer_head", "radix_tree_node",
               "ext4_extent_status"]


def slabinfo_caches(text):
    """{cache: (active objects, objects, object bytes, pages)} from /proc/slabinfo
    (version 2.1: pages are num_slabs x pagesperslab)."""
    out = {}
    for line in text.splitlines():
        if line.startswith(("slabinfo", "#")):
            continue
        f = line.split()
        if len(f) < 16 or f[6] != ":" or f[11] != ":":
            continue
        name, active, num, size, _per, pages_per = f[0], *map(int, f[1:6])
        out[name] = (active, num, size, int(f[14]) * pages_per)
    return out


def meminfo_mib(path, key):
    with open(path) as f:
        kb = meminfo_kb(f.read(), [key]).get(key)
    return None if kb is None else kb // 1024


DMA_PFNS = 4096  # x86's DMA zone: the first 16 MiB


def fallbacks_by_zone(d, build):
    """{zone: (fallbacks, {types: count})} from extfrag.py's raw CSV (plain or gzipped),
    if the run kept it; the DMA zone is where 4.1's fair zone allocation policy drains
    the Movable lists of a small guest."""
    for name in (f"extfrag-build{build}.csv", f"extfrag-build{build}.csv.gz"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            break
    else:
        return None
    types = {"0": "unmovable", "1": "reclaimable", "2": "movable", "3": "reserve"}
    out = {}
    opener = gzip.open if p.endswith(".gz") else open
    with opener(p, "rt") as f:
        for row in csv.DictReader(f):
            zone = "DMA" if int(row["pfn"]) < DMA_PFNS else "DMA32 and above"
            n, by = out.setdefault(zone, (0, {}))
            key = f"{types.get(row['alloc_mt'], row['alloc_mt'])}->" \
                  f"{types.get(row['fallback_mt'], row['fallback_mt'])}"
            by[key] = by.get(key, 0) + 1
            out[zone] = (n + 1, by)
    return {z: (n, dict(sorted(by.items()))) for z, (n, by) in sorted(out.items())}


def model_fallbacks(path):
    """The model's fallback events summed as extfrag.py sums the real ones."""
    events = load(path)["system"]["fallback"]["events"]
    by_types, claimed, total = {}, 0, 0
    for e in events:
        pair = f"{e['alloc'].lower()}->{e['taken_from'].lower()}"
        by_types[pair] = by_types.get(pair, 0) + e["count"]
        claimed += e["count"] if e["claimed"] else 0
        total += e["count"]
    return total, claimed, dict(sorted(by_types.items()))


def main():
    args = sys.argv[1:]
    model = None
    if len(args) == 3 and args[1] == "--model":
        model = args[2]
        args = args[:1]
    if len(args) != 1:
        sys.exit(__doc__.strip().splitlines()[-1])
    d = args[0]
    if not os.path.isdir(d):
        sys.exit(f"summary.py: {d} is not a folder")
    print("| snapshot | tainted (page_owner) | with mask-0 pages | pollution <1/1-2/2-4/4-10/"
          "10-25/25-40/>40 % | tainted (kpageflags estimate) | blocks U/R/M/Res | "
          "mixed U/R/M | free MiB | cached MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in SNAPSHOTS:
        p = os.path.join(d, f"owner-{s}.json")
        if not os.path.exists(p):
            continue
        o = load(p)
        t = load(os.path.join(d, f"taint-{s}.json"))
        with open(os.path.join(d, f"pagetypeinfo-{s}.txt")) as f:
            pti = pagetypeinfo_tables(f.read())
        bins = "/".join(str(v) for v in o["pollution_percent_bins"].values())
        blocks = "/".join(str(pti["blocks"].get(k, "-")) for k in TYPES)
        mixed = "/".join(str(pti["mixed"].get(k, "-")) for k in TYPES[:3])
        mem = os.path.join(d, f"meminfo-{s}.txt")
        print(f"| {s} | {o['tainted']} | {o.get('tainted_counting_unknown', '-')} | {bins} | "
              f"{t['tainted_user_pageblocks']} | {blocks} | {mixed} | "
              f"{meminfo_mib(mem, 'MemFree')} | {meminfo_mib(mem, 'Cached')} |")
    print()
    builds = os.path.join(d, "builds.txt")
    if os.path.exists(builds):
        with open(builds) as f:
            print(f.read().strip())
        print()
    for b in (1, 2):
        p = os.path.join(d, f"extfrag-build{b}.json")
        if os.path.exists(p):
            e = load(p)
            print(f"build {b}: {e['events']} fallbacks, {e['claimed_pageblock']} claimed their "
                  f"pageblock, {e['pageblocks_with_unclaimed_kernel_steals']} Movable pageblocks "
                  f"took an unclaimed kernel steal; by types: {e['by_types']}; "
                  f"ring buffer overrun {e['ring_buffer_overrun']}")
        zones = fallbacks_by_zone(d, b)
        if zones:
            print(f"build {b}, by zone (the DMA zone is the first 16 MiB): "
                  + "; ".join(f"{z}: {n} fallbacks, by types {t}" for z, (n, t) in zones.items()))
    slab_rows = []
    for s in SNAPSHOTS:
        p = os.path.join(d, f"slabinfo-{s}.txt")
        if os.path.exists(p):
            with open(p) as f:
                caches = slabinfo_caches(f.read())
            cells = [caches.get(c) for c in SLAB_CACHES]
            slab_rows.append(f"| {s} | " + " | ".join(
                "-" if c is None else f"{c[0]:,} ({c[3]:,})" for c in cells) + " |")
    if slab_rows:
        print("\n| snapshot | " + " | ".join(SLAB_CACHES) + " |")
        print("|---|" + "---|" * len(SLAB_CACHES))
        print("(active objects, and pages of slab)")
        print("\n".join(slab_rows))
        print()
    if model:
        total, claimed, by_types = model_fallbacks(model)
        print(f"model, both builds: {total} fallbacks, {claimed} claimed their pageblock; "
              f"by types: {by_types}")
    p = os.path.join(d, "timeline.txt")
    if os.path.exists(p):
        print("\nMovable mixed blocks over time (t in s from each build's start, page_owner):")
        with open(p) as f:
            text = f.read()
        rows = []
        for chunk in re.split(r"(?m)^(?=t=)", text):
            m = re.match(r"t=(\d+) (\S+)", chunk)
            if not m:
                continue
            pti = pagetypeinfo_tables(chunk)
            free = re.search(r"MemFree:\s+(\d+)", chunk)
            caches = slabinfo_caches(chunk)
            objects = " ".join(f"{c}={caches[c][0]}" for c in SLAB_CACHES if c in caches)
            rows.append((m[2], int(m[1]), pti["mixed"].get("Movable"),
                         int(free[1]) // 1024 if free else None, objects))
        step = max(1, len(rows) // 30)
        for r in rows[::step] + ([rows[-1]] if rows and (len(rows) - 1) % step else []):
            print(f"  {r[0]} t={r[1]} mixed_movable={r[2]} free_mib={r[3]} {r[4]}".rstrip())


if __name__ == "__main__":
    main()
