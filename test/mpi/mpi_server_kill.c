/* mpi_server_kill: an I/O server that dies during an MPI job makes the
 * job's I/O fail with an error on every rank, within a bounded time; no
 * rank hangs.
 *
 * Usage: mpiexec -n N mpi_server_kill rpfs:/dir/file READYFILE [limit_s]
 * Each rank writes to its own region, striped over every I/O server, in a
 * loop, blocking and nonblocking calls in turn (so the kill finds either
 * kind in flight). After the first round rank 0 creates READYFILE: the
 * driver script then kills an I/O server. Each rank stops writing at its
 * first failed call and prints its error; when all have failed, a
 * blocking write, a nonblocking write (its error reaching MPI_Wait) and a
 * collective write must fail on every rank as well. An alarm after limit_s (default 120)
 * seconds reports a hang. Prints " No Errors" on success. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (4 << 20)

static void on_alarm(int sig)
{
	static const char msg[] =
		"mpi_server_kill: hung: no error within the time limit\n";
	(void)sig;
	write(2, msg, sizeof(msg) - 1);
	_exit(3);
}

int main(int argc, char **argv)
{
	MPI_File fh;
	MPI_Info info;
	MPI_Status st;
	char *buf, msg[MPI_MAX_ERROR_STRING];
	int rank, nprocs, rc = MPI_SUCCESS, failed, all_failed, coll_failed, len, cls,
			  limit;
	double t0 = 0, waited = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc < 3) {
		if (rank == 0)
			fprintf(stderr, "usage: %s rpfs:/path READYFILE [limit_s]\n",
				argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	limit = argc > 3 ? atoi(argv[3]) : 120;
	signal(SIGALRM, on_alarm);
	alarm((unsigned)limit);

	buf = malloc(CHUNK);
	memset(buf, 'a' + rank, CHUNK);
	/* two-phase for the collective write, so its error comes from the
	 * aggregators and ROMIO must spread it */
	MPI_Info_create(&info);
	MPI_Info_set(info, "romio_cb_write", "enable");
	rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, info,
			   &fh);
	MPI_Info_free(&info);
	if (rc != MPI_SUCCESS) {
		MPI_Error_string(rc, msg, &len);
		fprintf(stderr, "rank %d: open failed before the kill: %s\n", rank, msg);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	/* A nonblocking call's error comes from MPI_Wait, which reports it
	 * through MPI_COMM_WORLD's handler (MPI 4.0, 8.3: generalized
	 * requests): return it rather than abort. */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

	/* independent writes until every rank has had one fail; a rank that
	 * failed stops writing but keeps taking part in the vote */
	failed = 0;
	for (int round = 0; round < 1000000; round++) {
		MPI_Offset off = ((MPI_Offset)round % 8 * nprocs + rank) * CHUNK;

		if (!failed) {
			/* each rank's region spans every I/O server (CHUNK is several
			 * stripes), so every rank's own write meets the dead server;
			 * odd rounds post the write and wait for it */
			int nb = round % 2;

			if (nb) {
				MPI_Request rq;

				rc = MPI_File_iwrite_at(fh, off, buf, CHUNK, MPI_BYTE,
							&rq);
				if (rc == MPI_SUCCESS)
					rc = MPI_Wait(&rq, &st);
			} else {
				rc = MPI_File_write_at(fh, off, buf, CHUNK, MPI_BYTE,
						       &st);
			}
			if (rc != MPI_SUCCESS) {
				failed = 1;
				MPI_Error_class(rc, &cls);
				MPI_Error_string(rc, msg, &len);
				printf("rank %d: independent %s write failed after %.1f s, class %d%s: %s\n",
				       rank, nb ? "nonblocking" : "blocking",
				       MPI_Wtime() - t0, cls,
				       cls == MPI_ERR_IO ? " (MPI_ERR_IO)" : "", msg);
				fflush(stdout);
			}
		}
		if (round == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			if (rank == 0) {
				FILE *f = fopen(argv[2], "w");
				if (f)
					fclose(f);
			}
			t0 = MPI_Wtime();
		}
		waited = MPI_Wtime() - t0;
		MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
		if (all_failed)
			break;
		MPI_Allreduce(MPI_IN_PLACE, &waited, 1, MPI_DOUBLE, MPI_MAX,
			      MPI_COMM_WORLD);
		if (waited > limit / 2.0)
			break;
	}
	if (!failed)
		printf("rank %d: no independent write failed %.0f s after the ready signal\n",
		       rank, waited);

	/* a blocking write fails now */
	rc = MPI_File_write_at(fh, (MPI_Offset)rank * CHUNK, buf, CHUNK, MPI_BYTE, &st);
	if (rc != MPI_SUCCESS) {
		MPI_Error_class(rc, &cls);
		printf("rank %d: blocking write failed, class %d%s\n", rank, cls,
		       cls == MPI_ERR_IO ? " (MPI_ERR_IO)" : "");
	} else {
		printf("rank %d: blocking write did not fail\n", rank);
		failed = 0;
	}

	/* a nonblocking write fails too: posted (or refused at once), its error
	 * comes from MPI_Wait, which reports it through MPI_COMM_WORLD's
	 * handler (set before the loop) */
	{
		MPI_Request rq;
		int nb_failed;

		rc = MPI_File_iwrite_at(fh, (MPI_Offset)rank * CHUNK, buf, CHUNK,
					MPI_BYTE, &rq);
		if (rc == MPI_SUCCESS)
			rc = MPI_Wait(&rq, &st);
		nb_failed = rc != MPI_SUCCESS;
		if (nb_failed) {
			MPI_Error_class(rc, &cls);
			MPI_Error_string(rc, msg, &len);
			printf("rank %d: nonblocking write failed, class %d%s: %s\n",
			       rank, cls, cls == MPI_ERR_IO ? " (MPI_ERR_IO)" : "", msg);
		} else {
			printf("rank %d: nonblocking write did not fail\n", rank);
		}
		failed = failed && nb_failed;
	}

	/* a collective write now fails on every rank too */
	rc = MPI_File_write_at_all(fh, (MPI_Offset)rank * CHUNK, buf, CHUNK, MPI_BYTE,
				   &st);
	coll_failed = rc != MPI_SUCCESS;
	if (coll_failed) {
		MPI_Error_class(rc, &cls);
		printf("rank %d: collective write failed, class %d%s\n", rank, cls,
		       cls == MPI_ERR_IO ? " (MPI_ERR_IO)" : "");
	} else {
		printf("rank %d: collective write did not fail\n", rank);
	}
	failed = failed && coll_failed;
	MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	MPI_File_close(&fh);
	if (rank == 0)
		printf(all_failed ? " No Errors\n"
				  : " Found errors: some rank saw no failure\n");
	MPI_Finalize();
	return !all_failed;
}
