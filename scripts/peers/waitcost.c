/* The C twin of examples/waitcost: what a wait costs when ranks outnumber
 * cores, on Open MPI. Rank 0 computes (a fixed integer loop, calibrated
 * alone to about WORK seconds while the other ranks sleep in nanosleep)
 * while every other rank waits for it in a blocking MPI_Recv of the
 * message rank 0 sends when it is done ("recv"), or in an MPI_Allreduce
 * of one double that rank 0 joins when it is done ("allreduce"). Each
 * waiter measures its CPU time over the wait (getrusage RUSAGE_SELF, user
 * + system) and the latency of the message that ended it (rank 0's
 * CLOCK_MONOTONIC stamp, taken just before the call, against the
 * waiter's clock when the call returns). The same protocol, the same
 * work loop and the same output as the Go program, so that
 * scripts/bench-wait.sh reads the two alike:
 *
 *   alone SECONDS                 (per round; later rounds measure it again)
 *   WAIT COMPUTE_S SLOWDOWN CPU_PER_S LAT_MED_US LAT_MAX_US
 *
 *   mpicc -O2 -o waitcost scripts/peers/waitcost.c
 *   mpirun -np 4 --oversubscribe ./waitcost 1 1 recv,allreduce
 *   mpirun -np 4 --oversubscribe --mca mpi_yield_when_idle 1 ./waitcost
 *
 * Arguments, all optional: WORK seconds (1), ROUNDS (1), WAITS (recv,allreduce).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define CHUNK (1 << 20)

static volatile uint64_t sink;

/* compute runs n chunks of the linear congruential recurrence of the Go
 * program: a chain of dependent multiply-adds on one register. */
static void compute(long n) {
	uint64_t x = sink | 1;
	for (long i = 0; i < n; i++)
		for (long j = 0; j < CHUNK; j++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

static double mono_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double cpu_s(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int me, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	double work = argc > 1 ? atof(argv[1]) : 1.0;
	long rounds = argc > 2 ? atol(argv[2]) : 1;
	const char *waits = argc > 3 ? argv[3] : "recv,allreduce";
	int do_recv = 0, do_ar = 0;
	char *list = strdup(waits), *save = NULL;
	for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (strcmp(w, "recv") == 0) do_recv = 1;
		else if (strcmp(w, "allreduce") == 0) do_ar = 1;
		else do_recv = do_ar = -1000;
	}
	free(list);
	if (argc > 4 || work < 0.01 || work > 60 || rounds < 1 || do_recv + do_ar < 1 || n < 2) {
		if (me == 0)
			fprintf(stderr, "usage: mpirun -np 2+ %s [WORK seconds, 0.01 to 60] [ROUNDS >= 1] [WAITS: recv,allreduce]\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	const char *kinds[2];
	int nk = 0;
	if (do_recv) kinds[nk++] = "recv";
	if (do_ar) kinds[nk++] = "allreduce";

	/* One untimed message to each rank and one MPI_Allreduce first, as the
	 * Go program does: a first call may set up what later ones reuse. */
	double stamp = 0, got;
	for (int q = 1; q < n; q++) {
		if (me == 0) MPI_Send(&stamp, 1, MPI_DOUBLE, q, 1, MPI_COMM_WORLD);
		else if (me == q) MPI_Recv(&got, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	MPI_Allreduce(&stamp, &got, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	long chunks = 0;
	double alone = 0;
	if (me == 0) {
		double t0 = mono_ns();
		do {
			compute(1);
			chunks++;
		} while (mono_ns() - t0 < work * 1e9);
		alone = (mono_ns() - t0) / 1e9;
	} else {
		double s = 2 * work + 0.2;
		struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
		nanosleep(&ts, NULL);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (me == 0) {
		const char *y = getenv("OMPI_MCA_mpi_yield_when_idle"), *o = getenv("OMPI_MCA_mpi_oversubscribe");
		printf("# waitcost: %d ranks (C, Open MPI), rank 0 computes %ld chunks, the others wait; mpi_yield_when_idle=%s mpi_oversubscribe=%s\n",
		       n, chunks, y ? y : "", o ? o : "");
		printf("# wait compute_s slowdown cpu_per_s lat_med_us lat_max_us\n");
		fflush(stdout);
	}
	double mine[3], *all = malloc(3 * n * sizeof(double)), *lats = malloc(n * sizeof(double));
	for (long r = 0; r < rounds; r++) {
		/* The time alone of this round: the calibration's in the first,
		 * the same work again, the others asleep, in each later one. */
		if (r > 0) {
			if (me == 0) {
				double t0 = mono_ns();
				compute(chunks);
				alone = (mono_ns() - t0) / 1e9;
			} else {
				double s = 2 * work + 0.1;
				struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
				nanosleep(&ts, NULL);
			}
			MPI_Barrier(MPI_COMM_WORLD);
		}
		if (me == 0) printf("alone %.4f\n", alone);
		for (int k = 0; k < nk; k++) {
			int recv = kinds[k][0] == 'r';
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = mono_ns(), c0 = cpu_s();
			if (me == 0) {
				compute(chunks);
				mine[0] = (mono_ns() - t0) / 1e9;
				mine[1] = cpu_s() - c0;
				mine[2] = 0;
				if (recv) {
					for (int q = 1; q < n; q++) {
						stamp = mono_ns();
						MPI_Send(&stamp, 1, MPI_DOUBLE, q, 1, MPI_COMM_WORLD);
					}
				} else {
					stamp = mono_ns();
					MPI_Allreduce(&stamp, &got, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
				}
			} else {
				if (recv) {
					MPI_Recv(&got, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				} else {
					stamp = 0;
					MPI_Allreduce(&stamp, &got, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
				}
				double now = mono_ns();
				mine[0] = (now - t0) / 1e9;
				mine[1] = cpu_s() - c0;
				mine[2] = now - got;
				if (mine[2] < 0 || mine[2] > 60e9) {
					fprintf(stderr, "rank %d: the %s that ended the wait carried %.0f, not rank 0's stamp\n", me, kinds[k], got);
					MPI_Abort(MPI_COMM_WORLD, 1);
				}
			}
			MPI_Allgather(mine, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, MPI_COMM_WORLD);
			if (me == 0) {
				double per_s = 0;
				for (int q = 1; q < n; q++) {
					per_s += all[3 * q + 1] / all[3 * q] / (n - 1);
					lats[q - 1] = all[3 * q + 2] / 1e3;
				}
				qsort(lats, n - 1, sizeof(double), cmp);
				int m = n - 1;
				double med = m % 2 ? lats[m / 2] : (lats[m / 2 - 1] + lats[m / 2]) / 2;
				printf("%s %.4f %.3f %.3f %.1f %.1f\n", kinds[k], all[0], all[0] / alone, per_s, med, lats[m - 1]);
				fflush(stdout);
			}
		}
	}
	free(all);
	free(lats);
	MPI_Finalize();
	return 0;
}
