/* Who may do what: permission checks on the metadata server and the
 * capabilities that carry its decisions to every other server.
 *
 * Trust model (NFS AUTH_SYS inside an authenticated cluster): only holders
 * of the cluster key connect at all (common/auth.h); a client then states
 * its uid, gid and groups in its HELLO (identity.c) and the servers take
 * them as said. The metadata server checks mode and owner like a POSIX
 * file system for that identity; uid 0 and the cluster's own servers may do
 * anything. What a key holder could do by lying about its uid is what an
 * NFS client's root could: the key is the line of trust, the mode bits are
 * the line between honest users.
 *
 * I/O servers know no modes: a file's data is reached by its handle, and a
 * handle alone is worth nothing. Opening a file (CREATE, LOOKUP, GETATTR
 * asking for rights) returns a capability: rights (read, write) on that
 * handle until an expiry, with a MAC under the cluster key. Every request
 * that names a handle carries it; a server checks the MAC, the handle, the
 * expiry and the rights before it touches anything. So a guessed or stolen
 * handle, a capability for another file, or one whose rights were raised by
 * hand gets -EACCES. A capability outlives a chmod until it expires or is
 * renewed (as in NFSv4 delegations or Lustre's capabilities): renewal, by
 * GETATTR with the old capability, checks the mode again. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "auth.h"
#include "log.h"
#include "server.h"

bool access_is_super(const struct srv_client *who)
{
	return who->peer || who->uid == 0;
}

bool access_in_group(const struct srv_client *who, uint32_t gid)
{
	if (who->gid == gid)
		return true;
	for (uint32_t i = 0; i < who->ngroups; i++)
		if (who->groups[i] == gid)
			return true;
	return false;
}

bool access_may(const struct srv_client *who, const struct rpc_attr *a, unsigned want)
{
	unsigned bits;

	if (access_is_super(who)) {
		/* As for root on a local file system: everything but executing
		 * a file nobody may execute (rpfs has no execute). */
		return true;
	}
	if (who->uid == a->uid)
		bits = (a->mode >> 6) & 7;
	else if (access_in_group(who, a->gid))
		bits = (a->mode >> 3) & 7;
	else
		bits = a->mode & 7;
	return (bits & want) == want;
}

int access_dir_change(const struct srv_client *who, const struct rpc_attr *parent,
		      const struct rpc_attr *victim)
{
	if (!access_may(who, parent, ACCESS_W | ACCESS_X))
		return -EACCES;
	/* The sticky bit (/tmp): only the owner of the entry or of the
	 * directory may remove or replace it. */
	if (victim && (parent->mode & S_ISVTX) && !access_is_super(who) &&
	    who->uid != victim->uid && who->uid != parent->uid)
		return -EPERM;
	return 0;
}

/* ---- capabilities --------------------------------------------------------- */

static void cap_mac(const struct auth_key *key, uint64_t handle, const struct rpc_cap *c,
		    uint8_t mac[AUTH_MAC_SIZE])
{
	auth_cap_mac(key, handle, c->rights, c->lifetime_s, c->expiry, mac);
}

void access_grant(struct srv *s, uint64_t handle, uint32_t rights, struct rpc_cap *c)
{
	uint32_t life = s->cfg.xport.cap_lifetime_s;

	memset(c, 0, sizeof(*c));
	c->rights = rights;
	c->lifetime_s = life;
	c->expiry = srv_now_ns() + (int64_t)life * 1000000000;
	cap_mac(&s->key, handle, c, c->mac);
}

int access_check_cap(struct srv *s, uint64_t handle, const struct rpc_cap *c,
		     uint32_t need, bool allow_expired)
{
	uint8_t mac[AUTH_MAC_SIZE];

	cap_mac(&s->key, handle, c, mac);
	if (!auth_mac_equal(mac, c->mac))
		return -EACCES;
	if ((c->rights & need) != need)
		return -EACCES;
	if (!allow_expired && srv_now_ns() > c->expiry)
		return -EKEYEXPIRED;
	return 0;
}

/* The capability rights each access of the table of operations needs. */
static const uint32_t rights_needed[] = {
	[RPC_ACCESS_HANDLE] = 0,
	[RPC_ACCESS_RENEW] = 0,
	[RPC_ACCESS_READ] = RPC_CAP_READ,
	[RPC_ACCESS_WRITE] = RPC_CAP_WRITE,
};

int access_check_request(struct srv_op *op)
{
	const struct srv_client *who = ident_of(op->conn);
	const struct rpc_req *q = &op->q;
	enum rpc_access need = op->desc->access;
	int ret;

	/* Every accepted connection has said who it is (identity.c); one
	 * that has not gets nothing, rather than anyone's rights. */
	if (!who) {
		log_warn("rpfsd: a request from %s with no identity: refused",
			 xp_conn_peer(op->conn));
		return -EACCES;
	}
	if (need == RPC_ACCESS_FREE || who->peer)
		return 0;
	if (need == RPC_ACCESS_PEERS) {
		log_warn("rpfsd: op %u from %s is for servers only: refused", q->op,
			 xp_conn_peer(op->conn));
		return -EPERM;
	}
	if (q->op == RPC_IO_WRITE && (q->flags & RPC_IO_FORWARD)) {
		log_warn("rpfsd: a forwarded write from %s, a client: refused",
			 xp_conn_peer(op->conn));
		return -EPERM;
	}
	/* A renewal: rights are then checked against the mode. */
	ret = access_check_cap(op->s, q->handle, &q->cap, rights_needed[need],
			       need == RPC_ACCESS_RENEW);
	if (ret == -EACCES)
		log_info("rpfsd: op %u on handle %#llx from %s: no valid capability",
			 q->op, (unsigned long long)q->handle, xp_conn_peer(op->conn));
	/* A mirrored file's writes and truncates from a client that opened it
	 * without its redundancy would reach the primaries only. */
	if (!ret && (q->cap.rights & RPC_CAP_MIRRORED) &&
	    ((q->op == RPC_IO_WRITE && !q->ncopies) ||
	     (q->op == RPC_IO_TRUNCATE && !(q->flags & RPC_TRUNCATE_COPIES)))) {
		log_warn(
			"rpfsd: a %s of mirrored handle %#llx from %s is not for its copies "
			"(opened without its redundancy?): refused",
			q->op == RPC_IO_WRITE ? "write" : "truncate",
			(unsigned long long)q->handle, xp_conn_peer(op->conn));
		ret = -EINVAL;
	}
	return ret;
}
