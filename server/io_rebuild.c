/* Role io: an I/O server that starts on empty storage asks for the copies
 * it held to be rebuilt (docs/design/redundancy.md, "Rebuild";
 * meta_rebuild.c does the rest).
 *
 * A storage directory holding no datafile at start is new: a replaced
 * disk, a wiped directory, or a new cluster. Any copy of a mirrored file
 * placed on this server would have a datafile here, made when the file
 * was, so the request is right in all three cases and costs a walk of the
 * namespace that marks nothing in the last. It is kept in DIR/rebuild.pending
 * (written and synced before this server serves) until every metadata
 * server took it (MIRROR_REBUILD), asked again meanwhile (soon, then each
 * second): a
 * crash before then asks again at the next start, when the directory may
 * no longer be empty.
 *
 * The server says it is ready (PING) only once every metadata server took
 * the request, or after REBUILD_READY_WAIT_S: so a new cluster's files,
 * made once `rpfs up` saw every server ready, are not in the walk (their
 * datafiles are here; the walk covers the handles made before the
 * request).
 *
 * A copy lost in part: a read that finds a block failing its checksums
 * (io.c) has its datafile reported (MIRROR_STALE with RPC_STALE_DAMAGED):
 * the metadata server marks this copy stale if another copy of the slot
 * is whole, and the resync rewrites it whole from that one, as ZFS mends
 * a block from its mirror (here by file). The read itself is served by
 * the other copy meanwhile (client/listio.c). A datafile is reported once
 * a minute at most. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blocksum.h"
#include "io_forward.h"
#include "io_rebuild.h"
#include "log.h"
#include "placement.h"
#include "server.h"
#include "wire.h"

#define PENDING_FILE	     "rebuild.pending"
#define REBUILD_RETRY_MS     1000
#define REBUILD_READY_WAIT_S 10
#define DAMAGED_MAX	     64
#define DAMAGED_AGAIN_S	     60

struct io_rebuild {
	struct srv *s;
	char path[1100];
	uint32_t io; /* this server's I/O index */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, asked; /* asked: every metadata server took it */
	bool asking;	  /* a request to make (empty storage, or one left) */
	pthread_t thr;
	/* damaged datafiles to report, and those reported lately */
	struct damaged {
		uint64_t handle;
		uint32_t slot;
		int64_t when_s;
	} todo[DAMAGED_MAX], recent[DAMAGED_MAX];
	uint32_t ntodo, nrecent_next;
};

/* Ask metadata server meta; 0 when it took the request. */
static int ask_meta(struct io_rebuild *rb, uint32_t meta)
{
	struct srv *s = rb->s;
	uint8_t body[RPC_PREAMBLE + 16], rep[16];

	return io_peer_ask(s, s->cfg.meta[meta], body,
			   rpc_enc_mirror_rebuild(body, sizeof(body), rb->io), rep,
			   sizeof(rep), NULL, true);
}

static int64_t mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

/* Report a damaged datafile to its file's metadata server. */
static void report_damaged(struct io_rebuild *rb, const struct damaged *d)
{
	struct srv *s = rb->s;
	uint32_t meta = place_meta_of_handle(d->handle);
	uint8_t body[RPC_PREAMBLE + 32], rep[12 + 4 * RPC_STALE_MAX];
	int ret;

	if (meta >= s->cfg.nmeta)
		return;
	ret = io_peer_ask(s, s->cfg.meta[meta], body,
			  rpc_enc_mirror_damaged(body, sizeof(body), d->handle, d->slot),
			  rep, sizeof(rep), NULL, true);
	if (!ret)
		log_warn("rpfsd: datafile %016" PRIx64 " (slot %u) has a damaged block: "
			 "it is rewritten from another copy",
			 d->handle, d->slot);
	else if (ret != -EINVAL) /* not mirrored: nothing to mend it from */
		log_info("rpfsd: datafile %016" PRIx64
			 " (slot %u) has a damaged block; couldn't have it mended: %s",
			 d->handle, d->slot, strerror(-ret));
}

static void *asker(void *arg)
{
	struct io_rebuild *rb = arg;
	struct srv *s = rb->s;
	bool *took = calloc(s->cfg.nmeta ? s->cfg.nmeta : 1, sizeof(*took));
	uint32_t left = rb->asking ? s->cfg.nmeta : 0;
	long wait_ms = 20; /* a cluster starting: its metadata servers soon */

	pthread_mutex_lock(&rb->lock);
	while (!rb->stop && took) {
		struct timespec until;

		if (left) {
			pthread_mutex_unlock(&rb->lock);
			for (uint32_t m = 0; m < s->cfg.nmeta; m++)
				if (!took[m] && !ask_meta(rb, m)) {
					took[m] = true;
					left--;
				}
			if (!left && unlink(rb->path) && errno != ENOENT)
				log_warn("rpfsd: couldn't remove %s: %s", rb->path,
					 strerror(errno));
			else if (!left)
				log_info("rpfsd: every metadata server has the rebuild "
					 "of this server's copies in hand");
			pthread_mutex_lock(&rb->lock);
			if (!left) {
				rb->asked = true;
				pthread_cond_broadcast(&rb->cond);
			}
		}
		while (rb->ntodo && !rb->stop) {
			struct damaged d = rb->todo[--rb->ntodo];

			pthread_mutex_unlock(&rb->lock);
			report_damaged(rb, &d);
			pthread_mutex_lock(&rb->lock);
		}
		if (rb->stop)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		if (left) {
			until.tv_nsec += wait_ms * 1000000L;
			until.tv_sec += until.tv_nsec / 1000000000L;
			until.tv_nsec %= 1000000000L;
			wait_ms = wait_ms * 2 < REBUILD_RETRY_MS ? wait_ms * 2
								 : REBUILD_RETRY_MS;
		} else {
			until.tv_sec += 10; /* or woken by a report */
		}
		if (!rb->ntodo)
			pthread_cond_timedwait(&rb->cond, &rb->lock, &until);
	}
	pthread_mutex_unlock(&rb->lock);
	free(took);
	return NULL;
}

void io_rebuild_damaged(struct srv *s, uint64_t handle, uint32_t slot)
{
	struct io_rebuild *rb = s->rebuild;
	int64_t now = mono_s();

	if (!rb || slot == CSUM_SLOT_ANY)
		return;
	pthread_mutex_lock(&rb->lock);
	for (uint32_t i = 0; i < DAMAGED_MAX; i++)
		if (rb->recent[i].when_s && rb->recent[i].handle == handle &&
		    now - rb->recent[i].when_s < DAMAGED_AGAIN_S) {
			pthread_mutex_unlock(&rb->lock);
			return;
		}
	rb->recent[rb->nrecent_next] = (struct damaged){handle, slot, now ? now : 1};
	rb->nrecent_next = (rb->nrecent_next + 1) % DAMAGED_MAX;
	if (rb->ntodo < DAMAGED_MAX) {
		rb->todo[rb->ntodo++] = (struct damaged){handle, slot, now};
		pthread_cond_broadcast(&rb->cond);
	}
	pthread_mutex_unlock(&rb->lock);
}

/* Note the request on disk (before this server serves). */
static int note_pending(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

int io_rebuild_open(struct srv *s, bool empty)
{
	struct io_rebuild *rb;
	uint32_t io = UINT32_MAX;
	char path[1100];
	int ret;

	for (uint32_t i = 0; i < s->cfg.nio; i++)
		if ((int)s->cfg.io[i] == s->self)
			io = i;
	snprintf(path, sizeof(path), "%s/%s", s->me->dir, PENDING_FILE);
	if (io == UINT32_MAX || !s->cfg.nmeta)
		return 0;
	if (empty) {
		ret = note_pending(path);
		if (ret) {
			log_err("rpfsd: couldn't write %s: %s", path, strerror(-ret));
			return ret;
		}
		log_info(
			"rpfsd: %s/data holds no datafile (new or replaced storage): the "
			"metadata servers are asked to rebuild the copies of mirrored "
			"files this server held",
			s->me->dir);
	}
	rb = calloc(1, sizeof(*rb));
	if (!rb)
		return -ENOMEM;
	rb->s = s;
	rb->io = io;
	/* asked at this start, or one a crash left */
	rb->asking = empty || !access(path, F_OK);
	rb->asked = !rb->asking;
	snprintf(rb->path, sizeof(rb->path), "%s", path);
	pthread_mutex_init(&rb->lock, NULL);
	pthread_cond_init(&rb->cond, NULL);
	ret = pthread_create(&rb->thr, NULL, asker, rb);
	if (ret) {
		pthread_cond_destroy(&rb->cond);
		pthread_mutex_destroy(&rb->lock);
		free(rb);
		return -ret;
	}
	s->rebuild = rb;
	return 0;
}

void io_rebuild_wait(struct srv *s)
{
	struct io_rebuild *rb = s->rebuild;
	struct timespec until;

	if (!rb)
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += REBUILD_READY_WAIT_S;
	pthread_mutex_lock(&rb->lock);
	while (!rb->asked && !rb->stop &&
	       !pthread_cond_timedwait(&rb->cond, &rb->lock, &until))
		;
	if (!rb->asked)
		log_warn("rpfsd: the metadata servers have not all taken the rebuild of "
			 "this server's copies yet: asked again each second");
	pthread_mutex_unlock(&rb->lock);
}

void io_rebuild_close(struct srv *s)
{
	struct io_rebuild *rb = s->rebuild;

	if (!rb)
		return;
	pthread_mutex_lock(&rb->lock);
	rb->stop = true;
	pthread_cond_broadcast(&rb->cond);
	pthread_mutex_unlock(&rb->lock);
	pthread_join(rb->thr, NULL);
	pthread_cond_destroy(&rb->cond);
	pthread_mutex_destroy(&rb->lock);
	free(rb);
	s->rebuild = NULL;
}
