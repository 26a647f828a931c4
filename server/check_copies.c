/* rpfsd --check --copies: do this server's datafiles of mirrored files hold
 * the same bytes as their copies on the other I/O servers?
 *
 * A copy can differ from its slot's primary with both passing their
 * checksums and neither marked stale: a write cut short midway on a server
 * whose crash list was lost, a block taken as it is by --accept-damaged,
 * storage restored from an old backup. rpfs verify finds that from a
 * client, reading every copy; this finds it from the storage side, for the
 * datafiles of one stopped server, while the rest of the cluster runs:
 *
 * - each datafile's file is asked of its metadata server (GETATTR by
 *   handle, as a server: no capability), with the file's view of stale
 *   copies, as a client reloads it;
 * - a datafile holding copy 0 of its data slot (the primary while it is
 *   fresh) is compared with every other fresh copy of the slot; one holding
 *   another copy is compared with copy 0; a copy marked stale is left to
 *   its resync;
 * - the comparison is by 64 KiB unit: this server hashes its own bytes, the
 *   copy's server answers IO_DIGEST (the resync's question, io_forward.c),
 *   after IO_SIZE says how long the copy is: only digests cross the wire;
 * - a copy that differs is a problem naming both datafiles' servers and the
 *   first unit that differs; --repair has the metadata server mark the
 *   copy that is not copy 0 stale (MIRROR_REPAIR, as rpfs verify --repair
 *   does), and the resync rewrites it from copy 0 once both servers run.
 *
 * A metadata server or a copy's server that can't be asked is a note, not a
 * problem: what the check could not know. Asking the peers costs a read
 * of every mirrored datafile here, so it is asked for (--copies), not done
 * by every --check. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blocksum.h"
#include "check_priv.h"
#include "io_forward.h"
#include "layout.h"
#include "wire.h"

/* What a copy's comparison found. */
enum verdict { SAME, DIFFERS, UNKNOWN };

/* The stripe slot the datafile of h here holds (its checksum file says),
 * or CSUM_SLOT_ANY. */
static uint32_t slot_here(int dirfd, uint64_t h)
{
	uint8_t hdr[CSUM_HDR];
	char name[40];
	uint32_t slot = CSUM_SLOT_ANY;
	int fd;

	csum_sum_name(h, name, sizeof(name));
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return slot;
	if (pread(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) &&
	    !csum_hdr_check(hdr, sizeof(hdr), h, NULL))
		slot = get32(hdr + CSUM_HDR_SLOT);
	close(fd);
	return slot;
}

/* The file of handle h: its attributes and the slots marked stale, from
 * its metadata server. */
static int file_of(struct srv *s, uint64_t h, struct rpc_attr *a, uint32_t *stale,
		   uint32_t *nstale)
{
	uint32_t meta = place_meta_of_handle(h), down[RPC_DOWN_MAX], ndown;
	uint8_t body[RPC_PREAMBLE + 64], rep[RPC_OPEN_REP_MAX];
	uint64_t epoch;
	size_t rep_len = 0;
	bool known;
	int ret;

	if (meta >= s->cfg.nmeta)
		return -EINVAL;
	ret = io_peer_ask(s, s->cfg.meta[meta], body,
			  rpc_enc_getattr(body, sizeof(body), h, 0, NULL), rep,
			  sizeof(rep), &rep_len, false);
	if (ret)
		return ret;
	if (rpc_dec_attr(rep, rep_len, a) || a->handle != h)
		return -EPROTO;
	*nstale = 0;
	if (rep_len > RPC_ATTR_CAP_SIZE &&
	    rpc_dec_open_tail(rep + RPC_ATTR_CAP_SIZE, rep_len - RPC_ATTR_CAP_SIZE, down,
			      &ndown, &epoch, stale, nstale, &known))
		return -EPROTO;
	return 0;
}

static bool is_stale(const uint32_t *stale, uint32_t n, uint32_t slot)
{
	for (uint32_t i = 0; i < n; i++)
		if (stale[i] == slot)
			return true;
	return false;
}

/* The size of h's datafile on the server of I/O index io. */
static int remote_size(struct srv *s, uint32_t io, uint64_t h, uint64_t *size)
{
	uint8_t body[RPC_PREAMBLE + 64], rep[64];
	struct rpc_io_size is;
	size_t rep_len = 0;
	int ret = io_peer_ask(s, s->cfg.io[io], body,
			      rpc_enc_handle_op(body, sizeof(body), RPC_IO_SIZE, h, NULL),
			      rep, sizeof(rep), &rep_len, false);

	if (!ret && rpc_dec_io_size(rep, rep_len, &is))
		ret = -EPROTO;
	if (!ret)
		*size = is.size;
	return ret;
}

/* Compare the datafile here (fd, size) with the one of slot on I/O server
 * io; *at gets the first unit that differs, *why the failure. */
static enum verdict compare(struct srv *s, int fd, uint64_t size, uint64_t h, uint32_t io,
			    uint32_t slot, uint64_t *at, int *why)
{
	uint8_t body[RPC_PREAMBLE + 64], rep[RPC_DIGEST_MAX * RPC_DIGEST_SIZE];
	uint8_t mine[RPC_DIGEST_SIZE];
	uint64_t theirs = 0, span;
	char *buf = malloc(RPC_DIGEST_SPAN);
	enum verdict v = SAME;

	*why = buf ? remote_size(s, io, h, &theirs) : -ENOMEM;
	if (*why) {
		free(buf);
		return UNKNOWN;
	}
	if (theirs != size) {
		*at = size < theirs ? size : theirs;
		free(buf);
		return DIFFERS;
	}
	for (uint64_t off = 0; off < size && v == SAME; off += span) {
		size_t rep_len = 0;
		ssize_t got;
		uint32_t n;

		span = size - off < RPC_DIGEST_SPAN ? size - off : RPC_DIGEST_SPAN;
		n = (uint32_t)((span + RPC_DIGEST_UNIT - 1) / RPC_DIGEST_UNIT);
		*why = io_peer_ask(
			s, s->cfg.io[io], body,
			rpc_enc_io_digest(body, sizeof(body), h, slot, off, span), rep,
			sizeof(rep), &rep_len, false);
		if (!*why && rep_len != n * (size_t)RPC_DIGEST_SIZE)
			*why = -EPROTO;
		got = *why ? 0 : pread(fd, buf, span, (off_t)off);
		if (!*why && got < 0)
			*why = -errno;
		if (*why) {
			v = UNKNOWN;
			break;
		}
		if ((uint64_t)got < span) /* past our end: zeros, as there */
			memset(buf + got, 0, span - (uint64_t)got);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t u = (uint64_t)i * RPC_DIGEST_UNIT;
			uint64_t m =
				span - u < RPC_DIGEST_UNIT ? span - u : RPC_DIGEST_UNIT;

			rpc_digest(buf + u, m, mine);
			if (memcmp(mine, rep + (size_t)i * RPC_DIGEST_SIZE,
				   RPC_DIGEST_SIZE)) {
				*at = off + u;
				v = DIFFERS;
				break;
			}
		}
	}
	free(buf);
	return v;
}

/* Have the metadata server mark copy slot cs of data slot ds stale. */
static int mark(struct srv *s, uint64_t h, uint32_t ds, uint32_t cs)
{
	uint8_t body[RPC_PREAMBLE + 64], rep[64];
	size_t rep_len = 0;
	uint32_t meta = place_meta_of_handle(h);

	return io_peer_ask(s, s->cfg.meta[meta], body,
			   rpc_enc_mirror_repair(body, sizeof(body), h, NULL, ds, cs),
			   rep, sizeof(rep), &rep_len, false);
}

/* The datafile of h here (slot mine of a file laid out as a) against the
 * copies it is compared with. */
static void check_one(struct chk *c, int dirfd, uint64_t h, uint32_t mine,
		      const struct rpc_attr *a, const uint32_t *stale, uint32_t nstale,
		      int *unknown)
{
	struct srv *s = c->s;
	const struct rpfs_layout *l = &a->layout;
	uint32_t ncopies = layout_copies(l), ds = layout_copy_slot(l, mine, 0);
	char name[40], path[1200];
	struct stat st;
	int fd;

	if (is_stale(stale, nstale, mine))
		return; /* its resync rewrites it */
	csum_data_name(h, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", c->datadir, name);
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return; /* a missing datafile is check_data.c's problem */
	}
	for (uint32_t k = 0; k < ncopies; k++) {
		uint32_t other = layout_copy_slot(l, mine, k);
		uint32_t io = layout_server(l, other), victim;
		enum verdict v;
		uint64_t at = 0;
		int why = 0;

		/* copy 0 against every other; any other against copy 0 */
		if (other == mine || (mine != ds && other != ds) ||
		    is_stale(stale, nstale, other) || io >= s->cfg.nio)
			continue;
		v = compare(s, fd, (uint64_t)st.st_size, h, io, other, &at, &why);
		if (v == UNKNOWN) {
			(*unknown)++;
			chk_note(
				c,
				"%s: its copy in slot %u on io server %u could not be compared: %s",
				path, other, io, strerror(-why));
			continue;
		}
		if (v == SAME)
			continue;
		victim = mine == ds ? other : mine;
		chk_problem(
			c, chk_repair(c) && !mark(s, h, ds, victim),
			"%s: slot %u differs from its copy in slot %u on io server %u "
			"from offset %" PRIu64 " (both pass their checksums; --repair "
			"marks slot %u stale, to be rewritten from slot %u)",
			path, mine, other, io, at, victim, ds);
	}
	close(fd);
}

void check_copies(struct chk *c, int dirfd, const uint64_t *handles, size_t n)
{
	struct srv *s = c->s;
	char msg[512] = "";
	int ret, unknown = 0, compared = 0;

	ret = rpfs_config_key(&s->cfg, &s->key, msg, sizeof(msg));
	if (!ret)
		ret = peer_init(s);
	if (ret) {
		chk_note(c, "%s: copies not compared: %s", c->datadir,
			 msg[0] ? msg : strerror(-ret));
		return;
	}
	peer_waiting(s, true); /* stopped peers are expected: notes, not log lines */
	for (size_t i = 0; i < n; i++) {
		uint32_t mine = slot_here(dirfd, handles[i]), stale[RPC_STALE_MAX],
			 nstale;
		struct rpc_attr a;

		if (mine == CSUM_SLOT_ANY)
			continue;
		ret = file_of(s, handles[i], &a, stale, &nstale);
		if (ret == -ENOENT || ret == -ESTALE)
			continue; /* no file (an orphan: check_data.c's) */
		if (ret) {
			unknown++;
			chk_note(
				c,
				"%s: handle %#" PRIx64
				": its metadata server could not say what file it is: %s",
				c->datadir, handles[i], strerror(-ret));
			continue;
		}
		if (a.type != RPC_TYPE_FILE || layout_copies(&a.layout) < 2 ||
		    mine >= layout_slots(&a.layout))
			continue;
		compared++;
		check_one(c, dirfd, handles[i], mine, &a, stale, nstale, &unknown);
	}
	peer_fini(s);
	printf("%s: %d mirrored datafile%s compared with their copies%s\n", c->datadir,
	       compared, compared == 1 ? "" : "s",
	       unknown ? " (some could not be: notes above)" : "");
}
