/* The C and MPI twin of examples/jacobi: the same grid, split, halo
 * exchange, arithmetic in the same order, residual and checksum, so that
 * its checksum equals the Go program's bit for bit and its time per
 * iteration can be set beside it (scripts/bench-p2p.sh).
 *
 * The grid has N x N interior points, the top edge fixed at 1 and the
 * other edges at 0, the interior starting at 0. Rank r owns N/size rows,
 * one more for the first N mod size ranks, with a halo row above and
 * below. Each iteration: MPI_Irecv the halos, MPI_Isend the edge rows,
 * MPI_Waitall; every point becomes the mean of its four neighbours,
 * ((up + down) + left) + right times 0.25; every EVERY iterations and after
 * the last the squared changes are summed with MPI_Allreduce. The checksum
 * adds a splitmix64 hash of each point's bits and position in two int64
 * sums of 32-bit halves, independent of the order of the sum.
 *
 *   mpicc -O2 -ffp-contract=off -o jacobi jacobi.c
 *   mpirun -np 2 ./jacobi N ITERS EVERY
 *
 * -ffp-contract=off: no fused multiply-add, as in the Go program (where
 * the compiler could otherwise fuse the residual's d*d + sum).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_UP 1
#define TAG_DOWN 2

static uint64_t mix(uint64_t z) {
	z ^= z >> 30;
	z *= 0xbf58476d1ce4e5b9ULL;
	z ^= z >> 27;
	z *= 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 4) {
		if (rank == 0) fprintf(stderr, "usage: %s N ITERS EVERY\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int n = atoi(argv[1]), iters = atoi(argv[2]), every = atoi(argv[3]);
	if (n < 1 || n > 40000 || iters < 1 || every < 1 || size > n) {
		if (rank == 0) fprintf(stderr, "bad arguments: N %d (1 to 40000, at least the %d ranks), ITERS %d, EVERY %d\n", n, size, iters, every);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int m = n / size, first = rank * m + (rank < n % size ? rank : n % size) + 1;
	if (rank < n % size) m++;
	int up = rank - 1, dn = rank == size - 1 ? -1 : rank + 1;
	long w = n + 2;
	double *u = calloc((m + 2) * w, sizeof(double)), *v = calloc((m + 2) * w, sizeof(double));
	if (!u || !v) MPI_Abort(MPI_COMM_WORLD, 3);
	if (rank == 0)
		for (long j = 0; j < w; j++) u[j] = v[j] = 1;

	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime(), residual = 0, comm = 0;
	for (int it = 0; it < iters; it++) {
		double tc = MPI_Wtime();
		MPI_Request reqs[4];
		int nr = 0;
		if (up >= 0) MPI_Irecv(u + 1, n, MPI_DOUBLE, up, TAG_DOWN, MPI_COMM_WORLD, &reqs[nr++]);
		if (dn >= 0) MPI_Irecv(u + (m + 1) * w + 1, n, MPI_DOUBLE, dn, TAG_UP, MPI_COMM_WORLD, &reqs[nr++]);
		if (up >= 0) MPI_Isend(u + w + 1, n, MPI_DOUBLE, up, TAG_UP, MPI_COMM_WORLD, &reqs[nr++]);
		if (dn >= 0) MPI_Isend(u + m * w + 1, n, MPI_DOUBLE, dn, TAG_DOWN, MPI_COMM_WORLD, &reqs[nr++]);
		MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE);
		comm += MPI_Wtime() - tc;
		int with_residual = (it + 1) % every == 0 || it == iters - 1;
		double sum = 0;
		for (int i = 1; i <= m; i++) {
			const double *pu = u + (i - 1) * w, *pm = u + i * w, *pd = u + (i + 1) * w;
			double *out = v + i * w;
			if (!with_residual) {
				for (int j = 1; j <= n; j++) out[j] = (pu[j] + pd[j] + pm[j - 1] + pm[j + 1]) * 0.25;
				continue;
			}
			for (int j = 1; j <= n; j++) {
				double x = (pu[j] + pd[j] + pm[j - 1] + pm[j + 1]) * 0.25;
				double d = x - pm[j];
				sum += d * d;
				out[j] = x;
			}
		}
		double *t = u;
		u = v;
		v = t;
		if (with_residual) {
			tc = MPI_Wtime();
			MPI_Allreduce(&sum, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
			comm += MPI_Wtime() - tc;
		}
	}
	double mine[2] = {MPI_Wtime() - t0, comm}, most[2];
	MPI_Allreduce(mine, most, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	double slowest = most[0];

	int64_t halves[2] = {0, 0}, total[2];
	for (int i = 1; i <= m; i++)
		for (int j = 1; j <= n; j++) {
			uint64_t bits, pos = (uint64_t)((first + i - 1) * w + j);
			memcpy(&bits, u + i * w + j, 8);
			uint64_t h = mix(bits ^ pos * 0x9e3779b97f4a7c15ULL);
			halves[0] += (int64_t)(h & 0xffffffffu);
			halves[1] += (int64_t)(h >> 32);
		}
	MPI_Allreduce(halves, total, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("jacobi: grid %dx%d, %d iterations, residual every %d, %d ranks (C, MPI)\n", n, n, iters, every, size);
		printf("time per iteration (us): %.3f\n", slowest / iters * 1e6);
		printf("communication per iteration (us): %.3f\n", most[1] / iters * 1e6);
		printf("residual: %.12e\n", residual);
		printf("checksum: %016llx\n", (unsigned long long)(((uint64_t)total[1] << 32) + (uint64_t)total[0]));
	}
	free(u);
	free(v);
	MPI_Finalize();
	return 0;
}
