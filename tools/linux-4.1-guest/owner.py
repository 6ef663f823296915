#!/usr/bin/env python3
"""APSys'16 Table 1 from Linux 4.1's page_owner: kernel pages in every Movable pageblock.

Streams `/sys/kernel/debug/page_owner` (a kernel booted with `page_owner=on`), which
prints one record per allocated block:

    Page allocated via order O, mask 0xM
    PFN P Block B type T [Fallback] Flags ...
    <stack trace>

The page's own migrate type comes from its GFP mask as Linux 4.1's
`gfpflags_to_migratetype` computes it (`__GFP_MOVABLE` 0x08 gives Movable,
`__GFP_RECLAIMABLE` 0x80000 Reclaimable, neither Unmovable) and the pageblock's from
`type T` (4.1's numbering: 0 Unmovable, 1 Reclaimable, 2 Movable, 3 Reserve). A
Movable pageblock holding any Unmovable or Reclaimable page is *tainted* (the paper's
word; Linux's `/proc/pagetypeinfo` counts the same blocks as "mixed" when page_owner
is on); its degree of pollution is those pages / 512, binned as the paper's Table 1.

Linux 4.1 records some allocations with mask 0, whose migrate type is then unknown:
the free pages compaction isolates as migration targets (`__isolate_free_page`; 4.6
began copying the migrated page's owner, commit d435edca9288), pages split by
`split_page`, and pages allocated before page_owner started. Counted as Unmovable they
make every block compaction filled look tainted (the test run of 2026-11-28: 0 tainted
blocks before `compact_memory`, 61 after, while /proc/kpageflags showed no new kernel
page in any of them). So they are counted apart (`unknown_pages`) and left out of
`tainted`; `tainted_counting_unknown` counts them in. /proc/pagetypeinfo's mixed-block
counts include them.

usage: owner.py [--json] [--masks N] [--stacks N] [FILE]
    (FILE defaults to /sys/kernel/debug/page_owner; - reads standard input)
"""
import argparse
import json
import re
import sys

GFP_MOVABLE = 0x08
GFP_RECLAIMABLE = 0x80000
MOVABLE_4_1 = 2
PAGEBLOCK = 512
HEAD = re.compile(r"Page allocated via order (\d+), mask 0x([0-9a-f]+)")
PFN = re.compile(r"PFN (\d+) Block (\d+) type (\d+)")
# Table 1's bins, in percent of a pageblock (upper bounds; the last is open).
BINS = [("<1", 1), ("1-2", 2), ("2-4", 4), ("4-10", 10), ("10-25", 25), ("25-40", 40),
        (">40", None)]


def page_migratetype(mask):
    return (2 if mask & GFP_MOVABLE else 0) | (1 if mask & GFP_RECLAIMABLE else 0)


# Frames of the page allocator and slab themselves, skipped when a stack trace is
# summarised, so that the first frames kept name who asked for the memory.
ALLOCATOR_FRAMES = {
    "__alloc_pages_nodemask", "alloc_pages_current", "alloc_pages_node",
    "alloc_pages_vma", "__get_free_pages", "get_zeroed_page", "alloc_kmem_pages",
    "alloc_kmem_pages_node", "allocate_slab", "new_slab", "__slab_alloc",
    "___slab_alloc", "kmem_cache_alloc", "kmem_cache_alloc_node", "kmem_cache_alloc_trace",
    "__kmalloc", "__kmalloc_node", "__kmalloc_track_caller", "kmalloc_order",
    "kmalloc_order_trace", "kmalloc_large_node", "__kmalloc_node_track_caller",
}
STACK_FRAMES = 5


def caller(stack):
    """The first STACK_FRAMES function names of a stack trace below the allocator's."""
    names = [line.split("] ", 1)[-1].split("+", 1)[0].strip() for line in stack]
    while names and names[0] in ALLOCATOR_FRAMES:
        names.pop(0)
    return " < ".join(names[:STACK_FRAMES])


def scan(lines, masks=None, stacks=None):
    """Per Movable pageblock: [user, kernel, unknown] pages among its allocated pages.

    With `masks` (a dict), also counts the kernel pages in Movable pageblocks by (GFP
    mask, order) of their allocation; with `stacks` (a dict), by mask and the first
    frames of the allocation's stack trace below the allocator (the full records of
    /sys/kernel/debug/page_owner are needed: the saved ones have no stacks)."""
    blocks = {}
    order = mask = None
    stack = None  # the stack lines of a kernel page in a Movable block, while read

    def end_stack():
        key = f"mask 0x{mask:x}: {caller(stack)}"
        stacks[key] = stacks.get(key, 0) + (1 << stack_order)

    for line in lines:
        if stack is not None:
            if line.strip():
                stack.append(line)
                continue
            end_stack()
            stack = None
        m = HEAD.match(line)
        if m:
            order, mask = int(m[1]), int(m[2], 16)
            continue
        m = PFN.match(line)
        if m is None or order is None:
            continue
        block, block_mt = int(m[2]), int(m[3])
        if block_mt == MOVABLE_4_1:
            counts = blocks.setdefault(block, [0, 0, 0])
            kind = 2 if mask == 0 else int(page_migratetype(mask) != MOVABLE_4_1)
            counts[kind] += 1 << order
            if kind == 1 and masks is not None:
                key = f"mask 0x{mask:x} order {order}"
                masks[key] = masks.get(key, 0) + (1 << order)
            if kind == 1 and stacks is not None:
                stack, stack_order = [], order
        order = None
    if stack is not None:
        end_stack()
    return blocks


def summarise(blocks):
    tainted = {b: c for b, c in blocks.items() if c[1] > 0}
    bins = {name: 0 for name, _ in BINS}
    for _, kernel, _ in tainted.values():
        pct = 100.0 * kernel / PAGEBLOCK
        for name, upper in BINS:
            if upper is None or pct < upper:
                bins[name] += 1
                break
    return {
        "movable_pageblocks_with_allocated_pages": len(blocks),
        "tainted": len(tainted),
        "kernel_pages_in_tainted": sum(c[1] for c in tainted.values()),
        "tainted_counting_unknown": sum(1 for c in blocks.values() if c[1] + c[2] > 0),
        "unknown_pages": sum(c[2] for c in blocks.values()),
        "pollution_percent_bins": bins,
        "tainted_with_one_kernel_page": sum(1 for c in tainted.values() if c[1] == 1),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default="/sys/kernel/debug/page_owner")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--masks", type=int, default=0, metavar="N",
                    help="also list the N (GFP mask, order) pairs with the most kernel "
                    "pages in Movable pageblocks")
    ap.add_argument("--stacks", type=int, default=0, metavar="N",
                    help="also list the N (GFP mask, caller) pairs with the most kernel "
                    "pages in Movable pageblocks, the caller being the stack trace's "
                    f"first {STACK_FRAMES} frames below the allocator (needs the full "
                    "page_owner records)")
    args = ap.parse_args()
    try:
        masks = {} if args.masks > 0 else None
        stacks = {} if args.stacks > 0 else None
        if args.file == "-":
            result = summarise(scan(sys.stdin, masks, stacks))
        else:
            with open(args.file, errors="replace") as f:
                result = summarise(scan(f, masks, stacks))
        for table, n, key in ((masks, args.masks, "by_mask"), (stacks, args.stacks, "by_caller")):
            if table is not None:
                top = sorted(table.items(), key=lambda kv: -kv[1])[:n]
                result[f"kernel_pages_in_movable_blocks_{key}"] = dict(top)
    except OSError as e:
        sys.exit(f"owner.py: cannot read {args.file}: {e} (boot with page_owner=on)")
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for k, v in result.items():
            print(f"{k}: {v}")


if __name__ == "__main__":
    main()
