"""Tests of layout.py on small hand-made kpageflags maps (standard library only):
python3 -m unittest discover -s tools/linux-4.1-guest -p 'test_*.py'"""
import gzip
import os
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import layout  # noqa: E402

B, A, F, S = layout.BUDDY, layout.ANON | layout.LRU, layout.LRU, layout.SLAB
HEAD, TAIL = 1 << 15, layout.TAIL


def pack(words):
    return struct.pack(f"<{len(words)}Q", *words)


class LayoutTest(unittest.TestCase):
    def test_free_blocks_take_the_largest_aligned_flagless_span(self):
        # 0-7: a free order-3 block; 8: anon; 9: free order 0 (10 is slab, so it cannot
        # grow); 10: slab; 11: other (flagless, but not after a BUDDY head);
        # 12-15: free order 2.
        flags = [B] + [0] * 7 + [A, B, S, 0, B, 0, 0, 0]
        cls, blocks = layout.classify(flags)
        self.assertEqual(blocks, [(0, 3), (9, 0), (12, 2)])
        self.assertEqual(cls[:8], ["free"] * 8)
        self.assertEqual(cls[8:12], ["anon", "free", "slab", "other"])

    def test_a_free_block_stops_at_its_alignment(self):
        # A BUDDY head at frame 4 followed by 12 flagless frames is an order-2 block
        # (4 is not 8-aligned), then 8-15 are "other": no BUDDY head claims them.
        flags = [A] * 4 + [B] + [0] * 11
        cls, blocks = layout.classify(flags)
        self.assertEqual(blocks, [(4, 2)])
        self.assertEqual(cls[8:], ["other"] * 8)

    def test_compound_tails_take_their_heads_class(self):
        flags = [S | HEAD, TAIL, TAIL, TAIL, F, A]
        cls, _ = layout.classify(flags)
        self.assertEqual(cls, ["slab"] * 4 + ["file", "anon"])

    def test_runs_and_neighbours(self):
        # anon runs of 32 and 2, file runs of 30; a free order-1 block between them.
        flags = [A] * 32 + [F] * 30 + [B, 0] + [A, A]
        r = layout.analyse(flags)
        self.assertEqual(r["frames_by_class"]["anon"], 34)
        self.assertEqual(r["frames_by_class"]["free"], 2)
        self.assertEqual(r["free_blocks_by_order"][1], 1)
        self.assertAlmostEqual(r["in_runs_of_32_up"]["anon"], round(32 / 34, 3))
        self.assertEqual(r["in_runs_of_32_up"]["file"], 0.0)
        self.assertEqual(r["beside_small_free_blocks"]["file"], 1)
        self.assertEqual(r["beside_small_free_blocks"]["anon"], 1)

    def test_reads_gzip_and_raw_and_rejects_a_partial_word(self):
        words = [B, 0, A, F]
        with tempfile.TemporaryDirectory() as d:
            raw, gz, bad = (os.path.join(d, n) for n in ("m.bin", "m.bin.gz", "bad.bin"))
            with open(raw, "wb") as f:
                f.write(pack(words))
            with gzip.open(gz, "wb") as f:
                f.write(pack(words))
            with open(bad, "wb") as f:
                f.write(b"\0" * 12)
            self.assertEqual(layout.read_map(raw), words)
            self.assertEqual(layout.read_map(gz), words)
            with self.assertRaises(ValueError):
                layout.read_map(bad)
            script = os.path.join(os.path.dirname(__file__), "layout.py")
            run = subprocess.run([sys.executable, script, bad], capture_output=True, text=True)
            self.assertNotEqual(run.returncode, 0)
            self.assertIn("not a whole number", run.stderr)
            run = subprocess.run([sys.executable, script, "--json", gz],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn('"free_blocks_by_order": [0, 1,', run.stdout)


if __name__ == "__main__":
    unittest.main()
