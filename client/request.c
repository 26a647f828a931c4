/* Nonblocking I/O (rpfs_i*): a request is a started list I/O (listio.c)
 * whose calls are all in flight when the function returns; the client's
 * progress thread (the transport's, see xport_thread.c) moves the data and
 * handles the replies while the caller computes, so rpfs_test and rpfs_wait
 * only collect the result (what ROMIO's Iread/Iwrite need to be truly
 * asynchronous). The lists are consumed when the request starts (each
 * server's share is built into the request); the memory is not copied.
 *
 * A request that can't start (bad lists, a server that can't be reached)
 * fails at once with nothing in flight; one that started reports the first
 * failure of its calls from rpfs_test or rpfs_wait, in the thread that
 * calls them. rpfs_close waits until the file's requests have moved their
 * data (they can still be tested and waited for afterwards), and
 * rpfs_finalize until every request has: nothing a program posted is
 * lost because it closed or ended without waiting. */
#include <errno.h>

#include "client_priv.h"

int rpfs_ipwrite(rpfs_file_t *f, const void *buf, size_t len, uint64_t off,
		 rpfs_request_t **req)
{
	struct iovec iov = {(void *)buf, len};
	struct rpfs_seg seg = {off, len};

	return rpfsc_io_start(f, true, &iov, 1, &seg, 1, true, req);
}

int rpfs_ipread(rpfs_file_t *f, void *buf, size_t len, uint64_t off, rpfs_request_t **req)
{
	struct iovec iov = {buf, len};
	struct rpfs_seg seg = {off, len};

	return rpfsc_io_start(f, false, &iov, 1, &seg, 1, true, req);
}

int rpfs_iwritev(rpfs_file_t *f, const struct iovec *mem, int nmem,
		 const struct rpfs_seg *file, int nfile, rpfs_request_t **req)
{
	return rpfsc_io_start(f, true, mem, nmem, file, nfile, true, req);
}

int rpfs_ireadv(rpfs_file_t *f, const struct iovec *mem, int nmem,
		const struct rpfs_seg *file, int nfile, rpfs_request_t **req)
{
	return rpfsc_io_start(f, false, mem, nmem, file, nfile, true, req);
}

/* A test is a wait bounded by nothing: it only looks. */
int rpfs_test(rpfs_request_t *req, int *done, ssize_t *bytes)
{
	return rpfs_timedwait(req, 0, done, bytes);
}

int rpfs_timedwait(rpfs_request_t *req, long timeout_us, int *done, ssize_t *bytes)
{
	ssize_t ret;

	*done = 0;
	if (!rpfsc_io_timedwait(req, timeout_us > 0 ? timeout_us : 0))
		return 0;
	ret = rpfsc_io_finish(req);
	*done = 1;
	if (bytes)
		*bytes = ret;
	return ret < 0 ? (int)ret : 0;
}

ssize_t rpfs_wait(rpfs_request_t *req)
{
	return rpfsc_io_finish(req);
}
