/* The peer of Weft's allreduce, broadcast and allgather across hosts
 * (scripts/bench-cluster.sh): MPI_Allreduce, MPI_Bcast (root 0) and
 * MPI_Allgather timed the way `weft bench` times its own (same sizes,
 * iteration counts, warm-up, barrier before each timed loop, time per
 * iteration averaged over ranks), with nccl-tests' bus bandwidth: algbw
 * times 2(n-1)/n for allreduce, 1 for broadcast, (n-1)/n for allgather,
 * whose size is the gathered buffer (each rank sends size/n bytes), as in
 * nccl-tests and `weft bench allgather`. Printed as CSV. Buffers are
 * allocated and touched once at the largest size.
 *
 *   mpicc -O2 -o mpi_coll mpi_coll.c
 *   mpirun -np 4 ./mpi_coll allreduce|broadcast|allgather MINBYTES MAXBYTES FACTOR [ITERS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* weft bench's count: about 0.3 s of data at 1 GB/s, 5 to 1000. */
static int iters_for(long bytes) {
	int n = (int)(3e8 / (double)(bytes + 100000));
	if (n < 5) n = 5;
	if (n > 1000) n = 1000;
	return n;
}

enum { ALLREDUCE, BROADCAST, ALLGATHER };

static void run(int op, float *send, float *recv, long bytes, int size) {
	switch (op) {
	case ALLREDUCE:
		MPI_Allreduce(send, recv, (int)(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		break;
	case BROADCAST:
		MPI_Bcast(recv, (int)(bytes / 4), MPI_FLOAT, 0, MPI_COMM_WORLD);
		break;
	case ALLGATHER:
		MPI_Allgather(send, (int)(bytes / 4 / size), MPI_FLOAT, recv, (int)(bytes / 4 / size), MPI_FLOAT,
		              MPI_COMM_WORLD);
		break;
	}
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 5 && argc != 6) {
		if (rank == 0) fprintf(stderr, "usage: %s allreduce|broadcast|allgather MINBYTES MAXBYTES FACTOR [ITERS]\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int op = ALLREDUCE;
	double factor = 1;
	if (strcmp(argv[1], "allreduce") == 0) {
		op = ALLREDUCE;
		factor = 2.0 * (size - 1) / size;
	} else if (strcmp(argv[1], "broadcast") == 0) {
		op = BROADCAST;
		factor = 1;
	} else if (strcmp(argv[1], "allgather") == 0) {
		op = ALLGATHER;
		factor = (double)(size - 1) / size;
	} else {
		if (rank == 0) fprintf(stderr, "%s: unknown collective %s (want allreduce, broadcast or allgather)\n", argv[0], argv[1]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	long minb = atol(argv[2]), maxb = atol(argv[3]), f = atol(argv[4]);
	int fixed = argc == 6 ? atoi(argv[5]) : 0;
	if (minb < 4 || maxb < minb || f < 2 || fixed < 0) {
		if (rank == 0) fprintf(stderr, "%s: bad sizes or count %s %s %s%s%s\n", argv[0], argv[2], argv[3], argv[4],
		                       argc == 6 ? " " : "", argc == 6 ? argv[5] : "");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	float *send = malloc(maxb), *recv = malloc(maxb);
	if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 3);
	memset(send, 0, maxb);
	memset(recv, 0, maxb);
	if (rank == 0) printf("op,ranks,size_bytes,time_us,algbw_gbs,busbw_gbs\n");
	for (long s = minb; s <= maxb; s *= f) {
		/* Whole floats, and for allgather whole per-rank blocks, as
		 * weft bench rounds. */
		long unit = op == ALLGATHER ? 4L * size : 4;
		long b = s / unit * unit;
		int iters = fixed ? fixed : iters_for(b);
		/* The same warm-up as weft bench: at least 2 and a twentieth of
		 * the timed iterations, and a longer round for the first size. */
		int warm = iters / 20 > 2 ? iters / 20 : 2;
		if (s == minb) {
			int first = (int)(5e7 / (double)(b + 10000));
			warm = iters > first ? iters : first;
		}
		for (int i = 0; i < warm; i++) run(op, send, recv, b, size);
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++) run(op, send, recv, b, size);
		double sec = (MPI_Wtime() - t0) / iters, avg;
		MPI_Allreduce(&sec, &avg, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		avg /= size;
		double algbw = (double)b / 1e9 / avg;
		if (rank == 0)
			printf("mpi_%s,%d,%ld,%.3f,%.4f,%.4f\n", argv[1], size, b, avg * 1e6, algbw, algbw * factor);
	}
	free(send);
	free(recv);
	MPI_Finalize();
	return 0;
}
