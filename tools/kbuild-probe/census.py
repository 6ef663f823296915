#!/usr/bin/env python3
"""The names a kernel build looks up, creates and deletes, from an strace of it: what the
build makes the kernel's dcache and icache hold (a dentry for every name looked up, an
inode for every file or directory found or created; a negative dentry for every name
looked up and not found).

    strace -f -y -qq --seccomp-bpf -e signal=none -s 512 -o TRACE \\
        -e trace=%file,%process,chdir,fchdir make -j2
    census.py TRACE --tree TREE [--units N] [--json OUT]

Run it right after the build (and before anything changes the tree): whether a name was
a temporary, or a lookup of a name that never existed, is decided by whether it exists
when the census runs.

What it counts, each name once (a name looked up again reuses its dentry):

- **found**: names looked up that existed, by kind (file or directory) and place (in
  TREE, or outside it: the compiler's files, system headers, `PATH`'s directories);
- **created**: files and directories the build created (`O_CREAT`, `mkdir`, the target of
  a `rename`), kept (still there) or temporary (gone again: kbuild's `.o.d` dependency
  files, modversions' `.tmp_*.o`, fixdep's `.*.tmp`, ...), by their names' kinds;
- **never there**: names looked up and not found that do not exist at the end and were
  never created: a negative dentry each, counted at the first missing component of the
  path (`a/b/c` with no `a/b` leaves the negative dentry `a/b`), by the kind of lookup
  (an include path probe of a header, a `PATH` search for a program, other).

Paths are resolved with each process's working directory (followed through `chdir`,
`fchdir` and forks) and the directory the `-y` option prints beside each directory file
descriptor. docs/kbuild-measurement.md, "A real build's names", has the method and the
figures.
"""
import argparse
import json
import os
import re
import sys
from collections import Counter

# Calls whose first argument is a directory descriptor and whose path(s) follow it.
AT_CALLS = {"openat", "openat2", "newfstatat", "fstatat64", "statx", "faccessat",
            "faccessat2", "unlinkat", "mkdirat", "mknodat", "readlinkat", "fchmodat",
            "fchownat", "utimensat", "futimesat", "name_to_handle_at", "execveat",
            "renameat", "renameat2", "linkat", "symlinkat", "inotify_add_watch"}
# Calls that look a name up (the others in %file only use one already open).
PLAIN_CALLS = {"open", "creat", "stat", "lstat", "access", "readlink", "unlink", "rmdir",
               "mkdir", "chmod", "chown", "lchown", "truncate", "utime", "utimes",
               "execve", "statfs", "chdir", "rename", "link", "symlink", "getxattr",
               "lgetxattr", "setxattr", "listxattr", "llistxattr", "removexattr",
               "mknod", "chroot", "swapon", "acct", "uselib", "pivot_root", "mount",
               "umount2", "quotactl"}
FORKS = {"clone", "clone3", "fork", "vfork"}

LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+= (.*)$")
# strace pads a pid to the width of the widest seen so far.
RESUMED = re.compile(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$")
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
DIRFD = re.compile(r"^(?:AT_FDCWD|-?\d+)<([^>]*)>")
FD_PATH = re.compile(r"^(\d+)<([^>]*)>")


def unescape(s):
    """strace's C escapes in a quoted string (kernel trees' paths have almost none)."""
    if "\\" not in s:
        return s
    return s.encode("latin-1", "backslashreplace").decode("unicode_escape")


def joined(lines):
    """The trace's calls, each on one line: `-f` splits a call another process
    interrupted into `... <unfinished ...>` and `<... name resumed> ...`."""
    pending = {}
    for line in lines:
        line = line.rstrip("\n")
        if line.endswith(" <unfinished ...>"):
            pid = line.split(None, 1)[0]
            pending[pid] = line[: -len(" <unfinished ...>")]
            continue
        m = RESUMED.match(line)
        if m:
            start = pending.pop(m.group(1), None)
            if start is None:
                continue
            line = start + m.group(2)
        yield line


def split_args(args):
    """Top-level comma-separated arguments (strings, braces and brackets kept whole)."""
    out, depth, cur, quoted, esc = [], 0, [], False, False
    for ch in args:
        if quoted:
            cur.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                quoted = False
            continue
        if ch == '"':
            quoted = True
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if cur:
        out.append("".join(cur).strip())
    return out


def string(arg):
    m = QUOTED.match(arg)
    return unescape(m.group(1)) if m else None


class Census:
    def __init__(self, start_cwd):
        self.start_cwd = start_cwd
        self.cwd = {}
        self.found = set()        # absolute paths looked up successfully
        self.created = set()      # files and directories created
        self.created_dirs = set()
        self.missing = set()      # absolute paths looked up with ENOENT
        self.missing_how = {}     # path -> the call that missed it
        self.renamed_away = set() # sources of renames (their dentry moved to the target)
        self.calls = Counter()

    def where(self, pid):
        return self.cwd.get(pid, self.start_cwd)

    def resolve(self, base, path):
        if path is None or path == "":
            return None
        return os.path.normpath(path if path.startswith("/") else os.path.join(base, path))

    def feed(self, line):
        m = LINE.match(line)
        if not m:
            return
        pid, call, args, result = m.groups()
        self.calls[call] += 1
        ok = not result.startswith("-1")
        if call in FORKS:
            child = result.split()[0]
            if ok and child.isdigit():
                self.cwd[child] = self.where(pid)
            return
        argv = split_args(args)
        if call in AT_CALLS:
            self.at_call(pid, call, argv, ok, result)
        elif call in PLAIN_CALLS:
            self.plain_call(pid, call, argv, ok, result)
        elif call == "fchdir" and ok:
            fm = FD_PATH.match(argv[0]) if argv else None
            if fm:
                self.cwd[pid] = fm.group(2)

    def base(self, pid, dirfd):
        m = DIRFD.match(dirfd)
        if m:
            if dirfd.startswith("AT_FDCWD"):
                self.cwd[pid] = m.group(1)
            return m.group(1)
        return self.where(pid)

    def at_call(self, pid, call, argv, ok, result):
        if len(argv) < 2:
            return
        base = self.base(pid, argv[0])
        path = self.resolve(base, string(argv[1]))
        if call in ("renameat", "renameat2", "linkat"):
            target = self.resolve(self.base(pid, argv[2]), string(argv[3])) if len(argv) > 3 else None
            self.two(call, path, target, ok, result)
            return
        if call == "symlinkat":
            # symlinkat(target, newdirfd, linkpath)
            link = self.resolve(self.base(pid, argv[1]), string(argv[2])) if len(argv) > 2 else None
            self.one("symlink", link, ok, result, creates=True)
            return
        creates = (call in ("openat", "openat2") and "O_CREAT" in (argv[2] if len(argv) > 2 else "")) \
            or call in ("mkdirat", "mknodat")
        if call == "unlinkat":
            self.one(call, path, ok, result, deletes=True)
            return
        self.one(call, path, ok, result, creates=creates, is_dir=(call == "mkdirat"))

    def plain_call(self, pid, call, argv, ok, result):
        if not argv:
            return
        base = self.where(pid)
        path = self.resolve(base, string(argv[0]))
        if call in ("rename", "link"):
            target = self.resolve(base, string(argv[1])) if len(argv) > 1 else None
            self.two(call, path, target, ok, result)
            return
        if call == "symlink":
            link = self.resolve(base, string(argv[1])) if len(argv) > 1 else None
            self.one(call, link, ok, result, creates=True)
            return
        if call == "chdir" and ok and path:
            self.cwd[pid] = path
        creates = call in ("creat", "mkdir", "mknod") or (
            call == "open" and "O_CREAT" in (argv[1] if len(argv) > 1 else ""))
        self.one(call, path, ok, result, creates=creates, is_dir=(call == "mkdir"),
                 deletes=call in ("unlink", "rmdir"))

    def one(self, call, path, ok, result, creates=False, is_dir=False, deletes=False):
        if path is None:
            return
        if ok:
            self.found.add(path)
            if creates:
                self.created.add(path)
                if is_dir:
                    self.created_dirs.add(path)
        elif "ENOENT" in result:
            self.missing.add(path)
            self.missing_how.setdefault(path, call)

    def two(self, call, source, target, ok, result):
        if ok:
            if source:
                self.found.add(source)
                if call.startswith("rename"):
                    self.renamed_away.add(source)
            if target:
                self.found.add(target)
                self.created.add(target)
        elif "ENOENT" in result and source:
            self.missing.add(source)
            self.missing_how.setdefault(source, call)


def place(path, tree):
    if path == tree or path.startswith(tree + "/"):
        return "tree"
    return "outside"


def name_kind(path):
    name = os.path.basename(path)
    if name.startswith(".tmp_") and name.endswith(".o"):
        return ".tmp_*.o (modversions)"
    for suffix in (".o.cmd", ".o.d", ".o.tmp", ".cmd", ".d", ".tmp", ".o", ".ko", ".a",
                   ".mod.c", ".mod", ".order", ".h", ".c", ".S", ".s", ".lds", ".ver"):
        if name.endswith(suffix):
            return "*" + suffix
    return "other"


def first_missing(path):
    """The first component of `path` that does not exist now (its negative dentry)."""
    parts = path.split("/")
    cur = ""
    for part in parts[1:]:
        cur = cur + "/" + part
        if not os.path.lexists(cur):
            return cur
    return None


def lookup_kind(path, how):
    if how in ("execve", "execveat"):
        return "program (PATH search)"
    if path.endswith((".h", ".S", ".c")) or "/include" in path:
        return "header (include path probe)"
    return "other"


def summarise(c, tree, units):
    tree = os.path.normpath(tree)
    every = set(c.found) | set(c.created)
    # Every directory on the way to a name found is looked up too.
    dirs = set()
    for p in every:
        d = os.path.dirname(p)
        while d and d != "/" and d not in dirs:
            dirs.add(d)
            d = os.path.dirname(d)
    exists = {p for p in every if os.path.lexists(p)}
    out = {"units": units, "calls": dict(c.calls.most_common())}

    found = Counter()
    for p in exists | {d for d in dirs if os.path.lexists(d)}:
        is_dir = os.path.isdir(p) and not os.path.islink(p)
        found[(place(p, tree), "directory" if is_dir else "file",
               "created" if p in c.created else "was there")] += 1
    out["positive"] = {" / ".join(k): v for k, v in sorted(found.items())}

    kept = Counter(name_kind(p) for p in c.created if os.path.lexists(p) and not os.path.isdir(p))
    gone = [p for p in c.created if not os.path.lexists(p)]
    temporary = Counter(name_kind(p) for p in gone if p not in c.renamed_away)
    renamed = Counter(name_kind(p) for p in gone if p in c.renamed_away)
    out["created_kept_files"] = dict(kept.most_common())
    out["created_dirs_kept"] = sum(1 for d in c.created_dirs if os.path.isdir(d))
    out["temporaries"] = dict(temporary.most_common())
    out["renamed_away"] = dict(renamed.most_common())

    negative = {}
    for p in c.missing:
        first = first_missing(p)
        if first is None or first in c.created:
            continue  # there now, or a temporary's name: counted above
        negative.setdefault(first, lookup_kind(p, c.missing_how.get(p, "")))
    neg = Counter((place(p, tree), k) for p, k in negative.items())
    out["negative"] = {" / ".join(k): v for k, v in sorted(neg.items())}

    totals = {
        "positive_names": sum(found.values()),
        "created_kept": sum(kept.values()) + out["created_dirs_kept"],
        "temporaries": sum(temporary.values()),
        "negative_names": len(negative),
    }
    if units:
        totals["per_unit"] = {k: round(v / units, 2) for k, v in totals.items()}
    out["totals"] = totals
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", help="strace output (-f -y, one file)")
    ap.add_argument("--tree", required=True, help="the built tree (make's directory)")
    ap.add_argument("--units", type=int, default=0,
                    help="compilation units, for per-unit figures (treestats.py units)")
    ap.add_argument("--json", help="write the census here as JSON too")
    args = ap.parse_args()
    if not os.path.isdir(args.tree):
        sys.exit(f"census.py: --tree {args.tree}: not a directory")
    c = Census(os.path.abspath(args.tree))
    with open(args.trace, errors="replace") as f:
        for line in joined(f):
            c.feed(line)
    out = summarise(c, os.path.abspath(args.tree), args.units)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
