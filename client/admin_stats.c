/* A server's own view of itself (rpfs_admin.h): RPC_STATS to one server,
 * its named values decoded (bounds-checked, rpc.c) into the caller's
 * array. `rpfs df` and `rpfs stats` print them. */
#include <errno.h>
#include <string.h>

#include "client_priv.h"
#include "rpfs_admin.h"

_Static_assert(RPFS_STAT_NAME_MAX == RPC_STAT_NAME_MAX, "stat names");
_Static_assert(RPFS_STATS_MAX == RPC_STATS_MAX, "stat count");

int rpfs_admin_server_stats(rpfs_client_t *c, int server, struct rpfs_server_stat *st,
			    int max)
{
	static _Thread_local struct rpc_stat v[RPC_STATS_MAX];
	uint8_t body[16], rep[8192];
	size_t rep_len = 0;
	uint32_t n = 0;
	int len, ret;

	if (server < 0 || (uint32_t)server >= c->cfg.nservers || max < 0) {
		rpfsc_err_set("stats: no server %d (the cluster has %u)", server,
			      c->cfg.nservers);
		return -EINVAL;
	}
	len = rpc_enc_path_op(body, sizeof(body), RPC_STATS, 0, NULL);
	if (len < 0)
		return len;
	ret = rpfsc_call1(c, server, RPFSC_ANY, "stats", body, (size_t)len, rep,
			  sizeof(rep), &rep_len);
	if (ret)
		return ret;
	if (rep_len > sizeof(rep) || rpc_dec_stats(rep, rep_len, v, RPC_STATS_MAX, &n))
		return rpfsc_err_server(rpfsc_desc(c, server, RPFSC_ANY),
					"stats: malformed answer", -EPROTO, 0, false);
	if (n > (uint32_t)max)
		n = (uint32_t)max;
	for (uint32_t i = 0; i < n; i++) {
		memcpy(st[i].name, v[i].name, sizeof(st[i].name));
		st[i].value = v[i].value;
	}
	return (int)n;
}

uint64_t rpfs_admin_stat(const struct rpfs_server_stat *st, int n, const char *name,
			 uint64_t def)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(st[i].name, name))
			return st[i].value;
	return def;
}
