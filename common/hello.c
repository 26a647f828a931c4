/* The file service's handshake data: see hello.h. */
#include "hello.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"

#define HELLO_MAGIC   0x48465052u /* "RPFH" */
#define HELLO_VERSION 1

/* request: 0 magic | 4 version u16 | 6 role u8 | 7 zero | 8 cluster_id (16) |
 * 24 fingerprint (16) | 40 server | 44 uid | 48 gid | 52 ngroups |
 * 56 groups (4 each) */
#define REQ_FIXED 56

int hello_req_encode(void *buf, size_t len, const struct hello_req *m)
{
	uint8_t *p = buf;
	size_t need;

	if (m->ngroups > HELLO_MAX_GROUPS)
		return -E2BIG;
	need = REQ_FIXED + 4 * (size_t)m->ngroups;
	if (len < need)
		return -E2BIG;
	memset(p, 0, REQ_FIXED);
	put32(p, HELLO_MAGIC);
	put16(p + 4, HELLO_VERSION);
	put8(p + 6, m->role);
	memcpy(p + 8, m->cluster_id, RPFS_CLUSTER_ID_SIZE);
	memcpy(p + 24, m->fingerprint, RPFS_FINGERPRINT_SIZE);
	put32(p + 40, m->server);
	put32(p + 44, m->uid);
	put32(p + 48, m->gid);
	put32(p + 52, m->ngroups);
	for (uint32_t i = 0; i < m->ngroups; i++)
		put32(p + REQ_FIXED + 4 * i, m->groups[i]);
	return (int)need;
}

int hello_req_decode(const void *buf, size_t len, struct hello_req *m)
{
	const uint8_t *p = buf;

	if (!buf || len < REQ_FIXED || get32(p) != HELLO_MAGIC ||
	    get16(p + 4) != HELLO_VERSION)
		return -EPROTO;
	m->role = p[6];
	memcpy(m->cluster_id, p + 8, RPFS_CLUSTER_ID_SIZE);
	memcpy(m->fingerprint, p + 24, RPFS_FINGERPRINT_SIZE);
	m->server = get32(p + 40);
	m->uid = get32(p + 44);
	m->gid = get32(p + 48);
	m->ngroups = get32(p + 52);
	if ((m->role != HELLO_CLIENT && m->role != HELLO_PEER) ||
	    m->ngroups > HELLO_MAX_GROUPS || len < REQ_FIXED + 4 * (size_t)m->ngroups)
		return -EPROTO;
	for (uint32_t i = 0; i < m->ngroups; i++)
		m->groups[i] = get32(p + REQ_FIXED + 4 * i);
	return 0;
}

/* reply: 0 magic | 4 version u16 | 6 mismatch u8 | 7 zero | 8 cluster_id (16) |
 * 24 fingerprint (16) | 40 server | 44 io_index | 48 meta_index |
 * 52 name (64) | 116 addr (272) */
#define REP_SIZE (116 + HELLO_ADDR_MAX)

/* A text field of a fixed size: NUL-terminated within it. */
static int copy_text(char *dst, const uint8_t *src, size_t size)
{
	if (!memchr(src, 0, size))
		return -EPROTO;
	memcpy(dst, src, size);
	return 0;
}

int hello_rep_encode(void *buf, size_t len, const struct hello_rep *m)
{
	uint8_t *p = buf;

	if (len < REP_SIZE)
		return -E2BIG;
	memset(p, 0, REP_SIZE);
	put32(p, HELLO_MAGIC);
	put16(p + 4, HELLO_VERSION);
	put8(p + 6, m->mismatch);
	memcpy(p + 8, m->cluster_id, RPFS_CLUSTER_ID_SIZE);
	memcpy(p + 24, m->fingerprint, RPFS_FINGERPRINT_SIZE);
	put32(p + 40, m->server);
	put32(p + 44, (uint32_t)m->io_index);
	put32(p + 48, (uint32_t)m->meta_index);
	snprintf((char *)p + 52, HELLO_NAME_MAX, "%s", m->name);
	snprintf((char *)p + 116, HELLO_ADDR_MAX, "%s", m->addr);
	return REP_SIZE;
}

int hello_rep_decode(const void *buf, size_t len, struct hello_rep *m)
{
	const uint8_t *p = buf;

	if (!buf || len < REP_SIZE || get32(p) != HELLO_MAGIC ||
	    get16(p + 4) != HELLO_VERSION || p[6] > HELLO_OTHER_SERVERS)
		return -EPROTO;
	m->mismatch = p[6];
	memcpy(m->cluster_id, p + 8, RPFS_CLUSTER_ID_SIZE);
	memcpy(m->fingerprint, p + 24, RPFS_FINGERPRINT_SIZE);
	m->server = get32(p + 40);
	m->io_index = (int32_t)get32(p + 44);
	m->meta_index = (int32_t)get32(p + 48);
	if (copy_text(m->name, p + 52, HELLO_NAME_MAX) ||
	    copy_text(m->addr, p + 116, HELLO_ADDR_MAX))
		return -EPROTO;
	return 0;
}

void hello_req_fill(struct hello_req *m, const struct rpfs_config *cfg, uint32_t srv,
		    enum hello_role role)
{
	gid_t *groups;
	int n;

	memset(m, 0, sizeof(*m));
	memcpy(m->cluster_id, cfg->cluster_id, RPFS_CLUSTER_ID_SIZE);
	rpfs_config_fingerprint(cfg, m->fingerprint);
	m->server = srv;
	m->role = (uint8_t)role;
	m->uid = (uint32_t)geteuid(); /* the identity the kernel checks files with */
	m->gid = (uint32_t)getegid();
	/* More groups than fit: the first HELLO_MAX_GROUPS of them. */
	n = getgroups(0, NULL);
	groups = n > 0 ? calloc((size_t)n, sizeof(*groups)) : NULL;
	if (groups)
		n = getgroups(n, groups);
	for (int i = 0; groups && i < n && m->ngroups < HELLO_MAX_GROUPS; i++)
		m->groups[m->ngroups++] = (uint32_t)groups[i];
	free(groups);
}

enum hello_mismatch hello_check(const struct rpfs_config *cfg, uint32_t self,
				const struct hello_req *req, struct hello_rep *rep)
{
	const struct rpfs_server_cfg *me = &cfg->servers[self];

	memset(rep, 0, sizeof(*rep));
	memcpy(rep->cluster_id, cfg->cluster_id, RPFS_CLUSTER_ID_SIZE);
	rpfs_config_fingerprint(cfg, rep->fingerprint);
	rep->server = self;
	rep->io_index = me->io_index;
	rep->meta_index = me->meta_index;
	snprintf(rep->name, sizeof(rep->name), "%s", me->name);
	snprintf(rep->addr, sizeof(rep->addr), "%s:%s", me->address, me->port);
	if (memcmp(req->cluster_id, cfg->cluster_id, RPFS_CLUSTER_ID_SIZE))
		rep->mismatch = HELLO_OTHER_CLUSTER;
	else if (req->server != self)
		rep->mismatch = HELLO_OTHER_SERVER;
	else if (memcmp(req->fingerprint, rep->fingerprint, RPFS_FINGERPRINT_SIZE))
		rep->mismatch = HELLO_OTHER_SERVERS;
	return (enum hello_mismatch)rep->mismatch;
}

static void role_text(char *buf, size_t len, int io_index, int meta_index)
{
	if (io_index >= 0 && meta_index >= 0)
		snprintf(buf, len, "meta server %d and io server %d", meta_index,
			 io_index);
	else if (io_index >= 0)
		snprintf(buf, len, "io server %d", io_index);
	else if (meta_index >= 0)
		snprintf(buf, len, "meta server %d", meta_index);
	else
		snprintf(buf, len, "a server without roles");
}

void hello_explain(const struct hello_rep *rep, const struct rpfs_config *cfg,
		   uint32_t srv, const char *desc, char *why, size_t whylen)
{
	char theirs[2 * RPFS_CLUSTER_ID_SIZE + 1], ours[2 * RPFS_CLUSTER_ID_SIZE + 1];
	char role[64];

	switch (rep->mismatch) {
	case HELLO_OTHER_CLUSTER:
		rpfs_hex(rep->cluster_id, RPFS_CLUSTER_ID_SIZE, theirs);
		rpfs_hex(cfg->cluster_id, RPFS_CLUSTER_ID_SIZE, ours);
		snprintf(
			why, whylen,
			"%s: the server there belongs to cluster %s, %s is for cluster %s",
			desc, theirs, cfg->path, ours);
		break;
	case HELLO_OTHER_SERVER:
		role_text(role, sizeof(role), rep->io_index, rep->meta_index);
		if (srv < cfg->nservers && !strcmp(rep->name, cfg->servers[srv].name))
			snprintf(
				why, whylen,
				"%s: server.%s is server #%u (%s) in the servers' config but #%u in %s: it lists the servers in another order",
				desc, rep->name, rep->server + 1, role, srv + 1,
				cfg->path);
		else
			snprintf(
				why, whylen,
				"%s: the server there is server.%s (%s, at %s in the servers' config), not server.%s as %s says: other ports or addresses",
				desc, rep->name, role, rep->addr,
				srv < cfg->nservers ? cfg->servers[srv].name : "?",
				cfg->path);
		break;
	case HELLO_OTHER_SERVERS:
		snprintf(
			why, whylen,
			"%s: %s and the servers' config list the servers differently (order, addresses, ports or roles)",
			desc, cfg->path);
		break;
	default:
		snprintf(why, whylen, "%s: the server refused the connection", desc);
		break;
	}
}
