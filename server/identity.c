/* Who is on the other end: the cluster identity of this server's storage,
 * and the identity and credentials of each connected client.
 *
 * Storage: a server's directory records the cluster and the server it
 * belongs to, by name and by its I/O and metadata indexes (what layouts
 * and the path hash name; DIR/rpfs-identity, written at the first start).
 * A server started on another server's directory, on one of another
 * cluster, or from a config that gives it other indexes (servers
 * renumbered, or inserted before it) refuses to start, so data never
 * moves silently between servers. A record of the older form (name only)
 * is taken for its name and completed.
 *
 * Clients: the transport calls ident_hello for every authenticated HELLO
 * (common/hello.h). A client whose cluster id, server list (fingerprint)
 * or target server differs from this server's config is refused with an
 * answer naming the difference; an accepted one is remembered with its
 * credentials (uid, gid, groups) for the permission checks of role meta, for
 * as long as its connection lives. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hello.h"
#include "log.h"
#include "server.h"

#define IDENT_FILE "rpfs-identity"

int ident_hello(struct xp_conn *c, const void *data, size_t len, void *rep,
		size_t rep_max, size_t *rep_len, void *arg)
{
	struct srv *s = arg;
	struct srv_client *who;
	struct hello_req req;
	struct hello_rep ans;
	int n;

	if (hello_req_decode(data, len, &req)) {
		log_warn("rpfsd: a client from %s sent no valid hello", xp_conn_peer(c));
		return -EPROTO;
	}
	if (hello_check(&s->cfg, (uint32_t)s->self, &req, &ans) != HELLO_OK) {
		log_warn(
			"rpfsd: refused a client from %s: its config disagrees with ours (%s)",
			xp_conn_peer(c),
			ans.mismatch == HELLO_OTHER_CLUSTER  ? "another cluster"
			: ans.mismatch == HELLO_OTHER_SERVER ? "it means another server"
							     : "another server list");
		n = hello_rep_encode(rep, rep_max, &ans);
		*rep_len = n > 0 ? (size_t)n : 0;
		return -ESTALE;
	}
	who = calloc(1, sizeof(*who));
	if (!who)
		return -ENOMEM;
	who->peer = req.role == HELLO_PEER;
	who->uid = req.uid;
	who->gid = req.gid;
	who->ngroups = req.ngroups;
	memcpy(who->groups, req.groups, req.ngroups * sizeof(req.groups[0]));
	xp_conn_set_ctx(c, who, free);
	n = hello_rep_encode(rep, rep_max, &ans);
	*rep_len = n > 0 ? (size_t)n : 0;
	return 0;
}

const struct srv_client *ident_of(const struct xp_conn *c)
{
	return xp_conn_ctx(c);
}

/* The identity line this server writes and expects. */
static void ident_text(const struct srv *s, char *buf, size_t len)
{
	char hex[2 * RPFS_CLUSTER_ID_SIZE + 1];

	rpfs_hex(s->cfg.cluster_id, RPFS_CLUSTER_ID_SIZE, hex);
	snprintf(buf, len, "cluster %s server %s io %d meta %d\n", hex, s->me->name,
		 s->me->io_index, s->me->meta_index);
}

/* Write the identity line to path (new, or replacing an older form). */
static int ident_write(const char *path, const char *want, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);

	if (fd < 0 || write(fd, want, strlen(want)) != (ssize_t)strlen(want) ||
	    fsync(fd)) {
		fprintf(stderr, "rpfsd: couldn't record the storage identity in %s: %s\n",
			path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

/* The older form: "cluster X server NAME\n", want without its indexes. */
static bool ident_legacy(const char *have, const char *want)
{
	const char *io = strstr(want, " io ");
	size_t n = io ? (size_t)(io - want) : 0;

	return n && strlen(have) == n + 1 && !strncmp(have, want, n) && have[n] == '\n';
}

int ident_check_storage(struct srv *s)
{
	char want[256], have[256] = "", path[1200];
	ssize_t n;
	int fd;

	ident_text(s, want, sizeof(want));
	snprintf(path, sizeof(path), "%s/%s", s->me->dir, IDENT_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) /* first start here: ours from now on */
		return ident_write(path, want, O_EXCL);
	if (fd < 0) {
		fprintf(stderr, "rpfsd: couldn't read %s: %s\n", path, strerror(errno));
		return -EIO;
	}
	n = read(fd, have, sizeof(have) - 1);
	close(fd);
	have[n > 0 ? n : 0] = 0;
	if (ident_legacy(have, want))
		return ident_write(path, want, O_TRUNC);
	if (strcmp(have, want)) {
		fprintf(stderr,
			"rpfsd: storage directory %s belongs to another server or cluster:\n"
			"  it holds   %s  this is    %s  (a config that names or numbers the servers differently, or another server's directory: refusing to serve it)\n",
			s->me->dir, have[0] ? have : "(nothing)\n", want);
		return -ESTALE;
	}
	return 0;
}
