/*
 * kbuild-synth: the model's kernel build (crates/workload/src/kbuild.rs) as real
 * processes and files, to run on a real kernel.
 *
 * A real compiler costs too much under software emulation (gcc runs about 19 times
 * slower in this project's QEMU/TCG guest than on its host), so this program does what
 * the model's `KernelBuild` says a build does, and nothing else: `jobs` workers share the
 * compilation units; each unit forks a process (the compiler) that reads its own source
 * file and `header_reads` headers from a shared pool through the page cache, maps and
 * touches an anonymous heap of a size drawn uniformly in [heap_min, heap_max], sleeps
 * `compute_ms`, writes a temporary file of the object's size and deletes it, writes its
 * object file (which stays), unmaps its heap and exits. The kernel's own allocations
 * (task and mm structures, page tables, kernel stacks, dentries, inodes, page-cache tree
 * nodes) are whatever the real kernel makes of that: that is the point of running it.
 *
 *   kbuild-synth setup DIR UNITS SOURCE_BYTES HEADERS HEADER_BYTES
 *   kbuild-synth build DIR JOBS UNITS HEADERS HEADER_READS OBJECT_BYTES HEAP_MIN HEAP_MAX
 *                      COMPUTE_MS SEED
 *   kbuild-synth clean DIR UNITS
 *
 * Sizes in bytes; SOURCE_BYTES and OBJECT_BYTES are totals over the units, as in the
 * model's configuration (`source_size`, `object_size`).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define CHUNK (64 * 1024)

static char buf[CHUNK];

static void die(const char *what, const char *path)
{
	fprintf(stderr, "kbuild-synth: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static uint64_t number(const char *s, const char *name)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0') {
		fprintf(stderr, "kbuild-synth: %s must be a whole number, got '%s'\n", name, s);
		exit(2);
	}
	return v;
}

/* splitmix64: a unit's own stream, so that each unit's choices depend on SEED and its
 * index only, not on which worker ran it or when. */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void write_file(const char *path, uint64_t bytes)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("cannot create", path);
	while (bytes > 0) {
		size_t n = bytes < CHUNK ? bytes : CHUNK;
		if (write(fd, buf, n) != (ssize_t)n)
			die("cannot write", path);
		bytes -= n;
	}
	if (close(fd) < 0)
		die("cannot close", path);
}

static void read_file(const char *path, uint64_t bytes)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die("cannot open", path);
	while (bytes > 0) {
		ssize_t n = read(fd, buf, bytes < CHUNK ? bytes : CHUNK);
		if (n < 0)
			die("cannot read", path);
		if (n == 0)
			break;
		bytes -= (uint64_t)n;
	}
	close(fd);
}

static void setup(const char *dir, uint64_t units, uint64_t source_bytes, uint64_t headers,
		  uint64_t header_bytes)
{
	char path[4096];
	uint64_t per_unit = source_bytes / units > PAGE ? source_bytes / units : PAGE;
	snprintf(path, sizeof path, "%s/src", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/hdr", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/obj", dir);
	mkdir(path, 0755);
	memset(buf, 'x', sizeof buf);
	for (uint64_t u = 0; u < units; u++) {
		snprintf(path, sizeof path, "%s/src/%06llu.c", dir, (unsigned long long)u);
		write_file(path, per_unit);
	}
	for (uint64_t h = 0; h < headers; h++) {
		snprintf(path, sizeof path, "%s/hdr/%06llu.h", dir, (unsigned long long)h);
		write_file(path, header_bytes);
	}
}

struct build {
	const char *dir;
	uint64_t jobs, units, headers, header_reads, object_bytes, heap_min, heap_max;
	uint64_t compute_ms, seed;
};

/* One compilation unit, in the forked compiler process. */
static void unit(const struct build *b, uint64_t u)
{
	char path[4096];
	uint64_t rng = b->seed * 1000003ULL + u;
	uint64_t object = b->object_bytes / b->units > PAGE ? b->object_bytes / b->units : PAGE;
	uint64_t span = b->heap_max - b->heap_min + 1;
	uint64_t heap = (b->heap_min + mix(&rng) % span + PAGE - 1) & ~(PAGE - 1);

	snprintf(path, sizeof path, "%s/src/%06llu.c", b->dir, (unsigned long long)u);
	read_file(path, UINT64_MAX);
	for (uint64_t i = 0; i < b->header_reads && b->headers > 0; i++) {
		snprintf(path, sizeof path, "%s/hdr/%06llu.h", b->dir,
			 (unsigned long long)(mix(&rng) % b->headers));
		read_file(path, UINT64_MAX);
	}
	char *p = mmap(NULL, heap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("cannot map the heap of", "a unit");
	for (uint64_t off = 0; off < heap; off += PAGE)
		p[off] = 1;
	struct timespec t = { (time_t)(b->compute_ms / 1000), (long)(b->compute_ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
	snprintf(path, sizeof path, "%s/obj/%06llu.s", b->dir, (unsigned long long)u);
	write_file(path, object);
	unlink(path);
	snprintf(path, sizeof path, "%s/obj/%06llu.o", b->dir, (unsigned long long)u);
	write_file(path, object);
	munmap(p, heap);
}

static int wait_all(void)
{
	int status, failed = 0;
	while (wait(&status) > 0)
		failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	return failed;
}

static int build(const struct build *b)
{
	memset(buf, 'o', sizeof buf);
	for (uint64_t j = 0; j < b->jobs; j++) {
		pid_t w = fork();
		if (w < 0)
			die("cannot fork", "a worker");
		if (w > 0)
			continue;
		for (uint64_t u = j; u < b->units; u += b->jobs) {
			pid_t c = fork();
			if (c < 0)
				die("cannot fork", "a unit");
			if (c == 0) {
				unit(b, u);
				_exit(0);
			}
			if (wait_all())
				_exit(1);
		}
		_exit(0);
	}
	return wait_all();
}

static void clean(const char *dir, uint64_t units)
{
	char path[4096];
	for (uint64_t u = 0; u < units; u++) {
		snprintf(path, sizeof path, "%s/obj/%06llu.o", dir, (unsigned long long)u);
		if (unlink(path) < 0 && errno != ENOENT)
			die("cannot delete", path);
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kbuild-synth setup DIR UNITS SOURCE_BYTES HEADERS HEADER_BYTES\n"
		"       kbuild-synth build DIR JOBS UNITS HEADERS HEADER_READS OBJECT_BYTES"
		" HEAP_MIN HEAP_MAX COMPUTE_MS SEED\n"
		"       kbuild-synth clean DIR UNITS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "setup") == 0 && argc == 7) {
		uint64_t units = number(argv[3], "UNITS");
		if (units == 0) {
			fprintf(stderr, "kbuild-synth: UNITS must be at least 1\n");
			return 2;
		}
		setup(argv[2], units, number(argv[4], "SOURCE_BYTES"), number(argv[5], "HEADERS"),
		      number(argv[6], "HEADER_BYTES"));
		return 0;
	}
	if (strcmp(argv[1], "build") == 0 && argc == 12) {
		struct build b = {
			.dir = argv[2],
			.jobs = number(argv[3], "JOBS"),
			.units = number(argv[4], "UNITS"),
			.headers = number(argv[5], "HEADERS"),
			.header_reads = number(argv[6], "HEADER_READS"),
			.object_bytes = number(argv[7], "OBJECT_BYTES"),
			.heap_min = number(argv[8], "HEAP_MIN"),
			.heap_max = number(argv[9], "HEAP_MAX"),
			.compute_ms = number(argv[10], "COMPUTE_MS"),
			.seed = number(argv[11], "SEED"),
		};
		if (b.jobs == 0 || b.units == 0 || b.heap_max < b.heap_min) {
			fprintf(stderr, "kbuild-synth: JOBS and UNITS must be at least 1 and"
					" HEAP_MAX at least HEAP_MIN\n");
			return 2;
		}
		return build(&b);
	}
	if (strcmp(argv[1], "clean") == 0 && argc == 4) {
		clean(argv[2], number(argv[3], "UNITS"));
		return 0;
	}
	usage();
}
