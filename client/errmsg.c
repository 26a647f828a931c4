/* Error messages: the calling thread's last failure, as rpfs_errmsg() shows.
 *
 * Return values carry the errno; the message carries what an operator needs
 * to act on it: which server ("meta server 0 (127.0.0.1:7100)"), about what
 * (a path), and the cause; for damaged data also where in the file. Thread-local, like
 * errno, because a client is shared by threads and each wants the story of its own
 * failure. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client_priv.h"

static _Thread_local char errbuf[1024];

const char *rpfs_errmsg(void)
{
	return errbuf;
}

void rpfsc_err_set(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
}

const char *rpfsc_strerror(int err, int timeout_ms, bool transport, char *buf, size_t len)
{
	int e = err < 0 ? -err : err;

	if (transport) {
		/* The transport fails a call for a reason on the wire, and the
		 * connection goes with it; say so rather than quote errno. */
		switch (e) {
		case ETIMEDOUT:
			snprintf(buf, len, "no progress within %d ms", timeout_ms);
			return buf;
		case ECONNRESET:
		case ECONNABORTED:
		case EPIPE:
			snprintf(buf, len, "connection lost (%s)", strerror(e));
			return buf;
		case ECONNREFUSED:
			snprintf(buf, len, "connection refused");
			return buf;
		case EPROTO:
			snprintf(buf, len, "protocol error, connection closed");
			return buf;
		default:
			break;
		}
	} else {
		/* Statuses a server gives about its storage (rpc.h). */
		switch (e) {
		case EPROTO:
			snprintf(buf, len, "malformed request or reply");
			return buf;
		case EBADMSG:
			snprintf(
				buf, len,
				"damaged data (checksum mismatch; rpfsd --check on that server lists what is damaged)");
			return buf;
		case ESTALE:
			snprintf(
				buf, len,
				"datafile missing (the file was removed, or the server lost its storage)");
			return buf;
		case EHOSTDOWN:
			snprintf(
				buf, len,
				"another server it needed is unreachable (its log names it)");
			return buf;
		default:
			break;
		}
	}
	snprintf(buf, len, "%s", strerror(e));
	return buf;
}

int rpfsc_err_server(const char *desc, const char *what, int err, int timeout_ms,
		     bool transport)
{
	char cause[128];

	rpfsc_strerror(err, timeout_ms, transport, cause, sizeof(cause));
	if (what && *what)
		rpfsc_err_set("%s: %s: %s", desc, what, cause);
	else
		rpfsc_err_set("%s: %s", desc, cause);
	return err;
}

int rpfsc_err_damaged(const char *desc, const char *what, uint64_t off, int err)
{
	rpfsc_err_set(
		"%s: %s: damaged data at offset %llu (checksum mismatch; rpfsd --check on that server lists what is damaged)",
		desc, what ? what : "?", (unsigned long long)off);
	return err;
}

int rpfsc_err_create_io(struct rpfs_client *c, int meta_srv, const char *path,
			uint32_t io, int err)
{
	const struct rpfs_server_cfg *s = &c->cfg.servers[c->cfg.io[io]];
	const char *meta = rpfsc_desc(c, meta_srv, RPFSC_META);
	char cause[128];

	/* The I/O server by its index (as layouts name it), its config name
	 * and address: the one to look at, not the metadata server that
	 * reported it. */
	if (err == -EHOSTDOWN) {
		rpfsc_err_set(
			"%s: %s: io server %u (server.%s, %s:%s) is unreachable from the metadata server",
			meta, path, io, s->name, s->address, s->port);
		return err;
	}
	rpfsc_strerror(err, 0, false, cause, sizeof(cause));
	rpfsc_err_set(
		"%s: %s: io server %u (server.%s, %s:%s) couldn't create the file's datafile: %s",
		meta, path, io, s->name, s->address, s->port, cause);
	return err;
}
