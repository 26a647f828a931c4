/* Cluster configuration: one INI file shared by servers and clients.
 *
 *   [cluster]
 *   stripe_unit = 1M          ; default for new files
 *   stripe_count = 0          ; 0 = all I/O servers
 *   redundancy = mirror:2     ; of new files: none (default) or mirror:N
 *   key_file = /path/key      ; cluster key (auth.h), relative to this file
 *   id = 32 hex digits        ; the cluster's identity, made once (rpfs up)
 *
 *   [server.0]                ; one section per server, any name after "server."
 *   address = 127.0.0.1
 *   port = 7100
 *   roles = meta,io           ; meta and/or io
 *   dir = /var/lib/rpfs/s0    ; storage directory (LMDB and datafiles)
 *   id = 0                    ; stable server id (all servers or none)
 *   log_file = /var/log/rpfs/s0.log   ; rpfsd's log (default stderr)
 *
 *   [transport]               ; see params.h
 *   inline_max = 4K
 *
 * Servers are ordered by their ids, or by their order in the file when
 * they have none: the n-th server with role io is I/O server n (layouts
 * name I/O servers by this index), the n-th with role meta is metadata
 * server n (paths hash onto this index, placement.h). With ids, moving sections around
 * in the file changes nothing; each server's storage records its name and
 * indexes (server/identity.c), so a config that would give a server other
 * indexes (renumbered, a server inserted before it) is refused at start. Clients find the
 * file by an explicit path, else rpfs_config_search(). */
#ifndef RPFS_CONFIG_H
#define RPFS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "params.h"
#include "redundancy.h"

#define RPFS_ROLE_META	      1u
#define RPFS_ROLE_IO	      2u
#define RPFS_MAX_SERVERS      1024
#define RPFS_SYSCONF_DIR      "/etc" /* RPFS_SYSCONFDIR replaces it (tests) */
#define RPFS_CLUSTER_ID_SIZE  16
#define RPFS_FINGERPRINT_SIZE 16

struct rpfs_server_cfg {
	char name[64]; /* section name after "server." */
	char address[256];
	char port[16];
	unsigned roles; /* RPFS_ROLE_* */
	char dir[1024];
	char log_file[1024]; /* rpfsd's log file, or "" (stderr) */
	uint32_t id;	     /* given, or the position in the file */
	int io_index;	     /* index among I/O servers, or -1 */
	int meta_index;	     /* index among metadata servers, or -1 */
};

struct rpfs_config {
	char path[1024]; /* the file it came from */
	uint64_t stripe_unit;
	uint32_t stripe_count;
	struct red_spec redundancy; /* of new files (kind stripe: none) */
	char key_file[1024];
	uint8_t cluster_id[RPFS_CLUSTER_ID_SIZE]; /* all zero: none given */
	struct rpfs_server_cfg *servers;
	uint32_t nservers;
	uint32_t *io; /* server indexes of the I/O servers, in order */
	uint32_t nio;
	uint32_t *meta; /* server indexes of the metadata servers, in order */
	uint32_t nmeta;
	struct xp_params xport;
};

/* The config used when none is named, the one search order of the
 * library, the CLI and the MPI drivers: $RPFS_CONFIG if set (even if it
 * is missing, so the error names it), else the first readable of
 * /etc/rpfs/rpfs.conf (the administrator's) and ~/.rpfs/rpfs.conf (`rpfs
 * up`'s). $RPFS_SYSCONFDIR replaces /etc, for tests. 0 with the path in
 * out, or -ENOENT with a message naming every place tried. */
int rpfs_config_search(char *out, size_t len, char *why, size_t whylen);
/* Load path (NULL: rpfs_config_search()). On error returns
 * a negative errno and writes a message naming the file, line and cause
 * into why. Transport settings: defaults, then [transport], then RPFS_*. */
int rpfs_config_load(const char *path, struct rpfs_config *cfg, char *why, size_t whylen);
/* The same with a program's options (rpfs_init_opts), applied after
 * [transport] and before RPFS_* (params.h); -EINVAL naming the key for an
 * unknown key, a server setting or a bad value. */
int rpfs_config_load_opts(const char *path, const struct xp_option *opts, int nopts,
			  struct rpfs_config *cfg, char *why, size_t whylen);
void rpfs_config_free(struct rpfs_config *cfg);
/* Index of the server named name ("0" or "server.0"), or -1. */
int rpfs_config_find(const struct rpfs_config *cfg, const char *name);
/* Load the cluster key named by key_file (a relative name is taken from
 * the config file's directory). Returns 0, or a negative errno with a
 * message naming the file and the cause (auth_key_load). */
int rpfs_config_key(const struct rpfs_config *cfg, struct auth_key *key, char *why,
		    size_t whylen);
/* What every member of a cluster must agree on, hashed: the cluster id and,
 * in config order, each server's name, address, port, roles and indexes.
 * A client whose config lists the servers in another order or at other
 * ports would send data to the wrong server; the handshake compares these. */
void rpfs_config_fingerprint(const struct rpfs_config *cfg,
			     uint8_t out[RPFS_FINGERPRINT_SIZE]);
/* A new random cluster id (for a new config). */
void rpfs_config_new_id(struct rpfs_config *cfg);
/* Hex text of an id or fingerprint (2 * len + 1 bytes). */
void rpfs_hex(const uint8_t *b, size_t len, char *out);
/* Write a config file (used by `rpfs up`). Returns 0 or -errno. */
int rpfs_config_write(const struct rpfs_config *cfg, const char *path);

#endif
