/* Role io: the scrub. A damaged block that no read touches would only be
 * found by rpfsd --check on a stopped server, and a mirrored file could
 * lose its other copy meanwhile and then have none whole. So, as ZFS and
 * Ceph scrub, a thread reads every datafile's blocks against their
 * checksums in the background, at scrub_mbps (0, the default: no scrub),
 * pass after pass. A damaged block is handled as a read's is: logged with
 * its datafile and offset, and a copy of a mirrored file is reported to
 * its metadata server (io_rebuild_damaged), which has it rewritten from
 * another copy. `rpfs stats` counts the bytes read, the damage found and
 * the passes (scrub.*). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io_scrub.h"
#include "log.h"
#include "server.h"

#define SCRUB_PIECE   (1u << 20)
#define SCRUB_PAUSE_S 1 /* between passes */
/* A datafile's damage is logged once an hour, not at every pass (one
 * without another copy stays damaged until someone restores it). */
#define SCRUB_QUIET_S 3600
#define SCRUB_RECENT  64

struct io_scrub {
	struct srv *s;
	pthread_t thr;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	atomic_uint_fast64_t bytes, damaged, passes;
	/* the scrub thread's own: datafiles whose damage it logged lately */
	struct {
		uint64_t handle;
		int64_t when_us;
	} recent[SCRUB_RECENT];
	unsigned next_recent;
};

/* Was handle's damage logged within SCRUB_QUIET_S? If not, it is now. */
static bool logged_lately(struct io_scrub *sc, uint64_t handle, int64_t now)
{
	for (unsigned i = 0; i < SCRUB_RECENT; i++)
		if (sc->recent[i].when_us && sc->recent[i].handle == handle &&
		    now - sc->recent[i].when_us < (int64_t)SCRUB_QUIET_S * 1000000)
			return true;
	sc->recent[sc->next_recent].handle = handle;
	sc->recent[sc->next_recent].when_us = now ? now : 1;
	sc->next_recent = (sc->next_recent + 1) % SCRUB_RECENT;
	return false;
}

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Sleep until mono_us() reaches at, or the scrub stops (true). */
static bool wait_until(struct io_scrub *sc, int64_t at)
{
	bool stop;

	pthread_mutex_lock(&sc->lock);
	while (!sc->stop) {
		int64_t left = at - mono_us();
		struct timespec until;

		if (left <= 0)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += left / 1000000;
		until.tv_nsec += (left % 1000000) * 1000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&sc->wake, &sc->lock, &until);
	}
	stop = sc->stop;
	pthread_mutex_unlock(&sc->lock);
	return stop;
}

static void *scrub(void *arg)
{
	struct io_scrub *sc = arg;
	struct srv *s = sc->s;
	uint32_t mbps = s->cfg.xport.scrub_mbps;
	char *buf = malloc(SCRUB_PIECE);
	int64_t next = mono_us();

	if (!buf) {
		log_err("rpfsd: no memory for the scrub: it does not run");
		return NULL;
	}
	log_info("rpfsd: the scrub reads every datafile at %u MB/s", mbps);
	while (!wait_until(sc, next)) {
		size_t n;
		uint64_t *h = io_datafile_handles(s, &n);

		for (size_t i = 0; i < n; i++) {
			uint64_t off = 0, got;
			int ret;

			do {
				if (wait_until(sc, next))
					goto out;
				ret = io_scrub_read(s, h[i], buf, SCRUB_PIECE, off, &got,
						    sc);
				if (ret == -EBADMSG)
					atomic_fetch_add(&sc->damaged, 1);
				atomic_fetch_add(&sc->bytes, got);
				/* the pace: mbps MB/s is as many bytes a microsecond */
				next = (next > mono_us() ? next : mono_us()) +
				       (int64_t)(got / mbps);
				off += SCRUB_PIECE;
			} while ((!ret || ret == -EBADMSG) && got);
		}
		free(h);
		h = NULL;
		atomic_fetch_add(&sc->passes, 1);
		next = mono_us() + SCRUB_PAUSE_S * 1000000;
		continue;
	out:
		free(h);
		break;
	}
	free(buf);
	return NULL;
}

int io_scrub_start(struct srv *s)
{
	struct io_scrub *sc;
	int ret;

	if (!s->cfg.xport.scrub_mbps)
		return 0;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	sc->s = s;
	pthread_mutex_init(&sc->lock, NULL);
	pthread_cond_init(&sc->wake, NULL);
	ret = pthread_create(&sc->thr, NULL, scrub, sc);
	if (ret) {
		pthread_cond_destroy(&sc->wake);
		pthread_mutex_destroy(&sc->lock);
		free(sc);
		return -ret;
	}
	s->scrub = sc;
	return 0;
}

void io_scrub_stop(struct srv *s)
{
	struct io_scrub *sc = s->scrub;

	if (!sc)
		return;
	pthread_mutex_lock(&sc->lock);
	sc->stop = true;
	pthread_cond_broadcast(&sc->wake);
	pthread_mutex_unlock(&sc->lock);
	pthread_join(sc->thr, NULL);
	pthread_cond_destroy(&sc->wake);
	pthread_mutex_destroy(&sc->lock);
	free(sc);
	s->scrub = NULL;
}

bool io_scrub_quiet(struct io_scrub *sc, uint64_t handle)
{
	return logged_lately(sc, handle, mono_us());
}

void io_scrub_counts(struct srv *s, uint64_t *bytes, uint64_t *damaged, uint64_t *passes)
{
	struct io_scrub *sc = s->scrub;

	*bytes = sc ? atomic_load(&sc->bytes) : 0;
	*damaged = sc ? atomic_load(&sc->damaged) : 0;
	*passes = sc ? atomic_load(&sc->passes) : 0;
}
