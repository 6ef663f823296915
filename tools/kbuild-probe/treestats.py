#!/usr/bin/env python3
"""What a kernel build reads and leaves in its tree: units, sources, headers, products, page cache.

Companion of probe.py (which samples memory while the build runs). Subcommands:

  snapshot TREE OUT        list every file of TREE with its size (run before and after a build)
  products BEFORE AFTER    files new or changed between two snapshots, in bytes by kind;
                           with --deleted, the files that went away (what `make clean` deletes)
  units TREE               compilation units from the kbuild .cmd files: count (kernel vs host
                           programs), bytes of the .c/.S sources compiled, bytes of the headers
                           they read (unique, and summed over units), bytes of their objects
  summary CSV              wall time, objects and start / peak / end of each column of a
                           probe.py CSV (page-cache growth over a build)
  cache PATH...            bytes of each PATH's files resident in the page cache (mincore);
                           with --every S, one CSV row per S seconds until --until FILE exists

docs/kbuild-measurement.md, "A complete build", has the method and the figures.
"""
import argparse
import ctypes
import ctypes.util
import mmap
import os
import time

IMAGES = {"vmlinux", "vmlinux.o", "vmlinux.a", "bzImage", "vmlinux.bin", "vmlinux.bin.gz",
          "System.map", "vmlinux.symvers", "Module.symvers", "modules.order",
          "modules.builtin", "modules.builtin.modinfo"}


def kind(path):
    """A coarse kind for a build product, from its name."""
    name = os.path.basename(path)
    if name in IMAGES:
        return name if name in ("vmlinux", "vmlinux.o", "bzImage") else "image-other"
    for suffix in (".mod.c", ".mod.o", ".o.cmd", ".cmd", ".o", ".a", ".ko", ".mod", ".order",
                   ".h", ".c", ".S", ".lds", ".d", ".tmp", ".so"):
        if name.endswith(suffix):
            return "*" + suffix
    if name.startswith(".tmp"):
        return ".tmp*"
    return "other"


def files(tree):
    """Every file under `tree` with its lstat, skipping ones that vanish."""
    for root, _dirs, names in os.walk(tree):
        for f in names:
            p = os.path.join(root, f)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            yield p, st


def walk(tree):
    for p, st in files(tree):
        yield os.path.relpath(p, tree), st.st_size, st.st_mtime_ns


def cmd_snapshot(args):
    with open(args.out, "w") as out:
        for rel, size, mtime in walk(args.tree):
            out.write(f"{size} {mtime} {rel}\n")


def read_snapshot(path):
    files = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 2)
            if len(parts) == 3 and parts[1].isdigit():
                size, mtime, rel = parts
                files[os.path.normpath(rel)] = (int(size), int(mtime))
            else:  # `find -printf '%s %p\n'` lists: size only, no mtime
                size, rel = line.rstrip("\n").split(" ", 1)
                files[os.path.normpath(rel)] = (int(size), None)
    return files


def table(rows, total_label="total"):
    rows = sorted(rows.items(), key=lambda kv: -kv[1][1])
    n = sum(c for c, _ in dict(rows).values())
    b = sum(s for _, s in dict(rows).values())
    for k, (c, s) in rows:
        print(f"  {k:24s} {c:8d} files {s:15,d} bytes {s / 2**20:10.1f} MiB")
    print(f"  {total_label:24s} {n:8d} files {b:15,d} bytes {b / 2**20:10.1f} MiB")


def cmd_products(args):
    before, after = read_snapshot(args.before), read_snapshot(args.after)
    if args.deleted:
        gone = {k: v for k, v in before.items() if k not in after}
        print(f"files in {args.before} and not in {args.after}, by kind:")
        rows = {}
        for rel, (size, _m) in gone.items():
            c, s = rows.get(kind(rel), (0, 0))
            rows[kind(rel)] = (c + 1, s + size)
        table(rows)
        return
    def changed(k, v):
        if k not in before:
            return True
        b = before[k]
        return b[0] != v[0] or (b[1] is not None and v[1] is not None and b[1] != v[1])
    new = {k: v for k, v in after.items() if changed(k, v)}
    rows = {}
    for rel, (size, _m) in new.items():
        c, s = rows.get(kind(rel), (0, 0))
        rows[kind(rel)] = (c + 1, s + size)
    print(f"files new or changed in {args.after} against {args.before}, by kind:")
    table(rows)
    print("largest:")
    for rel, (size, _m) in sorted(new.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {size:15,d}  {rel}")


def parse_cmd(path):
    """(target, command, source, deps) from one kbuild .cmd file (fixdep format)."""
    cmd = src = None
    deps = []
    in_deps = False
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if in_deps:
                item = line.strip().rstrip("\\").strip()
                if item and not item.startswith("$(wildcard"):
                    deps.append(item)
                if not line.endswith("\\"):
                    in_deps = False
                continue
            if line.startswith(("cmd_", "savedcmd_")) and " := " in line:
                cmd = line.split(" := ", 1)[1]
            elif line.startswith("source_") and " := " in line:
                src = line.split(" := ", 1)[1].strip()
            elif line.startswith("deps_") and line.endswith("\\"):
                in_deps = True
    return cmd, src, deps


def size_of(tree, p):
    full = p if os.path.isabs(p) else os.path.join(tree, p)
    try:
        return os.path.getsize(full)
    except OSError:
        return None


def cmd_units(args):
    tree = args.tree
    units = {"kernel": [], "host": []}
    other_o = {"kernel": 0, "host": 0}
    sizes = {}
    for root, _dirs, files in os.walk(tree):
        for f in files:
            if not (f.startswith(".") and f.endswith(".o.cmd")):
                continue
            obj = os.path.join(root, f[1:-4])
            if not os.path.exists(obj):
                continue
            cmd, src, deps = parse_cmd(os.path.join(root, f))
            side = "kernel" if cmd and "__KERNEL__" in cmd else "host"
            if src and src.endswith((".c", ".S")):
                units[side].append((os.path.relpath(obj, tree), src, deps))
            else:
                other_o[side] += 1
    all_o = sum(1 for _ in (p for p, _s, _m in walk(tree) if p.endswith(".o")))
    print(f"*.o files in the tree: {all_o}")
    for side in ("kernel", "host"):
        us = units[side]
        srcs = {s for _o, s, _d in us}
        src_bytes = sum(size_of(tree, s) or 0 for s in srcs)
        hdr_unique = {}
        hdr_sum = 0
        missing = 0
        for _o, s, deps in us:
            for d in deps:
                if d == s:
                    continue
                if d not in sizes:
                    sizes[d] = size_of(tree, d)
                if sizes[d] is None:
                    missing += 1
                    continue
                hdr_unique[d] = sizes[d]
                hdr_sum += sizes[d]
        in_tree = sum(v for k, v in hdr_unique.items() if not os.path.isabs(k))
        outside = sum(v for k, v in hdr_unique.items() if os.path.isabs(k))
        asm = sum(1 for _o, s, _d in us if s.endswith(".S"))
        gen = sum(1 for _o, s, _d in us if s.endswith(".mod.c"))
        obj_bytes = sum(size_of(tree, o) or 0 for o, _s, _d in us)
        n = max(len(us), 1)
        print(f"{side}: {len(us)} compilation units ({len(us) - asm} .c of which {gen} .mod.c, "
              f"{asm} .S); {other_o[side]} other .o with a .cmd (linked, not compiled)")
        print(f"  sources compiled: {len(srcs)} files, {src_bytes:,d} bytes "
              f"({src_bytes / 2**20:.1f} MiB, {src_bytes / n / 1024:.1f} KiB per unit)")
        print(f"  headers and other included files, unique: {len(hdr_unique)} files, "
              f"{in_tree + outside:,d} bytes ({(in_tree + outside) / 2**20:.1f} MiB; "
              f"{in_tree / 2**20:.1f} MiB in the tree, {outside / 2**20:.1f} MiB outside)")
        print(f"  headers summed over units (bytes read, repeats counted): {hdr_sum:,d} bytes "
              f"({hdr_sum / 2**20:.0f} MiB, {hdr_sum / n / 1024:.0f} KiB per unit, "
              f"{sum(len(d) for _o, _s, d in us) / n:.0f} files per unit); {missing} missing")
        print(f"  their .o files: {obj_bytes:,d} bytes ({obj_bytes / 2**20:.1f} MiB, "
              f"{obj_bytes / n / 1024:.1f} KiB per unit)")
    kos = [p for p, _s, _m in walk(tree) if p.endswith(".ko")]
    print(f"modules (*.ko): {len(kos)}")


# page cache residency, with mincore(2)
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
PAGE = os.sysconf("SC_PAGE_SIZE")


def resident(path, size):
    if size == 0:
        return 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NOATIME)
    except OSError:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return 0
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return 0
        pages = (size + PAGE - 1) // PAGE
        vec = ctypes.create_string_buffer(pages)
        ok = libc.mincore(addr, size, vec) == 0
        libc.munmap(addr, size)
        return sum(b & 1 for b in vec.raw) * PAGE if ok else 0
    finally:
        os.close(fd)


def cached(path):
    return sum(
        resident(p, st.st_size)
        for p, st in files(path)
        if os.path.stat.S_ISREG(st.st_mode)
    )


def cmd_cache(args):
    if not args.every:
        for p in args.paths:
            b = cached(p)
            print(f"{p}: {b:,d} bytes ({b / 2**20:.1f} MiB) in the page cache")
        return
    with open(args.out, "w") as out:
        out.write("t_s," + ",".join(f"cached_kB:{p}" for p in args.paths) + ",Cached_kB\n")
        start = time.monotonic()
        while True:
            row = [f"{time.monotonic() - start:.1f}"]
            row += [str(cached(p) // 1024) for p in args.paths]
            with open("/proc/meminfo") as f:
                row += [l.split()[1] for l in f if l.startswith("Cached:")]
            out.write(",".join(row) + "\n")
            out.flush()
            if args.until and os.path.exists(args.until):
                break
            time.sleep(args.every)


def cmd_summary(args):
    import csv
    with open(args.csv) as f:
        rows = list(csv.DictReader(f))
    first, last = rows[0], rows[-1]
    print(f"{args.csv}: {len(rows)} samples, {float(last['t_s']):.0f} s, "
          f"objects {first.get('objects', '?')} -> {last.get('objects', '?')}")
    for key in rows[0]:
        if "_kB" not in key:
            continue
        vals = [int(r[key]) for r in rows if r[key]]
        peak = max(vals)
        at = rows[vals.index(peak)]["t_s"]
        print(f"  {key:40s} start {vals[0] / 1024:8.1f} MiB  peak {peak / 1024:8.1f} MiB (t={at} s)"
              f"  end {vals[-1] / 1024:8.1f} MiB  growth {(vals[-1] - vals[0]) / 1024:+8.1f} MiB"
              f"  peak growth {(peak - vals[0]) / 1024:+8.1f} MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="sub", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("tree")
    s.add_argument("out")
    s = sub.add_parser("products")
    s.add_argument("before")
    s.add_argument("after")
    s.add_argument("--deleted", action="store_true")
    s.add_argument("--top", type=int, default=12)
    s = sub.add_parser("units")
    s.add_argument("tree")
    s = sub.add_parser("summary")
    s.add_argument("csv")
    s = sub.add_parser("cache")
    s.add_argument("paths", nargs="+")
    s.add_argument("--every", type=float, default=0)
    s.add_argument("--out", default="/dev/stdout")
    s.add_argument("--until", help="stop after the sample that sees this file")
    args = ap.parse_args()
    {"snapshot": cmd_snapshot, "products": cmd_products, "units": cmd_units, "summary": cmd_summary,
     "cache": cmd_cache}[args.sub](args)


if __name__ == "__main__":
    main()
