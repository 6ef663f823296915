/* tlbhog: a TLB-hungry test program for the live agent (issue 22).
 *
 * Maps SIZE_MIB of anonymous memory without huge-page advice (under THP "madvise" it
 * stays on 4 KB pages unless something collapses it), writes every page, builds a random
 * cyclic pointer chain over the hot set (the top HOT_PERCENT of the buffer: hot data at
 * high addresses), then follows the chain: dependent random loads, one a cache line.
 * Every REPORT_MS it prints the loads per second of the last interval, so the effect of
 * a collapse mid-run shows as a rise.
 *
 * usage: tlbhog SIZE_MIB HOT_PERCENT SECONDS [high|low]
 * With "low" the hot set is the bottom HOT_PERCENT instead (what an agent that sees only
 * population cannot tell from the top).
 * Prints "ready ADDR" (the buffer's start) on stdout once the chain is built.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s SIZE_MIB HOT_PERCENT SECONDS [high|low]\n", argv[0]);
        return 2;
    }
    int low = argc == 5 && argv[4][0] == 'l';
    if (argc == 5 && !low && argv[4][0] != 'h') {
        fprintf(stderr, "tlbhog: the hot set is high or low, not %s\n", argv[4]);
        return 2;
    }
    size_t bytes = (size_t)atol(argv[1]) << 20;
    int hot_pct = atoi(argv[2]);
    double seconds = atof(argv[3]);
    if (bytes == 0 || hot_pct <= 0 || hot_pct > 100 || seconds <= 0) {
        fprintf(stderr, "tlbhog: bad arguments\n");
        return 2;
    }
    char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) { perror("mmap"); return 1; }
    for (size_t i = 0; i < bytes; i += 4096) buf[i] = 1;
    /* The hot set: whole cache lines in the top (or bottom) hot_pct of the buffer. */
    size_t hot_bytes = bytes / 100 * hot_pct;
    size_t lines = hot_bytes / 64;
    char *hot = low ? buf : buf + (bytes - lines * 64);
    uint32_t *perm = malloc(lines * sizeof *perm);
    if (!perm) { perror("malloc"); return 1; }
    for (size_t i = 0; i < lines; i++) perm[i] = i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = next() % (i + 1);
        uint32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        *(char **)(hot + (size_t)perm[i] * 64) = hot + (size_t)perm[(i + 1) % lines] * 64;
    free(perm);
    printf("ready %p\n", (void *)buf);
    fflush(stdout);
    char *p = hot + 0;
    p = *(char **)p;
    double start = now(), last = start;
    uint64_t n = 0, last_n = 0;
    for (;;) {
        for (int k = 0; k < 100000; k++) p = *(char **)p;
        n += 100000;
        double t = now();
        if (t - last >= 1.0) {
            printf("t=%.1f loads/s=%.0f\n", t - start, (n - last_n) / (t - last));
            fflush(stdout);
            last = t; last_n = n;
        }
        if (t - start >= seconds) break;
    }
    printf("done loads=%llu seconds=%.3f loads/s=%.0f sink=%p\n",
           (unsigned long long)n, now() - start, n / (now() - start), (void *)p);
    return 0;
}
