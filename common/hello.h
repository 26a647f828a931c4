/* The file service's part of the connection handshake: who the client is
 * and which server it means, and the server's answer (carried as the
 * transport's xp_hello data, so covered by the handshake's MACs).
 *
 * A client states its cluster id, the fingerprint of its config's server
 * list (config.h), the config index of the server it means to reach, and
 * the credentials of its process (uid, gid, groups: the trust model of NFS
 * AUTH_SYS inside a cluster whose members hold the key). The server
 * refuses a client whose cluster, server list or target differs from its
 * own config, so a config that lists the servers in another order or at
 * other ports gets an error instead of another server's data; its answer
 * says who it is, so the client can name the difference.
 *
 * Both are encoded little-endian field by field and decoded with every
 * length checked, like every wire format of rpfs. */
#ifndef RPFS_HELLO_H
#define RPFS_HELLO_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define HELLO_MAX_GROUPS 64
#define HELLO_NAME_MAX	 64  /* server name, NUL included */
#define HELLO_ADDR_MAX	 272 /* "address:port", NUL included */

enum hello_role {
	HELLO_CLIENT = 1, /* an application's client (librpfs) */
	HELLO_PEER = 2,	  /* another server of the cluster (peer.c) */
};

struct hello_req {
	uint8_t cluster_id[RPFS_CLUSTER_ID_SIZE];
	uint8_t fingerprint[RPFS_FINGERPRINT_SIZE];
	uint32_t server; /* config index of the server the client means */
	uint8_t role;	 /* enum hello_role */
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[HELLO_MAX_GROUPS];
};

/* What refused a client (hello_rep.mismatch). */
enum hello_mismatch {
	HELLO_OK = 0,
	HELLO_OTHER_CLUSTER = 1, /* another cluster id */
	HELLO_OTHER_SERVER = 2,	 /* the client means another config index */
	HELLO_OTHER_SERVERS = 3, /* the server lists differ (fingerprint) */
};

struct hello_rep {
	uint8_t mismatch; /* enum hello_mismatch */
	uint8_t cluster_id[RPFS_CLUSTER_ID_SIZE];
	uint8_t fingerprint[RPFS_FINGERPRINT_SIZE];
	uint32_t server; /* the server's own config index */
	int32_t io_index, meta_index;
	char name[HELLO_NAME_MAX]; /* its section name, "server.NAME" without "server." */
	char addr[HELLO_ADDR_MAX]; /* its address:port as its config says */
};

/* Encoders return the bytes written or -E2BIG; decoders 0 or -EPROTO. */
int hello_req_encode(void *buf, size_t len, const struct hello_req *m);
int hello_req_decode(const void *buf, size_t len, struct hello_req *m);
int hello_rep_encode(void *buf, size_t len, const struct hello_rep *m);
int hello_rep_decode(const void *buf, size_t len, struct hello_rep *m);

/* A client's request for server srv (config index) of cfg, with the
 * credentials of the calling process. */
void hello_req_fill(struct hello_req *m, const struct rpfs_config *cfg, uint32_t srv,
		    enum hello_role role);
/* The server's answer: compares req with its own config (self: its index)
 * and fills rep. Returns HELLO_OK or the mismatch. */
enum hello_mismatch hello_check(const struct rpfs_config *cfg, uint32_t self,
				const struct hello_req *req, struct hello_rep *rep);
/* A message for a refusal, naming the difference (why: whylen bytes):
 * desc names the server as the client knows it, config the client's file. */
void hello_explain(const struct hello_rep *rep, const struct rpfs_config *cfg,
		   uint32_t srv, const char *desc, char *why, size_t whylen);

#endif
