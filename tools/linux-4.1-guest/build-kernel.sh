#!/usr/bin/env bash
# Build the paper's kernel (Linux 4.1) for a KVM guest with today's Debian 12 toolchain
# (gcc 12.2, binutils 2.40).
#
#   build-kernel.sh TREE
#
# TREE: a Linux 4.1 source tree. The one used for docs/kbuild-measurement.md ("Linux
# 4.1 itself") is github.com/SDSIndustries/linux-4.1 (Microchip's linux4sam 5.1 tree,
# `4.1.0-linux4sam_5.1`, exported without its committed build products); see README.md
# for what was checked against mainline 4.1.
#
# Four changes let 4.1 build and boot with this toolchain, none touching what the
# kernel does once it runs; each is what mainline did later:
# - include/linux/compiler-gcc12.h, a copy of compiler-gcc5.h (4.1 includes
#   compiler-gcc<major>.h and knows majors 3-5; 4.2 merged them into one header);
# - -fno-PIE in KBUILD_CFLAGS and KBUILD_AFLAGS (Debian's gcc makes PIE by default;
#   mainline added the same flag in 4.9, commit 8ae94224c9d7);
# - `-z max-page-size=0x200000` when linking vmlinux (binutils 2.31 and later default
#   to 4 KB, so file offsets stop matching load addresses modulo 2 MB and the 4.1
#   decompressor overwrites itself while it places the kernel: a triple fault right
#   after "Parsing ELF..."; mainline 4.16 added the flag);
# - `-Wa,-mrelax-relocations=no` for the decompressor (binutils 2.26 relaxes GOTPCREL
#   relocations, which it cannot relocate; mainline 4.6 did the same).
# The configuration is x86_64_defconfig + kvmconfig, with page_owner (for mixed-block
# counts), tracing (for the mm_page_alloc_extfrag tracepoint), debugfs, THP and
# compaction, and without the function tracer (its mcount tooling predates the
# toolchain).
set -euo pipefail
tree=$1
cd "$tree"
[ -f include/linux/compiler-gcc5.h ] || { echo "build-kernel.sh: $tree is not a Linux 4.1 tree" >&2; exit 2; }
cp -n include/linux/compiler-gcc5.h include/linux/compiler-gcc12.h
grep -q -- '-fno-common -fno-PIE' Makefile ||
    sed -i 's/^\(\t\t   -fno-strict-aliasing -fno-common\) \\$/\1 -fno-PIE \\/' Makefile
grep -q '^KBUILD_AFLAGS   := -D__ASSEMBLY__ -fno-PIE' Makefile ||
    sed -i 's/^KBUILD_AFLAGS   := -D__ASSEMBLY__$/KBUILD_AFLAGS   := -D__ASSEMBLY__ -fno-PIE/' Makefile
grep -q -- '-fno-common -fno-PIE' Makefile || { echo "build-kernel.sh: could not add -fno-PIE" >&2; exit 1; }
grep -q 'max-page-size=0x200000' arch/x86/Makefile ||
    sed -i 's/^\(        BITS := 64\)$/\1\n        LDFLAGS_vmlinux += -z max-page-size=0x200000/' arch/x86/Makefile
grep -q 'max-page-size=0x200000' arch/x86/Makefile || { echo "build-kernel.sh: could not set max-page-size" >&2; exit 1; }
grep -q 'mrelax-relocations=no' arch/x86/boot/compressed/Makefile ||
    sed -i 's/^\(KBUILD_CFLAGS += -mno-mmx -mno-sse\)$/\1\nKBUILD_CFLAGS += -Wa,-mrelax-relocations=no/' \
        arch/x86/boot/compressed/Makefile
grep -q 'mrelax-relocations=no' arch/x86/boot/compressed/Makefile || { echo "build-kernel.sh: could not patch the decompressor's flags" >&2; exit 1; }
# The linux4sam tree has build products committed (objects, System.map): start clean.
make mrproper
make x86_64_defconfig
make kvmconfig
./scripts/config -e PAGE_OWNER -e DEBUG_FS -e FTRACE -e EVENT_TRACING -e TRACING \
    -e PROC_PAGE_MONITOR -e VIRTIO_BLK -e VIRTIO_PCI -e EXT4_FS -e DEVTMPFS \
    -e DEVTMPFS_MOUNT -e TRANSPARENT_HUGEPAGE -e COMPACTION -e MIGRATION \
    -e SERIAL_8250_CONSOLE -d CC_STACKPROTECTOR_STRONG -e CC_STACKPROTECTOR_NONE \
    -d FUNCTION_TRACER -d FUNCTION_GRAPH_TRACER -d STACK_TRACER -d DYNAMIC_FTRACE
make olddefconfig
make -j"$(nproc)" bzImage
echo "kernel: $tree/arch/x86/boot/bzImage"
