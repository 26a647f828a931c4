/* Role io: the mirrored datafiles whose copies may not hold what this
 * primary holds, kept on disk so that a crash (kill -9, power cut) of any
 * or every server cannot leave copies that silently disagree
 * (docs/design/redundancy.md, "Crashes").
 *
 * A primary stores a write, then forwards it (io_forward.c): between the
 * two, and when it dies between them, the copies lack bytes the primary
 * has. Before a mirrored write or truncate changes a datafile, its handle
 * (with the slot and the copies the request named) is in DIR/mirror.dirty,
 * written and synced (one write per handle that becomes dirty, not per
 * write: the ops of a handle already there only count). When its last op
 * ends, the handle leaves the file at its next rewrite. An op that failed
 * after it may have changed the datafile (its forward failed, and the
 * copies could not be marked stale then) is reported instead.
 *
 * An ec data cell's write (RPC_IO_PARITY) is listed the same way, its
 * group's parity members as its copies: killed between its store and its
 * deltas, it leaves parity that disagrees, which its report has marked
 * stale and re-encoded (ec_resync.c).
 *
 * At start, the handles the file still lists are reported: the file's
 * metadata server marks the copies stale (MIRROR_STALE), as if their
 * forwards had failed, and the resync makes them whole from this datafile
 * (meta_resync.c). The server says it is ready only once they are taken
 * (or after DIRTY_READY_WAIT_S), so that what a client sees of the copies
 * after a restart already knows which may lag. A report the metadata server can't take
 * yet (it is starting too) is tried again every second; one it refuses (this copy is
 * stale itself, the file is gone) is dropped: then this copy is the one
 * resynced. Until the report is taken, a reader may see either copy's
 * bytes over a write that was never acknowledged (both are right: its
 * bytes were unspecified); after it, only this copy's. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io_forward.h"
#include "log.h"
#include "mirror_dirty.h"
#include "server.h"
#include "wire.h"

#define DIRTY_FILE     "mirror.dirty"
#define DIRTY_MAGIC    0x59524944u /* "DIRY" */
#define DIRTY_ENT      (8 + 4 + 4 + 8 * RPC_COPIES_MAX)
#define DIRTY_RETRY_MS 1000
/* The longest a start waits for its reports to be taken before it says
 * it is ready. */
#define DIRTY_READY_WAIT_S 10

struct dent {
	uint64_t handle;
	uint32_t slot, ncopies;
	uint32_t copies[RPC_COPIES_MAX]; /* slots */
	uint32_t ops;			 /* ops holding it */
	bool kept;			 /* in the file as last written */
	bool report;			 /* to be reported (crash, failed op) */
};

struct mirror_dirty {
	struct srv *s;
	char path[1100], tmp[1100];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct dent *e;
	size_t n, cap;
	bool writing; /* a rewrite of the file in progress */
	uint64_t gen; /* rewrites done */
	bool stop;
	pthread_t thr;
	bool started;
};

static struct dent *find(struct mirror_dirty *d, uint64_t handle)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->e[i].handle == handle)
			return &d->e[i];
	return NULL;
}

static struct dent *add(struct mirror_dirty *d, uint64_t handle)
{
	struct dent *e = find(d, handle);

	if (e)
		return e;
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 16;
		struct dent *ne = realloc(d->e, cap * sizeof(*ne));

		if (!ne)
			return NULL;
		d->e = ne;
		d->cap = cap;
	}
	e = &d->e[d->n++];
	memset(e, 0, sizeof(*e));
	e->handle = handle;
	return e;
}

/* Entries no op holds and none to report go. */
static void prune(struct mirror_dirty *d)
{
	size_t k = 0;

	for (size_t i = 0; i < d->n; i++)
		if (d->e[i].ops || d->e[i].report)
			d->e[k++] = d->e[i];
	d->n = k;
}

/* Rewrite the file with the entries now (called with lock held, released
 * while writing). Every entry present when it began is kept on return. */
static int rewrite(struct mirror_dirty *d)
{
	size_t n = d->n, len = 8 + n * DIRTY_ENT;
	uint8_t *buf = malloc(len);
	int fd, ret = 0;

	if (!buf)
		return -ENOMEM;
	put32(buf, DIRTY_MAGIC);
	put32(buf + 4, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = buf + 8 + i * DIRTY_ENT;

		memset(p, 0, DIRTY_ENT);
		put64(p, d->e[i].handle);
		put32(p + 8, d->e[i].slot);
		put32(p + 12, d->e[i].ncopies);
		for (uint32_t c = 0; c < d->e[i].ncopies; c++)
			put32(p + 16 + 8 * c, d->e[i].copies[c]);
		d->e[i].kept = true;
	}
	d->writing = true;
	pthread_mutex_unlock(&d->lock);
	fd = open(d->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len || fdatasync(fd))
		ret = -errno;
	if (fd >= 0 && close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(d->tmp, d->path))
		ret = -errno;
	free(buf);
	pthread_mutex_lock(&d->lock);
	d->writing = false;
	d->gen++;
	pthread_cond_broadcast(&d->cond);
	if (ret)
		log_err("rpfsd: couldn't write %s: %s", d->path, strerror(-ret));
	return ret;
}

int mirror_dirty_hold(struct srv *s, struct srv_op *op)
{
	struct mirror_dirty *d = s->dirty;
	struct dent *e;
	int ret = 0;

	if (!d)
		return 0;
	pthread_mutex_lock(&d->lock);
	e = add(d, op->q.handle);
	if (!e) {
		pthread_mutex_unlock(&d->lock);
		return -ENOMEM;
	}
	if (!op->mirror_dirty) {
		op->mirror_dirty = true;
		e->ops++;
		e->slot = op->q.slot;
		e->ncopies =
			op->q.ncopies < RPC_COPIES_MAX ? op->q.ncopies : RPC_COPIES_MAX;
		for (uint32_t c = 0; c < e->ncopies; c++)
			e->copies[c] = op->q.copies[c].slot;
	}
	/* on disk before the datafile changes: one rewrite takes every
	 * handle waiting */
	while (!ret && !(e = find(d, op->q.handle))->kept) {
		if (d->writing) {
			pthread_cond_wait(&d->cond, &d->lock);
			continue;
		}
		ret = rewrite(d);
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

void mirror_dirty_release(struct srv *s, struct srv_op *op)
{
	struct mirror_dirty *d = s->dirty;
	struct dent *e;

	if (!d || !op->mirror_dirty)
		return;
	op->mirror_dirty = false;
	pthread_mutex_lock(&d->lock);
	e = find(d, op->q.handle);
	if (e && e->ops)
		e->ops--;
	/* failed after it may have changed the datafile: the copies may
	 * differ, and could not be marked then */
	if (e && op->status && op->status != -RPC_EBEHIND) {
		e->report = true;
		pthread_cond_broadcast(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
}

/* Report e's copies stale to the file's metadata server: 0 done (or
 * refused for good), <0 try again. */
static int report(struct mirror_dirty *d, const struct dent *e)
{
	uint64_t epoch;
	int ret;

	if (!e->ncopies)
		return 0;
	/* the datafile went with this server's storage (replaced): this copy
	 * is the one rebuilt (io_rebuild.c), the others are right */
	if (io_epoch_local(d->s, e->handle, &epoch) == -ESTALE) {
		log_info("rpfsd: handle %016" PRIx64
			 ": its datafile is gone: its copies' marks not needed",
			 e->handle);
		return 0;
	}
	ret = io_mark_stale(d->s, e->handle, 0, e->slot, e->copies, e->ncopies, true,
			    &epoch);
	if (ret == -RPC_EBEHIND || ret == -ENOENT || ret == -EINVAL || ret == -EPROTO) {
		log_info("rpfsd: handle %016" PRIx64
			 ": its copies' marks not needed (%s)",
			 e->handle, strerror(-ret));
		return 0;
	}
	if (ret)
		return ret;
	log_warn("rpfsd: handle %016" PRIx64
		 " (slot %u) may have differed from its copies or parity members "
		 "(a write cut short): they are marked stale and resynced",
		 e->handle, e->slot);
	return 0;
}

static void *reporter(void *arg)
{
	struct mirror_dirty *d = arg;

	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		struct dent todo;
		bool found = false, changed = false;
		struct timespec until;

		for (size_t i = 0; i < d->n && !found; i++)
			if (d->e[i].report) {
				todo = d->e[i];
				found = true;
			}
		if (found) {
			int ret;

			pthread_mutex_unlock(&d->lock);
			ret = report(d, &todo);
			pthread_mutex_lock(&d->lock);
			if (!ret) {
				struct dent *e = find(d, todo.handle);

				if (e)
					e->report = false;
				changed = true;
				pthread_cond_broadcast(&d->cond); /* mirror_dirty_wait */
			}
		}
		/* the file follows, dropping what no op holds */
		if (!d->writing) {
			size_t before = d->n;

			prune(d);
			if (changed || d->n != before)
				rewrite(d);
		}
		if (found && changed)
			continue;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += DIRTY_RETRY_MS / 1000;
		pthread_cond_timedwait(&d->cond, &d->lock, &until);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* The entries a crash left: each to be reported. */
static void load(struct mirror_dirty *d)
{
	FILE *f = fopen(d->path, "rb");
	uint8_t hdr[8], ent[DIRTY_ENT];
	uint32_t n;

	if (!f)
		return;
	if (fread(hdr, 1, 8, f) != 8 || get32(hdr) != DIRTY_MAGIC) {
		log_warn("rpfsd: %s is not a dirty list: ignored", d->path);
		fclose(f);
		return;
	}
	n = get32(hdr + 4);
	for (uint32_t i = 0; i < n && fread(ent, 1, DIRTY_ENT, f) == DIRTY_ENT; i++) {
		struct dent *e = add(d, get64(ent));

		if (!e)
			break;
		e->slot = get32(ent + 8);
		e->ncopies = get32(ent + 12);
		if (e->ncopies > RPC_COPIES_MAX)
			e->ncopies = RPC_COPIES_MAX;
		for (uint32_t c = 0; c < e->ncopies; c++)
			e->copies[c] = get32(ent + 16 + 8 * c);
		e->kept = true;
		e->report = true;
	}
	fclose(f);
	if (d->n)
		log_warn(
			"rpfsd: %zu mirrored datafiles were being written when this server "
			"stopped: their copies are checked against them",
			d->n);
}

void mirror_dirty_wait(struct srv *s)
{
	struct mirror_dirty *d = s->dirty;
	struct timespec until;
	bool pending = true;

	if (!d)
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += DIRTY_READY_WAIT_S;
	pthread_mutex_lock(&d->lock);
	for (;;) {
		pending = false;
		for (size_t i = 0; i < d->n; i++)
			pending |= d->e[i].report;
		if (!pending || d->stop ||
		    pthread_cond_timedwait(&d->cond, &d->lock, &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&d->lock);
	if (pending)
		log_warn("rpfsd: the metadata servers have not all taken the copies to "
			 "check after the crash yet: reported again each second");
}

int mirror_dirty_open(struct srv *s)
{
	struct mirror_dirty *d = calloc(1, sizeof(*d));
	int ret;

	if (!d)
		return -ENOMEM;
	d->s = s;
	snprintf(d->path, sizeof(d->path), "%s/%s", s->me->dir, DIRTY_FILE);
	snprintf(d->tmp, sizeof(d->tmp), "%s/%s.tmp", s->me->dir, DIRTY_FILE);
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	load(d);
	ret = pthread_create(&d->thr, NULL, reporter, d);
	if (ret) {
		pthread_cond_destroy(&d->cond);
		pthread_mutex_destroy(&d->lock);
		free(d->e);
		free(d);
		return -ret;
	}
	d->started = true;
	s->dirty = d;
	return 0;
}

void mirror_dirty_close(struct srv *s)
{
	struct mirror_dirty *d = s->dirty;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	if (d->started)
		pthread_join(d->thr, NULL);
	/* a clean stop: nothing in flight; what is left to report stays */
	pthread_mutex_lock(&d->lock);
	prune(d);
	if (!d->n)
		unlink(d->path);
	else
		rewrite(d);
	pthread_mutex_unlock(&d->lock);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d->e);
	free(d);
	s->dirty = NULL;
}
