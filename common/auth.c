/* Cluster authentication: see auth.h. */
#include "auth.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* libsodium must be initialised once before use; sodium_init() is
 * thread-safe and returns 1 when it already was. */
static void auth_init(void)
{
	if (sodium_init() < 0)
		abort(); /* no usable randomness: nothing can be secure */
}

void auth_random(void *buf, size_t len)
{
	auth_init();
	randombytes_buf(buf, len);
}

void auth_digest(const void *buf, size_t len, uint8_t *out, size_t outlen)
{
	auth_init();
	crypto_generichash(out, outlen, buf, len, NULL, 0);
}

int auth_key_load(const char *path, struct auth_key *key, char *why, size_t whylen)
{
	struct stat st;
	ssize_t n;
	int fd, ret = 0;

	if (!path || !*path) {
		snprintf(why, whylen, "no cluster key: the config names no key_file");
		return -ENOENT;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, whylen, "cluster key %s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "cluster key %s: not a regular file", path);
		ret = -EINVAL;
	} else if (st.st_mode & (S_IROTH | S_IWOTH)) {
		snprintf(
			why, whylen,
			"cluster key %s: readable or writable by other users (mode %03o; chmod 600 it)",
			path, (unsigned)(st.st_mode & 0777));
		ret = -EPERM;
	} else if (st.st_size != AUTH_KEY_SIZE) {
		snprintf(why, whylen, "cluster key %s: %lld bytes, a key has %d", path,
			 (long long)st.st_size, AUTH_KEY_SIZE);
		ret = -EINVAL;
	} else if ((n = read(fd, key->k, AUTH_KEY_SIZE)) != AUTH_KEY_SIZE) {
		snprintf(why, whylen, "cluster key %s: short read", path);
		ret = -EIO;
	}
	close(fd);
	if (ret)
		sodium_memzero(key, sizeof(*key));
	return ret;
}

int auth_key_create(const char *path)
{
	struct auth_key key;
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	auth_random(key.k, sizeof(key.k));
	if (write(fd, key.k, sizeof(key.k)) != (ssize_t)sizeof(key.k) || fchmod(fd, 0600))
		ret = -EIO;
	if (close(fd) && !ret)
		ret = -errno;
	sodium_memzero(&key, sizeof(key));
	if (ret)
		unlink(path);
	return ret;
}

void auth_mac(const struct auth_key *key, const char *label, const void *a, size_t alen,
	      const void *b, size_t blen, const void *c, size_t clen,
	      uint8_t mac[AUTH_MAC_SIZE])
{
	crypto_auth_hmacsha256_state st;
	uint8_t full[crypto_auth_hmacsha256_BYTES];
	uint8_t lablen = (uint8_t)strlen(label);

	auth_init();
	crypto_auth_hmacsha256_init(&st, key->k, sizeof(key->k));
	/* The label's length first, so "ab"|"c" and "a"|"bc" differ. */
	crypto_auth_hmacsha256_update(&st, &lablen, 1);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label, lablen);
	if (alen)
		crypto_auth_hmacsha256_update(&st, a, alen);
	if (blen)
		crypto_auth_hmacsha256_update(&st, b, blen);
	if (clen)
		crypto_auth_hmacsha256_update(&st, c, clen);
	crypto_auth_hmacsha256_final(&st, full);
	memcpy(mac, full, AUTH_MAC_SIZE);
	sodium_memzero(full, sizeof(full));
	sodium_memzero(&st, sizeof(st));
}

void auth_cap_mac(const struct auth_key *key, uint64_t handle, uint32_t rights,
		  uint32_t lifetime_s, int64_t expiry, uint8_t mac[AUTH_MAC_SIZE])
{
	uint8_t b[24];

	put64(b, handle);
	put32(b + 8, rights);
	put32(b + 12, lifetime_s);
	put64(b + 16, (uint64_t)expiry);
	auth_mac(key, "cap", b, sizeof(b), NULL, 0, NULL, 0, mac);
}

bool auth_mac_equal(const uint8_t a[AUTH_MAC_SIZE], const uint8_t b[AUTH_MAC_SIZE])
{
	return sodium_memcmp(a, b, AUTH_MAC_SIZE) == 0;
}

/* ---- replay guard --------------------------------------------------------
 * An open-addressing table of (nonce, expiry). A slot whose expiry has
 * passed counts as free for insertion, but lookups probe past it (it may sit
 * inside another nonce's probe run); when used slots, live or expired, pass
 * three quarters, the table is rebuilt without the expired ones, twice as
 * large if the live ones alone pass half. */

struct replay_slot {
	uint8_t nonce[AUTH_NONCE_SIZE];
	int64_t expires; /* 0: never used */
};

struct auth_replay {
	struct replay_slot *slots;
	uint32_t size; /* power of two */
	uint32_t used; /* slots ever filled since the last rebuild */
	uint32_t cap;
	uint32_t window_s;
};

#define REPLAY_MIN_SLOTS 1024u

int auth_replay_create(uint32_t cap, uint32_t window_s, struct auth_replay **out)
{
	struct auth_replay *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->size = REPLAY_MIN_SLOTS;
	r->slots = calloc(r->size, sizeof(*r->slots));
	if (!r->slots) {
		free(r);
		return -ENOMEM;
	}
	r->cap = cap ? cap : 1;
	r->window_s = window_s;
	*out = r;
	return 0;
}

void auth_replay_destroy(struct auth_replay *r)
{
	if (!r)
		return;
	free(r->slots);
	free(r);
}

static uint32_t replay_hash(const uint8_t nonce[AUTH_NONCE_SIZE])
{
	uint32_t h;

	/* Nonces are random: their first bytes are a good hash already. */
	memcpy(&h, nonce, sizeof(h));
	return h;
}

static void replay_put(struct auth_replay *r, const uint8_t nonce[AUTH_NONCE_SIZE],
		       int64_t expires, int64_t now)
{
	uint32_t mask = r->size - 1;

	for (uint32_t i = replay_hash(nonce) & mask;; i = (i + 1) & mask) {
		struct replay_slot *s = &r->slots[i];

		if (!s->expires || s->expires <= now) {
			if (!s->expires)
				r->used++;
			memcpy(s->nonce, nonce, AUTH_NONCE_SIZE);
			s->expires = expires;
			return;
		}
	}
}

/* Rebuild without expired entries; grow if the live ones fill half. */
static int replay_rebuild(struct auth_replay *r, int64_t now)
{
	struct replay_slot *old = r->slots;
	uint32_t oldsize = r->size, live = 0;

	for (uint32_t i = 0; i < oldsize; i++)
		live += old[i].expires > now;
	r->size = oldsize;
	while (live * 2 >= r->size)
		r->size *= 2;
	r->slots = calloc(r->size, sizeof(*r->slots));
	if (!r->slots) {
		r->slots = old;
		r->size = oldsize;
		return -ENOMEM;
	}
	r->used = 0;
	for (uint32_t i = 0; i < oldsize; i++)
		if (old[i].expires > now)
			replay_put(r, old[i].nonce, old[i].expires, now);
	free(old);
	return 0;
}

int auth_replay_check(struct auth_replay *r, const uint8_t nonce[AUTH_NONCE_SIZE],
		      int64_t t_s, int64_t now_s)
{
	uint32_t mask = r->size - 1, live = 0;

	if (t_s < now_s - (int64_t)r->window_s || t_s > now_s + (int64_t)r->window_s)
		return -ETIME;
	for (uint32_t i = replay_hash(nonce) & mask, n = 0; n < r->size;
	     i = (i + 1) & mask, n++) {
		const struct replay_slot *s = &r->slots[i];

		if (!s->expires)
			break;
		if (s->expires > now_s && !memcmp(s->nonce, nonce, AUTH_NONCE_SIZE))
			return -EALREADY;
	}
	if ((r->used + 1) * 4 > r->size * 3) {
		for (uint32_t i = 0; i < r->size; i++)
			live += r->slots[i].expires > now_s;
		if (live >= r->cap)
			return -ENOSPC;
		if (replay_rebuild(r, now_s))
			return -ENOSPC;
	}
	/* Remembered until the request's time leaves the window: after that
	 * the time check alone refuses a replay. */
	replay_put(r, nonce, t_s + (int64_t)r->window_s + 1, now_s);
	return 0;
}
