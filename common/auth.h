/* Cluster authentication: the cluster key, message authentication codes,
 * and the replay guard for connection requests.
 *
 * Every client and server of a cluster holds one 32-byte secret key (the
 * key_file of the config, mode 0600). A connection is made only between
 * holders of the key, proved both ways before anything is allocated for a
 * peer:
 *
 *   connect request (client)  nonce_c, time, MAC(key, "connreq" | nonce_c | time)
 *                             checked by the server before fi_accept: a
 *                             peer without the key costs it no endpoint and
 *                             no memory; a replayed request (same nonce
 *                             within the time window) is refused too.
 *   accept (server)           nonce_s, MAC(key, "accept" | nonce_c | nonce_s)
 *                             checked by the client before it sends anything:
 *                             an impostor server gets no request.
 *   HELLO (client)            MAC(key, "hello" | nonce_s | nonce_c): the
 *                             challenge-response over the server's fresh nonce.
 *
 * Capabilities (MAC over handle, rights and expiry) use the same key under
 * their own label, so a MAC made for one purpose never verifies for another.
 *
 * The MACs are HMAC-SHA-256 from libsodium, truncated to 16 bytes (RFC 2104
 * allows truncation to half the hash length), compared in constant time. */
#ifndef RPFS_AUTH_H
#define RPFS_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_KEY_SIZE	32
#define AUTH_MAC_SIZE	16
#define AUTH_NONCE_SIZE 16

struct auth_key {
	uint8_t k[AUTH_KEY_SIZE];
};

/* Read a key file: exactly AUTH_KEY_SIZE bytes, a regular file that other
 * users cannot read or write (mode 0600 or stricter for them). Returns 0, or
 * a negative errno with a message naming the file and the cause in why:
 * -ENOENT missing, -EPERM readable by others, -EINVAL wrong size. */
int auth_key_load(const char *path, struct auth_key *key, char *why, size_t whylen);
/* Create a new random key file (mode 0600, replacing none: -EEXIST). */
int auth_key_create(const char *path);

/* Fill buf with random bytes (libsodium's CSPRNG). */
void auth_random(void *buf, size_t len);
/* An unkeyed digest (BLAKE2b) of len bytes, outlen (16..64) bytes long. */
void auth_digest(const void *buf, size_t len, uint8_t *out, size_t outlen);

/* MAC over up to three parts, under a purpose label ("connreq", "accept",
 * "hello", "cap", ...). Parts may be NULL with length 0. */
void auth_mac(const struct auth_key *key, const char *label, const void *a, size_t alen,
	      const void *b, size_t blen, const void *c, size_t clen,
	      uint8_t mac[AUTH_MAC_SIZE]);
/* The MAC of a capability (rpc.h struct rpc_cap): label "cap" over handle,
 * rights, lifetime and expiry. Made by metadata servers, checked by every
 * server; any holder of the key can make one (the key is the line of
 * trust: server/access.c). */
void auth_cap_mac(const struct auth_key *key, uint64_t handle, uint32_t rights,
		  uint32_t lifetime_s, int64_t expiry, uint8_t mac[AUTH_MAC_SIZE]);
/* Constant-time check of a received MAC against the expected one. */
bool auth_mac_equal(const uint8_t a[AUTH_MAC_SIZE], const uint8_t b[AUTH_MAC_SIZE]);

/* Replay guard for connection requests: remembers the nonces of accepted
 * requests for as long as their timestamps are within the window, and
 * refuses a request whose time is outside the window (clocks of a cluster
 * agree to within it) or whose nonce it has seen. Bounded: at most cap
 * nonces; when full of unexpired ones, new requests are refused (only key
 * holders get this far, so this bounds what a misbehaving member can do). */
struct auth_replay;
int auth_replay_create(uint32_t cap, uint32_t window_s, struct auth_replay **out);
void auth_replay_destroy(struct auth_replay *r);
/* now_s and t_s in seconds since the epoch. Returns 0 (new, remembered),
 * -ETIME (outside the window), -EALREADY (replayed), -ENOSPC (full). */
int auth_replay_check(struct auth_replay *r, const uint8_t nonce[AUTH_NONCE_SIZE],
		      int64_t t_s, int64_t now_s);

#endif
