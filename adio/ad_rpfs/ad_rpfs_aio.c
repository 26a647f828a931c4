/* ad_rpfs_aio.c: nonblocking I/O, truly asynchronous.
 *
 * Each operation is posted with librpfs' nonblocking calls (rpfs_ipread,
 * rpfs_ipwrite, rpfs_ireadv, rpfs_iwritev) and returned to MPI as an MPICH
 * extended generalized request: MPI's progress engine calls our poll
 * function (rpfs_test) from MPI_Test/MPI_Wait, and our wait function
 * (rpfs_wait) when MPI blocks on several (MPI_Waitall), so the transfer
 * overlaps the program's computation; MPI_Wait's loop over the poll
 * function sleeps in librpfs rather than spin (see the poll function).
 * The strided variants build the same single list as the blocking path
 * (ad_rpfs_io_list.c); librpfs copies the lists, so only a read's list is
 * kept, for the end-of-file count.
 *
 * The data moves while the program computes without calling MPI: librpfs'
 * progress thread serves the transfer and its replies (client/request.c).
 *
 * MPICH always has the extended generalized requests (MPIX_Grequest_class_*)
 * this needs. ROMIO's configure (MPICH 4.0.2) computes
 * HAVE_MPI_GREQUEST_EXTENSIONS but never defines it for the drivers, so a
 * driver that tests it silently runs ROMIO's blocking ADIOI_FAKE_* calls
 * (until this was found, every "nonblocking" call moved all its data
 * before returning); this file does not depend on it.
 *
 * Nonblocking collectives (MPI_File_iwrite_all, iread_all) post each rank's
 * access as one list I/O, as the independent calls do: ROMIO's generic
 * version first exchanges offsets with nonblocking collectives that move
 * only inside MPI calls, and on Linux it then runs the independent access
 * blocking (its ticket 2201 workaround), so it cannot overlap. rpfs
 * already serves a rank's noncontiguous access as one request per server;
 * a user who wants two-phase aggregation anyway sets romio_cb_write /
 * romio_cb_read to enable.
 *
 * Atomic mode needs the range locked for the whole operation; there the
 * strided calls run the blocking path and return a completed request, as
 * ROMIO itself does for contiguous accesses.
 *
 * A nonblocking write leaves the size this process knows (ADIOI_RPFS_fs)
 * alone: at the post the write may yet fail, and a request may complete
 * after MPI_File_close has freed the file (a program that never waited
 * before closing). A later read reaching past the known size asks the
 * servers once instead, so a failed write never makes such a read count
 * zeros past the end. */
#include "ad_rpfs.h"

#include "mpiu_greq.h"

typedef struct ADIOI_RPFS_aio {
	MPI_Request greq;
	rpfs_request_t *req;
	ADIO_File fd;
	ADIOI_RPFS_dir dir;
	int done;
	ADIO_Offset nbytes;    /* result: bytes for MPI's status */
	int error_code;	       /* result: MPI error code */
	struct rpfs_seg *segs; /* reads: file pieces, for the EOF count */
	int nsegs;
	struct rpfs_seg one;  /* segs of a contiguous read */
	ADIOI_RPFS_list list; /* segs of a strided read: its list, kept */
	double last_poll;     /* MPI_Wtime of the last poll that found it unfinished */
	double loop_start;    /* of the polls that came back to back */
	double nap_max;	      /* POLL_NAP_MAX or, with MPI_THREAD_MULTIPLE, _MT */
} ADIOI_RPFS_aio;

static MPIX_Grequest_class ADIOI_RPFS_greq_class = 0;

static void finish(ADIOI_RPFS_aio *a, ssize_t ret)
{
	static char myname[] = "ADIOI_RPFS_AIO";

	a->done = 1;
	a->req = NULL;
	if (ret < 0) {
		a->nbytes = 0;
		a->error_code =
			ADIOI_RPFS_Err(myname, __LINE__, (int)ret,
				       a->dir == ADIOI_RPFS_READ ? "nonblocking read"
								 : "nonblocking write",
				       NULL);
	} else {
		a->nbytes = ret;
		a->error_code = MPI_SUCCESS;
		if (a->dir == ADIOI_RPFS_READ && ret > 0) {
			ADIOI_RPFS_fs *fs = a->fd->fs_ptr;

			a->nbytes = (ADIO_Offset)rpfs_mpi_read_count(
				&fs->known_size, fs->file, a->segs, a->nsegs,
				(uint64_t)ret);
		}
	}
	MPI_Grequest_complete(a->greq);
}

/* MPICH's MPI_Wait (MPIR_Wait, 4.0.2) calls a generalized request's poll
 * function in a loop and never its wait function (MPI_Waitall does): a
 * rank waiting for its transfer held a core at 100%, on a node where the
 * progress thread and the servers moving that transfer need the cores (a
 * 256 MiB read waited for after computing ended 1.6x the blocking time
 * later). A poll that comes within POLL_LOOP_GAP of one that found the
 * request unfinished is such a loop (a program testing back to back is
 * waiting too): it sleeps until the request completes, at most a quarter
 * of the time the loop has lasted and POLL_NAP_MAX, so a Waitany whose
 * other request finishes first sees it late by at most that. Completion
 * wakes the sleeper at once: the wait itself costs no latency.
 * MPIR_Wait polls holding MPICH's global lock (it yields it between
 * polls): under MPI_THREAD_MULTIPLE a nap keeps the program's other
 * threads out of MPI meanwhile, so there a nap lasts POLL_NAP_MAX_MT at
 * most. */
#define POLL_LOOP_GAP	100e-6
#define POLL_NAP_MAX	1e-3
#define POLL_NAP_MAX_MT 50e-6

static int ADIOI_RPFS_aio_poll_fn(void *extra_state, MPI_Status *status)
{
	ADIOI_RPFS_aio *a = extra_state;
	ssize_t bytes = 0;
	int done = 0, ret;
	double t;

	if (a->done)
		return MPI_SUCCESS;
	t = MPI_Wtime();
	if (a->last_poll > 0 && t - a->last_poll < POLL_LOOP_GAP) {
		double nap = (t - a->loop_start) / 4;

		ret = rpfs_timedwait(a->req,
				     (long)((nap < a->nap_max ? nap : a->nap_max) * 1e6),
				     &done, &bytes);
	} else {
		a->loop_start = t;
		ret = rpfs_test(a->req, &done, &bytes);
	}
	a->last_poll = MPI_Wtime();
	if (done)
		finish(a, ret < 0 ? ret : bytes);
	return MPI_SUCCESS;
}

/* MPI blocks on these requests: wait on each in turn; the transfers are
 * in flight together, so this costs the longest one, not their sum. */
static int ADIOI_RPFS_aio_wait_fn(int count, void **array_of_states, double timeout,
				  MPI_Status *status)
{
	for (int i = 0; i < count; i++) {
		ADIOI_RPFS_aio *a = array_of_states[i];
		if (!a->done)
			finish(a, rpfs_wait(a->req));
	}
	return MPI_SUCCESS;
}

static int ADIOI_RPFS_aio_query_fn(void *extra_state, MPI_Status *status)
{
	ADIOI_RPFS_aio *a = extra_state;

	MPI_Status_set_elements_x(status, MPI_BYTE, a->nbytes);
	MPI_Status_set_cancelled(status, 0);
	status->MPI_SOURCE = MPI_UNDEFINED;
	status->MPI_TAG = MPI_UNDEFINED;
	return a->error_code;
}

static int ADIOI_RPFS_aio_free_fn(void *extra_state)
{
	ADIOI_RPFS_aio *a = extra_state;

	if (!a->done && a->req != NULL)
		rpfs_wait(a->req);
	rpfs_mpi_list_free(&a->list);
	ADIOI_Free(a);
	return MPI_SUCCESS;
}

static void make_request(ADIOI_RPFS_aio *a, ADIO_Request *request)
{
	int level;

	MPI_Query_thread(&level);
	a->nap_max = level == MPI_THREAD_MULTIPLE ? POLL_NAP_MAX_MT : POLL_NAP_MAX;
	if (ADIOI_RPFS_greq_class == 0)
		MPIX_Grequest_class_create(ADIOI_RPFS_aio_query_fn,
					   ADIOI_RPFS_aio_free_fn, MPIU_Greq_cancel_fn,
					   ADIOI_RPFS_aio_poll_fn, ADIOI_RPFS_aio_wait_fn,
					   &ADIOI_RPFS_greq_class);
	MPIX_Grequest_class_allocate(ADIOI_RPFS_greq_class, a, request);
	memcpy(&a->greq, request, sizeof(*request));
}

static void icontig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		    int file_ptr_type, ADIO_Offset offset, ADIO_Request *request,
		    int *error_code, ADIOI_RPFS_dir dir)
{
	static char myname[] = "ADIOI_RPFS_ICONTIG";
	ADIOI_RPFS_fs *fs = fd->fs_ptr;
	ADIOI_RPFS_aio *a;
	MPI_Count datatype_size;
	ADIO_Offset len, off;
	int ret;

	MPI_Type_size_x(datatype, &datatype_size);
	len = datatype_size * (ADIO_Offset)count;
	off = (file_ptr_type == ADIO_EXPLICIT_OFFSET) ? offset : fd->fp_ind;

	if (len == 0) {
		MPIO_Completed_request_create(&fd, 0, error_code, request);
		return;
	}
	a = ADIOI_Calloc(1, sizeof(*a));
	a->fd = fd;
	a->dir = dir;
	a->one.off = (uint64_t)off;
	a->one.len = (uint64_t)len;
	a->segs = &a->one;
	a->nsegs = 1;
	if (dir == ADIOI_RPFS_READ)
		ret = rpfs_ipread(fs->file, buf, (size_t)len, (uint64_t)off, &a->req);
	else
		ret = rpfs_ipwrite(fs->file, buf, (size_t)len, (uint64_t)off, &a->req);
	if (ret < 0) {
		*error_code = ADIOI_RPFS_Err(
			myname, __LINE__, ret,
			dir == ADIOI_RPFS_READ ? "rpfs_ipread" : "rpfs_ipwrite", NULL);
		ADIOI_Free(a);
		return;
	}
	if (dir == ADIOI_RPFS_WRITE)
		fd->dirty_write = 1;
	make_request(a, request);
	if (file_ptr_type == ADIO_INDIVIDUAL)
		fd->fp_ind = off + len;
	fd->fp_sys_posn = -1;
	*error_code = MPI_SUCCESS;
}

void ADIOI_RPFS_IreadContig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			    int file_ptr_type, ADIO_Offset offset, ADIO_Request *request,
			    int *error_code)
{
	icontig(fd, buf, count, datatype, file_ptr_type, offset, request, error_code,
		ADIOI_RPFS_READ);
}

void ADIOI_RPFS_IwriteContig(ADIO_File fd, const void *buf, int count,
			     MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
			     ADIO_Request *request, int *error_code)
{
	icontig(fd, (void *)buf, count, datatype, file_ptr_type, offset, request,
		error_code, ADIOI_RPFS_WRITE);
}

static void istrided(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		     int file_ptr_type, ADIO_Offset offset, ADIO_Request *request,
		     int *error_code, ADIOI_RPFS_dir dir)
{
	static char myname[] = "ADIOI_RPFS_ISTRIDED";
	ADIOI_RPFS_fs *fs = fd->fs_ptr;
	ADIOI_RPFS_list l;
	ADIOI_RPFS_aio *a;
	ADIO_Status status;
	MPI_Count size;
	int ret;

	if (fd->atomicity) {
		if (dir == ADIOI_RPFS_READ)
			ADIOI_RPFS_ReadStrided(fd, buf, count, datatype, file_ptr_type,
					       offset, &status, error_code);
		else
			ADIOI_RPFS_WriteStrided(fd, buf, count, datatype, file_ptr_type,
						offset, &status, error_code);
		MPI_Type_size_x(datatype, &size);
		MPIO_Completed_request_create(
			&fd, *error_code == MPI_SUCCESS ? size * count : 0, error_code,
			request);
		return;
	}

	ret = ADIOI_RPFS_Build_list(fd, buf, count, datatype, file_ptr_type, offset, &l);
	if (ret < 0) {
		*error_code = ADIOI_RPFS_Err(myname, __LINE__, ret, "file view", "");
		return;
	}
	if (l.bytes == 0) {
		rpfs_mpi_list_free(&l);
		MPIO_Completed_request_create(&fd, 0, error_code, request);
		return;
	}
	a = ADIOI_Calloc(1, sizeof(*a));
	a->fd = fd;
	a->dir = dir;
	if (dir == ADIOI_RPFS_READ)
		ret = rpfs_ireadv(fs->file, l.mem, l.nmem, l.file, l.nfile, &a->req);
	else
		ret = rpfs_iwritev(fs->file, l.mem, l.nmem, l.file, l.nfile, &a->req);
	if (ret < 0) {
		*error_code = ADIOI_RPFS_Err(
			myname, __LINE__, ret,
			dir == ADIOI_RPFS_READ ? "rpfs_ireadv" : "rpfs_iwritev", NULL);
		ADIOI_Free(a);
		rpfs_mpi_list_free(&l);
		return;
	}
	if (file_ptr_type == ADIO_INDIVIDUAL && l.nfile > 0)
		fd->fp_ind = (ADIO_Offset)l.end;
	if (dir == ADIOI_RPFS_READ) {
		a->list = l; /* kept for the end-of-file count */
		a->segs = a->list.file;
		a->nsegs = a->list.nfile;
	} else {
		fd->dirty_write = 1;
		rpfs_mpi_list_free(&l);
	}
	make_request(a, request);
	fd->fp_sys_posn = -1;
	*error_code = MPI_SUCCESS;
}

void ADIOI_RPFS_IreadStrided(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			     int file_ptr_type, ADIO_Offset offset, ADIO_Request *request,
			     int *error_code)
{
	istrided(fd, buf, count, datatype, file_ptr_type, offset, request, error_code,
		 ADIOI_RPFS_READ);
}

void ADIOI_RPFS_IwriteStrided(ADIO_File fd, const void *buf, int count,
			      MPI_Datatype datatype, int file_ptr_type,
			      ADIO_Offset offset, ADIO_Request *request, int *error_code)
{
	istrided(fd, (void *)buf, count, datatype, file_ptr_type, offset, request,
		 error_code, ADIOI_RPFS_WRITE);
}

void ADIOI_RPFS_IreadStridedColl(ADIO_File fd, void *buf, int count,
				 MPI_Datatype datatype, int file_ptr_type,
				 ADIO_Offset offset, ADIO_Request *request,
				 int *error_code)
{
	if (fd->hints->cb_read == ADIOI_HINT_ENABLE)
		ADIOI_GEN_IreadStridedColl(fd, buf, count, datatype, file_ptr_type,
					   offset, request, error_code);
	else
		istrided(fd, buf, count, datatype, file_ptr_type, offset, request,
			 error_code, ADIOI_RPFS_READ);
}

void ADIOI_RPFS_IwriteStridedColl(ADIO_File fd, const void *buf, int count,
				  MPI_Datatype datatype, int file_ptr_type,
				  ADIO_Offset offset, ADIO_Request *request,
				  int *error_code)
{
	if (fd->hints->cb_write == ADIOI_HINT_ENABLE)
		ADIOI_GEN_IwriteStridedColl(fd, buf, count, datatype, file_ptr_type,
					    offset, request, error_code);
	else
		istrided(fd, (void *)buf, count, datatype, file_ptr_type, offset, request,
			 error_code, ADIOI_RPFS_WRITE);
}
