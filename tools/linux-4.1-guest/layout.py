#!/usr/bin/env python3
"""How physical memory is laid out, from /proc/kpageflags maps: a real kernel's (the
guest's KPAGEFLAGS=1 snapshots) or the model's (`hugemm run --frame-maps`), read alike.

    layout.py [--json] MAP...

Each MAP is a kpageflags file (8 bytes a frame, little-endian; gzipped if it ends in
.gz). Every frame gets a class from its flags:

- free: a free buddy block. Linux marks only a block's first frame (BUDDY) and keeps
  its order to itself, so the block is taken to be the largest aligned power of two
  (at most order 10) from that frame whose other frames show no flag. A block followed
  by flagless allocated frames (per-CPU list pages, page tables, kernel stacks) can so
  read one order too large; the model's maps are read the same way.
- anon (ANON), file (LRU without ANON: the page cache), slab (SLAB), and the tails of a
  compound block (COMPOUND_TAIL) take their head's class;
- other: any other frame: flagless ones outside free blocks (per-CPU lists, page
  tables, kernel stacks, ...) and the rest (reserved, ...); nopage (NOPAGE): holes.

For each map it prints the frames of each class; the free blocks by order (what
/proc/buddyinfo counts, as a check on the inference); and how finely anonymous memory
and the page cache are interleaved: the share of each class's frames lying in runs (of
consecutive frames of that class) of at least 32 frames, and what lies beside free
blocks of order 0-4. A kernel build whose processes' heaps and file pages alternate in
short runs leaves small free blocks when either goes.
"""
import argparse
import gzip
import json
import struct
import sys
from collections import Counter

BUDDY, ANON, LRU, SLAB = 1 << 10, 1 << 12, 1 << 5, 1 << 7
TAIL, NOPAGE = 1 << 16, 1 << 20
MAX_ORDER = 10
CLASSES = ["free", "anon", "file", "slab", "other", "nopage"]


def read_map(path):
    """The kpageflags words of a map file."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) % 8:
        raise ValueError(f"{path}: {len(data)} bytes is not a whole number of 8-byte words")
    return list(struct.unpack(f"<{len(data) // 8}Q", data))


def classify(flags):
    """(class of each frame, free blocks as (pfn, order))."""
    n = len(flags)
    cls = [None] * n
    blocks = []
    pfn = 0
    while pfn < n:
        f = flags[pfn]
        if f & BUDDY:
            order = 0
            while order < MAX_ORDER:
                size = 2 << order
                if pfn % size or pfn + size > n:
                    break
                if any(flags[q] for q in range(pfn + (1 << order), pfn + size)):
                    break
                order += 1
            blocks.append((pfn, order))
            for q in range(pfn, pfn + (1 << order)):
                cls[q] = "free"
            pfn += 1 << order
            continue
        if f & NOPAGE:
            c = "nopage"
        elif f & TAIL and pfn > 0:
            c = cls[pfn - 1]
        elif f & ANON:
            c = "anon"
        elif f & LRU:
            c = "file"
        elif f & SLAB:
            c = "slab"
        else:
            c = "other"
        cls[pfn] = c
        pfn += 1
    return cls, blocks


def runs(cls):
    """Maximal runs of one class: (class, length)."""
    out = []
    start = 0
    for i in range(1, len(cls) + 1):
        if i == len(cls) or cls[i] != cls[start]:
            out.append((cls[start], i - start))
            start = i
    return out


def analyse(flags):
    cls, blocks = classify(flags)
    frames = Counter(cls)
    by_order = [0] * (MAX_ORDER + 1)
    for _, order in blocks:
        by_order[order] += 1
    long_runs = Counter()
    for c, length in runs(cls):
        if length >= 32:
            long_runs[c] += length
    beside = Counter()
    small = 0
    for pfn, order in blocks:
        if order > 4:
            continue
        small += 1
        for q in (pfn - 1, pfn + (1 << order)):
            if 0 <= q < len(cls):
                beside[cls[q]] += 1
    return {
        "frames": len(flags),
        "frames_by_class": {c: frames.get(c, 0) for c in CLASSES},
        "free_blocks_by_order": by_order,
        "free_frames_in_order_5_up": sum(n << o for o, n in enumerate(by_order) if o >= 5),
        "in_runs_of_32_up": {
            c: round(long_runs[c] / frames[c], 3) if frames.get(c) else None
            for c in ("anon", "file", "slab")
        },
        "small_free_blocks": small,
        "beside_small_free_blocks": {c: beside.get(c, 0) for c in CLASSES},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("maps", nargs="+", help="kpageflags files (.gz or raw)")
    ap.add_argument("--json", action="store_true", help="one JSON object per map")
    a = ap.parse_args()
    for path in a.maps:
        try:
            r = analyse(read_map(path))
        except (OSError, ValueError, EOFError) as e:
            sys.exit(f"layout.py: {e}")
        r["map"] = path
        if a.json:
            print(json.dumps(r))
            continue
        mib = {c: n * 4 / 1024 for c, n in r["frames_by_class"].items()}
        free = r["frames_by_class"]["free"] or 1
        print(f"{path}:")
        print("  MiB: " + ", ".join(f"{c} {v:.0f}" for c, v in mib.items() if v))
        print(f"  free blocks by order: {r['free_blocks_by_order']}"
              f" ({100 * r['free_frames_in_order_5_up'] / free:.0f}% of free frames at order >= 5)")
        print("  share in runs of >= 32 frames: " + ", ".join(
            f"{c} {v:.2f}" for c, v in r["in_runs_of_32_up"].items() if v is not None))
        side = r["beside_small_free_blocks"]
        print(f"  beside the {r['small_free_blocks']} free blocks of order 0-4: " + ", ".join(
            f"{c} {n}" for c, n in side.items() if n))


if __name__ == "__main__":
    main()
