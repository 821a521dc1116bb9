/* The machine's memory costs that shape Weft's benchmarks, one thread:
 *
 *   first touch   memset of a fresh anonymous mapping (every 4 KiB page
 *                 faulted in, zeroed by the kernel, then written), in us per
 *                 page and GB/s, against the same memset once the pages
 *                 are touched;
 *   memcpy        of BYTES between buffers touched once, GB/s counting the
 *                 bytes copied (read plus write is twice that);
 *   c = a + b     float32, BYTES per array, a plain loop as gcc -O3 compiles
 *                 it (no non-temporal stores), GB/s counting a, b and c as
 *                 internal/reduce's benchmarks do.
 *
 * Each is run REPS times (default 5) after one untimed run; the median is
 * printed. No huge pages: the mappings are madvised MADV_NOHUGEPAGE.
 *
 *   mkdir -p bin && gcc -O3 -o bin/memcost scripts/peers/memcost.c
 *   bin/memcost [BYTES [REPS]]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *fresh(size_t b) {
	void *p = mmap(NULL, b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, b, MADV_NOHUGEPAGE);
	return p;
}

static int cmp(const void *x, const void *y) {
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static double median(double *v, int n) {
	qsort(v, n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void add(float *restrict c, const float *restrict a, const float *restrict b, size_t n) {
	for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}

int main(int argc, char **argv) {
	size_t b = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)256 << 20;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	if (reps < 1 || reps > 100 || b < 4096) {
		fprintf(stderr, "usage: %s [BYTES >= 4096 [REPS 1..100]]\n", argv[0]);
		return 2;
	}
	size_t pages = b / 4096;
	double first[100], again[100], cp[100], sum[100];
	volatile char sink = 0;

	for (int r = -1; r < reps; r++) {
		char *p = fresh(b);
		double t0 = now();
		memset(p, r + 2, b);
		double t1 = now();
		memset(p, r + 3, b);
		double t2 = now();
		sink ^= p[b / 2];
		munmap(p, b);
		if (r >= 0) {
			first[r] = t1 - t0;
			again[r] = t2 - t1;
		}
	}

	char *s = fresh(b), *d = fresh(b);
	memset(s, 1, b);
	memset(d, 0, b);
	for (int r = -1; r < reps; r++) {
		double t0 = now();
		memcpy(d, s, b);
		double t1 = now();
		sink ^= d[(size_t)(r + 1) * 4093 % b];
		s[(size_t)(r + 1) * 7 % b] ^= 1;
		if (r >= 0) cp[r] = t1 - t0;
	}
	munmap(d, b);

	size_t n = b / sizeof(float);
	float *a = (float *)s, *x = (float *)fresh(b), *c = (float *)fresh(b);
	for (size_t i = 0; i < n; i++) {
		a[i] = (float)(i & 1023);
		x[i] = 1.0f;
		c[i] = 0.0f;
	}
	for (int r = -1; r < reps; r++) {
		double t0 = now();
		add(c, a, x, n);
		double t1 = now();
		sink ^= (char)c[(size_t)(r + 1) * 4093 % n];
		if (r >= 0) sum[r] = t1 - t0;
	}

	double f = median(first, reps), g = median(again, reps);
	printf("bytes %zu, %d reps, medians, one thread\n", b, reps);
	printf("first touch (memset, fresh pages)  %8.2f us per 4 KiB page  %7.2f GB/s\n", f / pages * 1e6, b / f / 1e9);
	printf("memset, pages already touched      %8.3f us per 4 KiB page  %7.2f GB/s\n", g / pages * 1e6, b / g / 1e9);
	printf("memcpy (bytes copied)                                        %7.2f GB/s\n", b / median(cp, reps) / 1e9);
	printf("float32 c = a + b (a, b and c)                               %7.2f GB/s\n", 3.0 * b / median(sum, reps) / 1e9);
	return 0;
}
