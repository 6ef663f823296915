#!/usr/bin/env python3
"""Hold anonymous memory so that only `--leave` MiB stay free for everything else (run it
after dropping caches): shrinks a large machine to a small one for a real-Linux
fragmentation experiment. Free memory is the base, not MemAvailable, because what
decides when reclaim starts is free memory against the zones' watermarks.
Without swap the pages cannot be reclaimed (compaction may still move them). Runs until
killed; prints "ready" once every page is written.

usage: hog.py --leave MIB
"""
import argparse
import mmap
import sys
import time


def free_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemFree:"):
                return int(line.split()[1])
    raise SystemExit("hog.py: no MemFree in /proc/meminfo")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leave", type=int, required=True, help="MiB to leave free")
    args = ap.parse_args()
    hold = free_kib() * 1024 - args.leave * (1 << 20)
    if hold <= 0:
        raise SystemExit(f"hog.py: only {free_kib() >> 10} MiB free, cannot leave {args.leave}")
    buf = mmap.mmap(-1, hold, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf.madvise(mmap.MADV_NOHUGEPAGE)  # base pages, like the paper's user memory
    for off in range(0, hold, 4096):
        buf[off] = 1
    held = [buf]
    # Free memory can grow while the hog fills (other caches shrink under the pressure it
    # makes), so top up in 64 MiB pieces until no more than `leave` + 64 MiB is free.
    chunk = 64 << 20
    while free_kib() * 1024 > args.leave * (1 << 20) + chunk:
        more = mmap.mmap(-1, chunk, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        more.madvise(mmap.MADV_NOHUGEPAGE)
        for off in range(0, chunk, 4096):
            more[off] = 1
        held.append(more)
        hold += chunk
    print(f"ready: holding {hold >> 20} MiB, {free_kib() >> 10} MiB free", flush=True)
    sys.stdout.close()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
