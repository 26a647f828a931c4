/* Role meta's bookkeeping of a file's datafiles on the I/O servers of its
 * layout: made (IO_CREATE, exclusively, on all of them at once) before its
 * entry is stored, so an entry never names a missing one, and removed
 * (IO_REMOVE) after its entry is gone, so a failure leaves an orphan
 * datafile (logged, found by rpfsd --check), never an entry without data.
 * A handle that an I/O server already holds is reported so the create
 * skips past it (meta_create.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "layout.h"
#include "io_states.h"
#include "log.h"
#include "meta_priv.h"

/* This server's own datafile, while the others' calls are in flight. */
struct local_job {
	struct srv *s;
	uint64_t handle, nonce;
	uint32_t slot;
	int *st;
};

static void local_datafile(void *arg)
{
	struct local_job *j = arg;

	*j->st = j->nonce ? io_create_handle(j->s, j->handle, j->nonce, j->slot, false)
			  : io_remove_handle(j->s, j->handle);
}

/* IO_CREATE (nonce != 0) or IO_REMOVE (nonce 0) of a's handle on each I/O
 * server of its layout (only the slots where skip is NULL or skip[slot] is
 * 0), all at once, the local one served in place meanwhile. Results in
 * st[slot], transport failures flagged in down[slot]; returns the first
 * failure. */
static int per_datafile(struct srv *s, const struct rpc_attr *a, uint64_t nonce,
			const int *skip, int *st, bool *down)
{
	uint32_t n = layout_slots(&a->layout), nr = 0;
	uint32_t *servers = calloc(n, sizeof(*servers));
	uint32_t *slot_of = calloc(n, sizeof(*slot_of));
	struct xp_call *calls = calloc(n, sizeof(*calls));
	bool *tr = calloc(n, sizeof(*tr));
	/* A create tells each datafile its stripe slot: a body per slot. */
	uint8_t(*body)[64] = calloc(nonce ? n : 1, sizeof(*body));
	struct local_job job;
	int len = -ENOMEM, first = 0, local = -1;

	for (uint32_t slot = 0; body && slot < (nonce ? n : 1) && len != -E2BIG; slot++)
		len = nonce ? rpc_enc_io_create(body[slot], sizeof(*body), a->handle,
						nonce, slot, 0)
			    : rpc_enc_handle_op(body[0], sizeof(*body), RPC_IO_REMOVE,
						a->handle, NULL);
	if (!servers || !slot_of || !calls || !tr || len < 0) {
		first = len < 0 ? len : -ENOMEM;
		goto out;
	}
	for (uint32_t slot = 0; slot < n; slot++) {
		uint32_t io = layout_server(&a->layout, slot);

		st[slot] = 0;
		down[slot] = false;
		if (skip && skip[slot])
			continue;
		if (io >= s->cfg.nio) {
			log_warn("rpfsd: file %016" PRIx64
				 " names I/O server %u, the cluster has %u",
				 a->handle, io, s->cfg.nio);
			st[slot] = -EINVAL;
		} else if ((int)s->cfg.io[io] == s->self && s->io) {
			local = (int)slot;
		} else {
			servers[nr] = s->cfg.io[io];
			slot_of[nr] = slot;
			calls[nr].req = body[nonce ? slot : 0];
			calls[nr].req_len = (size_t)len;
			nr++;
		}
	}
	job = (struct local_job){s, a->handle, nonce, (uint32_t)local,
				 local >= 0 ? &st[local] : NULL};
	if (nr)
		peer_call_all(s, servers, calls, tr, (int)nr,
			      local >= 0 ? local_datafile : NULL, &job);
	else if (local >= 0)
		local_datafile(&job);
	for (uint32_t i = 0; i < nr; i++) {
		st[slot_of[i]] = calls[i].status;
		down[slot_of[i]] = tr[i];
	}
	for (uint32_t slot = 0; slot < n && !first; slot++)
		first = st[slot];
out:
	free(servers);
	free(slot_of);
	free(calls);
	free(tr);
	free(body);
	return first;
}

static const char *io_name(struct srv *s, const struct rpc_attr *a, uint32_t slot)
{
	uint32_t io = layout_server(&a->layout, slot);

	return io < s->cfg.nio ? s->cfg.servers[s->cfg.io[io]].name : "?";
}

/* Remove the datafiles of a file (those of the slots where skip[slot] is
 * 0, if skip is given), all at once. An I/O server that is down keeps an
 * orphan datafile: logged, not fatal (the entry is gone). */
void meta_remove_datafiles(struct srv *s, const struct rpc_attr *a, const int *skip)
{
	uint32_t n = layout_slots(&a->layout);
	int *st = calloc(n, sizeof(*st));
	bool *down = calloc(n, sizeof(*down));

	if (st && down && per_datafile(s, a, 0, skip, st, down)) {
		for (uint32_t slot = 0; slot < n; slot++)
			if (st[slot])
				log_warn("rpfsd: couldn't remove datafile %016" PRIx64
					 " on I/O server %s: %s (left behind)",
					 a->handle, io_name(s, a, slot),
					 down[slot] ? "unreachable"
						    : strerror(-st[slot]));
	}
	free(st);
	free(down);
}

static uint64_t new_nonce(void)
{
	uint64_t v = 0;

	while (!v && getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		;
	return v ? v : 1;
}

/* The largest handle of ours that I/O server io has a datafile of (0 if
 * it can't say). */
static uint64_t probe_one(struct srv *s, uint32_t io)
{
	struct rpc_probe p = {0, 0};
	uint8_t body[32], rep[RPC_PROBE_SIZE];
	struct xp_call call = {0};
	int len;

	if ((int)s->cfg.io[io] == s->self && s->io)
		return io_probe(s, s->meta->index, &p) ? 0 : p.max_handle;
	len = rpc_enc_io_probe(body, sizeof(body), s->meta->index);
	if (len < 0)
		return 0;
	call.req = body;
	call.req_len = (size_t)len;
	call.rep = rep;
	call.rep_max = sizeof(rep);
	if (peer_call(s, s->cfg.io[io], &call) || rpc_dec_probe(rep, call.rep_len, &p))
		return 0;
	return p.max_handle;
}

/* Make the datafiles of a new file on every I/O server of its layout. On
 * failure nothing this create made is left; *skip is set when an I/O
 * server already holds a datafile of the handle (a handle used before),
 * and *past to the largest handle it holds: try one beyond. Any other
 * failure is the first I/O server's that failed, its I/O index in *bad_io
 * (else -1). */
int meta_create_datafiles(struct srv *s, const struct rpc_attr *a, bool *skip,
			  uint64_t *past, int *bad_io)
{
	uint32_t n = layout_slots(&a->layout);
	int *st = calloc(n, sizeof(*st));
	bool *down = calloc(n, sizeof(*down));
	int ret;

	*skip = false;
	*past = a->handle;
	*bad_io = -1;
	if (!st || !down) {
		ret = -ENOMEM;
		goto out;
	}
	ret = per_datafile(s, a, new_nonce(), NULL, st, down);
	if (!ret)
		goto out;
	for (uint32_t slot = 0; slot < n; slot++) {
		if (st[slot] == -EEXIST) {
			uint64_t max = probe_one(s, layout_server(&a->layout, slot));

			*skip = true;
			*past = max > *past ? max : *past;
			log_warn(
				"rpfsd: handle %016" PRIx64
				" already has a datafile on I/O server %s (from a lost or older metadata store?): skipped",
				a->handle, io_name(s, a, slot));
		} else if (st[slot]) {
			if (down[slot])
				io_states_lost(s, layout_server(&a->layout, slot),
					       st[slot]);
			log_warn(
				"rpfsd: I/O server %s couldn't create datafile %016" PRIx64
				": %s",
				io_name(s, a, slot), a->handle,
				down[slot] ? "unreachable" : strerror(-st[slot]));
			/* The client hears which I/O server failed, and
			 * "unreachable", not a connection error that would
			 * seem to be ours. */
			if (*bad_io < 0) {
				*bad_io = (int)layout_server(&a->layout, slot);
				ret = down[slot] ? -EHOSTDOWN : st[slot];
			}
		}
	}
	meta_remove_datafiles(s, a, st);
out:
	free(st);
	free(down);
	return ret;
}
