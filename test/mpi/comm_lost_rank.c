/* A process that stops (it exits abruptly after the first collective) makes
 * every other process's next collective fail with a message within the
 * communicator's timeout, and the ones after it fail at once: no hang. Run
 * under mpirun with orte_allowed_exit_without_sync, so that Open MPI leaves
 * the survivors running when a process exits without MPI_Finalize (by
 * default mpirun tears the whole job down itself within about a second). */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libnnc_style.h"
#include "nnc/ccv_nnc_easy.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void)
{
	ccv_nnc_init();
	if (!ccv_nnc_comm_mpi_available())
	{
		printf("lost-rank: built without MPI; nothing to test\n");
		return 0;
	}
	ccv_nnc_comm_t* comm = ccv_nnc_comm_new_mpi(0);
	if (!comm)
		return 1;
	const int rank = ccv_nnc_comm_rank(comm), size = ccv_nnc_comm_size(comm);
	const double timeout = 3;
	ccv_nnc_comm_set_timeout(comm, timeout);
	ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 1000), 0);
	for (int i = 0; i < 1000; i++)
		a->data.f32[i] = 1;
	ccv_nnc_cmd_t allreduce = ccv_nnc_cmd_set_comm(CMD_COMM_ALLREDUCE_FORWARD(), comm);
	RUN(allreduce, TENSOR_LIST(a), TENSOR_LIST(a));
	CHECK(a->data.f32[999] == size, "the first allreduce sums %d ones (got %g)", size, a->data.f32[999]);
	if (size == 1)
	{
		printf("lost-rank: one process; nothing to lose (%d failures)\n", failed);
		ccv_nnc_tensor_free(a);
		ccv_nnc_comm_free(comm);
		return failed ? 1 : 0;
	}
	if (rank == size - 1)
		_exit(0); /* gone, as if it crashed */
	const double start = now();
	const int r = ccv_nnc_cmd_exec(allreduce, ccv_nnc_no_hint, 0, TENSOR_LIST(a), TENSOR_LIST(a), 0);
	const double waited = now() - start;
	CHECK(r == CCV_NNC_EXEC_INVALID, "the second allreduce fails (%d)", r);
	CHECK(strstr(ccv_nnc_error_message(), "not every process joined the allreduce"), "its message says why");
	CHECK(waited >= timeout * 0.9 && waited < timeout + 5, "it failed after %.2f s (timeout %.0f s)", waited, timeout);
	CHECK(ccv_nnc_comm_is_broken(comm), "the communicator is marked broken");
	const double again = now();
	CHECK(ccv_nnc_comm_barrier(comm) == CCV_NNC_EXEC_INVALID && strstr(ccv_nnc_error_message(), "failed earlier"), "later collectives fail");
	CHECK(now() - again < 1, "at once (%.2f s)", now() - again);
	if (!failed)
		printf("lost-rank: rank %d detected the lost process after %.2f s: %s\n", rank, waited, "ok");
	ccv_nnc_tensor_free(a);
	ccv_nnc_comm_free(comm); /* does not finalise MPI: that would wait for the lost process */
	return failed ? 1 : 0;
}
