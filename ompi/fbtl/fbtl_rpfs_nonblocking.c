/* fbtl_rpfs_nonblocking.c: truly asynchronous reads and writes.
 *
 * With ipreadv/ipwritev set, OMPIO hands the fbtl a whole nonblocking
 * operation (MPI_File_iwrite_at and friends, and the overlapped writes of
 * its collective algorithms) with an mca_ompio_request_t. The list is
 * posted at once with librpfs' nonblocking list I/O, so every server is
 * working when the call returns; OMPIO's progress function, which
 * opal_progress polls while the program computes or waits, calls
 * fbtl_rpfs_progress, which asks librpfs (rpfs_test) whether the request
 * finished. No thread per request, no blocking in the progress loop.
 *
 * Atomic mode needs the range locked for the whole operation; there the
 * transfer runs blocking and the request is returned complete, as the
 * ROMIO driver does. */
#include "fbtl_rpfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* What a posted operation keeps until it finishes: req->req_data, a single
 * block, as OMPIO's request destructor frees req_data with free(). */
struct fbtl_rpfs_ireq {
	rpfs_request_t *req; /* NULL once finished */
	struct rpfs_ompi_file *f;
	enum fbtl_rpfs_dir dir;
	uint64_t end;		/* one past the last file byte */
	size_t bytes;		/* the list's total */
	int nsegs;		/* reads: the file pieces, for the EOF count */
	struct rpfs_seg segs[]; /* (librpfs copied its own: it needs none) */
};

/* Set the request's status from a result: MPI's byte count or a negative
 * errno. */
static void set_status(mca_ompio_request_t *req, enum fbtl_rpfs_dir dir, ssize_t n)
{
	ompi_status_public_t *st = &req->req_ompi.req_status;

	if (n < 0) {
		st->MPI_ERROR = rpfs_ompi_err_code(
			(int)n,
			dir == FBTL_RPFS_WRITE ? "nonblocking write" : "nonblocking read",
			NULL);
		st->_ucount = 0;
	} else {
		st->MPI_ERROR = MPI_SUCCESS;
		st->_ucount = (size_t)n;
	}
}

/* Finish at once: the request never enters OMPIO's progress loop. Returns
 * the status's error, which the callers that check see too. */
static ssize_t complete_now(mca_ompio_request_t *req, enum fbtl_rpfs_dir dir, ssize_t n)
{
	set_status(req, dir, n);
	ompi_request_complete(&req->req_ompi, false);
	return req->req_ompi.req_status.MPI_ERROR;
}

static struct fbtl_rpfs_ireq *ireq_new(ompio_file_t *fh, const struct rpfs_mpi_list *l,
				       enum fbtl_rpfs_dir dir)
{
	int nsegs = dir == FBTL_RPFS_READ ? l->nfile : 0;
	struct fbtl_rpfs_ireq *r;

	r = malloc(sizeof(*r) + (size_t)nsegs * sizeof(r->segs[0]));
	if (r == NULL)
		return NULL;
	r->req = NULL;
	r->f = rpfs_ompi_file_of(fh);
	r->dir = dir;
	r->end = l->end;
	r->bytes = l->bytes;
	r->nsegs = nsegs;
	if (nsegs > 0)
		memcpy(r->segs, l->file, (size_t)nsegs * sizeof(r->segs[0]));
	return r;
}

static ssize_t post(ompio_file_t *fh, const struct rpfs_mpi_list *l,
		    mca_ompio_request_t *req, enum fbtl_rpfs_dir dir)
{
	struct rpfs_ompi_file *f = rpfs_ompi_file_of(fh);
	struct fbtl_rpfs_ireq *r;
	int ret;

	if (fh->f_atomicity || l->bytes == 0)
		return complete_now(req, dir, fbtl_rpfs_transfer(fh, l, dir));
	r = ireq_new(fh, l, dir);
	if (r == NULL)
		return complete_now(req, dir, -ENOMEM);
	if (dir == FBTL_RPFS_WRITE)
		ret = rpfs_iwritev(f->file, l->mem, l->nmem, l->file, l->nfile, &r->req);
	else
		ret = rpfs_ireadv(f->file, l->mem, l->nmem, l->file, l->nfile, &r->req);
	if (ret < 0) {
		free(r);
		return complete_now(req, dir, ret);
	}
	req->req_data = r;
	req->req_progress_fn = fbtl_rpfs_progress;
	req->req_free_fn = fbtl_rpfs_request_free;
	return OMPI_SUCCESS;
}

static ssize_t nonblocking(ompio_file_t *fh, ompi_request_t *request,
			   enum fbtl_rpfs_dir dir)
{
	mca_ompio_request_t *req = (mca_ompio_request_t *)request;
	struct rpfs_mpi_list l;
	ssize_t ret;

	if (fbtl_rpfs_list_build(fh, &l) < 0)
		return complete_now(req, dir, -ENOMEM);
	ret = post(fh, &l, req, dir);
	rpfs_mpi_list_free(&l);
	return ret;
}

ssize_t fbtl_rpfs_ipreadv(ompio_file_t *fh, ompi_request_t *request)
{
	return nonblocking(fh, request, FBTL_RPFS_READ);
}

ssize_t fbtl_rpfs_ipwritev(ompio_file_t *fh, ompi_request_t *request)
{
	return nonblocking(fh, request, FBTL_RPFS_WRITE);
}

/* Polled by OMPIO's progress function; true when the request is complete
 * (OMPIO then completes the MPI request with the status set here). */
bool fbtl_rpfs_progress(mca_ompio_request_t *req)
{
	struct fbtl_rpfs_ireq *r = req->req_data;
	ssize_t bytes = 0, n;
	int done = 0, ret;

	if (r->req == NULL)
		return true;
	ret = rpfs_test(r->req, &done, &bytes);
	if (!done)
		return false;
	r->req = NULL; /* rpfs_test freed it */
	n = ret < 0 ? ret : bytes;
	if (n >= 0 && r->dir == FBTL_RPFS_WRITE)
		rpfs_ompi_wrote(r->f, r->end, r->bytes, n);
	else if (n > 0)
		n = (ssize_t)rpfs_mpi_read_count(&r->f->known_size, r->f->file, r->segs,
						 r->nsegs, (uint64_t)n);
	set_status(req, r->dir, n);
	return true;
}

/* The MPI request is freed: a transfer still in flight (MPI_Request_free
 * of an active request) must end before its buffers may be reused. */
void fbtl_rpfs_request_free(mca_ompio_request_t *req)
{
	struct fbtl_rpfs_ireq *r = req->req_data;

	if (r != NULL && r->req != NULL) {
		rpfs_wait(r->req);
		r->req = NULL;
	}
}
