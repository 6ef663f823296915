#!/usr/bin/env python3
"""Tests of owner.py's reading of Linux 4.1's page_owner records (run by .ci/run:
`python3 -m unittest discover -s tools -p 'test_*.py'`)."""
import io
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import owner  # noqa: E402


def record(order, mask, pfn, block_type, stack=()):
    """One page_owner record as 4.1 prints it (block = pfn / 512)."""
    lines = [f"Page allocated via order {order}, mask 0x{mask:x}",
             f"PFN {pfn} Block {pfn // 512} type {block_type} Flags      "]
    lines += [f" [<ffffffff81{i:06x}>] {f}+0x11/0x100" for i, f in enumerate(stack)]
    return "\n".join(lines) + "\n\n"


GFP_USER_MOVABLE = 0x200da   # __GFP_MOVABLE set: a user page
GFP_RECLAIMABLE_SLAB = 0x80250
GFP_ATOMIC_NOWARN = 0x20220
MOVABLE, UNMOVABLE = 2, 0


class Scan(unittest.TestCase):
    def scan(self, text, **kw):
        return owner.scan(io.StringIO(text), **kw)

    def test_kernel_pages_in_movable_blocks_taint_them(self):
        text = (record(0, GFP_USER_MOVABLE, 1024, MOVABLE)
                + record(2, GFP_RECLAIMABLE_SLAB, 1028, MOVABLE)
                + record(1, GFP_ATOMIC_NOWARN, 1040, MOVABLE)
                + record(0, GFP_USER_MOVABLE, 2048, MOVABLE))
        blocks = self.scan(text)
        self.assertEqual(blocks, {2: [1, 6, 0], 4: [1, 0, 0]})
        s = owner.summarise(blocks)
        self.assertEqual(s["tainted"], 1)
        self.assertEqual(s["kernel_pages_in_tainted"], 6)
        # 6 of 512 pages: 1.2%, the paper's 1-2% bin.
        self.assertEqual(s["pollution_percent_bins"]["<1"], 0)
        self.assertEqual(s["pollution_percent_bins"]["1-2"], 1)

    def test_kernel_pages_in_kernel_blocks_do_not_count(self):
        blocks = self.scan(record(0, GFP_ATOMIC_NOWARN, 4096, UNMOVABLE))
        self.assertEqual(owner.summarise(blocks)["tainted"], 0)

    def test_mask_zero_records_are_kept_apart(self):
        text = record(0, GFP_USER_MOVABLE, 1024, MOVABLE) + record(3, 0, 1032, MOVABLE)
        s = owner.summarise(self.scan(text))
        self.assertEqual(s["tainted"], 0)
        self.assertEqual(s["unknown_pages"], 8)
        self.assertEqual(s["tainted_counting_unknown"], 1)

    def test_masks_and_callers_name_the_kernel_pages(self):
        slab = ("__alloc_pages_nodemask", "new_slab", "__slab_alloc", "kmem_cache_alloc",
                "ext4_alloc_inode", "alloc_inode", "iget_locked")
        atomic = ("__alloc_pages_nodemask", "alloc_pages_current", "virtqueue_add_sgs")
        text = (record(2, GFP_RECLAIMABLE_SLAB, 1028, MOVABLE, slab)
                + record(0, GFP_ATOMIC_NOWARN, 1040, MOVABLE, atomic)
                + record(0, GFP_ATOMIC_NOWARN, 1041, MOVABLE, atomic)
                + record(0, GFP_USER_MOVABLE, 1042, MOVABLE, atomic))
        masks, stacks = {}, {}
        self.scan(text, masks=masks, stacks=stacks)
        self.assertEqual(masks, {"mask 0x80250 order 2": 4, "mask 0x20220 order 0": 2})
        self.assertEqual(stacks, {
            "mask 0x80250: ext4_alloc_inode < alloc_inode < iget_locked": 4,
            "mask 0x20220: virtqueue_add_sgs": 2,
        })

    def test_a_record_without_a_blank_line_at_the_end_is_counted(self):
        stacks = {}
        text = record(0, GFP_ATOMIC_NOWARN, 1040, MOVABLE, ("alloc_pages_current", "f"))
        self.scan(text.rstrip("\n"), stacks=stacks)
        self.assertEqual(stacks, {"mask 0x20220: f": 1})


class CommandLine(unittest.TestCase):
    def run_owner(self, *args, stdin=""):
        return subprocess.run([sys.executable, os.path.join(HERE, "owner.py"), *args],
                              input=stdin, capture_output=True, text=True)

    def test_reads_standard_input(self):
        r = self.run_owner("--json", "-", stdin=record(0, GFP_ATOMIC_NOWARN, 1040, MOVABLE))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"tainted": 1', r.stdout)

    def test_a_missing_file_is_named_and_fails(self):
        r = self.run_owner("/nonexistent/page_owner")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/nonexistent/page_owner", r.stderr)


if __name__ == "__main__":
    unittest.main()
