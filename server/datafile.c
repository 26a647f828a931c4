/* rpfsd: the datafile store (see datafile.h for the rules): open, create,
 * verified reads, checksummed writes, truncate, size, sync, and the undoing
 * of a failed write's growth, on one datafile at a time; io.c keeps the
 * open ones, rpfsd --check (check.c) walks them all. The checksum math and
 * the checksum file's format are blocksum.c's. */
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
#include "rpc.h"
#include "wire.h"

/* Entries handled at once on the stack; longer ranges allocate. */
#define CSUM_STACK_ENTS 64

struct datafile_range {
	uint64_t b0, b1; /* blocks, inclusive */
	struct datafile_range *next;
};

/* ---- place, header ---------------------------------------------------------- */

uint32_t datafile_bind(const struct datafile *f, uint64_t k)
{
	return f->version < 2 ? 0 : csum_place(f->handle, f->slot, k);
}

/* The header read at open: its version, slot and extent become f's. */
static int hdr_dec(const uint8_t *hdr, size_t len, struct datafile *f)
{
	int ret = csum_hdr_check(hdr, len, f->handle, NULL);

	if (ret)
		return ret;
	f->version = get32(hdr + 8);
	f->slot = f->version < 2 ? CSUM_SLOT_ANY : get32(hdr + CSUM_HDR_SLOT);
	f->extent = f->version < 2 ? UINT64_MAX : get64(hdr + CSUM_HDR_EXTENT);
	f->epoch = f->version < 2 ? 0 : get64(hdr + CSUM_HDR_EPOCH);
	atomic_store(&f->incomplete, f->version >= 2 && (get32(hdr + CSUM_HDR_FLAGS) &
							 CSUM_HDR_INCOMPLETE));
	return 0;
}

/* ---- raw I/O --------------------------------------------------------------- */

/* Read up to len bytes; what lies past the end of the file reads as zeros
 * and *got says how much was there. */
static int pread_avail(int fd, void *buf, uint64_t len, uint64_t off, uint64_t *got)
{
	char *p = buf;
	uint64_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	memset(p + done, 0, len - done);
	*got = done;
	return 0;
}

static int pwrite_full(int fd, const void *buf, uint64_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static uint32_t avail_of(uint64_t got, uint64_t start)
{
	if (got <= start)
		return 0;
	return got - start >= CSUM_BLOCK ? CSUM_BLOCK : (uint32_t)(got - start);
}

int datafile_read_block(struct datafile *f, uint64_t k, void *bytes, uint32_t *avail)
{
	uint64_t got;
	int ret = pread_avail(f->fd, bytes, CSUM_BLOCK, k * CSUM_BLOCK, &got);

	*avail = (uint32_t)got;
	return ret;
}

int datafile_read_ents(struct datafile *f, uint64_t b0, uint64_t n, struct csum_ent *e)
{
	uint8_t stackbuf[CSUM_STACK_ENTS * CSUM_ENT];
	uint8_t *raw = n <= CSUM_STACK_ENTS ? stackbuf : malloc(n * CSUM_ENT);
	uint64_t got;
	int ret = 0;

	if (!raw)
		return -ENOMEM;
	if (f->cfd < 0)
		memset(raw, 0, n * CSUM_ENT);
	else
		ret = pread_avail(f->cfd, raw, n * CSUM_ENT, CSUM_HDR + b0 * CSUM_ENT,
				  &got);
	for (uint64_t i = 0; !ret && i < n; i++)
		csum_ent_dec(raw + i * CSUM_ENT, &e[i]);
	if (raw != stackbuf)
		free(raw);
	return ret;
}

int datafile_write_ents(struct datafile *f, uint64_t b0, uint64_t n,
			const struct csum_ent *e)
{
	uint8_t stackbuf[CSUM_STACK_ENTS * CSUM_ENT] = {0};
	uint8_t *raw = n <= CSUM_STACK_ENTS ? stackbuf : malloc(n * CSUM_ENT);
	int ret;

	if (!raw)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++)
		csum_ent_enc(raw + i * CSUM_ENT, &e[i]);
	ret = pwrite_full(f->cfd, raw, n * CSUM_ENT, CSUM_HDR + b0 * CSUM_ENT);
	if (raw != stackbuf)
		free(raw);
	return ret;
}

/* ---- block range locks ------------------------------------------------------- */

static void range_lock(struct datafile *f, struct datafile_range *r, uint64_t b0,
		       uint64_t b1)
{
	r->b0 = b0;
	r->b1 = b1;
	pthread_mutex_lock(&f->lock);
	for (;;) {
		struct datafile_range *h;

		for (h = f->held; h; h = h->next)
			if (h->b0 <= b1 && b0 <= h->b1)
				break;
		if (!h)
			break;
		pthread_cond_wait(&f->cond, &f->lock);
	}
	r->next = f->held;
	f->held = r;
	pthread_mutex_unlock(&f->lock);
}

static void range_unlock(struct datafile *f, struct datafile_range *r)
{
	pthread_mutex_lock(&f->lock);
	for (struct datafile_range **pp = &f->held; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/* ---- open, create, close ---------------------------------------------------- */

static int open_sumfile(struct datafile *f, int flags)
{
	uint8_t hdr[CSUM_HDR];
	char name[40];
	uint64_t got;
	int ret;

	csum_sum_name(f->handle, name, sizeof(name));
	f->cfd = openat(f->dirfd, name, O_RDWR | O_CLOEXEC | flags, 0600);
	if (f->cfd < 0)
		return errno == ENOENT && !(flags & O_CREAT) ? 0 : -errno;
	ret = pread_avail(f->cfd, hdr, CSUM_HDR, 0, &got);
	if (ret)
		return ret;
	if (got == 0 && (flags & O_CREAT)) {
		/* New: a datafile that had lost its checksum file (its slot
		 * is lost with it). */
		csum_hdr_enc(hdr, f->handle, 0, CSUM_SLOT_ANY);
		f->cfd_created = true;
		f->version = CSUM_VERSION;
		f->slot = CSUM_SLOT_ANY;
		f->extent = 0;
		return pwrite_full(f->cfd, hdr, CSUM_HDR, 0);
	}
	f->bad_hdr = hdr_dec(hdr, got, f) != 0;
	return 0;
}

int datafile_open(struct datafile *f, int dirfd, uint64_t handle)
{
	char name[40];
	int ret;

	memset(f, 0, sizeof(*f));
	f->handle = handle;
	f->dirfd = dirfd;
	f->cfd = -1;
	/* Until a checksum file says otherwise: nothing is covered. */
	f->version = CSUM_VERSION;
	f->slot = CSUM_SLOT_ANY;
	csum_data_name(handle, name, sizeof(name));
	f->fd = openat(dirfd, name, O_RDWR | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	ret = open_sumfile(f, 0);
	if (ret) {
		if (f->cfd >= 0)
			close(f->cfd);
		close(f->fd);
		return ret;
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	return 0;
}

void datafile_close(struct datafile *f)
{
	ec_ends_free(f->ends);
	f->ends = NULL;
	if (f->cfd >= 0)
		close(f->cfd);
	if (f->fd >= 0)
		close(f->fd);
	f->fd = f->cfd = -1;
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
}

int datafile_ensure_sumfile(struct datafile *f)
{
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	if (f->cfd < 0)
		ret = open_sumfile(f, O_CREAT);
	pthread_mutex_unlock(&f->lock);
	return ret;
}

/* The pair made by the create with this nonce? */
static bool ours(int dirfd, uint64_t handle, uint64_t nonce)
{
	uint8_t hdr[CSUM_HDR];
	char name[40];
	uint64_t got, had = 0;
	struct stat st;
	int fd, ret;

	csum_sum_name(handle, name, sizeof(name));
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ret = pread_avail(fd, hdr, CSUM_HDR, 0, &got);
	close(fd);
	if (ret || csum_hdr_check(hdr, got, handle, &had) || had != nonce)
		return false;
	csum_data_name(handle, name, sizeof(name));
	if (!fstatat(dirfd, name, &st, 0))
		return true;
	/* Killed between the two: finish the job. */
	fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int datafile_create(int dirfd, uint64_t handle, uint64_t nonce, uint32_t slot,
		    bool incomplete)
{
	uint8_t hdr[CSUM_HDR];
	char sname[40], dname[40];
	int cfd, fd, ret;

	csum_sum_name(handle, sname, sizeof(sname));
	csum_data_name(handle, dname, sizeof(dname));
	cfd = openat(dirfd, sname, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (cfd < 0) {
		ret = -errno;
		if (ret == -EEXIST && ours(dirfd, handle, nonce))
			ret = 0;
		return ret;
	}
	/* a record of sizes left by a datafile of this handle that went
	 * (its removal cut short) is not this one's */
	ret = ec_ends_remove(dirfd, handle);
	if (ret) {
		unlinkat(dirfd, sname, 0);
		return ret;
	}
	csum_hdr_enc(hdr, handle, nonce, slot);
	if (incomplete)
		put32(hdr + CSUM_HDR_FLAGS, CSUM_HDR_INCOMPLETE);
	ret = pwrite_full(cfd, hdr, CSUM_HDR, 0);
	close(cfd);
	if (ret)
		goto undo;
	fd = openat(dirfd, dname, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		goto undo;
	}
	close(fd);
	/* The file exists once a reply says so, even after a crash. */
	if (fsync(dirfd)) {
		ret = -errno;
		unlinkat(dirfd, dname, 0);
		goto undo;
	}
	return 0;
undo:
	unlinkat(dirfd, sname, 0);
	return ret;
}

/* ---- coverage ------------------------------------------------------------- */

int datafile_covered(struct datafile *f, uint64_t *end)
{
	struct csum_ent e;
	struct stat st;
	uint64_t n, last;
	int ret;

	*end = f->extent;
	if (f->version < 2 || f->cfd < 0)
		return 0;
	if (fstat(f->cfd, &st))
		return -errno;
	if ((uint64_t)st.st_size < CSUM_HDR + CSUM_ENT)
		return 0;
	n = ((uint64_t)st.st_size - CSUM_HDR) / CSUM_ENT;
	ret = datafile_read_ents(f, n - 1, 1, &e);
	if (ret)
		return ret;
	last = (n - 1) * CSUM_BLOCK + (e.cur.end > e.pend.end ? e.cur.end : e.pend.end);
	if (last > *end)
		*end = last;
	return 0;
}

int datafile_set_extent(struct datafile *f, uint64_t size)
{
	uint8_t ext[8];
	int ret;

	if (f->version < 2)
		return 0;
	if (f->cfd < 0 && (ret = datafile_ensure_sumfile(f)))
		return ret;
	put64(ext, size);
	ret = pwrite_full(f->cfd, ext, sizeof(ext), CSUM_HDR_EXTENT);
	if (!ret)
		f->extent = size;
	return ret;
}

int datafile_admit_epoch(struct datafile *f, uint64_t epoch, bool raise)
{
	uint8_t ep[8];
	int ret = 0;

	if (f->cfd < 0 && (ret = datafile_ensure_sumfile(f)))
		return ret;
	pthread_mutex_lock(&f->lock);
	if (epoch < f->epoch) {
		ret = -RPC_EBEHIND;
	} else if (raise && epoch > f->epoch && f->version >= 2) {
		put64(ep, epoch);
		ret = pwrite_full(f->cfd, ep, sizeof(ep), CSUM_HDR_EPOCH);
		if (!ret)
			ret = fdatasync(f->cfd) ? -errno : 0;
		if (!ret)
			f->epoch = epoch;
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

int datafile_set_incomplete(struct datafile *f, bool on)
{
	uint8_t fl[4];
	int ret = 0;

	if (f->cfd < 0 && (ret = datafile_ensure_sumfile(f)))
		return ret;
	pthread_mutex_lock(&f->lock);
	if (f->version < 2) {
		ret = on ? -EOPNOTSUPP : 0; /* no flags: never made a target */
	} else if (atomic_load(&f->incomplete) != on) {
		put32(fl, on ? CSUM_HDR_INCOMPLETE : 0);
		ret = pwrite_full(f->cfd, fl, sizeof(fl), CSUM_HDR_FLAGS);
		if (!ret)
			ret = fdatasync(f->cfd) ? -errno : 0;
		if (!ret)
			atomic_store(&f->incomplete, on);
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

/* Block k has no checksum and avail bytes in the datafile: do they lie
 * beyond what the checksums cover (then *bad is where, at from or after)?
 * A hole inside the covered range is zeros, checked as such. */
static int uncovered(struct datafile *f, uint64_t k, uint32_t avail, uint64_t from,
		     uint64_t *bad)
{
	uint64_t end;
	int ret = datafile_covered(f, &end);

	if (ret)
		return ret;
	if (k * CSUM_BLOCK + avail <= end)
		return 0;
	*bad = end > from ? end : from;
	return -EBADMSG;
}

/* ---- reads ------------------------------------------------------------------- */

/* Read [off, off + len) into buf and check every block it touches against
 * e[0..] (entries from block off / CSUM_BLOCK). Whole blocks are read
 * straight into buf, the partial ones at the edges through a block buffer. */
static int read_checked(struct datafile *f, char *buf, uint64_t len, uint64_t off,
			const struct csum_ent *e, uint64_t *bad)
{
	uint64_t b0 = off / CSUM_BLOCK, end = off + len, k = b0;
	char blk[CSUM_BLOCK];
	int ret;

	while (k * CSUM_BLOCK < end) {
		uint64_t bs = k * CSUM_BLOCK, got;

		if (bs < off || bs + CSUM_BLOCK > end) {
			uint64_t from = bs < off ? off : bs;
			uint64_t to = bs + CSUM_BLOCK < end ? bs + CSUM_BLOCK : end;

			ret = pread_avail(f->fd, blk, CSUM_BLOCK, bs, &got);
			if (ret)
				return ret;
			if (got && csum_ent_empty(&e[k - b0]) &&
			    (ret = uncovered(f, k, (uint32_t)got, from, bad)))
				return ret;
			if (!csum_match(&e[k - b0], blk, (uint32_t)got,
					datafile_bind(f, k))) {
				*bad = from;
				return -EBADMSG;
			}
			memcpy(buf + (from - off), blk + (from - bs), to - from);
			k++;
			continue;
		}
		/* A run of whole blocks. */
		uint64_t k1 = k;

		while ((k1 + 1) * CSUM_BLOCK <= end)
			k1++;
		ret = pread_avail(f->fd, buf + (bs - off), (k1 - k) * CSUM_BLOCK, bs,
				  &got);
		if (ret)
			return ret;
		for (uint64_t j = k; j < k1; j++) {
			const char *p = buf + (j * CSUM_BLOCK - off);
			uint32_t avail = avail_of(got, (j - k) * CSUM_BLOCK);

			/* Past the end and never written: zeros, nothing to check. */
			if (!avail && csum_ent_empty(&e[j - b0]))
				continue;
			if (csum_ent_empty(&e[j - b0]) &&
			    (ret = uncovered(f, j, avail, j * CSUM_BLOCK, bad)))
				return ret;
			if (!csum_match(&e[j - b0], p, avail, datafile_bind(f, j))) {
				*bad = j * CSUM_BLOCK;
				return -EBADMSG;
			}
		}
		k = k1;
	}
	return 0;
}

int datafile_read(struct datafile *f, void *buf, uint64_t len, uint64_t off,
		  uint64_t *bad)
{
	uint64_t b0 = off / CSUM_BLOCK, n;
	struct csum_ent stack_e[CSUM_STACK_ENTS], *e;
	struct datafile_range r;
	int ret;

	if (!len)
		return 0;
	if (f->bad_hdr) {
		*bad = off;
		return -EBADMSG;
	}
	n = (off + len - 1) / CSUM_BLOCK - b0 + 1;
	e = n <= CSUM_STACK_ENTS ? stack_e : malloc(n * sizeof(*e));
	if (!e)
		return -ENOMEM;
	ret = datafile_read_ents(f, b0, n, e);
	if (!ret)
		ret = read_checked(f, buf, len, off, e, bad);
	if (ret == -EBADMSG) {
		/* Perhaps a write went by: look again with writers kept out. */
		range_lock(f, &r, b0, b0 + n - 1);
		ret = datafile_read_ents(f, b0, n, e);
		if (!ret)
			ret = read_checked(f, buf, len, off, e, bad);
		range_unlock(f, &r);
	}
	if (e != stack_e)
		free(e);
	return ret;
}

/* ---- writes ------------------------------------------------------------------ */

/* The new version of block k for a write of [off, end), and in *pre the
 * version the entry keeps as cur while the data goes out. A partial block
 * is read and checked first. */
static int new_version(struct datafile *f, uint64_t k, const char *buf, uint64_t off,
		       uint64_t end, const struct csum_ent *old, struct csum_ver *nv,
		       struct csum_ver *pre, uint64_t *bad)
{
	uint64_t bs = k * CSUM_BLOCK, from = bs < off ? off : bs;
	uint64_t to = bs + CSUM_BLOCK < end ? bs + CSUM_BLOCK : end;
	char blk[CSUM_BLOCK];
	uint64_t got;
	int m, ret;

	if (from == bs && to == bs + CSUM_BLOCK) {
		nv->crc = csum_crc(buf + (bs - off), CSUM_BLOCK) ^ datafile_bind(f, k);
		nv->end = CSUM_BLOCK;
		*pre = old->cur;
		return 0;
	}
	ret = pread_avail(f->fd, blk, CSUM_BLOCK, bs, &got);
	if (ret)
		return ret;
	m = csum_match(old, blk, (uint32_t)got, datafile_bind(f, k));
	/* Bytes no checksum covers are not ours to merge with. */
	if (csum_ent_empty(old) && got && (ret = uncovered(f, k, (uint32_t)got, bs, bad)))
		return ret;
	if (!m) {
		/* Its other bytes are damaged: a new checksum would bless them. */
		*bad = from == bs ? to : bs;
		return -EBADMSG;
	}
	*pre = csum_matched(old, m);
	memcpy(blk + (from - bs), buf + (from - off), to - from);
	nv->crc = csum_crc(blk, CSUM_BLOCK) ^ datafile_bind(f, k);
	nv->end = (uint32_t)(to - bs) > pre->end ? (uint32_t)(to - bs) : pre->end;
	return 0;
}

/* DF_REPAIR's new version of block k (datafile_repair): the write covers
 * exactly the bytes the block holds, and the block fails its checksum now
 * (a good block is never rewritten without its parity); *pre keeps its
 * cur while the data goes out. */
static int mended_version(struct datafile *f, uint64_t k, const char *buf, uint64_t off,
			  uint64_t end, const struct csum_ent *old, struct csum_ver *nv,
			  struct csum_ver *pre)
{
	uint64_t bs = k * CSUM_BLOCK, to = bs + CSUM_BLOCK < end ? bs + CSUM_BLOCK : end;
	uint32_t hold = old->cur.end > old->pend.end ? old->cur.end : old->pend.end;
	char blk[CSUM_BLOCK];
	uint32_t avail;
	int ret;

	if (!hold || to - bs != hold)
		return -EINVAL;
	ret = datafile_read_block(f, k, blk, &avail);
	if (!ret && csum_match(old, blk, avail, datafile_bind(f, k)))
		ret = -EEXIST;
	if (ret)
		return ret;
	memset(blk, 0, sizeof(blk));
	memcpy(blk, buf + (bs - off), to - bs);
	nv->crc = csum_crc(blk, CSUM_BLOCK) ^ datafile_bind(f, k);
	nv->end = hold;
	*pre = old->cur;
	return 0;
}

/* A write as datafile_write, with the blocks locked from reading the old
 * bytes (checked) to storing the new: DF_DELTA keeps old ^ new in aux (an
 * erasure-coded data cell's parity delta: two writes of the same bytes
 * give deltas that add up to first-to-last), DF_XOR stores old ^ buf (a
 * parity cell taking a delta), DF_REPAIR mends damaged blocks
 * (mended_version). */
enum df_mode { DF_PLAIN, DF_DELTA, DF_XOR, DF_REPAIR };

static int write_mode(struct datafile *f, const void *buf, uint64_t len, uint64_t off,
		      uint64_t *bad, enum df_mode mode, unsigned char *aux)
{
	uint64_t b0 = off / CSUM_BLOCK, n, end = off + len;
	struct csum_ent stack_e[2 * CSUM_STACK_ENTS], *e;
	struct datafile_range r;
	unsigned char *old = NULL;
	int ret;

	atomic_fetch_add(&f->wgen, 1); /* even if it fails (datafile_undo_growth) */
	if (!len)
		return 0;
	if (f->bad_hdr) {
		*bad = off;
		return -EBADMSG;
	}
	if (f->cfd < 0 && (ret = datafile_ensure_sumfile(f)))
		return ret;
	n = (end - 1) / CSUM_BLOCK - b0 + 1;
	/* e[0..n): the entries as they are, then as the write goes out;
	 * e[n..2n): the entries it leaves. */
	e = n <= CSUM_STACK_ENTS ? stack_e : malloc(2 * n * sizeof(*e));
	if (!e)
		return -ENOMEM;
	range_lock(f, &r, b0, b0 + n - 1);
	ret = datafile_read_ents(f, b0, n, e);
	if (!ret && (mode == DF_DELTA || mode == DF_XOR)) {
		/* the old bytes, as a read sees them (zeros past the end) */
		old = malloc(len);
		ret = old ? read_checked(f, (char *)old, len, off, e, bad) : -ENOMEM;
		for (uint64_t i = 0; !ret && i < len; i++)
			old[i] ^= ((const unsigned char *)buf)[i];
		if (!ret && mode == DF_XOR)
			buf = old;
	}
	for (uint64_t i = 0; !ret && i < n; i++) {
		struct csum_ver nv, pre;

		ret = mode == DF_REPAIR
			      ? mended_version(f, b0 + i, buf, off, end, &e[i], &nv, &pre)
			      : new_version(f, b0 + i, buf, off, end, &e[i], &nv, &pre,
					    bad);
		e[n + i].cur = nv;
		e[n + i].pend = (struct csum_ver){0, 0};
		e[i].cur = pre;
		e[i].pend = nv;
	}
	if (!ret)
		ret = datafile_write_ents(f, b0, n, e);
	if (!ret)
		ret = pwrite_full(f->fd, buf, len, off);
	if (!ret)
		ret = datafile_write_ents(f, b0, n, e + n);
	range_unlock(f, &r);
	if (!ret && mode == DF_DELTA)
		memcpy(aux, old, len);
	free(old);
	if (e != stack_e)
		free(e);
	return ret;
}

int datafile_write(struct datafile *f, const void *buf, uint64_t len, uint64_t off,
		   uint64_t *bad)
{
	return write_mode(f, buf, len, off, bad, DF_PLAIN, NULL);
}

int datafile_write_delta(struct datafile *f, const void *buf, uint64_t len, uint64_t off,
			 uint64_t *bad, unsigned char *delta)
{
	return write_mode(f, buf, len, off, bad, DF_DELTA, delta);
}

int datafile_write_xor(struct datafile *f, const void *delta, uint64_t len, uint64_t off,
		       uint64_t *bad)
{
	return write_mode(f, delta, len, off, bad, DF_XOR, NULL);
}

int datafile_repair(struct datafile *f, const void *buf, uint64_t len, uint64_t off,
		    uint64_t *bad)
{
	if (!len || off % CSUM_BLOCK)
		return -EINVAL;
	if (f->cfd < 0) {
		*bad = off;
		return -EBADMSG; /* no checksums to mend by */
	}
	return write_mode(f, buf, len, off, bad, DF_REPAIR, NULL);
}

/* ---- truncate, size, sync ------------------------------------------------------- */

/* The truncate itself, with blocks [size / CSUM_BLOCK, end) locked. */
static int truncate_locked(struct datafile *f, uint64_t size, uint64_t *bad)
{
	uint64_t k = size / CSUM_BLOCK, rem = size % CSUM_BLOCK, nents;
	struct csum_ent e, done;
	struct stat st;
	int ret;

	ret = datafile_read_ents(f, k, 1, &e);
	if (!ret && rem && !csum_ent_empty(&e)) {
		/* The cut block: what stays must be good; its new version has
		 * zeros past the cut. */
		char blk[CSUM_BLOCK];
		uint32_t avail;
		int m;

		ret = datafile_read_block(f, k, blk, &avail);
		m = ret ? 0 : csum_match(&e, blk, avail, datafile_bind(f, k));
		if (!ret && !m) {
			*bad = k * CSUM_BLOCK;
			ret = -EBADMSG;
		}
		if (!ret) {
			memset(blk + rem, 0, CSUM_BLOCK - rem);
			done.cur.crc = csum_crc(blk, CSUM_BLOCK) ^ datafile_bind(f, k);
			done.cur.end = (uint32_t)rem;
			done.pend = (struct csum_ver){0, 0};
			e.cur = csum_matched(&e, m);
			e.pend = done.cur;
			ret = datafile_write_ents(f, k, 1, &e);
		}
	}
	/* The extent first: a crash after it leaves the datafile no longer
	 * than what is covered (the old entries still cover a shrink). */
	if (!ret)
		ret = datafile_set_extent(f, size);
	if (!ret && ftruncate(f->fd, (off_t)size))
		ret = -errno;
	if (!ret && rem && !csum_ent_empty(&e))
		ret = datafile_write_ents(f, k, 1, &done);
	/* Entries of blocks wholly past the end go; a longer file needs none. */
	nents = (size + CSUM_BLOCK - 1) / CSUM_BLOCK;
	if (!ret && !fstat(f->cfd, &st) &&
	    (uint64_t)st.st_size > CSUM_HDR + nents * CSUM_ENT &&
	    ftruncate(f->cfd, (off_t)(CSUM_HDR + nents * CSUM_ENT)))
		ret = -errno;
	return ret;
}

int datafile_truncate(struct datafile *f, uint64_t size, uint64_t *bad)
{
	struct datafile_range r;
	int ret;

	if (f->bad_hdr) {
		*bad = size;
		return -EBADMSG;
	}
	if (f->cfd < 0 && (ret = datafile_ensure_sumfile(f)))
		return ret;
	/* A failed write must not undo what this sets (datafile_undo_growth). */
	atomic_fetch_add(&f->wgen, 1);
	range_lock(f, &r, size / CSUM_BLOCK, UINT64_MAX);
	ret = truncate_locked(f, size, bad);
	range_unlock(f, &r);
	return ret;
}

/* ---- undoing a failed write's growth ---------------------------------------- */

void datafile_mark(struct datafile *f, struct datafile_mark *m)
{
	struct stat st, cst;

	pthread_mutex_lock(&f->lock);
	m->alone = !f->held;
	m->gen = atomic_load(&f->wgen);
	pthread_mutex_unlock(&f->lock);
	m->known = !fstat(f->fd, &st) && (f->cfd < 0 || !fstat(f->cfd, &cst));
	m->ino = m->known ? (uint64_t)st.st_ino : 0;
	m->size = m->known ? (uint64_t)st.st_size : 0;
	m->csize = m->known && f->cfd >= 0 ? (uint64_t)cst.st_size : 0;
}

/* Every writer is waited for and kept out while we look; only if no write
 * or truncate but the request's own ran since the mark (nothing else can
 * own a byte past the old end) is anything cut. */
void datafile_undo_growth(struct datafile *f, const struct datafile_mark *m,
			  uint64_t writes)
{
	struct datafile_range r;
	struct stat st, cst;
	uint64_t bad = 0;

	if (!m->known || !m->alone || f->cfd < 0)
		return;
	range_lock(f, &r, 0, UINT64_MAX);
	/* Back to the old size as a truncate does it: the block cut at the
	 * old end gets the checksum of what it holds, the entries past it go.
	 * A block that fails its checksum there stays as it is (-EBADMSG):
	 * reads report it. */
	if (atomic_load(&f->wgen) == m->gen + writes && !fstat(f->fd, &st) &&
	    (uint64_t)st.st_ino == m->ino && !fstat(f->cfd, &cst) &&
	    ((uint64_t)st.st_size > m->size || (uint64_t)cst.st_size > m->csize))
		truncate_locked(f, m->size, &bad);
	range_unlock(f, &r);
}

/* Is the datafile (size) as long as its last checksummed block says? */
static int check_tail(struct datafile *f, uint64_t size, uint64_t *bad)
{
	struct csum_ent e;
	struct stat st;
	uint64_t k, need;
	int ret;

	if (f->cfd < 0)
		return 0;
	if (fstat(f->cfd, &st))
		return -errno;
	if ((uint64_t)st.st_size < CSUM_HDR + CSUM_ENT)
		return 0;
	k = ((uint64_t)st.st_size - CSUM_HDR) / CSUM_ENT - 1;
	ret = datafile_read_ents(f, k, 1, &e);
	if (ret || !e.cur.end)
		return ret;
	need = e.cur.end;
	if (e.pend.end && e.pend.end < need)
		need = e.pend.end;
	if (size < k * CSUM_BLOCK + need) {
		*bad = size;
		return -EBADMSG;
	}
	return 0;
}

/* Is the datafile (size) neither shorter than its last checksummed block
 * says nor longer than its checksums cover? */
static int check_size(struct datafile *f, uint64_t size, uint64_t *bad)
{
	uint64_t end;
	int ret;

	/* Another file's checksums (a swapped pair): its size is not ours. */
	if (f->bad_hdr) {
		*bad = 0;
		return -EBADMSG;
	}
	ret = check_tail(f, size, bad);

	if (!ret)
		ret = datafile_covered(f, &end);
	if (!ret && size > end) {
		*bad = end;
		ret = -EBADMSG;
	}
	return ret;
}

int datafile_size(struct datafile *f, uint64_t *size, uint64_t *bad)
{
	struct datafile_range r;
	struct stat st;
	int ret;

	if (fstat(f->fd, &st))
		return -errno;
	ret = check_size(f, (uint64_t)st.st_size, bad);
	if (ret == -EBADMSG) {
		/* A truncate or a write may be half way: ask again once it is
		 * through. */
		range_lock(f, &r, 0, UINT64_MAX);
		ret = fstat(f->fd, &st) ? -errno
					: check_size(f, (uint64_t)st.st_size, bad);
		range_unlock(f, &r);
	}
	if (!ret)
		*size = (uint64_t)st.st_size;
	return ret;
}

int datafile_sync(struct datafile *f)
{
	if (fdatasync(f->fd))
		return -errno;
	if (f->cfd >= 0 && fdatasync(f->cfd))
		return -errno;
	return ec_ends_sync(f);
}
