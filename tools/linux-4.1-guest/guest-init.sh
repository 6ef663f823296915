#!/bin/sh
# PID 1 of the Linux 4.1 guest (kernel command line: init=/probe/guest-init.sh).
#
# Runs APSys'16's Table 1 protocol on the paper's kernel: a freshly booted machine
# builds twice, cleaning between, while every fallback of the page allocator is traced
# (extfrag.py) and /proc/pagetypeinfo's block counts (with page_owner: its mixed-block
# counts) and the reclaimable slab caches (/proc/slabinfo) are sampled every SAMPLE_S
# seconds. Snapshots (owner.py and the page_owner records it read, taint.py,
# pagetypeinfo, unusable_index, meminfo, vmstat, buddyinfo, slabinfo) are taken after
# boot, before build 1, after each build, after the clean and after compacting all
# memory. Results go to /results/RUN on the guest's disk; the machine
# powers off at the end.
#
# Settings come from /probe/settings (sourced; defaults below):
# - WORKLOAD=synth: the model's kernel build as real processes and files
#   (kbuild-synth, with table1.toml's sizes: UNITS, SOURCE, HEADERS, HEADER_BYTES,
#   HEADER_READS, OBJECT, HEAP_MIN, HEAP_MAX, COMPUTE_MS, SEED, JOBS);
# - WORKLOAD=kernel: a real `make -j$JOBS $TARGETS` of the Linux tree in /probe (CONFIG,
#   a make target such as defconfig; DEBUG_INFO=1 to build with debug information;
#   TARGETS, empty for the whole build, or folders such as "kernel/ mm/ fs/");
# - BUILDS: 2 (the paper's two builds, cleaning between) or 1;
# - SAMPLE_S; TRACE_KB, the trace ring buffer per CPU (KiB); SMOKE=1 to stop after
#   the boot snapshot (a check that the guest boots and its probes read);
# - KPAGEFLAGS=1 to save /proc/kpageflags (8 bytes a page frame, gzipped: what each
#   frame is, for layout.py) with every snapshot and every timeline sample;
# - ALLOC_TRACE_AT=T (seconds into build 1; empty: off) and ALLOC_TRACE_S: trace every
#   page allocation and free (kmem events mm_page_alloc, mm_page_alloc_zone_locked,
#   mm_page_free, mm_page_free_batched, mm_page_pcpu_drain) for ALLOC_TRACE_S seconds
#   from T, in a trace instance of its own (TRACE_KB a CPU, allocated before the build),
#   saved as alloc-trace.txt.gz: which CPU and task took which frames, and when the
#   per-CPU lists were refilled from and drained to the buddy allocator.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -o remount,rw /
echo 1 > /proc/sys/kernel/sysrq
WORKLOAD=synth JOBS=4 SAMPLE_S=30 SMOKE=0 TRACE_KB=4096 CONFIG=defconfig DEBUG_INFO=1
KPAGEFLAGS=0 ALLOC_TRACE_AT= ALLOC_TRACE_S=1
TARGETS= BUILDS=2
UNITS=7000 SOURCE=$((160 << 20)) HEADERS=4000 HEADER_BYTES=16384 HEADER_READS=8
OBJECT=$((5 << 30)) HEAP_MIN=$((16 << 20)) HEAP_MAX=$((64 << 20)) COMPUTE_MS=0 SEED=1
[ -f /probe/settings ] && . /probe/settings
P=/probe
R=/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$R"
exec > "$R/log.txt" 2>&1
set -x
finish() { sync; mount -o remount,ro /; echo o > /proc/sysrq-trigger; sleep 60; }
trap finish EXIT

uname -a; cat /proc/cmdline; nproc; cat "$P/settings" 2>/dev/null

snapshot() {
    # page_owner's records without their stack traces, kept for re-analysis.
    grep -E '^(Page allocated|PFN)' /sys/kernel/debug/page_owner | gzip -1 > "$R/owner-$1.txt.gz"
    zcat "$R/owner-$1.txt.gz" | python3 "$P/owner.py" --json - > "$R/owner-$1.json"
    # After a build: who allocated the kernel pages in Movable pageblocks (by mask and
    # the first frames of each record's stack trace, which the saved records lack).
    case $1 in build*)
        python3 "$P/owner.py" --json --masks 20 --stacks 30 > "$R/owner-$1-callers.json" ;;
    esac
    python3 "$P/taint.py" --json > "$R/taint-$1.json"
    cat /proc/pagetypeinfo > "$R/pagetypeinfo-$1.txt"
    cp /sys/kernel/debug/extfrag/unusable_index "$R/unusable-$1.txt"
    cp /proc/meminfo "$R/meminfo-$1.txt"
    cp /proc/vmstat "$R/vmstat-$1.txt"
    cp /proc/buddyinfo "$R/buddyinfo-$1.txt"
    cp /proc/slabinfo "$R/slabinfo-$1.txt"
    kpageflags "$1"
}
kpageflags() {
    # A 512 MiB guest's map is 1 MiB, about 60 KiB gzipped: a few page-cache pages.
    [ "$KPAGEFLAGS" = 1 ] && gzip -1 < /proc/kpageflags > "$R/kpageflags-$1.bin.gz"
    return 0
}
alloc_trace() {
    i=/sys/kernel/debug/tracing/instances/alloc
    sleep "$ALLOC_TRACE_AT"
    for e in mm_page_alloc mm_page_alloc_zone_locked mm_page_free mm_page_free_batched \
             mm_page_pcpu_drain; do
        echo 1 > "$i/events/kmem/$e/enable"
    done
    sleep "$ALLOC_TRACE_S"
    echo 0 > "$i/events/enable"
    gzip -1 < "$i/trace" > "$R/alloc-trace.txt.gz"
}
sampler() {
    t0=$(date +%s)
    while :; do
        now=$(( $(date +%s) - t0 ))
        {
            echo "t=$now $1"
            sed -n '/Number of blocks type/,$p' /proc/pagetypeinfo
            grep -E '^(MemFree|Cached|SReclaimable|SUnreclaim):' /proc/meminfo
            # The reclaimable caches a build fills: objects and slabs of each.
            grep -E '^(dentry|ext4_inode_cache|buffer_head|radix_tree_node|ext4_extent_status|inode_cache) ' /proc/slabinfo
            grep -E '^(slabs_scanned|pginodesteal|kswapd_inodesteal) ' /proc/vmstat
        } >> "$R/timeline.txt"
        kpageflags "$1-t$now"
        sleep "$SAMPLE_S"
    done
}

snapshot boot
[ "$SMOKE" = 1 ] && { echo done > "$R/done"; exit 0; }
mkdir -p /build && cd /build
if [ "$WORKLOAD" = kernel ]; then
    [ -d linux ] || { mkdir linux && tar xf "$P/linux-source.tar.xz" -C linux --strip-components=1; }
    cd linux
    make "$CONFIG" > "$R/config.txt" 2>&1
    if [ "$DEBUG_INFO" = 1 ]; then
        ./scripts/config -e DEBUG_INFO -e DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT -d DEBUG_INFO_BTF
        make olddefconfig >> "$R/config.txt" 2>&1
    fi
    grep -E '^CONFIG_DEBUG_INFO' .config >> "$R/config.txt"
    make clean > /dev/null 2>&1
    echo "cd /build/linux && make -j$JOBS $TARGETS" > /tmp/build.sh
    echo "cd /build/linux && make clean > /dev/null 2>&1" > /tmp/clean.sh
elif [ "$WORKLOAD" = synth ]; then
    mkdir -p synth
    "$P/kbuild-synth" setup /build/synth "$UNITS" "$SOURCE" "$HEADERS" "$HEADER_BYTES"
    echo "$P/kbuild-synth build /build/synth $JOBS $UNITS $HEADERS $HEADER_READS" \
        "$OBJECT $HEAP_MIN $HEAP_MAX $COMPUTE_MS $SEED" > /tmp/build.sh
    echo "$P/kbuild-synth clean /build/synth $UNITS" > /tmp/clean.sh
else
    echo "guest-init.sh: WORKLOAD must be synth or kernel, not '$WORKLOAD'"
    exit 1
fi
case $BUILDS in 1|2) ;; *) echo "guest-init.sh: BUILDS must be 1 or 2, not '$BUILDS'"; exit 1 ;; esac
# The trace ring buffer is kernel memory (unmovable, allocated when its size is set):
# 4 MiB a CPU, set before the first snapshot so that the builds do not pay for it, and
# after the caches are dropped: set while the preparation's page cache filled memory
# (a 512 MiB guest unpacking a kernel tree), it fell back into 36 Movable pageblocks.
sync; echo 3 > /proc/sys/vm/drop_caches
echo "$TRACE_KB" > /sys/kernel/debug/tracing/buffer_size_kb
if [ -n "$ALLOC_TRACE_AT" ]; then
    mkdir /sys/kernel/debug/tracing/instances/alloc
    echo "$TRACE_KB" > /sys/kernel/debug/tracing/instances/alloc/buffer_size_kb
fi
sleep 5
snapshot start
for build in $(seq "$BUILDS"); do
    [ "$build" = 2 ] && { sh /tmp/clean.sh; sync; snapshot clean; }
    sampler "build$build" & S=$!
    A=
    if [ "$build" = 1 ] && [ -n "$ALLOC_TRACE_AT" ]; then alloc_trace & A=$!; fi
    start=$(date +%s)
    python3 "$P/extfrag.py" --buffer-kb "$TRACE_KB" --out "$R/extfrag-build$build.json" \
        --raw "$R/extfrag-build$build.csv" -- sh /tmp/build.sh > "$R/build$build.txt" 2>&1
    echo "build $build: exit $? in $(( $(date +%s) - start )) s" >> "$R/builds.txt"
    kill $S
    [ -n "$A" ] && wait "$A"   # the trace's copy may outlast a short build
    sleep 10
    snapshot "build$build"
done
echo 1 > /proc/sys/vm/compact_memory
sleep 10
snapshot compacted
du -sm /build > "$R/tree-size.txt"
echo done > "$R/done"
