"""Tests of bootstate.py (standard library only)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import bootstate  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "linux-4.1-data")


class BootStateTest(unittest.TestCase):
    def read(self, path):
        with open(os.path.join(DATA, path)) as f:
            return bootstate.parse(f.read())

    def test_adds_up_the_zones_of_the_4_gb_guest(self):
        s = self.read("2026-11-28/pagetypeinfo-boot.txt")
        # DMA 1 + DMA32 4 + Normal 66 Unmovable pageblocks; free lists by order summed.
        self.assertEqual(s["Unmovable"], (71, [1, 2, 9, 5, 2, 2, 1, 0, 29, 2]))
        self.assertEqual(s["Reclaimable"], (6, [0, 1, 1, 6, 1, 0, 1, 2, 2, 2]))
        self.assertIn("--set kernel.boot.unmovable_pageblocks=71", bootstate.as_args(s))

    def test_keeps_a_free_order_10_block(self):
        s = self.read("2026-11-29-boot/no-page-owner-2048/pagetypeinfo-boot.txt")
        self.assertEqual(s["Unmovable"], (11, [12, 5, 3, 0, 0, 0, 1, 0, 1, 0, 1]))
        self.assertIn("unmovable_free = [12, 5, 3, 0, 0, 0, 1, 0, 1, 0, 1]",
                      bootstate.as_toml(s))

    def test_refuses_what_is_not_a_pagetypeinfo(self):
        with self.assertRaises(ValueError):
            bootstate.parse("MemTotal: 1 kB\n")


if __name__ == "__main__":
    unittest.main()
