#!/usr/bin/env bash
# Assemble the guest's disk: a Debian 12 root (debootstrap, with the build tools), the
# probes in /probe, the kernel tree to build and the settings, in an ext4 image that
# Linux 4.1 can mount.
#
#   make-image.sh ROOTFS IMAGE [SIZE]
#
# ROOTFS: a `debootstrap --variant=minbase --include=gcc,make,flex,bison,bc,libelf-dev,
# libssl-dev,xz-utils,python3,procps,kmod,cpio,perl,libc6-dev,binutils,e2fsprogs
# bookworm ROOTFS` folder. Settings for guest-init.sh are read from ./settings if present.
#
# The tree built by WORKLOAD=kernel is LINUX_SRC, a tarball with one top folder
# (default: Debian's linux-source-6.1, /usr/src/linux-source-6.1.tar.xz from `apt-get
# install linux-source-6.1`). For the paper's own era, pack the Linux 4.1 tree that
# build-kernel.sh patched, after `make mrproper` (README.md, "A real build").
set -euo pipefail
root=$1 image=$2 size=${3:-24G}
here=$(cd "$(dirname "$0")" && pwd)
probes=$here/../kbuild-probe
src=${LINUX_SRC:-/usr/src/linux-source-6.1.tar.xz}
[ -d "$root/usr/bin" ] || { echo "make-image.sh: $root is not a debootstrapped root" >&2; exit 2; }
[ -f "$src" ] || { echo "make-image.sh: kernel tree $src missing (apt-get install linux-source-6.1, or set LINUX_SRC)" >&2; exit 2; }
mkdir -p "$root/probe" "$root/results" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/run"
cp "$here/guest-init.sh" "$here/owner.py" "$probes/taint.py" "$probes/probe.py" \
   "$probes/extfrag.py" "$root/probe/"
cp "$src" "$root/probe/linux-source.tar.xz"
gcc -O2 -Wall -o "$root/probe/kbuild-synth" "$here/kbuild-synth.c"
rm -f "$root/probe/settings"
if [ -f "$here/settings" ]; then cp "$here/settings" "$root/probe/settings"; fi
rm -f "$image"
# Linux 4.1 predates orphan_file and metadata_csum_seed (Debian 12's mke2fs defaults).
mkfs.ext4 -q -F -L guest -O ^orphan_file,^metadata_csum_seed,^metadata_csum \
    -d "$root" "$image" "$size"
echo "image: $image"
