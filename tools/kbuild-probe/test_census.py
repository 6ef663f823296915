#!/usr/bin/env python3
"""Tests of census.py on a hand-written strace of a unit's compilation, against a small
tree made for it (run by .ci/run)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import census  # noqa: E402


def trace(tree):
    """What kbuild does for one unit (kernel/fork.o), in strace -f -y's format, with a
    call split by another process and a padded pid."""
    t = tree
    return f"""100 openat(AT_FDCWD<{t}>, "kernel/fork.c", O_RDONLY|O_NOCTTY) = 3<{t}/kernel/fork.c>
100 newfstatat(AT_FDCWD<{t}>, "kernel/fork.c.gch", 0x7ffd, 0) = -1 ENOENT (No such file or directory)
100 openat(AT_FDCWD<{t}>, "arch/x86/include/linux/sched.h", O_RDONLY|O_NOCTTY) = -1 ENOENT (No such file or directory)
100 openat(AT_FDCWD<{t}>, "include/linux/sched.h", O_RDONLY|O_NOCTTY) = 4<{t}/include/linux/sched.h>
100 openat(AT_FDCWD<{t}>, "kernel/.fork.o.d", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 5<{t}/kernel/.fork.o.d>
100 openat(AT_FDCWD<{t}>, "kernel/.tmp_fork.o", O_RDWR|O_CREAT|O_TRUNC, 0666 <unfinished ...>
99   clone(child_stack=NULL, flags=SIGCHLD) = 101
100 <... openat resumed>) = 6<{t}/kernel/.tmp_fork.o>
101 chdir("kernel") = 0
101 lstat("fork.symref", 0x7ffd) = -1 ENOENT (No such file or directory)
101 renameat2(AT_FDCWD<{t}/kernel>, ".tmp_fork.o", AT_FDCWD<{t}/kernel>, "fork.o", RENAME_NOREPLACE) = 0
100 openat(AT_FDCWD<{t}>, "kernel/.fork.o.tmp", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 7<{t}/kernel/.fork.o.tmp>
100 unlinkat(AT_FDCWD<{t}>, "kernel/.fork.o.d", 0) = 0
100 rename("kernel/.fork.o.tmp", "kernel/.fork.o.cmd") = 0
100 execve("/nonexistent/bin/gcc", ["gcc"], 0x7ffd /* 3 vars */) = -1 ENOENT (No such file or directory)
"""


class CensusTest(unittest.TestCase):
    def test_one_unit(self):
        with tempfile.TemporaryDirectory() as tree:
            for d in ("kernel", "include/linux", "arch/x86/include"):
                os.makedirs(os.path.join(tree, d))
            # The tree after the build: the source, the header, the object and .cmd.
            for f in ("kernel/fork.c", "include/linux/sched.h", "kernel/fork.o",
                      "kernel/.fork.o.cmd"):
                open(os.path.join(tree, f), "w").close()
            c = census.Census(tree)
            for line in census.joined(trace(tree).splitlines()):
                c.feed(line)
            out = census.summarise(c, tree, units=1)
        self.assertEqual(out["created_kept_files"], {"*.o": 1, "*.o.cmd": 1})
        self.assertEqual(out["temporaries"], {"*.o.d": 1})
        self.assertEqual(out["renamed_away"], {".tmp_*.o (modversions)": 1, "*.o.tmp": 1})
        # Never there: the precompiled-header and symref probes, the include-path probe
        # (at its first missing component, arch/x86/include/linux) and the PATH search.
        self.assertEqual(out["negative"], {
            "outside / program (PATH search)": 1,
            "tree / header (include path probe)": 1,
            "tree / other": 2,
        })
        # Found: the source and header (there before), the object and .cmd (created);
        # the directories on their way: the tree's own, kernel, include, include/linux.
        pos = out["positive"]
        self.assertEqual(pos["tree / file / was there"], 2)
        self.assertEqual(pos["tree / file / created"], 2)
        self.assertEqual(pos["tree / directory / was there"], 4)
        self.assertEqual(out["totals"]["negative_names"], 4)

    def test_split_args_keeps_strings_and_braces_whole(self):
        self.assertEqual(census.split_args('AT_FDCWD</t>, "a, b", {x=1, y=2}, 0'),
                         ["AT_FDCWD</t>", '"a, b"', "{x=1, y=2}", "0"])


if __name__ == "__main__":
    unittest.main()
