/* rpfsd: an ec parity member's record of its data members' sizes
 * (ec_ends.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blocksum.h"
#include "datafile.h"
#include "ec_ends.h"
#include "wire.h"

#define ENDS_MAGIC "RPFSEND1"
#define ENDS_HDR   16u

struct ec_ends {
	int fd; /* -1: no file yet */
	uint32_t n;
	uint64_t end[EC_ENDS_MAX];
};

static size_t rec_len(uint32_t n)
{
	return ENDS_HDR + 8 * (size_t)n + 4;
}

void ec_ends_name(uint64_t handle, char *buf, size_t len)
{
	snprintf(buf, len, "%016" PRIx64 EC_ENDS_SUFFIX, handle);
}

int ec_ends_check(const uint8_t *buf, size_t len)
{
	uint32_t n;

	if (len < rec_len(1) || memcmp(buf, ENDS_MAGIC, 8))
		return -EBADMSG;
	n = get32(buf + 8);
	if (!n || n > EC_ENDS_MAX || get32(buf + 12) || len != rec_len(n) ||
	    csum_crc(buf, len - 4) != get32(buf + len - 4))
		return -EBADMSG;
	for (uint32_t i = 0; i < n; i++)
		if (get64(buf + ENDS_HDR + 8 * (size_t)i) > (uint64_t)INT64_MAX)
			return -EBADMSG;
	return 0;
}

/* The record of f, read from its file the first time (f->lock held). */
static int load(struct datafile *f, struct ec_ends **out)
{
	uint8_t buf[ENDS_HDR + 8 * EC_ENDS_MAX + 4 + 1];
	char name[40];
	struct ec_ends *e = f->ends;
	ssize_t got;
	int ret;

	if (e) {
		*out = e;
		return 0;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	ec_ends_name(f->handle, name, sizeof(name));
	e->fd = openat(f->dirfd, name, O_RDWR | O_CLOEXEC);
	if (e->fd < 0 && errno != ENOENT) {
		ret = -errno;
		free(e);
		return ret;
	}
	if (e->fd >= 0) {
		do
			got = pread(e->fd, buf, sizeof(buf), 0);
		while (got < 0 && errno == EINTR);
		if (got < 0 || ec_ends_check(buf, (size_t)got)) {
			ret = got < 0 ? -errno : -EBADMSG;
			close(e->fd);
			free(e);
			return ret;
		}
		e->n = get32(buf + 8);
		for (uint32_t i = 0; i < e->n; i++)
			e->end[i] = get64(buf + ENDS_HDR + 8 * (size_t)i);
	}
	f->ends = e;
	*out = e;
	return 0;
}

/* Write the record whole (f->lock held). */
static int store(struct datafile *f, struct ec_ends *e)
{
	uint8_t buf[ENDS_HDR + 8 * EC_ENDS_MAX + 4];
	size_t len = rec_len(e->n);
	char name[40];
	ssize_t n;

	if (e->fd < 0) {
		ec_ends_name(f->handle, name, sizeof(name));
		e->fd = openat(f->dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (e->fd < 0)
			return -errno;
		/* its name is durable at the datafile's next sync, which
		 * syncs the directory for a new checksum file too (io.c) */
		f->cfd_created = true;
	}
	memcpy(buf, ENDS_MAGIC, 8);
	put32(buf + 8, e->n);
	put32(buf + 12, 0);
	for (uint32_t i = 0; i < e->n; i++)
		put64(buf + ENDS_HDR + 8 * (size_t)i, e->end[i]);
	put32(buf + len - 4, csum_crc(buf, len - 4));
	/* one write of under a page: whole after a kill -9; a power cut that
	 * tears it is caught by the crc */
	do
		n = pwrite(e->fd, buf, len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	return ftruncate(e->fd, (off_t)len) ? -errno : 0;
}

int ec_ends_note(struct datafile *f, uint32_t k, uint32_t index, uint64_t end)
{
	struct ec_ends *e;
	int ret;

	if (!k || k > EC_ENDS_MAX || index >= k)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	ret = load(f, &e);
	if (!ret && (index >= e->n || e->end[index] < end)) {
		if (e->n < k)
			e->n = k; /* the new ones start empty (calloc, or a set) */
		e->end[index] = end;
		ret = store(f, e);
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

int ec_ends_set(struct datafile *f, const uint64_t *ends, uint32_t n)
{
	struct ec_ends *e;
	int ret;

	if (!n || n > EC_ENDS_MAX)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	ret = load(f, &e);
	if (ret == -EBADMSG) {
		/* a damaged record is replaced whole (store opens its file) */
		e = calloc(1, sizeof(*e));
		ret = e ? 0 : -ENOMEM;
		if (e) {
			e->fd = -1;
			f->ends = e;
		}
	}
	if (!ret) {
		memset(e->end, 0, sizeof(e->end));
		memcpy(e->end, ends, 8 * (size_t)n);
		e->n = n;
		ret = store(f, e);
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

int ec_ends_get(struct datafile *f, uint64_t *ends, uint32_t max, uint32_t *n)
{
	struct ec_ends *e;
	int ret;

	pthread_mutex_lock(&f->lock);
	ret = load(f, &e);
	if (!ret) {
		for (uint32_t i = 0; i < max; i++)
			ends[i] = i < e->n ? e->end[i] : 0;
		*n = e->n;
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

int ec_ends_sync(struct datafile *f)
{
	struct ec_ends *e;
	int ret;

	pthread_mutex_lock(&f->lock);
	ret = load(f, &e);
	if (ret == -EBADMSG)
		ret = 0; /* nothing of worth to make durable; reads refuse it */
	else if (!ret && e->fd >= 0 && fdatasync(e->fd))
		ret = -errno;
	pthread_mutex_unlock(&f->lock);
	return ret;
}

void ec_ends_free(struct ec_ends *e)
{
	if (!e)
		return;
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

int ec_ends_remove(int dirfd, uint64_t handle)
{
	char name[40];

	ec_ends_name(handle, name, sizeof(name));
	return unlinkat(dirfd, name, 0) && errno != ENOENT ? -errno : 0;
}
