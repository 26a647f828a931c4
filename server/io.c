/* rpfsd role io: datafiles, list I/O and the pipelined bulk path.
 *
 * Each file handle has one datafile, DIR/data/<16 hex digits of the
 * handle>, and beside it its block checksums, DIR/data/<...>.sum (blocksum.h):
 * the names are made from the number alone, so no request can name a path
 * outside the storage directory. A datafile is made when its file is
 * created (IO_CREATE, sent by the metadata server), never by a write: a
 * request for a handle without one fails with -ESTALE (the file was
 * removed, or this server lost its storage), never with zeros. Every read
 * is checked block by block against the checksums and a damaged block
 * fails the request with -EBADMSG and its offset (rpc.h); bytes of a
 * datafile that were never written (holes, past the end) read as zeros.
 * Datafiles are opened on first use and kept in an LRU cache of
 * descriptors; one found deleted behind our back is dropped from it.
 *
 * IO_WRITE and IO_READ carry a list of datafile segments; the request's
 * data stream is the segments' bytes in order (list I/O: one request per
 * server however scattered the access). Small requests (inline and fast
 * paths) already have their data in a message buffer, so one worker job
 * does all of the writes or reads. Bulk requests go through
 * xp_req_pipeline, which sched.c runs: each chunk of the stream is mapped
 * onto the segments and stored or loaded by a worker (bulk_chunk) while
 * the transport moves the next chunk, so network and disk overlap (double
 * buffering). Every failure reaches the
 * client as an errno in the reply status. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datafile.h"
#include "ec_ends.h"
#include "ec_hold.h"
#include "ec_resync.h"
#include "hashtab.h"
#include "io_downs.h"
#include "io_forward.h"
#include "io_scrub.h"
#include "io_rebuild.h"
#include "mirror_dirty.h"
#include "list.h"
#include "log.h"
#include "proto.h"
#include "server.h"

#define IO_FD_CACHE 256
#define IO_HASH	    512

struct fdent {
	struct hnode hn;      /* in iosrv.fds; key: the handle */
	struct list_node lru; /* in iosrv.lru */
	struct datafile cf;   /* the datafile and its checksums */
	/* When a write or truncate last changed it (ns, CLOCK_REALTIME): the
	 * kernel stamps files with a clock that lags by up to a tick, and a
	 * write just after a utimes must look later than it (IO_SIZE). */
	atomic_int_fast64_t changed;
	int refs;
	bool detached; /* removed while in use: the last user closes */
};

struct iosrv {
	char dir[1100]; /* DIR/data */
	int dirfd;
	pthread_mutex_t lock; /* fds, lru, nopen and the entries' refs */
	struct hashtab fds;
	struct list_node lru; /* most recently used first */
	unsigned nopen;
	atomic_long nfiles;
	atomic_uint_fast64_t fd_hits, fd_misses; /* RPC_STATS */
};

/* A write request's record of its chunks, so that a failed write leaves
 * the datafile as long as it was (datafile_undo_growth): the sizes before its
 * first chunk, its chunks in flight, the datafile_write calls they made. Once
 * one chunk fails the later ones write nothing, and the last one out
 * undoes the growth. */
struct io_write {
	pthread_mutex_t lock;
	struct datafile_mark mark;
	uint64_t writes;
	unsigned inflight;
	int err; /* the first failure */
	bool marked, undone;
	/* an ec data cell's write (RPC_IO_PARITY): old ^ new of each byte of
	 * the data stream, for io_forward.c to send to the parity members */
	unsigned char *delta;
};

/* ---- descriptor cache ------------------------------------------------------ */

static struct fdent *lookup(struct iosrv *io, uint64_t handle)
{
	struct hnode *n = hashtab_lookup(&io->fds, handle);

	return n ? hashtab_entry(n, struct fdent, hn) : NULL;
}

/* Under the lock: close idle descriptors beyond the cache size, least
 * recently used first. Busy ones stay; the cache may run over while every
 * entry is in use. */
static void evict(struct iosrv *io)
{
	struct list_node *n, *prev;

	list_foreach_reverse_safe(&io->lru, n, prev) {
		struct fdent *e = list_entry(n, struct fdent, lru);

		if (io->nopen <= IO_FD_CACHE)
			break;
		if (e->refs)
			continue;
		list_remove(&e->lru);
		hashtab_remove(&io->fds, &e->hn);
		/* Whether the directory entry is durable is asked again at the
		 * next sync through a fresh descriptor; sync it now. */
		if (e->cf.cfd_created)
			fsync(io->dirfd);
		datafile_close(&e->cf);
		free(e);
		io->nopen--;
	}
}

/* Under the lock: take e out of the cache; its last user closes it. */
static void detach(struct iosrv *io, struct fdent *e)
{
	hashtab_remove(&io->fds, &e->hn);
	list_remove(&e->lru);
	e->detached = true;
	io->nopen--;
}

/* Has the datafile or its checksum file been deleted since we opened it
 * (an operator, a damaged disk)? Then the descriptor serves a ghost. */
static bool unlinked(const struct fdent *e)
{
	struct stat st;

	if (!fstat(e->cf.fd, &st) && st.st_nlink == 0)
		return true;
	return e->cf.cfd >= 0 && !fstat(e->cf.cfd, &st) && st.st_nlink == 0;
}

static struct fdent *cache_hit(struct iosrv *io, uint64_t handle)
{
	struct fdent *e;

	pthread_mutex_lock(&io->lock);
	e = lookup(io, handle);
	if (e) {
		e->refs++;
		list_move_front(&io->lru, &e->lru);
	}
	pthread_mutex_unlock(&io->lock);
	return e;
}

static void fd_put(struct iosrv *io, struct fdent *e);

/* A referenced descriptor for handle's datafile; -ESTALE if it has none. */
static int fd_get(struct iosrv *io, uint64_t handle, struct fdent **out)
{
	struct fdent *e = cache_hit(io, handle);
	struct datafile cf;
	int ret;

	if (e && unlinked(e)) {
		log_warn("rpfsd: datafile %s/%016" PRIx64 " was deleted while open",
			 io->dir, handle);
		pthread_mutex_lock(&io->lock);
		if (!e->detached)
			detach(io, e);
		pthread_mutex_unlock(&io->lock);
		fd_put(io, e);
		e = NULL;
	}
	if (e) {
		atomic_fetch_add_explicit(&io->fd_hits, 1, memory_order_relaxed);
		*out = e;
		return 0;
	}
	atomic_fetch_add_explicit(&io->fd_misses, 1, memory_order_relaxed);
	/* Open outside the lock: other handles' I/O need not wait for it. */
	ret = datafile_open(&cf, io->dirfd, handle);
	if (ret == -ENOENT)
		return -ESTALE;
	if (ret) {
		log_warn("rpfsd: couldn't open datafile %s/%016" PRIx64 ": %s", io->dir,
			 handle, strerror(-ret));
		return ret;
	}
	pthread_mutex_lock(&io->lock);
	e = lookup(io, handle);
	if (e) {
		/* Another worker opened it meanwhile: share theirs. */
		datafile_close(&cf);
	} else {
		e = calloc(1, sizeof(*e));
		if (!e) {
			pthread_mutex_unlock(&io->lock);
			datafile_close(&cf);
			return -ENOMEM;
		}
		e->cf = cf;
		hashtab_insert(&io->fds, &e->hn, handle);
		list_init(&e->lru);
		io->nopen++;
	}
	e->refs++;
	list_move_front(&io->lru, &e->lru);
	evict(io);
	pthread_mutex_unlock(&io->lock);
	*out = e;
	return 0;
}

static void fd_put(struct iosrv *io, struct fdent *e)
{
	pthread_mutex_lock(&io->lock);
	if (--e->refs == 0 && e->detached) {
		datafile_close(&e->cf);
		free(e);
	} else {
		evict(io);
	}
	pthread_mutex_unlock(&io->lock);
}

int io_remove_handle(struct srv *s, uint64_t handle)
{
	struct iosrv *io = s->io;
	char name[40];
	struct fdent *e;
	int ret = 0;

	pthread_mutex_lock(&io->lock);
	e = lookup(io, handle);
	if (e) {
		detach(io, e);
		if (!e->refs) {
			datafile_close(&e->cf);
			free(e);
		}
	}
	pthread_mutex_unlock(&io->lock);
	/* An ec parity member's record of sizes first (a datafile whose
	 * record is gone reads as never written to, which for a file being
	 * removed is harmless; a record outliving its datafile is not),
	 * then the datafile: a crash between leaves checksums without data,
	 * which rpfsd --check removes, never data without checksums. */
	ret = ec_ends_remove(io->dirfd, handle);
	if (ret) {
		log_warn("rpfsd: couldn't remove the record of sizes %s/%016" PRIx64
			 "%s: %s",
			 io->dir, handle, EC_ENDS_SUFFIX, strerror(-ret));
		return ret;
	}
	csum_data_name(handle, name, sizeof(name));
	if (unlinkat(io->dirfd, name, 0)) {
		if (errno != ENOENT) {
			ret = -errno;
			log_warn("rpfsd: couldn't remove datafile %s/%s: %s", io->dir,
				 name, strerror(-ret));
			return ret;
		}
	} else {
		atomic_fetch_sub(&io->nfiles, 1);
	}
	csum_sum_name(handle, name, sizeof(name));
	if (unlinkat(io->dirfd, name, 0) && errno != ENOENT) {
		ret = -errno;
		log_warn("rpfsd: couldn't remove checksums %s/%s: %s", io->dir, name,
			 strerror(-ret));
	}
	return ret;
}

int io_create_handle(struct srv *s, uint64_t handle, uint64_t nonce, uint32_t slot,
		     bool incomplete)
{
	struct iosrv *io = s->io;
	int ret = datafile_create(io->dirfd, handle, nonce, slot, incomplete);

	if (!ret)
		atomic_fetch_add(&io->nfiles, 1);
	else if (ret == -EEXIST)
		log_warn(
			"rpfsd: handle %016" PRIx64
			" already has a datafile in %s (from a lost or older metadata store?): not reused",
			handle, io->dir);
	else
		log_warn("rpfsd: couldn't create datafile %s/%016" PRIx64 ": %s", io->dir,
			 handle, strerror(-ret));
	return ret;
}

int io_probe(struct srv *s, uint32_t meta, struct rpc_probe *p)
{
	/* A descriptor of its own: a dup would share the read position. */
	int fd = openat(s->io->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	p->count = p->max_handle = 0;
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	/* Checksum files count for the largest handle: a handle whose
	 * datafile is gone was used all the same. */
	while ((de = readdir(d))) {
		uint64_t h;
		int kind = csum_parse_name(de->d_name, &h);

		if (kind < 0 || place_meta_of_handle(h) != meta)
			continue;
		p->count += kind == 0;
		if (h > p->max_handle)
			p->max_handle = h;
	}
	closedir(d);
	return 0;
}

/* ---- storage steps ----------------------------------------------------------- */

/* Keep the lowest damaged offset seen by any chunk of op (+1: 0 is none). */
static void note_bad(struct srv_op *op, uint64_t off)
{
	uint64_t cur = atomic_load(&op->bad_plus1);

	while ((!cur || off + 1 < cur) &&
	       !atomic_compare_exchange_weak(&op->bad_plus1, &cur, off + 1))
		;
}

/* A chunk of write request op is about to write to f: -errno if an
 * earlier one failed (its error), else counted in flight. */
static int write_enter(struct srv_op *op, struct datafile *f)
{
	struct io_write *w = op->io_wr;
	int ret;

	pthread_mutex_lock(&w->lock);
	ret = w->err;
	if (!ret) {
		w->inflight++;
		if (!w->marked)
			datafile_mark(f, &w->mark);
		w->marked = true;
	}
	pthread_mutex_unlock(&w->lock);
	return ret;
}

/* The chunk made writes datafile_write calls and ended with ret. */
static void write_leave(struct srv_op *op, struct datafile *f, uint64_t writes, int ret)
{
	struct io_write *w = op->io_wr;
	bool undo;

	pthread_mutex_lock(&w->lock);
	w->inflight--;
	w->writes += writes;
	if (ret && !w->err)
		w->err = ret;
	undo = w->err && !w->inflight && !w->undone;
	w->undone |= undo;
	pthread_mutex_unlock(&w->lock);
	if (undo)
		datafile_undo_growth(f, &w->mark, w->writes);
}

void io_write_free(struct srv_op *op)
{
	if (!op->io_wr)
		return;
	pthread_mutex_destroy(&op->io_wr->lock);
	free(op->io_wr->delta);
	free(op->io_wr);
	op->io_wr = NULL;
}

/* Does the datafile hold the stripe slot the request takes it to (when
 * both are known)? A layout that disagrees with the datafiles would read
 * and write another slot's bytes: damage, reported at the first segment. */
static bool slot_agrees(struct srv_op *op, const struct fdent *e, uint64_t *bad)
{
	uint32_t have = e->cf.slot, want = op->q.slot;

	if (have == CSUM_SLOT_ANY || want == RPC_SLOT_ANY || have == want)
		return true;
	*bad = op->q.nseg ? op->segs[0].off : 0;
	log_warn(
		"rpfsd: datafile %s/%016" PRIx64
		" holds stripe slot %u of its file, a request took it for slot %u: the file's layout disagrees with its datafiles",
		op->s->io->dir, op->q.handle, have, want);
	return false;
}

/* Does the writer of an RPC_IO_REPAIR hold every segment still here? */
static bool repair_held(struct srv_op *op)
{
	for (uint32_t i = 0; i < op->q.nseg; i++)
		if (!ec_hold_covers(op->s, op->q.handle, op->q.hold_id, op->segs[i].off,
				    op->segs[i].off + op->segs[i].len))
			return false;
	return true;
}

/* Store (write) or load (read) the stream range [off, off + len) through
 * buf: map it onto the segments. For a read, room beyond the segments'
 * total reads as zeros. */
static int stream_io(struct srv_op *op, bool write, char *buf, uint64_t off, uint64_t len)
{
	struct iosrv *io = op->s->io;
	struct fdent *e = NULL;
	uint32_t lo = 0, hi = op->q.nseg;
	uint64_t bad = 0, writes = 0;
	int ret;

	ret = fd_get(io, op->q.handle, &e);
	if (ret)
		goto out;
	if (!slot_agrees(op, e, &bad)) {
		ret = -EBADMSG;
		fd_put(io, e);
		goto out;
	}
	/* a resync's target not yet whole: no reads, no primary (rpc.h) */
	if (atomic_load(&e->cf.incomplete) &&
	    (!write || (op->q.flags & (RPC_IO_COPIES | RPC_IO_PARITY)))) {
		ret = -RPC_EBEHIND;
		fd_put(io, e);
		goto out;
	}
	/* (an ec parity delta carries no order: deltas commute, whatever
	 * epoch their data member is at) */
	if (write && (op->q.flags & (RPC_IO_COPIES | RPC_IO_FORWARD | RPC_IO_PARITY)) &&
	    !(op->q.fwd_flags & RPC_FWD_XOR) &&
	    (ret = datafile_admit_epoch(&e->cf, op->q.epoch,
					!(op->q.fwd_flags & RPC_COPY_STALE)))) {
		fd_put(io, e);
		goto out;
	}
	/* a resync's end: whole again (its start was a truncate) */
	if (write && (op->q.flags & RPC_IO_FORWARD) &&
	    (op->q.fwd_flags & RPC_FWD_WHOLE) &&
	    (ret = datafile_set_incomplete(&e->cf, false))) {
		fd_put(io, e);
		goto out;
	}
	/* a primary's write (an ec data cell's: its parity members are its
	 * copies here): listed before its bytes change (crashes) */
	if (write && (op->q.flags & (RPC_IO_COPIES | RPC_IO_PARITY)) &&
	    (ret = mirror_dirty_hold(op->s, op))) {
		fd_put(io, e);
		goto out;
	}
	/* a mending of damaged blocks: only under the writer's hold of the
	 * whole range (no ec write of it in flight, none admitted) */
	if (write && (op->q.flags & RPC_IO_REPAIR) && !repair_held(op)) {
		fd_put(io, e);
		ret = -ENOLCK;
		goto out;
	}
	if (write && (ret = write_enter(op, &e->cf))) {
		fd_put(io, e);
		return ret; /* said when it happened */
	}
	/* First segment ending after off. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (op->seg_end[mid] > off)
			hi = mid;
		else
			lo = mid + 1;
	}
	for (uint32_t i = lo; i < op->q.nseg && len; i++) {
		const struct rpc_seg *sg = &op->segs[i];
		uint64_t start = op->seg_end[i] - sg->len;
		uint64_t skip = off - start;
		uint64_t n = sg->len - skip < len ? sg->len - skip : len;

		if (!sg->len)
			continue;
		writes += write;
		if (!write)
			ret = datafile_read(&e->cf, buf, n, sg->off + skip, &bad);
		else if (op->io_wr->delta)
			ret = datafile_write_delta(&e->cf, buf, n, sg->off + skip, &bad,
						   op->io_wr->delta + off);
		else if (op->q.fwd_flags & RPC_FWD_XOR)
			ret = datafile_write_xor(&e->cf, buf, n, sg->off + skip, &bad);
		else if (op->q.flags & RPC_IO_REPAIR)
			ret = datafile_repair(&e->cf, buf, n, sg->off + skip, &bad);
		else
			ret = datafile_write(&e->cf, buf, n, sg->off + skip, &bad);
		if (ret)
			break;
		buf += n;
		off += n;
		len -= n;
	}
	if (!ret && len) {
		/* Only reads offer room beyond the stream (checked at dispatch). */
		memset(buf, 0, len);
	}
	/* a parity delta: its data member's size after the write, for the
	 * file's size with that member lost (ec_ends.h) */
	if (write && !ret && (op->q.fwd_flags & RPC_FWD_XOR) &&
	    (ret = ec_ends_note(&e->cf, op->q.ec_k, op->q.ec_index, op->q.ec_end)) ==
		    -EBADMSG)
		log_warn("rpfsd: the record of sizes %s/%016" PRIx64
			 "%s is damaged: the parity delta is refused (the member is "
			 "marked stale, and its resync makes the record again)",
			 io->dir, op->q.handle, EC_ENDS_SUFFIX);
	if (write && !ret && (op->q.flags & RPC_IO_REPAIR))
		log_warn("rpfsd: damaged blocks of datafile %s/%016" PRIx64
			 " mended at offset %" PRIu64
			 " (their bytes decoded from the rest "
			 "of its ec group by a reader)",
			 io->dir, op->q.handle, op->q.nseg ? op->segs[0].off : 0);
	if (write && !ret)
		atomic_store(&e->changed, srv_now_ns());
	if (write)
		write_leave(op, &e->cf, writes, ret);
	/* a copy of a mirrored file is mended from another (io_rebuild.c) */
	if (ret == -EBADMSG && !write)
		io_rebuild_damaged(op->s, op->q.handle, e->cf.slot);
	fd_put(io, e);
out:
	if (ret == -EBADMSG) {
		note_bad(op, bad);
		log_warn("rpfsd: damaged data in datafile %s/%016" PRIx64
			 " at offset %" PRIu64 " (checksum mismatch): %s refused",
			 io->dir, op->q.handle, bad, write ? "write" : "read");
	} else if (ret == -ESTALE) {
		log_warn("rpfsd: no datafile %s/%016" PRIx64
			 " for a %s (file removed, or storage lost)",
			 io->dir, op->q.handle, write ? "write" : "read");
	} else if (ret == -ENOLCK) {
		log_warn("rpfsd: a mending of damaged blocks of datafile %s/%016" PRIx64
			 " without its writer's hold of them (lapsed?): refused",
			 io->dir, op->q.handle);
	} else if (ret == -RPC_EBEHIND) {
		log_info("rpfsd: a mirrored write of datafile %s/%016" PRIx64
			 " at mirror epoch %" PRIu64 " is behind this copy's: refused",
			 io->dir, op->q.handle, op->q.epoch);
	} else if (ret) {
		log_warn("rpfsd: %s of datafile %016" PRIx64 " failed: %s",
			 write ? "write" : "read", op->q.handle, strerror(-ret));
	}
	return ret;
}

const unsigned char *io_write_delta(const struct srv_op *op)
{
	return op->io_wr ? op->io_wr->delta : NULL;
}

int io_read_local(struct srv *s, uint64_t handle, void *buf, uint64_t len, uint64_t off)
{
	struct iosrv *io = s->io;
	struct fdent *e;
	uint64_t bad = 0;
	int ret = fd_get(io, handle, &e);

	if (ret)
		return ret;
	ret = datafile_read(&e->cf, buf, len, off, &bad);
	fd_put(io, e);
	return ret;
}

int io_write_local(struct srv *s, uint64_t handle, const void *buf, uint64_t len,
		   uint64_t off, uint64_t size)
{
	struct iosrv *io = s->io;
	struct fdent *e;
	uint64_t bad = 0;
	int ret = fd_get(io, handle, &e);

	if (ret)
		return ret;
	ret = len ? datafile_write(&e->cf, buf, len, off, &bad) : 0;
	if (!ret && size != UINT64_MAX)
		ret = datafile_truncate(&e->cf, size, &bad);
	if (!ret)
		atomic_store(&e->changed, srv_now_ns());
	fd_put(io, e);
	return ret;
}

int io_ends_local(struct srv *s, uint64_t handle, const uint64_t *ends, uint32_t n)
{
	struct fdent *e;
	int ret = fd_get(s->io, handle, &e);

	if (ret)
		return ret;
	ret = ec_ends_set(&e->cf, ends, n);
	fd_put(s->io, e);
	return ret;
}

int io_size_local(struct srv *s, uint64_t handle, uint64_t *size)
{
	struct iosrv *io = s->io;
	struct fdent *e;
	uint64_t bad = 0;
	int ret = fd_get(io, handle, &e);

	if (ret)
		return ret;
	ret = datafile_size(&e->cf, size, &bad);
	fd_put(io, e);
	return ret;
}

int io_scrub_read(struct srv *s, uint64_t handle, void *buf, uint64_t len, uint64_t off,
		  uint64_t *got, struct io_scrub *sc)
{
	struct iosrv *io = s->io;
	struct fdent *e;
	uint64_t size = 0, bad = 0;
	int ret = fd_get(io, handle, &e);

	*got = 0;
	if (ret)
		return ret;
	ret = datafile_size(&e->cf, &size, &bad);
	if (!ret && off < size) {
		*got = size - off < len ? size - off : len;
		ret = datafile_read(&e->cf, buf, *got, off, &bad);
	}
	if (ret == -EBADMSG) {
		if (!io_scrub_quiet(sc, handle))
			log_warn(
				"rpfsd: the scrub found damaged data in datafile %s/%016" PRIx64
				" at offset %" PRIu64 " (checksum mismatch)",
				io->dir, handle, bad);
		/* a copy of a mirrored file is mended from another */
		io_rebuild_damaged(s, handle, e->cf.slot);
	}
	fd_put(io, e);
	return ret;
}

int io_epoch_local(struct srv *s, uint64_t handle, uint64_t *epoch)
{
	struct iosrv *io = s->io;
	struct fdent *e;
	int ret = fd_get(io, handle, &e);

	if (ret)
		return ret;
	pthread_mutex_lock(&e->cf.lock);
	*epoch = e->cf.epoch;
	pthread_mutex_unlock(&e->cf.lock);
	fd_put(io, e);
	return 0;
}

int io_raise_epoch(struct srv *s, uint64_t handle, uint64_t epoch)
{
	struct iosrv *io = s->io;
	struct fdent *e;
	int ret = fd_get(io, handle, &e);

	if (ret)
		return ret;
	ret = datafile_admit_epoch(&e->cf, epoch, true);
	fd_put(io, e);
	return ret == -RPC_EBEHIND ? 0 : ret;
}

/* ---- requests ------------------------------------------------------------------ */

/* Worker: a chunk of a bulk request, stored or loaded (sched.c hands it
 * over from the transport's pipeline and tells the transport it is done). */
static int bulk_chunk(struct srv_op *op, struct xp_chunk *ch)
{
	return stream_io(op, op->q.op == RPC_IO_WRITE, ch->buf, ch->off, ch->len);
}

int serve_io_size(struct srv_op *op)
{
	struct iosrv *io = op->s->io;
	struct rpc_io_size rs = {0, 0, 0};
	struct fdent *e;
	bool foreign;
	uint64_t bad = 0;
	int64_t changed;
	struct stat st;
	int ret;

	ret = fd_get(io, op->q.handle, &e);
	if (ret)
		return ret;
	if (atomic_load(&e->cf.incomplete)) {
		fd_put(io, e); /* a resync's target: its size is the source's */
		return -RPC_EBEHIND;
	}
	ret = datafile_size(&e->cf, &rs.size, &bad);
	foreign = e->cf.bad_hdr;
	/* Data writes and truncates change the times here, never on the
	 * metadata server: stat folds them in. */
	if (!ret && fstat(e->cf.fd, &st))
		ret = -errno;
	changed = atomic_load(&e->changed);
	fd_put(io, e);
	if (ret == -EBADMSG && foreign) {
		note_bad(op, bad);
		log_warn("rpfsd: datafile %s/%016" PRIx64
			 ": its checksum file is not its own (swapped or damaged header):"
			 " its size is refused",
			 io->dir, op->q.handle);
	} else if (ret == -EBADMSG) {
		note_bad(op, bad);
		log_warn("rpfsd: datafile %s/%016" PRIx64
			 " does not match its checksums at %" PRIu64
			 " bytes (cut short, or extended past what they cover)",
			 io->dir, op->q.handle, bad);
	}
	if (ret)
		return ret;
	rs.mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	rs.ctime = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	rs.mtime = changed > rs.mtime ? changed : rs.mtime;
	rs.ctime = changed > rs.ctime ? changed : rs.ctime;
	if (op->q.flags & RPC_SIZE_ENDS) {
		/* an ec parity member's record of its data members' sizes */
		uint64_t ends[EC_ENDS_MAX];
		uint32_t n = 0;
		int len;

		ret = fd_get(io, op->q.handle, &e);
		if (!ret) {
			ret = ec_ends_get(&e->cf, ends, EC_ENDS_MAX, &n);
			fd_put(io, e);
		}
		if (ret == -EBADMSG)
			log_warn("rpfsd: the record of sizes %s/%016" PRIx64
				 "%s is damaged: refused",
				 io->dir, op->q.handle, EC_ENDS_SUFFIX);
		if (ret)
			return ret;
		len = rpc_enc_io_size_ends(op->rep, sizeof(op->rep), &rs, ends, n);
		if (len < 0)
			return len;
		op->rep_len = (size_t)len;
		return 0;
	}
	rpc_enc_io_size(op->rep, &rs);
	op->rep_len = RPC_IO_SIZE_REP;
	return 0;
}

int serve_io_truncate(struct srv_op *op)
{
	struct iosrv *io = op->s->io;
	struct fdent *e;
	uint64_t bad = 0;
	int ret;

	if (op->q.size > (uint64_t)INT64_MAX)
		return -EFBIG;
	if (op->q.flags & RPC_TRUNCATE_FORWARD)
		io_forward_disturb(op->s, op->q.handle);
	ret = fd_get(io, op->q.handle, &e);
	if (ret)
		return ret;
	/* a mirrored truncate: its epoch as a write's (io_forward.c) */
	if ((op->q.flags & RPC_TRUNCATE_COPIES) && atomic_load(&e->cf.incomplete))
		ret = -RPC_EBEHIND; /* no primary */
	if (!ret && (op->q.flags & (RPC_TRUNCATE_COPIES | RPC_TRUNCATE_FORWARD)))
		ret = datafile_admit_epoch(&e->cf, op->q.epoch,
					   !(op->q.fwd_flags & RPC_COPY_STALE));
	/* a resync's start: not whole until its end (rpc.h RPC_FWD_RESYNC).
	 * Its bytes kept to be compared (RPC_FWD_KEEP) unless the cut is in
	 * a damaged block; else every byte comes again: none of the old is
	 * kept, nor checked (a damaged block being mended). */
	if (!ret && (op->q.flags & RPC_TRUNCATE_FORWARD) &&
	    (op->q.fwd_flags & RPC_FWD_RESYNC)) {
		ret = datafile_set_incomplete(&e->cf, true);
		if (!ret && (op->q.fwd_flags & RPC_FWD_KEEP))
			ret = datafile_truncate(&e->cf, op->q.size, &bad) == -EBADMSG
				      ? datafile_truncate(&e->cf, 0, &bad)
				      : 0;
		else if (!ret)
			ret = datafile_truncate(&e->cf, 0, &bad);
	}
	if (!ret && (op->q.flags & RPC_TRUNCATE_COPIES))
		ret = mirror_dirty_hold(op->s, op);
	if (!ret)
		ret = datafile_truncate(&e->cf, op->q.size, &bad);
	/* an ec parity member: its data members' new sizes (ec_ends.h) */
	if (!ret && op->q.flags == RPC_TRUNCATE_ENDS) {
		uint64_t ends[EC_ENDS_MAX];

		for (uint32_t i = 0; i < op->q.nends && i < EC_ENDS_MAX; i++)
			ends[i] = rpc_req_end(&op->q, i);
		ret = ec_ends_set(&e->cf, ends, op->q.nends);
	}
	if (!ret)
		atomic_store(&e->changed, srv_now_ns());
	fd_put(io, e);
	if (ret == -EBADMSG)
		note_bad(op, bad);
	return ret;
}

int serve_io_sync(struct srv_op *op)
{
	struct iosrv *io = op->s->io;
	struct fdent *e;
	bool created;
	int ret;

	ret = fd_get(io, op->q.handle, &e);
	if (ret)
		return ret;
	ret = datafile_sync(&e->cf);
	pthread_mutex_lock(&io->lock);
	created = e->cf.cfd_created;
	e->cf.cfd_created = false;
	pthread_mutex_unlock(&io->lock);
	/* A new checksum file survives a crash only once its name does too. */
	if (!ret && created && fsync(io->dirfd))
		ret = -errno;
	fd_put(io, e);
	if (ret)
		log_warn("rpfsd: sync of datafile %016" PRIx64 " failed: %s",
			 op->q.handle, strerror(-ret));
	return ret;
}

int serve_io_probe(struct srv_op *op)
{
	struct rpc_probe p;
	int ret = io_probe(op->s, op->q.meta, &p);

	if (ret)
		return ret;
	rpc_enc_probe(op->rep, &p);
	op->rep_len = RPC_PROBE_SIZE;
	return 0;
}

/* A resync's source compares these with its own and sends only the units
 * that differ (io_forward.c). Read as any read is, checksums checked: a
 * damaged unit fails the call, and the source sends the whole piece. */
int serve_io_digest(struct srv_op *op)
{
	struct iosrv *io = op->s->io;
	uint64_t bad = 0, len = op->q.len;
	struct fdent *e;
	char *buf;
	int ret = fd_get(io, op->q.handle, &e);

	if (ret)
		return ret;
	if (!slot_agrees(op, e, &bad)) {
		fd_put(io, e);
		return -EBADMSG;
	}
	buf = malloc(len);
	ret = buf ? datafile_read(&e->cf, buf, len, op->q.off, &bad) : -ENOMEM;
	fd_put(io, e);
	for (uint32_t i = 0; !ret && i * (uint64_t)RPC_DIGEST_UNIT < len; i++) {
		uint64_t at = i * (uint64_t)RPC_DIGEST_UNIT;
		uint64_t n = len - at < RPC_DIGEST_UNIT ? len - at : RPC_DIGEST_UNIT;

		rpc_digest(buf + at, n, op->rep + i * RPC_DIGEST_SIZE);
		op->rep_len = (i + 1) * RPC_DIGEST_SIZE;
	}
	free(buf);
	return ret;
}

int serve_io_statfs(struct srv_op *op)
{
	struct rpc_statfs sf;
	int ret = srv_storage(op->s->io->dir, &sf);

	if (ret)
		return ret;
	sf.objects = (uint64_t)atomic_load(&op->s->io->nfiles);
	rpc_enc_statfs(op->rep, &sf);
	op->rep_len = RPC_STATFS_SIZE;
	return 0;
}

int serve_io_write(struct srv_op *op)
{
	if (op->q.flags & RPC_IO_FORWARD)
		io_forward_disturb(op->s, op->q.handle);
	return stream_io(op, true, (char *)xp_req_wr_data(op->r), 0, op->total);
}

int serve_io_read(struct srv_op *op)
{
	int ret = stream_io(op, false, xp_req_rd_buf(op->r), 0, op->total);

	if (!ret)
		op->rd_len = op->total;
	return ret;
}

int serve_io_remove(struct srv_op *op)
{
	return io_remove_handle(op->s, op->q.handle);
}

int serve_io_create(struct srv_op *op)
{
	return io_create_handle(op->s, op->q.handle, op->q.nonce, op->q.slot,
				op->q.flags & RPC_IO_CREATE_INCOMPLETE);
}

/* Worker: one whole request. */
void io_run(struct sched_job *job)
{
	struct srv_op *op = (struct srv_op *)job;

	op->status = op->handler(op);
	srv_op_complete(op);
}

/* Check the segment list against the data the request moves, and build
 * the stream offsets. -EINVAL for an inconsistent request. */
static int check_segs(struct srv_op *op)
{
	uint64_t total = 0;

	op->seg_end = calloc(op->q.nseg ? op->q.nseg : 1, sizeof(*op->seg_end));
	if (!op->seg_end)
		return -ENOMEM;
	for (uint32_t i = 0; i < op->q.nseg; i++) {
		const struct rpc_seg *sg = &op->segs[i];

		if (sg->off > (uint64_t)INT64_MAX ||
		    sg->len > (uint64_t)INT64_MAX - sg->off)
			return -EFBIG;
		if (total + sg->len < total)
			return -EINVAL;
		total += sg->len;
		op->seg_end[i] = total;
	}
	op->total = total;
	if (op->q.op == RPC_IO_WRITE) {
		op->io_wr = calloc(1, sizeof(*op->io_wr));
		if (!op->io_wr)
			return -ENOMEM;
		pthread_mutex_init(&op->io_wr->lock, NULL);
		if (xp_req_data_len(op->r) != total)
			return -EINVAL;
		/* zeros where nothing is written: a delta of nothing */
		if ((op->q.flags & RPC_IO_PARITY) &&
		    !(op->io_wr->delta = calloc(1, total ? total : 1)))
			return -ENOMEM;
		if (total && xp_req_dir(op->r) != PROTO_DIR_WRITE)
			return -EINVAL;
	} else {
		/* The room offered may exceed the segments; never fall short. */
		if (xp_req_data_len(op->r) < total)
			return -EINVAL;
		if (total && xp_req_dir(op->r) != PROTO_DIR_READ)
			return -EINVAL;
	}
	return 0;
}

void io_dispatch(struct srv_op *op)
{
	int ret;

	op->job.run = io_run;
	ret = check_segs(op);
	if (ret) {
		log_dbg("rpfsd: rejecting I/O request from %s: %s",
			xp_conn_peer(op->conn), strerror(-ret));
		op->status = ret;
		srv_op_finish(op);
		return;
	}
	/* an ec write of a range held still waits, parked (ec_hold.c) */
	if (!ec_hold_admit(op))
		return;
	io_dispatch_go(op);
}

void io_dispatch_go(struct srv_op *op)
{
	/* A forward without data still carries an epoch to take (a
	 * resync's end, io_forward.c). */
	if (!op->total && !(op->q.flags & RPC_IO_FORWARD)) {
		srv_op_finish(op);
		return;
	}
	if (!op->total || (op->q.op == RPC_IO_WRITE ? xp_req_wr_data(op->r) != NULL
						    : xp_req_rd_buf(op->r) != NULL)) {
		sched_submit(op);
		return;
	}
	/* A read that succeeds produces every byte asked for (a failed op
	 * answers with none, srv_op_finish). */
	if (op->q.op == RPC_IO_READ)
		op->rd_len = op->total;
	sched_bulk(op, bulk_chunk);
}

/* ---- life cycle ------------------------------------------------------------------ */

/* The datafiles in dirfd: how many, and (out not NULL) their handles
 * (*out, NULL when none or out of memory). */
static size_t walk_datafiles(int dirfd, uint64_t **out)
{
	int fd = dup(dirfd);
	struct dirent *de;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	DIR *d;

	if (out)
		*out = NULL;
	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	/* the copy shares the descriptor's offset, which a walk before left
	 * at the end */
	rewinddir(d);
	while ((de = readdir(d))) {
		uint64_t h;

		if (csum_parse_name(de->d_name, &h))
			continue;
		if (out && n == cap) {
			uint64_t *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		if (out)
			v[n] = h;
		n++;
	}
	closedir(d);
	if (out)
		*out = v;
	return n;
}

uint64_t *io_datafile_handles(struct srv *s, size_t *n)
{
	uint64_t *v;

	*n = walk_datafiles(s->io->dirfd, &v);
	return v;
}

int io_open(struct srv *s)
{
	struct iosrv *io = calloc(1, sizeof(*io));
	bool empty;
	int ret;

	if (!io)
		return -ENOMEM;
	ret = hashtab_init(&io->fds, IO_HASH);
	if (ret)
		goto err_free;
	list_init(&io->lru);
	snprintf(io->dir, sizeof(io->dir), "%s/data", s->me->dir);
	if (mkdir(io->dir, 0700) && errno != EEXIST) {
		ret = -errno;
		log_err("rpfsd: couldn't create %s: %s", io->dir, strerror(-ret));
		goto err_fini;
	}
	io->dirfd = open(io->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (io->dirfd < 0) {
		ret = -errno;
		log_err("rpfsd: couldn't open %s: %s", io->dir, strerror(-ret));
		goto err_fini;
	}
	pthread_mutex_init(&io->lock, NULL);
	atomic_store(&io->nfiles, (long)walk_datafiles(io->dirfd, NULL));
	empty = atomic_load(&io->nfiles) == 0;
	s->io = io;
	ret = io_downs_open(s);
	if (!ret)
		ret = ec_holds_open(s);
	if (!ret)
		ret = io_forward_open(s);
	if (!ret)
		ret = ec_resync_open(s);
	if (ret)
		log_err("rpfsd: couldn't start the threads forwarding mirrored writes: %s",
			strerror(-ret));
	if (!ret && (ret = mirror_dirty_open(s)))
		log_err("rpfsd: couldn't start the list of mirrored datafiles being written: %s",
			strerror(-ret));
	if (!ret && (ret = io_rebuild_open(s, empty)))
		log_err("rpfsd: couldn't ask for the rebuild of this server's copies: %s",
			strerror(-ret));
	if (!ret && (ret = io_scrub_start(s)))
		log_err("rpfsd: couldn't start the scrub: %s", strerror(-ret));
	return ret;

err_fini:
	hashtab_fini(&io->fds);
err_free:
	free(io);
	return ret;
}

void io_close(struct srv *s)
{
	struct iosrv *io = s->io;
	struct list_node *n, *next;
	bool created = false;

	if (!io)
		return;
	io_scrub_stop(s);
	io_rebuild_close(s);
	ec_resync_close(s);
	io_forward_close(s);
	ec_holds_close(s);
	mirror_dirty_close(s);
	io_downs_close(s);
	/* Clean shutdown: what was written is on disk before we say goodbye. */
	list_foreach_safe(&io->lru, n, next) {
		struct fdent *e = list_entry(n, struct fdent, lru);
		int ret = datafile_sync(&e->cf);

		if (ret)
			log_warn("rpfsd: sync of datafile %016" PRIx64 " failed: %s",
				 e->hn.key, strerror(-ret));
		created |= e->cf.cfd_created;
		datafile_close(&e->cf);
		free(e);
	}
	if (created)
		fsync(io->dirfd);
	close(io->dirfd);
	pthread_mutex_destroy(&io->lock);
	hashtab_fini(&io->fds);
	free(io);
	s->io = NULL;
}

void io_counts(struct srv *s, uint64_t *files, uint64_t *fd_hits, uint64_t *fd_misses)
{
	long n = atomic_load(&s->io->nfiles);

	*files = n > 0 ? (uint64_t)n : 0;
	*fd_hits = atomic_load_explicit(&s->io->fd_hits, memory_order_relaxed);
	*fd_misses = atomic_load_explicit(&s->io->fd_misses, memory_order_relaxed);
}
