/* rpfsd --check: is a datafile of this server an orphan? Only the
 * metadata server that owns its handle can say, and a handle names its
 * owner (placement.h), so the check of a stopped I/O server asks each
 * owner while it runs: one META_HANDLES request per RPC_HANDLES_MAX
 * handles, over the cluster's own connections (peer.c, with the cluster
 * key, as the server itself would talk to it). The owner answers from its
 * store and its creates in progress (meta_handles.c, serve_meta_handles):
 * a handle no entry has and no running create may still take is GONE, and its
 * datafiles belong to nothing, now or later (this server is stopped and
 * locked by the check, so no create can add a datafile meanwhile).
 *
 * An owner that can't be reached (stopped too) or can't answer (an older
 * rpfsd, a damaged handle counter) leaves its handles unknown, never
 * orphans: the caller says so, naming it, and nothing is removed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_orphans.h"
#include "server.h"

/* A line for why: owner m and what went wrong. */
static char *owner_why(struct srv *s, uint32_t m, const char *what, const char *cause)
{
	const struct rpfs_server_cfg *sc = &s->cfg.servers[s->cfg.meta[m]];
	char line[1024];

	snprintf(line, sizeof(line), "metadata server %s (%s:%s) %s: %s", sc->name,
		 sc->address, sc->port, what, cause);
	return strdup(line);
}

/* One request: the states of batch[0..k) (h[at[j]] == batch[j]). */
static int ask_batch(struct srv *s, uint32_t m, const uint64_t *batch, uint32_t k,
		     const size_t *at, uint8_t *state, char **why)
{
	static uint8_t body[RPC_PREAMBLE + 8 + 8 * RPC_HANDLES_MAX];
	uint8_t rep[4 + RPC_HANDLES_MAX], st[RPC_HANDLES_MAX];
	struct xp_call call = {0};
	int len = rpc_enc_meta_handles(body, sizeof(body), batch, k), ret;

	if (len < 0)
		return len;
	call.req = body;
	call.req_len = (size_t)len;
	call.rep = rep;
	call.rep_max = sizeof(rep);
	ret = peer_call(s, s->cfg.meta[m], &call);
	if (ret) {
		/* -EPROTO or -EOPNOTSUPP from a server: it does not know the
		 * question (an older rpfsd). */
		*why = owner_why(
			s, m, "could not be asked",
			ret == -EPROTO || ret == -EOPNOTSUPP
				? "it does not answer META_HANDLES (an older rpfsd?)"
				: strerror(-ret));
		return ret;
	}
	if (rpc_dec_handle_states(rep, call.rep_len, st, k)) {
		*why = owner_why(s, m, "gave an answer that does not decode",
				 strerror(EPROTO));
		return -EPROTO;
	}
	for (uint32_t j = 0; j < k; j++)
		state[at[j]] = st[j];
	return 0;
}

/* Every handle of owner m, in batches; the first failure ends it. */
static void ask_owner(struct srv *s, uint32_t m, const uint64_t *h, size_t n,
		      uint8_t *state, char **why)
{
	static uint64_t batch[RPC_HANDLES_MAX];
	static size_t at[RPC_HANDLES_MAX];
	uint32_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (place_meta_of_handle(h[i]) != m)
			continue;
		if ((int)s->cfg.meta[m] == s->self) {
			*why = owner_why(s, m, "is this server",
					 "its store could not be read");
			return;
		}
		at[k] = i;
		batch[k++] = h[i];
		if (k == RPC_HANDLES_MAX) {
			if (ask_batch(s, m, batch, k, at, state, why))
				return;
			k = 0;
		}
	}
	if (k)
		ask_batch(s, m, batch, k, at, state, why);
}

void orphans_ask(struct srv *s, const uint64_t *h, size_t n, uint8_t *state, char **why)
{
	char msg[512] = "";
	int ret;

	memset(state, 0, n);
	if (!n)
		return;
	ret = rpfs_config_key(&s->cfg, &s->key, msg, sizeof(msg));
	if (!ret)
		ret = peer_init(s);
	if (ret) {
		for (uint32_t m = 0; m < s->cfg.nmeta; m++)
			for (size_t i = 0; i < n && !why[m]; i++)
				if (place_meta_of_handle(h[i]) == m)
					why[m] = owner_why(s, m, "could not be asked",
							   msg[0] ? msg : strerror(-ret));
		return;
	}
	/* Unreachable owners are expected (a stopped cluster) and reported
	 * by the caller: not warnings in the log. */
	peer_waiting(s, true);
	for (uint32_t m = 0; m < s->cfg.nmeta; m++)
		ask_owner(s, m, h, n, state, &why[m]);
	peer_fini(s);
}
