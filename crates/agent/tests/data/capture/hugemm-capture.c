/* The process whose /proc files tests/data holds: one 64 MiB anonymous mapping, 2 MiB
 * aligned, advised, touched and protected region by region (see capture.py for the
 * layout), plus a deleted file mapping whose name has spaces. Prints its layout, then
 * waits on stdin so capture.py can read its /proc files. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define MIB (1UL << 20)
#define REGION (2 * MIB)

static void must(int ok, const char *what) {
	if (!ok) { perror(what); _exit(1); }
}

int main(void) {
	size_t len = 64 * MIB;
	char *raw = mmap(NULL, len + REGION, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	must(raw != MAP_FAILED, "mmap");
	char *p = (char *)(((uintptr_t)raw + REGION - 1) & ~(uintptr_t)(REGION - 1));
	if (p > raw) munmap(raw, p - raw);
	if (p + len < raw + len + REGION) munmap(p + len, raw + len + REGION - (p + len));

	must(madvise(p, 32 * MIB, MADV_HUGEPAGE) == 0, "MADV_HUGEPAGE");
	must(madvise(p + 32 * MIB, 8 * MIB, MADV_NOHUGEPAGE) == 0, "MADV_NOHUGEPAGE");
	memset(p, 1, 8 * MIB);                          /* r0-r3: huge faults */
	p[4 * REGION + 7 * 4096] = 1;                    /* r4: one touch, one huge fault */
	memset(p + 32 * MIB, 1, REGION);                 /* r16 (nh): 512 base pages */
	for (int i = 0; i < 256; i++) p[34 * MIB + i * 8192] = 1;   /* r17 (nh): every 2nd */
	for (int i = 0; i < 128; i++) p[40 * MIB + i * 16384] = 1;  /* r20: every 4th */
	memset(p + 42 * MIB, 1, REGION);                 /* r21: 512 base pages */
	memset(p + 44 * MIB, 1, REGION);                 /* r22: collapsed below */
	must(madvise(p + 44 * MIB, REGION, MADV_COLLAPSE) == 0, "MADV_COLLAPSE");
	volatile char sink = 0;
	for (int i = 0; i < 512; i++) sink += p[46 * MIB + i * 4096]; /* r23: zero page reads */
	must(mprotect(p + 48 * MIB, 4 * MIB, PROT_READ) == 0, "mprotect");  /* r24-r25 */

	const char *path = "/tmp/hugemm capture file";
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	must(fd >= 0, "open");
	must(ftruncate(fd, 3 * 4096) == 0, "ftruncate");
	char *f = mmap(NULL, 3 * 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	must(f != MAP_FAILED, "mmap file");
	sink += f[0];
	unlink(path);

	printf("%d %lx %lx\n", getpid(), (unsigned long)p, (unsigned long)f);
	fflush(stdout);
	char c;
	(void)read(0, &c, 1);
	return sink == 42;
}
