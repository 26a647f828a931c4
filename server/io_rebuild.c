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
 * request). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io_rebuild.h"
#include "log.h"
#include "server.h"
#include "wire.h"

#define PENDING_FILE	     "rebuild.pending"
#define REBUILD_RETRY_MS     1000
#define REBUILD_READY_WAIT_S 10

struct io_rebuild {
	struct srv *s;
	char path[1100];
	uint32_t io; /* this server's I/O index */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, asked; /* asked: every metadata server took it */
	pthread_t thr;
};

/* Ask metadata server meta; 0 when it took the request. */
static int ask_meta(struct io_rebuild *rb, uint32_t meta)
{
	struct srv *s = rb->s;
	uint8_t body[RPC_PREAMBLE + 16], rep[16];
	struct xp_call call;
	int len = rpc_enc_mirror_rebuild(body, sizeof(body), rb->io);

	if (len < 0)
		return len;
	memset(&call, 0, sizeof(call));
	call.req = body;
	call.req_len = (size_t)len;
	call.rep = rep;
	call.rep_max = sizeof(rep);
	return peer_call_quiet(s, s->cfg.meta[meta], &call);
}

static void *asker(void *arg)
{
	struct io_rebuild *rb = arg;
	struct srv *s = rb->s;
	bool *took = calloc(s->cfg.nmeta ? s->cfg.nmeta : 1, sizeof(*took));
	uint32_t left = s->cfg.nmeta;
	long wait_ms = 20; /* a cluster starting: its metadata servers soon */

	pthread_mutex_lock(&rb->lock);
	while (!rb->stop && took && left) {
		struct timespec until;

		pthread_mutex_unlock(&rb->lock);
		for (uint32_t m = 0; m < s->cfg.nmeta; m++)
			if (!took[m] && !ask_meta(rb, m)) {
				took[m] = true;
				left--;
			}
		pthread_mutex_lock(&rb->lock);
		if (!left) {
			rb->asked = true;
			pthread_cond_broadcast(&rb->cond);
		}
		if (!left || rb->stop)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += wait_ms * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&rb->cond, &rb->lock, &until);
		wait_ms = wait_ms * 2 < REBUILD_RETRY_MS ? wait_ms * 2 : REBUILD_RETRY_MS;
	}
	pthread_mutex_unlock(&rb->lock);
	if (took && !left) {
		if (unlink(rb->path) && errno != ENOENT)
			log_warn("rpfsd: couldn't remove %s: %s", rb->path,
				 strerror(errno));
		else
			log_info("rpfsd: every metadata server has the rebuild of this "
				 "server's copies in hand");
	}
	free(took);
	return NULL;
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
	} else if (access(path, F_OK)) {
		return 0; /* nothing asked, nothing left to ask */
	}
	rb = calloc(1, sizeof(*rb));
	if (!rb)
		return -ENOMEM;
	rb->s = s;
	rb->io = io;
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
