/* The peer Weft's allreduce is measured against: MPI_Allreduce timed the
 * way `weft bench` times its own (same sizes, iteration counts, warmup,
 * barrier before each timed loop, time per iteration averaged over ranks,
 * nccl-tests' bus bandwidth 2(n-1)/n * bytes / time), printed as CSV.
 * Buffers are allocated and touched once at the largest size.
 *
 *   mpicc -O2 -o mpi_allreduce mpi_allreduce.c
 *   mpirun --mca btl tcp,self -np 2 ./mpi_allreduce MINBYTES MAXBYTES FACTOR
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iters_for(long bytes) {
	int n = (int)(3e8 / (double)(bytes + 100000));
	if (n < 5) n = 5;
	if (n > 1000) n = 1000;
	return n;
}

/* "copy BYTES": the memory bound, without MPI: a memcpy of BYTES between
 * buffers touched once, printed as "BYTES time_us GB/s" counting the bytes
 * read and written. */
static int copy_bound(long b) {
	char *s = malloc(b), *d = malloc(b);
	if (!s || !d) return 3;
	memset(s, 1, b);
	memset(d, 0, b);
	int iters = iters_for(b);
	for (int i = 0; i < 2; i++) memcpy(d, s, b);
	double t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) { memcpy(d, s, b); s[i % b] ^= d[(i * 7) % b]; }
	double sec = (MPI_Wtime() - t0) / iters;
	printf("%ld %.3f %.4f\n", b, sec * 1e6, 2.0 * b / 1e9 / sec);
	free(s);
	free(d);
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 3 && strcmp(argv[1], "copy") == 0) {
		MPI_Init(&argc, &argv);
		int rc = copy_bound(atol(argv[2]));
		MPI_Finalize();
		return rc;
	}
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 4) {
		if (rank == 0) fprintf(stderr, "usage: %s MINBYTES MAXBYTES FACTOR\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	long minb = atol(argv[1]), maxb = atol(argv[2]), f = atol(argv[3]);
	if (minb < 4 || maxb < minb || f < 2) {
		if (rank == 0) fprintf(stderr, "bad sizes %ld %ld %ld\n", minb, maxb, f);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	float *send = malloc(maxb), *recv = malloc(maxb);
	if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 3);
	memset(send, 0, maxb);
	memset(recv, 0, maxb);
	if (rank == 0) printf("op,ranks,size_bytes,time_us,algbw_gbs,busbw_gbs\n");
	for (long b = minb; b <= maxb; b *= f) {
		int count = (int)(b / 4);
		int iters = iters_for(b);
		/* The same warm-up as weft bench: at least 2 and a twentieth of
		 * the timed iterations, and a longer round for the first size. */
		int warm = iters / 20 > 2 ? iters / 20 : 2;
		if (b == minb) {
			int first = (int)(5e7 / (double)(b + 10000));
			warm = iters > first ? iters : first;
		}
		for (int i = 0; i < warm; i++)
			MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		double sec = (MPI_Wtime() - t0) / iters, avg;
		MPI_Allreduce(&sec, &avg, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		avg /= size;
		double algbw = (double)count * 4 / 1e9 / avg;
		if (rank == 0)
			printf("mpi_allreduce,%d,%ld,%.3f,%.4f,%.4f\n", size, (long)count * 4, avg * 1e6, algbw,
			       algbw * 2.0 * (size - 1) / size);
	}
	free(send);
	free(recv);
	MPI_Finalize();
	return 0;
}
