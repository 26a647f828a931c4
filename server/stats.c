/* rpfsd's answer to RPC_STATS: its storage (size, used, available, free,
 * the id of its file system, and the entries of its roles' stores) and its counters, as
 * named values (rpc.h), so `rpfs df` and `rpfs stats` show each server's own view.
 *
 * The counters are bumped where things happen without any lock: requests
 * by op and error replies (dispatch.c, op.c), bulk transfers queued
 * behind their connection's cap (sched.c), the descriptor cache (io.c) as
 * relaxed atomics; data bytes by path, credit, slot and pool waits, the
 * registration cache and connections by the transport under the lock it
 * already holds there (xp_stats). This runs on a worker: statvfs and an
 * LMDB read must not stall the progress thread. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "hash.h"
#include "ec_hold.h"
#include "ec_resync.h"
#include "io_forward.h"
#include "io_states.h"
#include "io_scrub.h"
#include "log.h"
#include "server.h"

/* I/O servers whose states a metadata server lists (two values each). */
#define STATS_IO_STATES_MAX 32

struct stat_list {
	struct rpc_stat v[RPC_STATS_MAX];
	uint32_t n;
};

static void put(struct stat_list *l, const char *name, uint64_t value)
{
	if (l->n == RPC_STATS_MAX)
		return;
	snprintf(l->v[l->n].name, sizeof(l->v[l->n].name), "%s", name);
	l->v[l->n++].value = value;
}

/* This host's boot id: with a device number it names a file system among
 * every host's (device numbers repeat across hosts, a boot id never does;
 * network namespaces share the kernel, its boot id and its disks). */
static void boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	buf[0] = 0;
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = 0;
		fclose(f);
	}
	if (!buf[0] && gethostname(buf, len))
		buf[0] = 0;
}

int srv_storage(const char *dir, struct rpc_statfs *sf)
{
	char id[300];
	struct statvfs sv;
	struct stat st;
	uint64_t dev;

	if (statvfs(dir, &sv) || stat(dir, &st))
		return -errno;
	memset(sf, 0, sizeof(*sf));
	sf->total = (uint64_t)sv.f_blocks * sv.f_frsize;
	sf->avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	sf->free = (uint64_t)sv.f_bfree * sv.f_frsize;
	boot_id(id, sizeof(id) - sizeof(dev));
	dev = (uint64_t)st.st_dev;
	memcpy(id + strlen(id) + 1, &dev, sizeof(dev));
	sf->fsid = rpfs_fnv1a64(id, strlen(id) + 1 + sizeof(dev));
	if (!sf->fsid) /* 0 means unknown */
		sf->fsid = 1;
	return 0;
}

static int storage(struct srv *s, struct stat_list *l)
{
	struct rpc_statfs sf;
	uint64_t n;
	int ret;

	ret = srv_storage(s->me->dir, &sf);
	if (ret)
		return ret;
	put(l, "storage.size", sf.total);
	put(l, "storage.used", sf.total - sf.free);
	put(l, "storage.avail", sf.avail);
	put(l, "storage.free", sf.free);
	put(l, "storage.fsid", sf.fsid);
	if (s->meta) {
		ret = meta_files(s, &n);
		if (ret)
			return ret;
		put(l, "meta.files", n);
	}
	if (s->resync) {
		uint64_t stale, asked, done, failed;

		meta_resync_counts(s, &stale, &asked, &done, &failed);
		put(l, "mirror.stale_copies", stale);
		put(l, "mirror.resyncs_asked", asked);
		put(l, "mirror.resyncs_done", done);
		put(l, "mirror.resyncs_failed", failed);
		meta_rebuild_counts(s, &asked, &done);
		put(l, "mirror.rebuilding", asked);
		put(l, "mirror.rebuild_marked", done);
	}
	return 0;
}

/* A metadata server's view of each I/O server (io_states.h): state by
 * number, seconds in it. */
static void io_server_states(struct srv *s, struct stat_list *l)
{
	char name[RPC_STAT_NAME_MAX + 1];

	for (uint32_t i = 0; s->meta && i < s->cfg.nio && i < STATS_IO_STATES_MAX; i++) {
		uint32_t stale;
		bool rebuilding;
		int64_t since;
		int st = io_states_get(s, i, &since);

		snprintf(name, sizeof(name), "ioserver.%u.state", i);
		put(l, name, (uint64_t)st);
		snprintf(name, sizeof(name), "ioserver.%u.since_s", i);
		put(l, name, (uint64_t)since);
		/* only when there are: a cluster of many I/O servers keeps
		 * within RPC_STATS_MAX */
		meta_resync_of_io(s, i, &stale, &rebuilding);
		snprintf(name, sizeof(name), "ioserver.%u.stale", i);
		if (stale)
			put(l, name, stale);
		snprintf(name, sizeof(name), "ioserver.%u.rebuilding", i);
		if (rebuilding)
			put(l, name, 1);
	}
}

static void counters(struct srv *s, struct stat_list *l)
{
	char name[RPC_STAT_NAME_MAX + 1];
	struct xp_stats xs;

	for (uint16_t op = 0; op < SRV_STAT_OPS; op++) {
		const char *on = rpc_op_name(op);

		if (!on)
			continue;
		snprintf(name, sizeof(name), "req.%s", on);
		put(l, name,
		    atomic_load_explicit(&s->stats.req[op], memory_order_relaxed));
	}
	xp_fabric_stats(s->fab, &xs);
	put(l, "bytes.inline", xs.bytes[XP_PATH_INLINE]);
	put(l, "bytes.fast", xs.bytes[XP_PATH_FAST]);
	put(l, "bytes.bulk", xs.bytes[XP_PATH_BULK]);
	put(l, "waits.credit", xs.credit_waits);
	put(l, "waits.slot", xs.slot_waits);
	put(l, "waits.bulk_cap",
	    atomic_load_explicit(&s->stats.bulk_waits, memory_order_relaxed));
	put(l, "waits.pool", xs.pool_waits);
	if (s->io) {
		uint64_t files, hits, misses;
		struct io_forward_counts fc;

		io_counts(s, &files, &hits, &misses);
		put(l, "io.datafiles", files);
		put(l, "cache.fd_hits", hits);
		put(l, "cache.fd_misses", misses);
		io_forward_counts(s, &fc);
		put(l, "mirror.forwarded", fc.forwarded);
		put(l, "mirror.failed", fc.failed);
		put(l, "mirror.marked_stale", fc.marked);
		put(l, "mirror.resynced", fc.resynced);
		put(l, "mirror.resync_failed", fc.resync_failed);
		put(l, "mirror.resync_bytes", fc.resync_bytes);
		put(l, "mirror.resync_same_bytes", fc.resync_same);
		put(l, "mirror.resyncing", fc.resyncing);
		{
			struct ec_resync_counts ec;
			uint64_t taken, parked, lapsed;

			ec_resync_counts(s, &ec);
			put(l, "ec.parity_resynced", ec.resynced);
			put(l, "ec.parity_resync_failed", ec.failed);
			put(l, "ec.parity_resync_bytes", ec.bytes);
			ec_hold_counts(s, &taken, &parked, &lapsed);
			put(l, "ec.holds", taken);
			put(l, "ec.writes_held", parked);
			put(l, "ec.holds_lapsed", lapsed);
		}
		if (s->scrub) {
			uint64_t bytes, damaged, passes;

			io_scrub_counts(s, &bytes, &damaged, &passes);
			put(l, "scrub.bytes", bytes);
			put(l, "scrub.damaged", damaged);
			put(l, "scrub.passes", passes);
		}
	}
	put(l, "cache.rcache_hits", xs.rcache_hits);
	put(l, "cache.rcache_misses", xs.rcache_misses);
	put(l, "errors.replies",
	    atomic_load_explicit(&s->stats.errors, memory_order_relaxed));
	put(l, "errors.protocol", xs.proto_errors);
	put(l, "errors.timeouts", xs.timeouts);
	put(l, "conns.now", xs.conns_live);
	put(l, "conns.total", xs.conns_total);
	put(l, "conns.refused", xs.conn_refused);
	put(l, "peers.conn_bytes", peer_conn_bytes(s));
}

int serve_stats(struct srv_op *op)
{
	struct stat_list l = {.n = 0};
	int ret;

	put(&l, "server.index", (uint64_t)op->s->self);
	put(&l, "role.meta", op->s->meta != NULL);
	put(&l, "role.io", op->s->io != NULL);
	ret = storage(op->s, &l);
	if (ret)
		log_warn("rpfsd: stats: can't read storage %s: %s", op->s->me->dir,
			 strerror(-ret));
	io_server_states(op->s, &l);
	counters(op->s, &l);
	if (!ret) {
		ret = rpc_enc_stats(op->rep, sizeof(op->rep), l.v, l.n);
		if (ret >= 0) {
			op->rep_len = (size_t)ret;
			ret = 0;
		}
	}
	return ret;
}
