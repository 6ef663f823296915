"""Tests of summary.py's fallbacks by zone (standard library only)."""
import gzip
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kbuild-probe"))
import summary  # noqa: E402

CSV = """pfn,alloc_order,fallback_order,alloc_mt,fallback_mt,change_ownership
1024,0,3,2,0,0
4095,0,1,2,0,1
4096,0,9,1,2,1
70000,0,2,0,2,0
"""


class FallbacksByZoneTest(unittest.TestCase):
    def test_splits_at_16_mib_and_reads_gzip(self):
        with tempfile.TemporaryDirectory() as d:
            with gzip.open(os.path.join(d, "extfrag-build1.csv.gz"), "wt") as f:
                f.write(CSV)
            z = summary.fallbacks_by_zone(d, 1)
            self.assertEqual(z["DMA"], (2, {"movable->unmovable": 2}))
            self.assertEqual(z["DMA32 and above"],
                             (2, {"reclaimable->movable": 1, "unmovable->movable": 1}))
            self.assertIsNone(summary.fallbacks_by_zone(d, 2))


SLABINFO = """slabinfo - version: 2.1
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>
ext4_inode_cache   18000  18060   1000   32    8 : tunables    0    0    0 : slabdata    565    565      0
buffer_head       900000 901056    104   39    1 : tunables    0    0    0 : slabdata  23104  23104      0
"""


class SlabinfoTest(unittest.TestCase):
    def test_reads_objects_and_pages(self):
        c = summary.slabinfo_caches(SLABINFO)
        self.assertEqual(c["ext4_inode_cache"], (18000, 18060, 1000, 565 * 8))
        self.assertEqual(c["buffer_head"], (900000, 901056, 104, 23104))
        self.assertNotIn("slabinfo", c)


if __name__ == "__main__":
    unittest.main()
