/*
 * zerobench.c - page zeroing / zero-scan / fault cost microbenchmark
 * (calibration data for the hugemm simulator; companion to tools/membench).
 *
 * Measures on the host machine:
 *   clear_*        clearing bandwidth of a pre-faulted 1 GiB buffer with
 *                  caching stores (glibc memset, rep stosb whole / per 4 KB,
 *                  64-bit store loop)
 *                  and non-temporal stores (movntdq, movnti) + sfence
 *   zscan          zero-scan bandwidth: memchr_inv-style check of every page
 *                  of an all-zero 1 GiB buffer
 *   zscan_inuse    zero-scan cost per in-use 4 KB page whose first non-zero
 *                  byte is at offset 9 (4 GiB, random and address order)
 *   interf_*       slowdown of a pointer-chasing victim on one CPU while a
 *                  thread on the other CPU zeroes memory (caching / NT
 *                  stores, 1 GB/s rate-limited or full speed)
 *   fault_*        first-touch fault cost, 2 MB THP and 4 KB pages, on
 *                  long-idle and on just-freed memory
 *
 * Build: gcc -O2 -march=x86-64-v2 -pthread -o zerobench zerobench.c
 * Run:   ./zerobench -o results.csv 2>&1 | tee results.txt   (or: make run)
 * Human-readable log and summary go to stderr, the CSV to stdout (and to
 * -o FILE if given).  See README.md for the method.
 */
#define _GNU_SOURCE
#include <emmintrin.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <xmmintrin.h>

#define KB (1ULL << 10)
#define MB (1ULL << 20)
#define GB (1ULL << 30)
#define LINE 64ULL
#define PAGE4K 4096ULL
#define PAGE2M (2ULL * MB)
#define MAX_REPS 64
#define MAX_CPUS 64
#define NOINLINE __attribute__((noinline, noipa))
#define LOG(...) fprintf(stderr, __VA_ARGS__)

typedef uint64_t __attribute__((may_alias)) u64a;

static volatile uint64_t g_sink;

/* ------------------------------------------------------------------ util */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/*
 * As in membench: timed regions use this thread's CPU time (user+sys, not
 * counting time spent preempted); wall time is accumulated alongside so the
 * wall/cpu ratio of each row can be reported (1.00 = undisturbed).
 */
typedef struct {
    double w, c;
} tpt;
static double g_wall_acc, g_cpu_acc;
static tpt tbegin(void)
{
    tpt t;
    t.w = now_ns();
    t.c = cpu_now_ns();
    return t;
}
static double tend(tpt t)
{
    double c = cpu_now_ns() - t.c;
    double w = now_ns() - t.w;
    g_wall_acc += w;
    g_cpu_acc += c;
    return c;
}
static double take_wall_ratio(void)
{
    double r = g_cpu_acc > 0 ? g_wall_acc / g_cpu_acc : 0;
    g_wall_acc = g_cpu_acc = 0;
    return r;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    double med, min, max;
} stats_t;

static stats_t stats_of(const double *v, int n)
{
    double tmp[MAX_REPS];
    stats_t s = {0, 0, 0};
    if (n <= 0)
        return s;
    memcpy(tmp, v, (size_t)n * sizeof(double));
    qsort(tmp, (size_t)n, sizeof(double), cmp_double);
    s.min = tmp[0];
    s.max = tmp[n - 1];
    s.med = (n & 1) ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
    return s;
}

static inline uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* uniform in [0, n) (Lemire multiply-shift) */
static inline uint64_t rand_below(uint64_t *s, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)splitmix64(s) * n) >> 64);
}

static const char *fmt_size(uint64_t b, char *buf, size_t n)
{
    if (b >= GB && b % GB == 0)
        snprintf(buf, n, "%lluG", (unsigned long long)(b / GB));
    else if (b >= MB)
        snprintf(buf, n, "%lluM", (unsigned long long)(b / MB));
    else
        snprintf(buf, n, "%lluK", (unsigned long long)(b / KB));
    return buf;
}

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static void pin_self(int cpu)
{
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(cpu, &cs);
    if (sched_setaffinity(0, sizeof cs, &cs) != 0)
        perror("sched_setaffinity");
}

/* --------------------------------------------------- per-CPU busy (/proc/stat) */

typedef struct {
    unsigned long long busy[MAX_CPUS], steal[MAX_CPUS], total[MAX_CPUS];
} cpustat_t;

static void cpustat_read(cpustat_t *s)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        int cpu;
        unsigned long long u, n, sy, id, io, irq, sirq, st;
        if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9')
            continue;
        if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &u, &n, &sy, &id,
                   &io, &irq, &sirq, &st) != 9 ||
            cpu < 0 || cpu >= MAX_CPUS)
            continue;
        s->busy[cpu] = u + n + sy + irq + sirq;
        s->steal[cpu] = st;
        s->total[cpu] = u + n + sy + id + io + irq + sirq + st;
    }
    fclose(f);
}

/* percentage of time CPU `cpu` was busy (user+nice+sys+irq) between a and b */
static double cpu_busy_pct(const cpustat_t *a, const cpustat_t *b, int cpu)
{
    if (cpu < 0 || cpu >= MAX_CPUS)
        return -1;
    unsigned long long t = b->total[cpu] - a->total[cpu];
    return t ? 100.0 * (double)(b->busy[cpu] - a->busy[cpu]) / (double)t : -1;
}

static double cpu_steal_pct(const cpustat_t *a, const cpustat_t *b, int cpu)
{
    if (cpu < 0 || cpu >= MAX_CPUS)
        return -1;
    unsigned long long t = b->total[cpu] - a->total[cpu];
    return t ? 100.0 * (double)(b->steal[cpu] - a->steal[cpu]) / (double)t : -1;
}

/* ------------------------------------------------------------ buffers */

typedef struct {
    char *base; /* 2 MB-aligned usable region */
    size_t bytes;
    char *map; /* whole mapping (incl. PROT_NONE guards) */
    size_t maplen;
} buf_t;

/*
 * Same as membench: mmap bytes + 2 MB (+ 2 guard pages), put the usable
 * region on a 2 MB boundary, make the slack PROT_NONE guards (own VMA, exact
 * smaps accounting), madvise(MADV_HUGEPAGE / MADV_NOHUGEPAGE) before any
 * touch.
 */
static int buf_alloc(buf_t *b, size_t bytes, int huge)
{
    size_t maplen = bytes + PAGE2M + 2 * PAGE4K;
    char *m = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        LOG("mmap(%zu): %s\n", maplen, strerror(errno));
        return -1;
    }
    uintptr_t a = ((uintptr_t)m + PAGE4K + PAGE2M - 1) & ~(uintptr_t)(PAGE2M - 1);
    char *base = (char *)a;
    size_t front = (size_t)(base - m);
    size_t back = maplen - front - bytes;
    if (front)
        mprotect(m, front, PROT_NONE);
    if (back)
        mprotect(base + bytes, back, PROT_NONE);
    if (madvise(base, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) {
        LOG("madvise: %s\n", strerror(errno));
        munmap(m, maplen);
        return -1;
    }
    b->base = base;
    b->bytes = bytes;
    b->map = m;
    b->maplen = maplen;
    return 0;
}

static void buf_free(buf_t *b)
{
    if (b->map)
        munmap(b->map, b->maplen);
    memset(b, 0, sizeof(*b));
}

/* AnonHugePages of the VMAs overlapping [addr, addr+len), as a fraction of len */
static double huge_fraction(const void *addr, size_t len)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1.0;
    uintptr_t a = (uintptr_t)addr, e = a + len;
    char line[512];
    int in = 0;
    unsigned long long total_kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (line[0] != ' ' && strchr(line, '-') && sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            in = (lo < e && hi > a);
            continue;
        }
        if (in && strncmp(line, "AnonHugePages:", 14) == 0) {
            unsigned long long kb = 0;
            sscanf(line + 14, "%llu", &kb);
            total_kb += kb;
        }
    }
    fclose(f);
    double fr = (double)(total_kb * KB) / (double)len;
    return fr > 1.0 ? 1.0 : fr;
}

/* ------------------------------------------------------------ clear kernels */

/* n is a multiple of 64 and p is 64-byte aligned for all kernels */

static NOINLINE void clear_memset(char *p, size_t n)
{
    memset(p, 0, n);
    __asm__ volatile("" : : "r"(p) : "memory");
}

/* what x86 clear_page_erms() does */
static NOINLINE void clear_rep_stosb(char *p, size_t n)
{
    __asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0) : "memory");
}

/* rep stosb issued one 4 KB page at a time, as a kernel loop of
 * clear_page_erms() calls (e.g. clearing a huge page 4 KB by 4 KB) does */
static NOINLINE void clear_rep_stosb_4k(char *p, size_t n)
{
    for (size_t off = 0; off < n; off += PAGE4K) {
        char *d = p + off;
        size_t c = PAGE4K;
        __asm__ volatile("rep stosb" : "+D"(d), "+c"(c) : "a"(0) : "memory");
    }
}

/* explicit 64-bit stores, 8 per line (like x86 clear_page_orig()); volatile
 * keeps gcc from turning the loop into a memset call or vectorising it */
static NOINLINE void clear_store64(char *p, size_t n)
{
    volatile uint64_t *q = (volatile uint64_t *)p;
    for (size_t i = 0; i < n / 8; i += 8) {
        q[i + 0] = 0; q[i + 1] = 0; q[i + 2] = 0; q[i + 3] = 0;
        q[i + 4] = 0; q[i + 5] = 0; q[i + 6] = 0; q[i + 7] = 0;
    }
}

/* non-temporal 16-byte stores (movntdq), 4 per line, then sfence */
static NOINLINE void clear_nt128(char *p, size_t n)
{
    __m128i z = _mm_setzero_si128();
    for (size_t i = 0; i < n; i += 64) {
        _mm_stream_si128((__m128i *)(p + i), z);
        _mm_stream_si128((__m128i *)(p + i + 16), z);
        _mm_stream_si128((__m128i *)(p + i + 32), z);
        _mm_stream_si128((__m128i *)(p + i + 48), z);
    }
    _mm_sfence();
}

/* non-temporal 8-byte stores (movnti), 8 per line, then sfence */
static NOINLINE void clear_nt64(char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64) {
        long long *q = (long long *)(p + i);
        _mm_stream_si64(q + 0, 0); _mm_stream_si64(q + 1, 0);
        _mm_stream_si64(q + 2, 0); _mm_stream_si64(q + 3, 0);
        _mm_stream_si64(q + 4, 0); _mm_stream_si64(q + 5, 0);
        _mm_stream_si64(q + 6, 0); _mm_stream_si64(q + 7, 0);
    }
    _mm_sfence();
}

typedef void (*clear_fn)(char *, size_t);
typedef struct {
    const char *name;
    clear_fn fn;
    int nt;
} clear_kind;

static const clear_kind g_clears[] = {
    {"memset", clear_memset, 0},
    {"rep_stosb", clear_rep_stosb, 0},
    {"rep_stosb_4K", clear_rep_stosb_4k, 0},
    {"store64", clear_store64, 0},
    {"nt128", clear_nt128, 1},
    {"nt64", clear_nt64, 1},
};
#define N_CLEARS (int)(sizeof g_clears / sizeof g_clears[0])

/* ------------------------------------------------------------ zero scan */

/*
 * memchr_inv(p, 0, n) for a page-aligned p and n a multiple of 8, written
 * like the kernel's lib/string.c version for that case: compare 8 bytes at a
 * time, and on the first non-zero word find the byte inside it.  Returns the
 * address of the first non-zero byte or NULL.  (gcc 12 does not vectorise an
 * early-exit loop, so this stays one 8-byte load per iteration.)
 */
static inline const char *memchr_inv0(const char *p, size_t n)
{
    const u64a *w = (const u64a *)p;
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++) {
        if (w[i]) {
            const char *b = (const char *)(w + i);
            for (int k = 0; k < 8; k++)
                if (b[k])
                    return b + k;
        }
    }
    return NULL;
}

/* scan every 4 KB page of [p, p+n); returns number of non-zero pages */
static NOINLINE uint64_t scan_pages_seq(const char *p, size_t n)
{
    uint64_t nz = 0;
    for (size_t off = 0; off < n; off += PAGE4K)
        nz += memchr_inv0(p + off, PAGE4K) != NULL;
    return nz;
}

/* reference: plain read of [p, p+n) (OR of all words, 4 accumulators, no
 * early exit) - the read bandwidth the scan could reach if memory bound */
static NOINLINE uint64_t read_or(const char *p, size_t n)
{
    const u64a *w = (const u64a *)p;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (size_t i = 0; i < n / 8; i += 4) {
        a0 |= w[i];
        a1 |= w[i + 1];
        a2 |= w[i + 2];
        a3 |= w[i + 3];
    }
    return a0 | a1 | a2 | a3;
}

/*
 * Latency probe for "where are these lines now?": dependent loads over the
 * lines of [p, p+bytes) in the random order perm[] (one load per line).  The
 * lines hold zeros, so the loaded value v is 0, but adding it to the next
 * address makes every load wait for the previous one.  Returns ns per load.
 */
static NOINLINE double line_latency(const char *p, size_t bytes, const uint32_t *perm)
{
    uint64_t n = bytes / LINE, v = 0;
    double t0 = now_ns();
    for (uint64_t i = 0; i < n; i++)
        v = *(const u64a *)(p + (uint64_t)perm[i] * LINE + v);
    double t = now_ns() - t0;
    g_sink += v;
    return t / (double)n;
}

/* scan the pages listed in idx[]; returns the sum of first-non-zero offsets */
static NOINLINE uint64_t scan_pages_idx(const char *base, const uint32_t *idx, uint64_t n)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *pg = base + (uint64_t)idx[i] * PAGE4K;
        const char *r = memchr_inv0(pg, PAGE4K);
        sum += r ? (uint64_t)(r - pg) : PAGE4K;
    }
    return sum;
}

/* ------------------------------------------------------------ pointer chase */

static NOINLINE void *chase(void *p, uint64_t n)
{
    void **q = (void **)p;
    for (uint64_t i = 0; i < n; i += 8) {
        q = (void **)*q; q = (void **)*q; q = (void **)*q; q = (void **)*q;
        q = (void **)*q; q = (void **)*q; q = (void **)*q; q = (void **)*q;
    }
    return q;
}

/* ------------------------------------------------------------ results */

typedef struct {
    char test[24];
    char variant[24];
    char page[8];
    uint64_t bytes;
    char unit[12];
    stats_t s;
    int reps;
    double huge;
    double wall_ratio;
    double obusy; /* busy % of the other CPU (or the zeroer's CPU) */
    char extra[112];
} result_t;

static result_t g_res[256];
static int g_nres;

static result_t *add_result(const char *test, const char *variant, const char *page,
                            uint64_t bytes, const char *unit, const double *v, int n, double hf,
                            double obusy, const char *extra)
{
    result_t *r = &g_res[g_nres++];
    snprintf(r->test, sizeof r->test, "%s", test);
    snprintf(r->variant, sizeof r->variant, "%s", variant);
    snprintf(r->page, sizeof r->page, "%s", page);
    r->bytes = bytes;
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    r->s = stats_of(v, n);
    r->reps = n;
    r->huge = hf;
    r->wall_ratio = take_wall_ratio();
    r->obusy = obusy;
    snprintf(r->extra, sizeof r->extra, "%s", extra ? extra : "");
    return r;
}

static void print_reps(const char *what, const double *v, int n, const char *unit)
{
    LOG("    %-22s", what);
    for (int i = 0; i < n; i++)
        LOG(" %.2f", v[i]);
    LOG(" %s\n", unit);
}

/* ------------------------------------------------------------ config */

static int g_reps = 7;
static int g_cpu = -1;       /* main thread (single-threaded tests) */
static int g_other_cpu = -1; /* the CPU we are not pinned to */
static int g_vcpu = 0, g_zcpu = 1;
static uint64_t g_bw_bytes = 1 * GB;
static uint64_t g_inuse_bytes = 4 * GB;
static uint64_t g_zbuf_bytes = 1 * GB;
static uint64_t g_fault_bytes = 1 * GB;
static double g_victim_s = 0.4; /* victim time per measurement (alone) */
static double g_zrate = 1.0;    /* GB/s for the rate-limited zeroer */
static int g_idle_s = 5;        /* idle time before "long-idle" fault reps */
static int g_fault_reps = 5;

/* ------------------------------------------------------------ 1-3: bandwidth */

static void bw_tests(int huge)
{
    const char *pg = huge ? "2M" : "4K";
    char sz[32];
    fmt_size(g_bw_bytes, sz, sizeof sz);
    LOG("\n== clear / zero-scan bandwidth, %s buffer, %s pages (%s) ==\n", sz,
        huge ? "THP" : "4 KB", huge ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE");
    buf_t b;
    if (buf_alloc(&b, g_bw_bytes, huge) != 0)
        return;
    double t0 = now_ns();
    long f0 = minflt();
    memset(b.base, 1, g_bw_bytes); /* pre-fault (non-zero, so every store below matters) */
    double tf = now_ns() - t0;
    long nf = minflt() - f0;
    double hf = huge_fraction(b.base, g_bw_bytes);
    LOG("  pre-fault: %.1f ms, %ld minor faults, AnonHugePages fraction %.4f\n", tf / 1e6, nf, hf);
    if (huge && hf < 0.95)
        LOG("  WARNING: only %.1f%% of the THP buffer is backed by huge pages\n", hf * 100);

    double v[MAX_REPS];
    char extra[112];
    /* random order of the lines of the last TAIL bytes, for line_latency() */
    enum { TAIL = 256 * 1024 };
    static uint32_t tail_perm[TAIL / 64];
    uint64_t rs = 0x7a11ULL;
    for (uint32_t i = 0; i < TAIL / 64; i++)
        tail_perm[i] = i;
    for (uint32_t i = TAIL / 64 - 1; i > 0; i--) {
        uint32_t j = (uint32_t)rand_below(&rs, i + 1), t = tail_perm[i];
        tail_perm[i] = tail_perm[j];
        tail_perm[j] = t;
    }
    for (int k = 0; k < N_CLEARS; k++) {
        const clear_kind *ck = &g_clears[k];
        g_clears[k].fn(b.base, g_bw_bytes); /* warm-up, not recorded */
        cpustat_t s0, s1;
        cpustat_read(&s0);
        take_wall_ratio();
        double rb[MAX_REPS], rh[MAX_REPS];
        for (int r = 0; r < g_reps; r++) {
            tpt t = tbegin();
            ck->fn(b.base, g_bw_bytes);
            v[r] = (double)g_bw_bytes / tend(t); /* bytes/ns == GB/s */
            /* untimed diagnostic: load latency of the last TAIL bytes the
             * clear wrote (rb) and of the same lines once more right after
             * (rh, now surely cached): did the clear leave them in cache? */
            rb[r] = line_latency(b.base + g_bw_bytes - TAIL, TAIL, tail_perm);
            rh[r] = line_latency(b.base + g_bw_bytes - TAIL, TAIL, tail_perm);
        }
        cpustat_read(&s1);
        g_sink += (uint64_t)b.base[g_bw_bytes / 2];
        char what[48];
        snprintf(what, sizeof what, "clear %s GB/s:", ck->name);
        print_reps(what, v, g_reps, "");
        LOG("      (cpu%d busy %.0f%%, own cpu%d steal %.1f%%; random dependent loads over the "
            "last 256 KiB written: %.1f ns/line, again right after: %.1f ns/line)\n",
            g_other_cpu, cpu_busy_pct(&s0, &s1, g_other_cpu), g_cpu,
            cpu_steal_pct(&s0, &s1, g_cpu), stats_of(rb, g_reps).med, stats_of(rh, g_reps).med);
        snprintf(extra, sizeof extra, "%s stores; GB=1e9 bytes written",
                 ck->nt ? "non-temporal" : "caching");
        add_result(ck->nt ? "clear_nt" : "clear_cached", ck->name, pg, g_bw_bytes, "GB/s", v,
                   g_reps, hf, cpu_busy_pct(&s0, &s1, g_other_cpu), extra);
        snprintf(extra, sizeof extra, "latency of the last 256 KiB written; 2nd pass %.1f ns",
                 stats_of(rh, g_reps).med);
        add_result("clear_tail_lat", ck->name, pg, TAIL, "ns/line", rb, g_reps, hf, -1, extra);
    }

    /* 3. zero scan: buffer is all zero now (last clear); read every page */
    clear_store64(b.base, g_bw_bytes);
    uint64_t nz = scan_pages_seq(b.base, g_bw_bytes); /* warm-up */
    cpustat_t s0, s1;
    cpustat_read(&s0);
    take_wall_ratio();
    for (int r = 0; r < g_reps; r++) {
        tpt t = tbegin();
        nz += scan_pages_seq(b.base, g_bw_bytes);
        v[r] = (double)g_bw_bytes / tend(t);
    }
    cpustat_read(&s1);
    if (nz)
        LOG("  WARNING: zero scan found %llu non-zero pages\n", (unsigned long long)nz);
    print_reps("zero-scan GB/s:", v, g_reps, "");
    add_result("zscan", "memchr_inv", pg, g_bw_bytes, "GB/s", v, g_reps, hf,
               cpu_busy_pct(&s0, &s1, g_other_cpu),
               "all-zero pages, 8 B/compare, whole page read; GB=1e9 bytes read");

    /* reference 1: the same scan over a 256 KiB (L2-resident) part of the
     * buffer, repeated to the same byte count - instruction-bound rate */
    const size_t l2part = 256 * KB;
    nz = scan_pages_seq(b.base, l2part);
    cpustat_read(&s0);
    for (int r = 0; r < g_reps; r++) {
        tpt t = tbegin();
        for (size_t done = 0; done < g_bw_bytes; done += l2part)
            nz += scan_pages_seq(b.base, l2part);
        v[r] = (double)g_bw_bytes / tend(t);
    }
    cpustat_read(&s1);
    print_reps("zero-scan 256K (L2) GB/s:", v, g_reps, "");
    add_result("zscan", "memchr_inv_L2", pg, 256 * KB, "GB/s", v, g_reps, hf,
               cpu_busy_pct(&s0, &s1, g_other_cpu),
               "same scan, 256 KiB region re-scanned (cache-resident reference)");

    /* reference 2: plain read (OR-reduce, no early exit) of the whole buffer */
    uint64_t acc = read_or(b.base, g_bw_bytes);
    cpustat_read(&s0);
    for (int r = 0; r < g_reps; r++) {
        tpt t = tbegin();
        acc |= read_or(b.base, g_bw_bytes);
        v[r] = (double)g_bw_bytes / tend(t);
    }
    cpustat_read(&s1);
    g_sink += acc + nz;
    print_reps("plain read (OR) GB/s:", v, g_reps, "");
    add_result("read_ref", "or_reduce", pg, g_bw_bytes, "GB/s", v, g_reps, hf,
               cpu_busy_pct(&s0, &s1, g_other_cpu),
               "reference read bandwidth, 4 accumulators, no early exit");
    double hf2 = huge_fraction(b.base, g_bw_bytes);
    if (hf2 != hf)
        LOG("  note: AnonHugePages fraction changed during run: %.4f -> %.4f\n", hf, hf2);
    buf_free(&b);
}

/* ------------------------------------------------------------ 4: in-use scan */

static void inuse_scan_test(void)
{
    uint64_t bytes = g_inuse_bytes, npages = bytes / PAGE4K;
    char sz[32];
    fmt_size(bytes, sz, sizeof sz);
    LOG("\n== zero-scan of in-use 4 KB pages (first non-zero byte at offset 9), %s, "
        "MADV_NOHUGEPAGE ==\n", sz);
    buf_t b;
    if (buf_alloc(&b, bytes, 0) != 0)
        return;
    double t0 = now_ns();
    long f0 = minflt();
    for (uint64_t i = 0; i < npages; i++)
        ((volatile char *)b.base)[i * PAGE4K + 9] = 0x5a; /* bytes 0..8 stay zero */
    double tf = now_ns() - t0;
    long nf = minflt() - f0;
    double hf = huge_fraction(b.base, bytes);
    LOG("  pre-fault (write byte 9 of each page): %.1f ms, %ld minor faults, AnonHugePages "
        "fraction %.4f\n", tf / 1e6, nf, hf);

    uint32_t *idx = malloc(npages * sizeof(uint32_t));
    if (!idx) {
        perror("malloc");
        buf_free(&b);
        return;
    }
    for (int order = 0; order < 2; order++) {
        /* order 0: shuffled (Fisher-Yates); order 1: address order */
        for (uint64_t i = 0; i < npages; i++)
            idx[i] = (uint32_t)i;
        if (order == 0) {
            uint64_t rs = 0x2545F4914F6CDD1DULL;
            for (uint64_t i = npages - 1; i > 0; i--) {
                uint64_t j = rand_below(&rs, i + 1);
                uint32_t t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
            }
        }
        uint64_t sum = scan_pages_idx(b.base, idx, npages); /* warm-up */
        double v[MAX_REPS];
        cpustat_t s0, s1;
        cpustat_read(&s0);
        take_wall_ratio();
        for (int r = 0; r < g_reps; r++) {
            tpt t = tbegin();
            sum += scan_pages_idx(b.base, idx, npages);
            v[r] = tend(t) / (double)npages;
        }
        cpustat_read(&s1);
        if (sum != 9ULL * npages * (uint64_t)(g_reps + 1))
            LOG("  WARNING: offsets sum %llu, expected %llu\n", (unsigned long long)sum,
                9ULL * npages * (uint64_t)(g_reps + 1));
        const char *vn = order == 0 ? "random" : "address";
        char what[48];
        snprintf(what, sizeof what, "%s order ns/page:", vn);
        print_reps(what, v, g_reps, "");
        add_result("zscan_inuse", vn, "4K", bytes, "ns/page", v, g_reps, hf,
                   cpu_busy_pct(&s0, &s1, g_other_cpu),
                   "memchr_inv stops at byte 9 (2 words read)");
    }
    free(idx);
    buf_free(&b);
}

/* ------------------------------------------------------------ 5: interference */

typedef struct {
    char *buf;
    size_t bytes;
    int cpu;
    clear_fn fn;
    double rate; /* bytes per ns (== GB/s); 0 = unlimited */
    int stop;    /* set by victim (atomic) */
    int running; /* set by zeroer (atomic) */
    uint64_t done;
    double t_start, t_end;
    size_t off; /* persists across runs so the whole buffer is cycled */
} zeroer_t;

static void *zeroer_main(void *arg)
{
    zeroer_t *z = arg;
    pin_self(z->cpu);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    const size_t chunk = PAGE2M;
    double per_chunk = z->rate > 0 ? (double)chunk / z->rate : 0; /* ns */
    z->done = 0;
    z->t_start = now_ns();
    double next = z->t_start;
    __atomic_store_n(&z->running, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&z->stop, __ATOMIC_ACQUIRE)) {
        if (!z->fn) { /* "alone": hold the CPU without touching memory */
            _mm_pause();
            continue;
        }
        z->fn(z->buf + z->off, chunk);
        z->off += chunk;
        if (z->off >= z->bytes)
            z->off = 0;
        z->done += chunk;
        if (per_chunk > 0) {
            /* spin (not sleep) until the next 2 MB is due, so the CPU stays
             * ours and nothing else runs there in the gaps */
            next += per_chunk;
            double t = now_ns();
            if (next < t - 20e6) /* fell >20 ms behind (preempted): do not burst */
                next = t;
            while (now_ns() < next && !__atomic_load_n(&z->stop, __ATOMIC_RELAXED))
                _mm_pause();
        }
    }
    z->t_end = now_ns();
    return NULL;
}

typedef struct {
    const char *name;
    clear_fn fn; /* NULL = alone */
    double rate; /* GB/s, 0 = full speed */
} cond_t;

static void interference_test(void)
{
    static const uint64_t vsizes[] = {1 * MB, 4 * MB, 64 * MB};
    cond_t conds[] = {
        {"alone", NULL, 0},
        {"cached_1GBps", clear_store64, g_zrate},
        {"nt_1GBps", clear_nt128, g_zrate},
        {"cached_full", clear_store64, 0},
        {"nt_full", clear_nt128, 0},
    };
    const int nc = (int)(sizeof conds / sizeof conds[0]);
    char zsz[32];
    fmt_size(g_zbuf_bytes, zsz, sizeof zsz);
    LOG("\n== cache interference: victim pointer chase on cpu %d, zeroer on cpu %d "
        "(%s THP buffer, 2 MB chunks; cached = 64-bit store loop, nt = movntdq+sfence;\n"
        "   1 GB/s = spin-wait between chunks; 'alone' = a pause-loop thread holds cpu %d) ==\n",
        g_vcpu, g_zcpu, zsz, g_zcpu);

    zeroer_t z;
    memset(&z, 0, sizeof z);
    buf_t zb;
    if (buf_alloc(&zb, g_zbuf_bytes, 1) != 0)
        return;
    memset(zb.base, 1, g_zbuf_bytes);
    LOG("  zeroer buffer AnonHugePages fraction %.4f\n", huge_fraction(zb.base, g_zbuf_bytes));
    z.buf = zb.base;
    z.bytes = g_zbuf_bytes;
    z.cpu = g_zcpu;

    pin_self(g_vcpu);
    double zrate_all[8][MAX_REPS * 4];
    int nzr[8] = {0};

    for (size_t si = 0; si < sizeof vsizes / sizeof vsizes[0]; si++) {
        uint64_t bytes = vsizes[si];
        char sz[32];
        fmt_size(bytes, sz, sizeof sz);
        buf_t vb;
        uint64_t alloc = (bytes + PAGE2M - 1) & ~(PAGE2M - 1);
        if (buf_alloc(&vb, alloc, 1) != 0)
            break;
        memset(vb.base, 0, alloc);
        double hf = huge_fraction(vb.base, alloc);
        /* Sattolo cycle over every 64 B line of the first `bytes` */
        uint64_t n = bytes / LINE;
        uint32_t *nxt = malloc(n * sizeof(uint32_t));
        uint64_t rs = 0xC0FFEEULL ^ bytes;
        for (uint64_t i = 0; i < n; i++)
            nxt[i] = (uint32_t)i;
        for (uint64_t i = n - 1; i > 0; i--) {
            uint64_t j = rand_below(&rs, i);
            uint32_t t = nxt[i];
            nxt[i] = nxt[j];
            nxt[j] = t;
        }
        for (uint64_t i = 0; i < n; i++)
            *(char **)(vb.base + i * LINE) = vb.base + (uint64_t)nxt[i] * LINE;
        free(nxt);
        void *p = vb.base;
        uint64_t warm = n < 1000000 ? 1000000 : n;
        warm = (warm + 7) & ~7ULL;
        p = chase(p, warm);
        double t0 = cpu_now_ns();
        p = chase(p, warm);
        double est = (cpu_now_ns() - t0) / (double)warm;
        LOG("\n  -- victim %s (THP-advised %s region, AnonHugePages %.3f), %llu lines, "
            "%.2f s CPU time per measurement after %llu warm-up hops (first warm-up "
            "%.2f ns/load) --\n",
            sz, fmt_size(alloc, (char[32]){0}, 32), hf, (unsigned long long)n, g_victim_s,
            (unsigned long long)warm, est);

        double t[8][MAX_REPS], zr[8][MAX_REPS], ob[8][MAX_REPS], wr[8][MAX_REPS];
        double st[8][MAX_REPS], st2[8][MAX_REPS];
        for (int r = 0; r < g_reps; r++) {
            for (int c = 0; c < nc; c++) { /* conditions interleaved within each rep */
                pthread_t th;
                int started = 0;
                { /* every condition, "alone" included, runs a thread on the
                   * zeroer CPU; for "alone" it only spins with pause */
                    z.fn = conds[c].fn;
                    z.rate = conds[c].rate; /* GB/s == bytes/ns */
                    z.stop = 0;
                    z.running = 0;
                    if (pthread_create(&th, NULL, zeroer_main, &z) != 0) {
                        perror("pthread_create");
                        continue;
                    }
                    started = 1;
                    while (!__atomic_load_n(&z.running, __ATOMIC_ACQUIRE))
                        sched_yield();
                }
                p = chase(p, warm); /* re-warm under this condition */
                cpustat_t s0, s1;
                cpustat_read(&s0);
                /* time-bounded: chase in 8192-hop chunks until g_victim_s
                 * of CPU time has passed (the latency can change 10x with
                 * the condition, so a fixed hop count is not used) */
                uint64_t hops = 0;
                tpt tt = tbegin();
                do {
                    p = chase(p, 8192);
                    hops += 8192;
                } while (cpu_now_ns() - tt.c < g_victim_s * 1e9);
                double ct = tend(tt);
                wr[c][r] = (now_ns() - tt.w) / ct;
                t[c][r] = ct / (double)hops;
                cpustat_read(&s1);
                ob[c][r] = cpu_busy_pct(&s0, &s1, g_zcpu);
                st[c][r] = cpu_steal_pct(&s0, &s1, g_vcpu);
                st2[c][r] = cpu_steal_pct(&s0, &s1, g_zcpu);
                if (started) {
                    __atomic_store_n(&z.stop, 1, __ATOMIC_RELEASE);
                    pthread_join(th, NULL);
                    zr[c][r] = (double)z.done / (z.t_end - z.t_start);
                    if (conds[c].fn)
                        zrate_all[c][nzr[c]++] = zr[c][r];
                }
            }
        }
        g_sink += (uint64_t)(uintptr_t)p;

        for (int c = 0; c < nc; c++) {
            char what[64], extra[112];
            snprintf(what, sizeof what, "%s ns/load:", conds[c].name);
            print_reps(what, t[c], g_reps, "");
            double ratio[MAX_REPS];
            for (int r = 0; r < g_reps; r++)
                ratio[r] = t[c][r] / t[0][r];
            stats_t obs = stats_of(ob[c], g_reps);
            if (conds[c].fn) {
                snprintf(what, sizeof what, "%s slowdown:", conds[c].name);
                print_reps(what, ratio, g_reps, "x (vs alone, same rep)");
                snprintf(what, sizeof what, "%s zeroer GB/s:", conds[c].name);
                print_reps(what, zr[c], g_reps, "");
            }
            snprintf(what, sizeof what, "cpu%d busy%% (%s):", g_zcpu, conds[c].name);
            print_reps(what, ob[c], g_reps, "");
            snprintf(what, sizeof what, "steal%% cpu%d/cpu%d:", g_vcpu, g_zcpu);
            LOG("    %-22s", what);
            for (int r = 0; r < g_reps; r++)
                LOG(" %.0f/%.0f", st[c][r], st2[c][r]);
            LOG("\n");
            stats_t zs = stats_of(zr[c], g_reps);
            snprintf(extra, sizeof extra, "zeroer %.2f GB/s [%.2f..%.2f]", zs.med, zs.min, zs.max);
            double wrm = stats_of(wr[c], g_reps).med;
            result_t *rr = add_result("interf_ns", conds[c].name, hf > 0.5 ? "2M" : "4K", bytes,
                                      "ns/load", t[c], g_reps, hf, obs.med,
                                      conds[c].fn ? extra : "victim alone (pause-loop spinner on the zeroer CPU)");
            rr->wall_ratio = wrm;
            if (conds[c].fn) {
                rr = add_result("interf_slowdown", conds[c].name, hf > 0.5 ? "2M" : "4K", bytes,
                                "x", ratio, g_reps, hf, obs.med,
                                "per-rep ratio to 'alone' in the same rep");
                rr->wall_ratio = wrm;
            }
        }
        buf_free(&vb);
    }
    LOG("\n  zeroer achieved rate over all victim sizes (GB/s):\n");
    for (int c = 1; c < nc; c++) {
        take_wall_ratio();
        add_result("zeroer_rate", conds[c].name, "2M", g_zbuf_bytes, "GB/s", zrate_all[c], nzr[c],
                   huge_fraction(zb.base, g_zbuf_bytes), -1,
                   conds[c].rate > 0 ? "target 1 GB/s (wall-clock rate)" : "unlimited");
        stats_t s = stats_of(zrate_all[c], nzr[c]);
        LOG("    %-14s median %.3f min %.3f max %.3f (n=%d)\n", conds[c].name, s.med, s.min,
            s.max, nzr[c]);
    }
    buf_free(&zb);
    pin_self(g_cpu);
}

/* ------------------------------------------------------------ 6: faults */

typedef struct {
    double ns_fault, ms, hf, wall_ratio;
    long nf;
} fault_rec;

static fault_rec fault_run(int huge, uint64_t bytes)
{
    fault_rec fr = {0, 0, 0, 0, 0};
    buf_t b;
    if (buf_alloc(&b, bytes, huge) != 0)
        return fr;
    uint64_t stride = huge ? PAGE2M : PAGE4K;
    long f0 = minflt();
    double w0 = now_ns();
    double c0 = cpu_now_ns();
    for (uint64_t off = 0; off < bytes; off += stride)
        ((volatile char *)b.base)[off] = 1;
    double c = cpu_now_ns() - c0;
    double w = now_ns() - w0;
    fr.nf = minflt() - f0;
    fr.hf = huge_fraction(b.base, bytes);
    buf_free(&b);
    fr.ms = c / 1e6;
    fr.ns_fault = fr.nf > 0 ? c / (double)fr.nf : 0;
    fr.wall_ratio = c > 0 ? w / c : 0;
    g_wall_acc += w;
    g_cpu_acc += c;
    return fr;
}

static void fault_tests(int huge)
{
    uint64_t bytes = g_fault_bytes;
    char sz[32];
    fmt_size(bytes, sz, sizeof sz);
    LOG("\n== first-touch faults, %s %s (one write per %s) ==\n", sz,
        huge ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE", huge ? "2 MB" : "4 KB");
    double vi[MAX_REPS], vr[MAX_REPS];
    double hfi = 0, hfr = 0, wri = 0, wrr = 0;
    long nfi = 0, nfr = 0;
    int n = g_fault_reps;
    for (int r = 0; r < n; r++) {
        sleep((unsigned)g_idle_s);
        fault_rec a = fault_run(huge, bytes); /* memory idle >= g_idle_s */
        fault_rec b = fault_run(huge, bytes); /* memory just freed by a's munmap */
        vi[r] = a.ns_fault;
        vr[r] = b.ns_fault;
        hfi += a.hf;
        hfr += b.hf;
        wri += a.wall_ratio;
        wrr += b.wall_ratio;
        nfi = a.nf;
        nfr = b.nf;
        LOG("  rep %d: after %d s idle: %8.1f ms %7ld faults %9.1f ns/fault huge %.3f | "
            "just freed: %8.1f ms %7ld faults %9.1f ns/fault huge %.3f\n",
            r, g_idle_s, a.ms, a.nf, a.ns_fault, a.hf, b.ms, b.nf, b.ns_fault, b.hf);
    }
    take_wall_ratio();
    const char *pg = huge ? "2M" : "4K";
    char extra[112];
    stats_t s = stats_of(vi, n);
    snprintf(extra, sizeof extra, "faults=%ld (last rep) %.1f ms/GiB-equiv; fresh mmap, memory idle %d s",
             nfi, s.med * (double)nfi / 1e6 * (double)GB / (double)bytes, g_idle_s);
    result_t *r1 = add_result(huge ? "fault_2M" : "fault_4K", "idle", pg, bytes, "ns/fault", vi, n,
                              hfi / n, -1, extra);
    r1->wall_ratio = wri / n;
    s = stats_of(vr, n);
    snprintf(extra, sizeof extra, "faults=%ld (last rep) %.1f ms/GiB-equiv; munmap then mmap again",
             nfr, s.med * (double)nfr / 1e6 * (double)GB / (double)bytes);
    result_t *r2 = add_result(huge ? "fault_2M" : "fault_4K", "just_freed", pg, bytes, "ns/fault",
                              vr, n, hfr / n, -1, extra);
    r2->wall_ratio = wrr / n;
    print_reps("idle ns/fault:", vi, n, "");
    print_reps("just-freed ns/fault:", vr, n, "");
    if (huge)
        LOG("    (2 MB of data per fault: idle %.2f GB/s, just freed %.2f GB/s equivalent)\n",
            (double)PAGE2M / stats_of(vi, n).med, (double)PAGE2M / stats_of(vr, n).med);
}

/* ------------------------------------------------------------ sysinfo */

static double measure_core_ghz(void)
{
    double v[5];
    for (int r = 0; r < 5; r++) {
        uint64_t n = 30000000ULL, x = 0;
        tpt t0 = tbegin();
        __asm__ volatile("1:\n\t"
                         "add $1, %1\n\tadd $1, %1\n\tadd $1, %1\n\tadd $1, %1\n\t"
                         "add $1, %1\n\tadd $1, %1\n\tadd $1, %1\n\tadd $1, %1\n\t"
                         "dec %0\n\tjnz 1b"
                         : "+r"(n), "+r"(x)
                         :
                         : "cc");
        double t = tend(t0);
        g_sink += x;
        v[r] = 30000000.0 * 8.0 / t;
    }
    take_wall_ratio();
    return stats_of(v, 5).med;
}

static void read_line(const char *path, char *buf, size_t n)
{
    snprintf(buf, n, "?");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(buf, (int)n, f))
        buf[strcspn(buf, "\n")] = 0;
    fclose(f);
}

static void print_sysinfo(const char *prio)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512], model[256] = "?";
    if (f) {
        while (fgets(line, sizeof line, f)) {
            char *c = strchr(line, ':');
            if (c && !strncmp(line, "model name", 10) && model[0] == '?') {
                c += 2;
                c[strcspn(c, "\n")] = 0;
                snprintf(model, sizeof model, "%s", c);
            }
        }
        fclose(f);
    }
    char thp[128], defrag[128], zp[32], la[128];
    read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
    read_line("/sys/kernel/mm/transparent_hugepage/defrag", defrag, sizeof defrag);
    read_line("/sys/kernel/mm/transparent_hugepage/use_zero_page", zp, sizeof zp);
    read_line("/proc/loadavg", la, sizeof la);
    LOG("# zerobench\n");
    LOG("cpu model       : %s\n", model);
    LOG("core clock est. : %.3f GHz (dependent-add loop)\n", measure_core_ghz());
    LOG("glibc           : %s\n", gnu_get_libc_version());
    LOG("THP enabled     : %s\nTHP defrag      : %s\nTHP zero page   : %s\n", thp, defrag, zp);
    LOG("cpus            : main %d, victim %d, zeroer %d (other cpu for busy%%: %d)\n", g_cpu,
        g_vcpu, g_zcpu, g_other_cpu);
    LOG("priority        : %s\n", prio);
    LOG("loadavg (start) : %s\n", la);
    LOG("sizes           : clear/scan %llu MiB, in-use scan %llu MiB, zeroer %llu MiB, "
        "faults %llu MiB; reps %d (faults %d, idle %d s)\n",
        (unsigned long long)(g_bw_bytes / MB), (unsigned long long)(g_inuse_bytes / MB),
        (unsigned long long)(g_zbuf_bytes / MB), (unsigned long long)(g_fault_bytes / MB), g_reps,
        g_fault_reps, g_idle_s);
}

/* ------------------------------------------------------------ main */

static void usage(const char *p)
{
    fprintf(stderr,
            "usage: %s [-o out.csv] [-c cpu] [-v victim_cpu] [-z zeroer_cpu] [-r reps]\n"
            "          [-f fault_reps] [-i idle_s] [-q] [-N] [-t tests]\n"
            "  -o  also write the CSV to this file (it always goes to stdout)\n"
            "  -c  CPU for the single-threaded tests (default: last CPU in the mask)\n"
            "  -v  victim CPU for the interference test (default 0)\n"
            "  -z  zeroer CPU for the interference test (default 1)\n"
            "  -r  repeats per measurement (default 7, max %d)\n"
            "  -f  repeats of the fault tests (default 5)\n"
            "  -i  idle seconds before each 'idle' fault rep (default 5)\n"
            "  -t  tests to run, subset of 'bsif' (b=clear/scan bandwidth,\n"
            "      s=in-use scan, i=interference, f=faults; default all)\n"
            "  -q  quick smoke test (small buffers, 3 reps)\n"
            "  -N  do not try to raise own priority\n",
            p, MAX_REPS);
}

int main(int argc, char **argv)
{
    const char *csv = NULL, *tests = "bsif";
    int quick = 0, renice = 1, opt;
    while ((opt = getopt(argc, argv, "o:c:v:z:r:f:i:t:qNh")) != -1) {
        switch (opt) {
        case 'o': csv = optarg; break;
        case 'c': g_cpu = atoi(optarg); break;
        case 'v': g_vcpu = atoi(optarg); break;
        case 'z': g_zcpu = atoi(optarg); break;
        case 'r': g_reps = atoi(optarg); break;
        case 'f': g_fault_reps = atoi(optarg); break;
        case 'i': g_idle_s = atoi(optarg); break;
        case 't': tests = optarg; break;
        case 'q': quick = 1; break;
        case 'N': renice = 0; break;
        default: usage(argv[0]); return opt == 'h' ? 0 : 2;
        }
    }
    if (quick) {
        g_reps = 3;
        g_bw_bytes = 64 * MB;
        g_inuse_bytes = 256 * MB;
        g_zbuf_bytes = 64 * MB;
        g_fault_bytes = 64 * MB;
        g_victim_s = 0.05;
        g_fault_reps = 2;
        g_idle_s = 3;
    }
    if (g_reps < 1 || g_reps > MAX_REPS || g_fault_reps < 1 || g_fault_reps > MAX_REPS) {
        usage(argv[0]);
        return 2;
    }

    cpu_set_t cs;
    sched_getaffinity(0, sizeof cs, &cs);
    if (g_cpu < 0) {
        for (int i = CPU_SETSIZE - 1; i >= 0; i--)
            if (CPU_ISSET(i, &cs)) {
                g_cpu = i;
                break;
            }
    }
    for (int i = 0; i < MAX_CPUS && i < CPU_SETSIZE; i++)
        if (i != g_cpu && CPU_ISSET(i, &cs)) {
            g_other_cpu = i;
            break;
        }
    pin_self(g_cpu);

    /* same priority scheme as membench: nice -20 plus own autogroup at -20 */
    char prio[96] = "unchanged";
    if (renice) {
        int nice_ok = setpriority(PRIO_PROCESS, 0, -20) == 0;
        int ag_ok = 0;
        if (setsid() >= 0 || getsid(0) == getpid()) {
            FILE *ag = fopen("/proc/self/autogroup", "w");
            if (ag) {
                ag_ok = fprintf(ag, "-20") > 0;
                ag_ok &= fclose(ag) == 0;
            }
        }
        snprintf(prio, sizeof prio, "nice %s, autogroup nice %s", nice_ok ? "-20" : "unchanged",
                 ag_ok ? "-20 (new session)" : "unchanged");
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    print_sysinfo(prio);
    double tstart = now_ns();

    if (strchr(tests, 'b')) {
        bw_tests(0);
        bw_tests(1);
    }
    if (strchr(tests, 's'))
        inuse_scan_test();
    if (strchr(tests, 'i'))
        interference_test();
    if (strchr(tests, 'f')) {
        fault_tests(1);
        fault_tests(0);
    }

    char la[128];
    read_line("/proc/loadavg", la, sizeof la);
    LOG("\nloadavg (end)   : %s\n", la);
    LOG("\n# summary (median [min..max] over repeats)\n");
    LOG("%-15s %-12s %-4s %6s %9s %10s %10s %10s %4s %6s %6s %6s  %s\n", "test", "variant", "page",
        "buffer", "unit", "median", "min", "max", "reps", "huge", "wall/c", "busy%", "notes");
    for (int i = 0; i < g_nres; i++) {
        result_t *r = &g_res[i];
        char sz[32];
        char wc[16] = "   n/a", ob[16] = "   n/a";
        if (r->wall_ratio > 0)
            snprintf(wc, sizeof wc, "%6.3f", r->wall_ratio);
        if (r->obusy >= 0)
            snprintf(ob, sizeof ob, "%6.1f", r->obusy);
        LOG("%-15s %-12s %-4s %6s %9s %10.3f %10.3f %10.3f %4d %6.3f %6s %6s  %s\n", r->test,
            r->variant, r->page, fmt_size(r->bytes, sz, sizeof sz), r->unit, r->s.med, r->s.min,
            r->s.max, r->reps, r->huge, wc, ob, r->extra);
    }
    LOG("(busy%% = how busy the other CPU was during the timed repeats, from /proc/stat; for "
        "interf_* rows it is the zeroer's CPU and includes the zeroer itself)\n");
    LOG("total runtime %.1f s\n\n", (now_ns() - tstart) / 1e9);
    fflush(stderr);

    FILE *outs[2] = {stdout, NULL};
    if (csv && !(outs[1] = fopen(csv, "w")))
        LOG("cannot write %s: %s\n", csv, strerror(errno));
    for (int k = 0; k < 2; k++) {
        FILE *f = outs[k];
        if (!f)
            continue;
        fprintf(f, "test,variant,page_size,buffer_bytes,unit,median,min,max,repeats,"
                   "huge_fraction,wall_over_cpu,other_cpu_busy_pct\n");
        for (int i = 0; i < g_nres; i++) {
            result_t *r = &g_res[i];
            fprintf(f, "%s,%s,%s,%llu,%s,%.4f,%.4f,%.4f,%d,%.4f,%.3f,%.1f\n", r->test, r->variant,
                    r->page, (unsigned long long)r->bytes, r->unit, r->s.med, r->s.min, r->s.max,
                    r->reps, r->huge, r->wall_ratio, r->obusy);
        }
        fflush(f);
    }
    if (outs[1])
        fclose(outs[1]);
    return 0;
}
