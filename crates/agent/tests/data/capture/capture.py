#!/usr/bin/env python3
"""Capture the real /proc and sysfs files that crates/agent's tests parse.

Run as root from this directory on a Linux host with THP in `madvise` mode:
    gcc -O1 -Wall -o /tmp/hugemm-capture hugemm-capture.c && python3 capture.py /tmp/hugemm-capture
It writes into the parent directory (tests/data) and prints the layout it captured,
so the facts tests assert can be checked against the files themselves.

Layout of the 64 MiB mapping at BASE (2 MiB regions r0..r31):
  r0-r15  MADV_HUGEPAGE: r0-r3 written (huge faults), r4 one byte written, r5-r15 untouched
  r16-r19 MADV_NOHUGEPAGE: r16 written (512 base pages), r17 every 2nd page written
  r20-r31 no advice: r20 every 4th page, r21 written, r22 written then MADV_COLLAPSE,
          r23 read only (the shared zero page), r24-r25 mprotect(PROT_READ)
Pagemap excerpts: pagemap-r3-r5.bin (BASE+6 MiB, 3 regions), pagemap-r16-r23.bin
(BASE+32 MiB, 8 regions). kpageflags-<first pfn hex>.bin: 512 flags of each 2 MiB
region whose PFNs are contiguous and aligned (what the summary reads).
"""
import os, shutil, struct, subprocess, sys

MIB = 1 << 20
REGION = 2 * MIB
OUT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def pread_entries(path, index, count):
    with open(path, "rb") as f:
        data = os.pread(f.fileno(), count * 8, index * 8)
    assert len(data) == count * 8, (path, index, len(data))
    return data


def write(name, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(OUT, name), mode) as f:
        f.write(data)


def capture_process(binary):
    proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid, base, filemap = proc.stdout.readline().split()
    base = int(base, 16)
    try:
        write("smaps", open(f"/proc/{pid}/smaps").read())
        write("maps", open(f"/proc/{pid}/maps").read())
        for name, first, regions in [("pagemap-r3-r5.bin", 3, 3), ("pagemap-r16-r23.bin", 16, 8)]:
            start = (base + first * REGION) // 4096
            data = pread_entries(f"/proc/{pid}/pagemap", start, regions * 512)
            write(name, data)
            capture_flags(data, start * 4096)
        print(f"pid {pid} base {base:#x} file mapping {filemap}")
    finally:
        proc.communicate("x")


def capture_flags(data, va):
    entries = struct.unpack(f"<{len(data) // 8}Q", data)
    pfn_mask = (1 << 55) - 1
    for r in range(len(entries) // 512):
        region = entries[r * 512:(r + 1) * 512]
        pfns = [e & pfn_mask if e >> 63 else None for e in region]
        first = pfns[0]
        contiguous = first is not None and first % 512 == 0 and all(
            p == first + i for i, p in enumerate(pfns))
        if contiguous:
            write(f"kpageflags-{first:x}.bin", pread_entries("/proc/kpageflags", first, 512))
        present = sum(p is not None for p in pfns)
        print(f"  region {va + r * REGION:#x}: present {present}, first pfn "
              f"{'-' if first is None else hex(first)}, contiguous+aligned {contiguous}")


def capture_host():
    for src, name in [("/proc/buddyinfo", "buddyinfo"), ("/proc/pagetypeinfo", "pagetypeinfo"),
                      ("/proc/pressure/memory", "pressure-memory"),
                      ("/proc/pressure/io", "pressure-io")]:
        shutil.copyfile(src, os.path.join(OUT, name))
    config = subprocess.run("zcat /proc/config.gz", shell=True, capture_output=True, text=True)
    keep = [l for l in config.stdout.splitlines()
            if any(k in l for k in ("DAMON", "PAGE_IDLE", "IDLE_PAGE", "TRANSPARENT_HUGEPAGE"))]
    write("config-excerpt", "\n".join(keep) + "\n")
    capture_damon()


def capture_damon():
    """Copy the DAMON sysfs admin tree's small read-only files the probe reads."""
    src = "/sys/kernel/mm/damon/admin"
    dst = os.path.join(OUT, "sys-kernel-mm/damon/admin")
    shutil.rmtree(dst, ignore_errors=True)
    wanted = ("nr_kdamonds", "state", "pid", "nr_contexts", "operations", "avail_operations")
    for root, _dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        if "/schemes" in "/" + rel or "/targets" in "/" + rel or "monitoring_attrs" in rel:
            continue
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for f in files:
            if f in wanted:
                shutil.copyfile(os.path.join(root, f), os.path.join(dst, rel, f))


if __name__ == "__main__":
    capture_process(sys.argv[1])
    capture_host()
