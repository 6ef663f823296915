#!/usr/bin/env bash
# Boot the Linux 4.1 guest on IMAGE and wait until guest-init.sh powers it off; then copy
# its results out of the image into OUT.
#
#   run.sh BZIMAGE IMAGE OUT [MEMORY_MIB]
#
# 2 vCPUs, MEMORY_MIB of memory (4,096 by default: the paper's
# Table 1 machine), page_owner on (for /proc/pagetypeinfo's mixed blocks and owner.py),
# THP off (the model's Table 1 runs with THP never: the builds' fragmentation comes from
# base pages).
#
# ACCEL=tcg (the default) emulates the CPU in software, two threads (about 19 times
# slower than the host for gcc, measured here). ACCEL=kvm uses /dev/kvm: on this
# project's machines that is KVM-PVM (`dmesg` says kvm-pvm), which runs only guests
# built for it; Linux 4.1 hung in its decompressor there (2026-11-28).
#
# PAGE_OWNER=0 boots without page_owner: its per-page records (`page_ext`, 88 bytes a
# page in 4.1, allocated from the buddy allocator at boot) then take no memory, and
# owner.py and /proc/pagetypeinfo's mixed-block counts have nothing to read; taint.py's
# kpageflags estimate still works (docs/linux-4.1-data/2026-11-29-boot/).
set -euo pipefail
kernel=$1 image=$2 out=$3 mem=${4:-4096}
mkdir -p "$out"
case ${PAGE_OWNER:-1} in
    1) owner=" page_owner=on" ;;
    0) owner="" ;;
    *) echo "run.sh: PAGE_OWNER must be 1 or 0, not '$PAGE_OWNER'" >&2; exit 2 ;;
esac
case ${ACCEL:-tcg} in
    tcg) accel=(-accel tcg,thread=multi -cpu max) ;;
    kvm) accel=(-enable-kvm -cpu host,-arch-capabilities) ;;
    *) echo "run.sh: ACCEL must be tcg or kvm, not '$ACCEL'" >&2; exit 2 ;;
esac
qemu-system-x86_64 "${accel[@]}" -smp 2 -m "$mem" -machine pc \
    -kernel "$kernel" \
    -append "root=/dev/vda rw init=/probe/guest-init.sh${owner} transparent_hugepage=never console=ttyS0 panic=1" \
    -drive file="$image",if=virtio,format=raw \
    -display none -monitor none -serial file:"$out/console.txt" -no-reboot
mnt=$(mktemp -d)
mount -o loop "$image" "$mnt"   # read-write: replays the journal if the guest left one
cp -r "$mnt/results/." "$out/"
umount "$mnt"
rmdir "$mnt"
echo "results: $out"
