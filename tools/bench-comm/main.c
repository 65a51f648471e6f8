/* bench-comm: the allreduce of fp32 buffers across the processes of an
 * mpirun, through NNC (COMM_ALLREDUCE_FORWARD given the communicator, in
 * place) and through MPI_Allreduce (MPI_IN_PLACE) on the same buffer, one
 * after the other, median of the repetitions. Prints the bus bandwidth
 * (2 (n-1)/n x bytes / time, what a ring moves per process) and NNC's time
 * over MPI's.
 *   mpirun -np 2 bench-comm [--reps R] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_value(const void* a, const void* b)
{
	const double x = *(const double*)a, y = *(const double*)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char** argv)
{
	int reps = 20;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
	if (reps < 1)
		reps = 1;
	ccv_nnc_init();
	ccv_nnc_comm_t* comm = ccv_nnc_comm_new_mpi(0); /* initialises MPI */
	if (!comm)
	{
		fprintf(stderr, "bench-comm: %s\n", ccv_nnc_error_message());
		return 1;
	}
	const int rank = ccv_nnc_comm_rank(comm), size = ccv_nnc_comm_size(comm);
	if (rank == 0)
		printf("bench-comm: %d processes, fp32 allreduce in place, median of %d (a barrier before each)\n%12s %12s %12s %10s %10s %8s\n",
			size, reps, "bytes", "NNC us", "MPI us", "NNC GB/s", "MPI GB/s", "NNC/MPI");
	const ccv_nnc_cmd_t allreduce = ccv_nnc_cmd_set_comm(CMD_COMM_ALLREDUCE_FORWARD(), comm);
	double* ours = malloc(sizeof(double) * (size_t)reps);
	double* theirs = malloc(sizeof(double) * (size_t)reps);
	for (long bytes = 4096; bytes <= (64l << 20); bytes *= 4)
	{
		const int n = (int)(bytes / 4);
		ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, n), 0);
		for (int i = 0; i < n; i++)
			t->data.f32[i] = 1e-3f * (float)(i % 1000);
		for (int r = -2; r < reps; r++)
		{
			ccv_nnc_comm_barrier(comm);
			double t0 = now();
			if (ccv_nnc_cmd_exec(allreduce, ccv_nnc_no_hint, 0, TENSOR_LIST(t), TENSOR_LIST(t), 0) != CCV_NNC_EXEC_SUCCESS)
			{
				fprintf(stderr, "bench-comm: %s\n", ccv_nnc_error_message());
				return 1;
			}
			const double a = now() - t0;
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = now();
			MPI_Allreduce(MPI_IN_PLACE, t->data.f32, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			const double b = now() - t0;
			if (r >= 0)
				ours[r] = a, theirs[r] = b;
		}
		qsort(ours, (size_t)reps, sizeof(double), by_value);
		qsort(theirs, (size_t)reps, sizeof(double), by_value);
		const double a = ours[reps / 2], b = theirs[reps / 2];
		const double bus = 2.0 * (size - 1) / size * (double)bytes;
		if (rank == 0)
			printf("%12ld %12.1f %12.1f %10.2f %10.2f %8.2f\n", bytes, a * 1e6, b * 1e6, bus / a * 1e-9, bus / b * 1e-9, a / b);
		ccv_nnc_tensor_free(t);
	}
	free(ours);
	free(theirs);
	ccv_nnc_comm_free(comm);
	return 0;
}
