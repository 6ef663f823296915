#!/usr/bin/env bash
# Real-Linux counterpart of the APSys'16 kernel-build experiments (Table 1, Table 2's
# default column, Figure 3's default), on this machine shrunk to a small one.
#
#   pressure.sh TREE OUT LEAVE_MIB BUILD_SECONDS
#
# TREE: a configured kernel tree (make defconfig done). Drops caches, holds all but
# LEAVE_MIB of free memory with hog.py, runs two builds of at most BUILD_SECONDS each with
# `make clean` between (sampled by probe.py), then at rest records taint.py, the
# pageblock counts and the kernel's unusable free space index; then compacts all memory
# (/proc/sys/vm/compact_memory) and records them again. Needs root, debugfs mounted
# at /sys/kernel/debug (for extfrag/unusable_index) and tracefs (for extfrag.py).
#
# Once the hog holds its memory, all memory is compacted before the first snapshot, so
# the builds start from unfragmented free memory as on a machine that is small from boot
# (the hog's pages, scattered while it filled, would otherwise leave the zone
# fragmented before the first build). extfrag.py records every fallback of each build.
set -euo pipefail
tree=$1 out=$2 leave=$3 secs=$4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
snapshot() {
    python3 "$here/taint.py" --json > "$out/taint-$1.json"
    cp /sys/kernel/debug/extfrag/unusable_index "$out/unusable-$1.txt"
    sed -n '/Number of blocks/,$p' /proc/pagetypeinfo > "$out/blocks-$1.txt"
    grep -E 'MemFree|^Cached|SReclaimable|SUnreclaim' /proc/meminfo > "$out/meminfo-$1.txt"
}
(cd "$tree" && make clean >/dev/null)
sync; echo 3 > /proc/sys/vm/drop_caches
python3 "$here/hog.py" --leave "$leave" > "$out/hog.txt" &
hog=$!
trap 'kill $hog 2>/dev/null || true' EXIT
until grep -q ready "$out/hog.txt" 2>/dev/null; do sleep 2; done
echo 1 > /proc/sys/vm/compact_memory
snapshot start
for build in 1 2; do
    (cd "$tree" && make clean >/dev/null)
    python3 "$here/extfrag.py" --out "$out/extfrag-build$build.json" \
        --raw "$out/extfrag-build$build.csv" -- \
        python3 "$here/probe.py" --tree "$tree" --out "$out/build$build" --interval 5 \
        --limit "$secs" -- make -j2 vmlinux
done
sleep 10
snapshot end
echo 1 > /proc/sys/vm/compact_memory
snapshot compacted
sleep 60
snapshot compacted-60s
echo "done: $out"
