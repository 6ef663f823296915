#!/usr/bin/env python3
"""Count kernel pages in each 2 MB pageblock of a real Linux machine (APSys'16 Table 1).

Reads /proc/kpageflags (root) and classifies every present page:

- kernel: slab pages and page tables (the run-time kernel page types the file exports;
  other kernel pages, such as vmalloc'd stacks, large kmallocs and pipe buffers, carry
  no flag there and are counted as "other", so kernel counts are lower bounds);
- reserved: pages reserved at boot (the kernel image, the memory map), left out of both
  classes: they sit in pageblocks Linux types Movable at boot and never move, so they
  would count as taint that no run-time allocation caused;
- user: on an LRU list, anonymous, mapped or swap-backed (movable);
- other: free pages and unflagged kernel pages.

Run it at rest: a page allocated or freed during the scan can be classified either way.

Linux does not export a pageblock's migrate type per block (only with page_owner, which
this kernel lacks), so "tainted" is bounded from two sides:

- lower bound: pageblocks holding a kernel page, minus the pageblocks typed Unmovable
  or Reclaimable in /proc/pagetypeinfo (at least that many Movable
  pageblocks hold kernel pages);
- estimate: pageblocks holding both user and kernel pages with fewer kernel than user
  pages (a kernel-typed pageblock claimed while half full of user pages also counts, so
  this can overcount). Its degree of pollution is kernel pages / 512; the paper's Table 1
  bins it in percent.

usage: taint.py [--json]
"""
import argparse
import json
from array import array

from probe import pageblocks

KPF = {"LRU": 5, "SLAB": 7, "BUDDY": 10, "MMAP": 11, "ANON": 12, "SWAPBACKED": 14,
       "NOPAGE": 20, "OFFLINE": 23, "PGTABLE": 26, "RESERVED": 32}
USER = (1 << KPF["LRU"]) | (1 << KPF["ANON"]) | (1 << KPF["MMAP"]) | (1 << KPF["SWAPBACKED"])
SLAB = 1 << KPF["SLAB"]
HOLE = (1 << KPF["NOPAGE"]) | (1 << KPF["OFFLINE"])
KERNEL_FLAGS = SLAB | (1 << KPF["PGTABLE"])
RESERVED = 1 << KPF["RESERVED"]
BLOCK = 512
# The paper's Table 1 bins (percent of a pageblock), lower bound inclusive.
BINS = [(0, 1, "<1"), (1, 2, "1-2"), (2, 4, "2-4"), (4, 10, "4-10"), (10, 25, "10-25"),
        (25, 40, "25-40"), (40, 100, ">40")]


def read_words(path):
    words = array("Q")
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(8 << 16):  # these files refuse one huge read
            words.frombytes(chunk)
    return words


def classify(flags):
    """Per pageblock: (user, kernel, other, holes or reserved)."""
    blocks = []
    n = len(flags)
    for start in range(0, n - n % BLOCK, BLOCK):
        user = kernel = free = holes = 0
        for pfn in range(start, start + BLOCK):
            f = flags[pfn]
            if f & (HOLE | RESERVED):
                holes += 1
            elif f & KERNEL_FLAGS:
                kernel += 1
            elif f & USER:
                user += 1
            else:
                free += 1
        blocks.append((user, kernel, free, holes))
    return blocks


def kernel_typed_pageblocks():
    """Pageblocks typed Unmovable or Reclaimable, over all zones."""
    blocks = pageblocks()
    return blocks["Unmovable"] + blocks["Reclaimable"]


def summarize(blocks, kernel_typed):
    present = [b for b in blocks if b[3] < BLOCK]
    with_kernel = sum(1 for b in present if b[1] > 0)
    mixed = [b for b in present if b[0] > 0 and b[1] > 0]
    tainted = [b for b in mixed if b[1] < b[0]]
    user_blocks = [b for b in present if b[0] > 0 and b[1] < b[0]]
    hist = {label: 0 for _, _, label in BINS}
    for _, kernel, _, _ in tainted:
        pct = 100.0 * kernel / BLOCK
        for lo, hi, label in BINS:
            if lo <= pct < hi or (hi == 100 and pct >= lo):
                hist[label] += 1
                break
    return {
        "pageblocks": len(present),
        "other_only_pageblocks": sum(1 for b in present if b[2] == BLOCK),
        "user_pageblocks": len(user_blocks),
        "pageblocks_with_kernel_pages": with_kernel,
        "kernel_typed_pageblocks": kernel_typed,
        "tainted_lower_bound": max(0, with_kernel - kernel_typed),
        "mixed_pageblocks": len(mixed),
        "tainted_user_pageblocks": len(tainted),
        "single_kernel_page_blocks": sum(1 for b in tainted if b[1] == 1),
        "kernel_pages": sum(b[1] for b in present),
        "kernel_pages_in_tainted": sum(b[1] for b in tainted),
        "user_pages": sum(b[0] for b in present),
        "other_pages": sum(b[2] for b in present),
        "pollution_histogram_percent": hist,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args()
    flags = read_words("/proc/kpageflags")
    s = summarize(classify(flags), kernel_typed_pageblocks())
    if args.json:
        print(json.dumps(s, indent=2))
        return
    for k, v in s.items():
        print(f"{k:28} {v}")


if __name__ == "__main__":
    main()
