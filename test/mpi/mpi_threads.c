/* mpi_threads: MPI-IO on rpfs from several threads at once
 * (MPI_THREAD_MULTIPLE), blocking and nonblocking calls mixed, while
 * librpfs' progress thread completes them.
 *
 * Usage: mpiexec -n N mpi_threads rpfs:/dir/file [threads, default 4]
 * Every thread of every rank owns a region of one shared file and, for a
 * number of rounds, writes it in pieces with MPI_File_iwrite_at (several
 * in flight, waited with MPI_Waitall) and MPI_File_write_at, reads it back
 * with MPI_File_iread_at (polled with MPI_Test) and MPI_File_read_at, and
 * checks every byte; the pattern changes each round, so a piece of an
 * earlier round or another thread's region read back is caught. Fails if
 * the library does not provide MPI_THREAD_MULTIPLE. Prints " No Errors" on
 * success. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIECE  (256 * 1024 + 17) /* crosses stripe boundaries unevenly */
#define PIECES 8
#define ROUNDS 6

static int rank, nprocs, nthreads;
static MPI_File fh;

struct worker {
	int id; /* thread index within the rank */
	int errs;
	unsigned char *out, *in;
};

static unsigned char pattern(uint64_t off, int round)
{
	return (unsigned char)(((off * 2654435761u) >> 11) + (uint64_t)round * 77);
}

static void report(struct worker *w, int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len;

	MPI_Error_string(rc, msg, &len);
	printf("rank %d thread %d: %s: %s\n", rank, w->id, what, msg);
	w->errs++;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t region = (uint64_t)PIECE * PIECES;
	MPI_Offset base = (MPI_Offset)((uint64_t)(rank * nthreads + w->id) * region);
	MPI_Request req[PIECES];
	MPI_Status st[PIECES];
	int rc;

	for (int round = 0; round < ROUNDS && !w->errs; round++) {
		for (uint64_t k = 0; k < region; k++)
			w->out[k] = pattern((uint64_t)base + k, round);
		/* even pieces nonblocking, all in flight; odd pieces blocking */
		for (int p = 0; p < PIECES; p += 2) {
			rc = MPI_File_iwrite_at(fh, base + (MPI_Offset)p * PIECE,
						w->out + (size_t)p * PIECE, PIECE,
						MPI_BYTE, &req[p / 2]);
			if (rc != MPI_SUCCESS) {
				report(w, rc, "iwrite_at");
				return NULL;
			}
		}
		for (int p = 1; p < PIECES; p += 2) {
			rc = MPI_File_write_at(fh, base + (MPI_Offset)p * PIECE,
					       w->out + (size_t)p * PIECE, PIECE,
					       MPI_BYTE, st);
			if (rc != MPI_SUCCESS) {
				report(w, rc, "write_at");
				return NULL;
			}
		}
		rc = MPI_Waitall(PIECES / 2, req, st);
		if (rc != MPI_SUCCESS) {
			report(w, rc, "Waitall (writes)");
			return NULL;
		}

		memset(w->in, 0, region);
		for (int p = 0; p < PIECES; p += 2) {
			rc = MPI_File_iread_at(fh, base + (MPI_Offset)p * PIECE,
					       w->in + (size_t)p * PIECE, PIECE, MPI_BYTE,
					       &req[p / 2]);
			if (rc != MPI_SUCCESS) {
				report(w, rc, "iread_at");
				return NULL;
			}
		}
		for (int p = 1; p < PIECES; p += 2) {
			rc = MPI_File_read_at(fh, base + (MPI_Offset)p * PIECE,
					      w->in + (size_t)p * PIECE, PIECE, MPI_BYTE,
					      st);
			if (rc != MPI_SUCCESS) {
				report(w, rc, "read_at");
				return NULL;
			}
		}
		for (int p = 0; p < PIECES / 2; p++) {
			int done = 0;

			while (!done) {
				rc = MPI_Test(&req[p], &done, st);
				if (rc != MPI_SUCCESS) {
					report(w, rc, "Test (reads)");
					return NULL;
				}
			}
		}
		for (uint64_t k = 0; k < region; k++)
			if (w->in[k] != w->out[k]) {
				printf("rank %d thread %d round %d: byte %llu is %u, want %u\n",
				       rank, w->id, round,
				       (unsigned long long)((uint64_t)base + k), w->in[k],
				       w->out[k]);
				w->errs++;
				break;
			}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *w;
	pthread_t *tid;
	int provided, errs = 0, total;

	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc < 2) {
		if (!rank)
			fprintf(stderr, "usage: mpi_threads rpfs:/dir/file [threads]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (provided < MPI_THREAD_MULTIPLE) {
		if (!rank)
			printf("MPI provides thread level %d, not MPI_THREAD_MULTIPLE\n",
			       provided);
		MPI_Finalize();
		return 1;
	}
	nthreads = argc > 2 ? atoi(argv[2]) : 4;
	if (nthreads < 1 || nthreads > 64)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
			  MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
		fprintf(stderr, "rank %d: open failed\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	w = calloc((size_t)nthreads, sizeof(*w));
	tid = calloc((size_t)nthreads, sizeof(*tid));
	for (int i = 0; i < nthreads; i++) {
		w[i].id = i;
		w[i].out = malloc((size_t)PIECE * PIECES);
		w[i].in = malloc((size_t)PIECE * PIECES);
		if (!w[i].out || !w[i].in || pthread_create(&tid[i], NULL, work, &w[i])) {
			fprintf(stderr, "rank %d: can't start thread %d\n", rank, i);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(tid[i], NULL);
		errs += w[i].errs;
		free(w[i].out);
		free(w[i].in);
	}
	MPI_File_close(&fh);
	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank && !total)
		printf(" No Errors\n");
	free(w);
	free(tid);
	MPI_Finalize();
	return total != 0;
}
