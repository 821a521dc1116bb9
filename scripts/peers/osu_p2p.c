/* The peer of `weft bench latency` and `weft bench bandwidth`: the same
 * OSU-style protocols (osu_latency, osu_bw) in C on MPI, with the same
 * sizes, iteration counts, warm-up, check and CSV columns, so that a script
 * can put the two side by side (scripts/bench-p2p.sh).
 *
 *   latency: rank 0 MPI_Send's a message of the size to rank 1 and
 *     MPI_Recv's one back; time is half the round trip.
 *   bw: rank 0 posts a window of 64 MPI_Isend's, rank 1 64 MPI_Irecv's;
 *     after MPI_Waitall rank 1 sends a 4-byte ack. Bandwidth is the bytes
 *     of the windows over rank 0's time, in MB/s (1e6 bytes/s). As in OSU
 *     every message of a window uses the same send and the same receive
 *     buffer.
 *
 * Ranks beyond 1 wait in the barriers and reductions. Buffers are
 * allocated once at the largest size and touched; a barrier precedes each
 * timed loop; times are rank 0's. After each size an untimed round sends
 * known bytes and counts the bytes that arrive wrong (the wrong column).
 *
 *   mpicc -O2 -o osu_p2p osu_p2p.c
 *   mpirun -np 2 ./osu_p2p latency|bw MINBYTES MAXBYTES FACTOR [ITERS [WARMUP]]
 *
 * Sizes are bytes, with an optional K, M or G (powers of 2), as weft bench
 * reads -b and -e. *
 * ITERS 0 (the default) chooses per size as weft bench does; WARMUP
 * defaults to 2, weft bench's -w.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define TAG_DATA 1
#define TAG_ACK 2

static int bw_mode;
static char *sbuf, *rbuf, ack[4];
static MPI_Request reqs[WINDOW];

/* A size in bytes, with an optional K, M or G (binary) as weft reads it;
 * -1 if it is none. */
static long parse_size(const char *s) {
	char *end;
	long n = strtol(s, &end, 10);
	long mult = 1;
	switch (*end) {
	case 'k': case 'K': mult = 1L << 10, end++; break;
	case 'm': case 'M': mult = 1L << 20, end++; break;
	case 'g': case 'G': mult = 1L << 30, end++; break;
	}
	if (end == s || *end != '\0' || n < 0 || n > (1L << 40)) return -1;
	return n * mult;
}

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

/* Timed iterations for a size: about 0.2 s of data at 1 GB/s; latency 10
 * to 10000 round trips, bandwidth 5 to 1000 windows. */
static int iters_for(long b, int fixed) {
	if (fixed > 0) return fixed;
	if (!bw_mode) return imin(imax((int)(2e8 / (double)(2 * b + 20000)), 10), 10000);
	return imin(imax((int)(2e8 / (double)(WINDOW * b + 100000)), 5), 1000);
}

/* One round trip (latency) or one window and its ack (bw). */
static void step(int rank, long b) {
	if (rank > 1) return;
	if (!bw_mode) {
		if (rank == 0) {
			MPI_Send(sbuf, (int)b, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD);
			MPI_Recv(rbuf, (int)b, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(rbuf, (int)b, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(sbuf, (int)b, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD);
		}
		return;
	}
	for (int j = 0; j < WINDOW; j++) {
		if (rank == 0)
			MPI_Isend(sbuf, (int)b, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD, &reqs[j]);
		else
			MPI_Irecv(rbuf, (int)b, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD, &reqs[j]);
	}
	MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
	if (rank == 0)
		MPI_Recv(ack, 4, MPI_CHAR, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Send(ack, 4, MPI_CHAR, 0, TAG_ACK, MPI_COMM_WORLD);
}

/* Byte i of the check's message number seed: never 0. */
static unsigned char pattern(long seed, long i) { return (unsigned char)((i * 131 + seed * 17) % 251 + 1); }

/* The check: latency sends message 0 from rank 0 and message 1 back;
 * bw a window of message 2. Returns the wrong bytes over all ranks. */
static long long check(int rank, long b) {
	long seed = 0, want = -1;
	if (!bw_mode && rank == 0) seed = 0, want = 1;
	else if (!bw_mode && rank == 1) seed = 1, want = 0;
	else if (rank == 0) seed = 2;
	else if (rank == 1) want = 2;
	if (rank <= 1) {
		for (long i = 0; i < b; i++) sbuf[i] = (char)pattern(seed, i);
		memset(rbuf, 0, (size_t)b & 0x7fffffff);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	step(rank, b);
	long long wrong = 0, total = 0;
	if (want >= 0)
		for (long i = 0; i < b; i++) wrong += (unsigned char)rbuf[i] != pattern(want, i);
	MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	return total;
}

static void measure(int rank, int size, long b, int fixed, int warmup, int first) {
	int iters = iters_for(b, fixed);
	/* weft bench's warm-up: at least a twentieth of the timed iterations,
	 * and before the first size a longer round (about 50 ms at 1 GB/s
	 * plus 10 us an operation; a window counts 64 messages). */
	int warm = imax(warmup, iters / 20);
	if (first) {
		int fw = (int)(5e7 / (double)(b + 10000));
		if (bw_mode) fw = (fw + WINDOW - 1) / WINDOW;
		warm = imax(warm, imax(iters, fw));
	}
	for (int i = 0; i < warm; i++) step(rank, b);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) step(rank, b);
	double sec = MPI_Wtime() - t0;
	long long wrong = check(rank, b);
	if (rank != 0) return;
	double us, mbs;
	if (!bw_mode) {
		us = sec * 1e6 / (2.0 * iters);
		mbs = us > 0 ? (double)b / us : 0;
	} else {
		mbs = sec > 0 ? (double)b * WINDOW * iters / sec / 1e6 : 0;
		us = sec * 1e6 / ((double)WINDOW * iters);
	}
	printf("%s,%d,%ld,%d,%.3f,%.2f,%lld\n", bw_mode ? "bandwidth" : "latency", size, b, iters, us, mbs, wrong);
	fflush(stdout);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 5 || argc > 7 || (strcmp(argv[1], "latency") && strcmp(argv[1], "bw") && strcmp(argv[1], "bandwidth"))) {
		if (rank == 0) fprintf(stderr, "usage: %s latency|bw MINBYTES MAXBYTES FACTOR [ITERS [WARMUP]]\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	bw_mode = strcmp(argv[1], "latency") != 0;
	long minb = parse_size(argv[2]), maxb = parse_size(argv[3]), f = atol(argv[4]);
	int fixed = argc > 5 ? atoi(argv[5]) : 0, warmup = argc > 6 ? atoi(argv[6]) : 2;
	if (minb < 0 || maxb < minb || maxb > 2147483647L || f < 1 || fixed < 0 || warmup < 0) {
		if (rank == 0)
			fprintf(stderr, "bad arguments: sizes %s to %s (at most 2^31-1) by %s, iters %d, warmup %d\n", argv[2], argv[3], argv[4],
			        fixed, warmup);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (size < 2) {
		if (rank == 0) fprintf(stderr, "%s needs at least 2 ranks\n", argv[1]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	/* The sizes of weft bench: MINBYTES, times FACTOR, up to MAXBYTES; 0 is
	 * followed by 1. */
	long sizes[80];
	int n = 0;
	long s = minb;
	if (s == 0) {
		sizes[n++] = 0;
		s = 1;
	}
	if (minb > 0 || f >= 2)
		for (; s <= maxb && n < 80; s *= f) {
			sizes[n++] = s;
			if (f < 2) break;
		}
	long top = n > 0 ? sizes[n - 1] : 0;
	sbuf = malloc(top > 0 ? top : 1);
	rbuf = malloc(top > 0 ? top : 1);
	if (!sbuf || !rbuf) MPI_Abort(MPI_COMM_WORLD, 3);
	for (long i = 0; i < top; i += 4096) sbuf[i] = 1, rbuf[i] = 1;
	if (rank == 0) printf("op,ranks,size_bytes,iters,time_us,bandwidth_mbs,wrong\n");
	for (int i = 0; i < n; i++) measure(rank, size, sizes[i], fixed, warmup, i == 0);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
