"""Tests of alloctrace.py on a hand-made trace (standard library only)."""
import gzip
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import alloctrace  # noqa: E402

HEADER = "# tracer: nop\n#\n"


def line(cpu, event, fields, task="kbuild-synth-1102"):
    return f"  {task}  [{cpu:03d}] ....    32.460658: {event}: {fields}\n"


def alloc(cpu, pfn, gfp="GFP_HIGHUSER_MOVABLE|GFP_ZERO", mt=2):
    return line(cpu, "mm_page_alloc",
                f"page=ffffea0000498140 pfn={pfn} order=0 migratetype={mt} gfp_flags={gfp}")


def refill(cpu, pfn):
    return line(cpu, "mm_page_alloc_zone_locked",
                f"page=ffffea0000498140 pfn={pfn} order=0 migratetype=2 percpu_refill=1")


def free(cpu, pfn):
    return line(cpu, "mm_page_free", f"page=ffffea0000498140 pfn={pfn} order=0")


class AllocTraceTest(unittest.TestCase):
    def test_runs_kinds_and_reuse(self):
        trace = [HEADER]
        trace += [refill(0, p) for p in (100, 101, 102, 103, 200)]
        trace += [alloc(0, p) for p in (100, 101, 102, 103, 200)]
        trace += [free(1, 7), alloc(1, 7, gfp="GFP_HIGHUSER_MOVABLE|GFP_COLD")]
        trace += [alloc(1, 9, mt=0)]  # unmovable: not counted
        r = alloctrace.analyse(trace)
        self.assertEqual(r["events"], 13)
        self.assertEqual(r["movable_order0"]["anon"], {"all": 5, "freed_before_in_trace": 0})
        self.assertEqual(r["movable_order0"]["file"], {"all": 1, "freed_before_in_trace": 1})
        # Refills on CPU 0: a run of 4 (bin 4-7) and a run of 1.
        self.assertEqual(r["runs_refilled"][:3], [0.2, 0.0, 0.8])
        # Handed out: CPU 0 as refilled, CPU 1 one frame: 2 singles of 6 frames.
        self.assertEqual(r["runs_handed_out"][:3], [round(2 / 6, 3), 0.0, round(4 / 6, 3)])
        self.assertEqual(r["runs_freed"][0], 1.0)

    def test_a_cut_trace_is_read_to_its_end_and_an_empty_one_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            cut, empty = os.path.join(d, "cut.txt.gz"), os.path.join(d, "empty.txt")
            data = gzip.compress((HEADER + refill(0, 5) + alloc(0, 5)).encode())
            with open(cut, "wb") as f:
                f.write(data[:-8])  # no gzip trailer
            with open(empty, "w") as f:
                f.write(HEADER)
            script = os.path.join(os.path.dirname(__file__), "alloctrace.py")
            run = subprocess.run([sys.executable, script, "--json", cut],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("ends early", run.stderr)
            self.assertIn('"events": 2', run.stdout)
            run = subprocess.run([sys.executable, script, empty], capture_output=True, text=True)
            self.assertNotEqual(run.returncode, 0)
            self.assertIn("no kmem events", run.stderr)


if __name__ == "__main__":
    unittest.main()
