#!/usr/bin/env python3
"""Tests of the probes' parsers of kernel text: /proc/meminfo, /proc/pagetypeinfo and the
`mm_page_alloc_extfrag` tracepoint, in Linux 4.1's and 6.18's formats (run by .ci/run)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extfrag  # noqa: E402
import probe  # noqa: E402

MEMINFO = """MemTotal:        4046736 kB
MemFree:          178304 kB
Cached:          3601756 kB
SReclaimable:     137216 kB
HugePages_Total:       0
"""

# Linux 4.1's layout (with page_owner on: the mixed-block table), two zones.
PAGETYPEINFO_4_1 = """Page block order: 9
Pages per block:  512

Free pages count per migrate type at order       0      1      2
Node    0, zone    DMA32, type    Unmovable      3      1      0

Number of blocks type     Unmovable  Reclaimable      Movable      Reserve      Isolate
Node 0, zone      DMA            1            0            6            1            0
Node 0, zone    DMA32           12           40         1412            2            0
Node 0, zone   Normal           37           25          511            1            0
Number of mixed blocks     Unmovable  Reclaimable      Movable      Reserve      Isolate
Node 0, zone      DMA            0            0            0            0            0
Node 0, zone    DMA32            2            3           17            0            0
Node 0, zone   Normal            4            11          99            0            0
"""

LINE_4_1 = ("cc1-1234  [001] .... 611.5: mm_page_alloc_extfrag: page=ffffea0001 pfn=262657 "
            "alloc_order=0 fallback_order=0 pageblock_order=9 alloc_migratetype=1 "
            "fallback_migratetype=2 fragmenting=1 change_ownership=0")
LINE_6_18 = ("cc1-1234  [001] ..... 61.5: mm_page_alloc_extfrag: page=000000001 pfn=0x40201 "
             "alloc_order=0 fallback_order=3 pageblock_order=9 alloc_migratetype=0 "
             "fallback_migratetype=1 fragmenting=1 change_ownership=1")


class Meminfo(unittest.TestCase):
    def test_every_key_or_the_ones_asked_for(self):
        self.assertEqual(probe.meminfo_kb(MEMINFO)["SReclaimable"], 137216)
        self.assertEqual(probe.meminfo_kb(MEMINFO)["HugePages_Total"], 0)
        self.assertEqual(probe.meminfo_kb(MEMINFO, ["MemFree", "Cached"]),
                         {"MemFree": 178304, "Cached": 3601756})


class Pagetypeinfo(unittest.TestCase):
    def test_blocks_and_mixed_blocks_are_summed_over_zones(self):
        blocks = probe.pagetypeinfo_counts(PAGETYPEINFO_4_1, "blocks")
        self.assertEqual(blocks["Movable"], 6 + 1412 + 511)
        self.assertEqual(blocks["Reserve"], 4)
        mixed = probe.pagetypeinfo_counts(PAGETYPEINFO_4_1, "mixed")
        self.assertEqual(mixed["Movable"], 116)
        self.assertEqual(mixed["Reclaimable"], 14)


class Extfrag(unittest.TestCase):
    def test_linux_4_1_numbers_types_before_4_4_and_prints_decimal_pfns(self):
        s = extfrag.Summary(extfrag.types_for("4.1.0-linux4sam_5.1"))
        pfn, ao, fo, am, fm, co = s.add(extfrag.EVENT.search(LINE_4_1))
        self.assertEqual((pfn, fo, co), (262657, 0, 0))
        self.assertEqual(s.by_types, {"reclaimable->movable": 1})
        # A kernel request stealing from a Movable pageblock without retyping it.
        self.assertEqual(s.json()["pageblocks_with_unclaimed_kernel_steals"], 1)

    def test_linux_6_18_numbers_types_after_4_4_and_prints_hex_pfns(self):
        s = extfrag.Summary(extfrag.types_for("6.18.0"))
        pfn, ao, fo, am, fm, co = s.add(extfrag.EVENT.search(LINE_6_18))
        self.assertEqual((pfn, fo, co), (0x40201, 3, 1))
        self.assertEqual(s.by_types, {"unmovable->movable": 1})
        self.assertEqual(s.json()["claimed_pageblock"], 1)
        self.assertEqual(s.json()["pageblocks_with_unclaimed_kernel_steals"], 0)


if __name__ == "__main__":
    unittest.main()
