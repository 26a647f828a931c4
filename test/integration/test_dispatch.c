/* rpfsd's dispatch as a raw client sees it: what the table of operations
 * (common/rpc_ops.h) says about each op is what the server does. Requests
 * are encoded by hand and sent over the transport, so a test reaches every
 * op, also those librpfs never sends to that server: an op of a role the
 * server does not have, an op for servers only, a path to a server that
 * does not own it, a handle with no capability.
 *
 * One cluster of three servers (0 and 1 metadata and I/O, 2 I/O only) for
 * every test of the run (an unchecked fixture, started before Check forks
 * the tests); each test connects on its own. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "cluster.h"
#include "config.h"
#include "hello.h"
#include "placement.h"
#include "rpc.h"
#include "xport.h"

#define NSRV  3
#define NMETA 2

static struct cluster *cl;

static void cluster_up(void)
{
	struct cl_opts o = {.nservers = NSRV, .nmeta = NMETA};

	cl = cl_start(&o);
	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
}

static void cluster_down(void)
{
	if (cl)
		cl_destroy(cl);
	cl = NULL;
}

/* A client's connection to one server, made by hand. */
struct raw {
	struct rpfs_config cfg;
	struct xp_fabric *fab;
	struct xp_conn *conn;
	uint8_t rep[4096];
	size_t rep_len;
};

static void raw_open(struct raw *r, int srv)
{
	const struct rpfs_server_cfg *sc;
	uint8_t data[XP_HELLO_MAX];
	struct xp_hello h = {data, 0, NULL, 0, 0};
	struct hello_req req;
	struct auth_key key;
	char why[512] = "";
	int n;

	memset(r, 0, sizeof(*r));
	ck_assert_msg(!rpfs_config_load(cl_config(cl), &r->cfg, why, sizeof(why)), "%s",
		      why);
	ck_assert_msg(!rpfs_config_key(&r->cfg, &key, why, sizeof(why)), "%s", why);
	ck_assert_int_eq(xp_fabric_open(&r->cfg.xport, XP_CLIENT, &key, &r->fab), 0);
	hello_req_fill(&req, &r->cfg, (uint32_t)srv, HELLO_CLIENT);
	n = hello_req_encode(data, sizeof(data), &req);
	ck_assert_int_gt(n, 0);
	h.len = (size_t)n;
	sc = &r->cfg.servers[srv];
	ck_assert_msg(!xp_connect(r->fab, sc->address, sc->port, &h, &r->conn, why,
				  sizeof(why)),
		      "connect to server %d: %s", srv, why);
}

static void raw_close(struct raw *r)
{
	xp_conn_close(r->conn);
	xp_fabric_close(r->fab);
	rpfs_config_free(&r->cfg);
}

/* Send a request body of len bytes; the reply status. */
static int raw_call(struct raw *r, const void *body, int len)
{
	struct xp_call call = {0};
	int ret;

	ck_assert_int_gt(len, 0);
	call.req = body;
	call.req_len = (size_t)len;
	call.rep = r->rep;
	call.rep_max = sizeof(r->rep);
	ret = xp_call(r->conn, &call);
	r->rep_len = call.rep_len;
	return ret ? ret : call.status;
}

/* One request to server srv; its reply status. */
static int call_on(int srv, const void *body, int len)
{
	struct raw r;
	int ret;

	raw_open(&r, srv);
	ret = raw_call(&r, body, len);
	raw_close(&r);
	return ret;
}

/* A path that metadata server meta owns, and one it does not. */
static void path_of(char *out, size_t len, uint32_t meta, bool owned)
{
	struct rpfs_config cfg = {.nmeta = NMETA};

	for (int i = 0; i < 1000; i++) {
		snprintf(out, len, "/d%d", i);
		if ((place_meta_of_path(&cfg, out) == meta) == owned)
			return;
	}
	ck_abort_msg("no path for metadata server %u", meta);
}

static uint8_t body[RPC_PATH_MAX + 256];

START_TEST(ping_is_answered_by_every_server)
{
	int n = rpc_enc_path_op(body, sizeof(body), RPC_PING, 0, NULL);

	for (int i = 0; i < NSRV; i++)
		ck_assert_int_eq(call_on(i, body, n), 0);
}
END_TEST

START_TEST(an_unknown_op_is_a_protocol_error)
{
	int n = rpc_enc_path_op(body, sizeof(body), RPC_PING, 0, NULL);

	body[0] = 47;
	ck_assert_int_eq(call_on(0, body, n), -EPROTO);
}
END_TEST

START_TEST(a_flag_the_op_does_not_take_is_a_protocol_error)
{
	int n = rpc_enc_path_op(body, sizeof(body), RPC_LOOKUP, 0x80, "/");

	ck_assert_int_eq(call_on(0, body, n), -EPROTO);
}
END_TEST

START_TEST(a_metadata_op_on_an_io_only_server_is_refused)
{
	int n = rpc_enc_path_op(body, sizeof(body), RPC_STATFS_META, 0, NULL);

	ck_assert_int_eq(call_on(NMETA, body, n), -EOPNOTSUPP);
	ck_assert_int_eq(call_on(0, body, n), 0);
}
END_TEST

START_TEST(a_path_op_is_served_by_the_paths_owner_only)
{
	char mine[32], other[32];
	int n;

	path_of(mine, sizeof(mine), 0, true);
	path_of(other, sizeof(other), 0, false);
	n = rpc_enc_path_op(body, sizeof(body), RPC_LOOKUP, 0, other);
	ck_assert_int_eq(call_on(0, body, n), -EREMOTE);
	n = rpc_enc_path_op(body, sizeof(body), RPC_LOOKUP, 0, mine);
	ck_assert_int_eq(call_on(0, body, n), -ENOENT);
}
END_TEST

START_TEST(readdir_is_served_by_every_metadata_server)
{
	int n = rpc_enc_readdir(body, sizeof(body), "/", NULL, 16);

	for (int i = 0; i < NMETA; i++)
		ck_assert_int_eq(call_on(i, body, n), 0);
}
END_TEST

START_TEST(an_op_for_servers_only_is_refused_to_a_client)
{
	uint32_t groups[1] = {0};
	uint64_t h = place_handle(0, 1);
	int n = rpc_enc_search(body, sizeof(body), "/a", 0, 0, 0, groups, 0);

	ck_assert_int_eq(call_on(0, body, n), -EPERM);
	n = rpc_enc_io_probe(body, sizeof(body), 0);
	ck_assert_int_eq(call_on(NMETA, body, n), -EPERM);
	n = rpc_enc_meta_handles(body, sizeof(body), &h, 1);
	ck_assert_int_eq(call_on(0, body, n), -EPERM);
}
END_TEST

START_TEST(a_handle_op_without_a_capability_is_refused)
{
	uint64_t h = place_handle(0, 1);
	int n = rpc_enc_handle_op(body, sizeof(body), RPC_IO_SIZE, h, NULL);

	ck_assert_int_eq(call_on(NMETA, body, n), -EACCES);
	n = rpc_enc_fetch_add(body, sizeof(body), h, NULL, 1);
	ck_assert_int_eq(call_on(0, body, n), -EACCES);
}
END_TEST

START_TEST(statistics_are_served_by_any_server)
{
	int n = rpc_enc_path_op(body, sizeof(body), RPC_STATS, 0, NULL);
	struct rpc_stat st[RPC_STATS_MAX];
	uint32_t count = 0;
	struct raw r;

	raw_open(&r, NMETA);
	ck_assert_int_eq(raw_call(&r, body, n), 0);
	ck_assert_int_eq(rpc_dec_stats(r.rep, r.rep_len, st, RPC_STATS_MAX, &count), 0);
	ck_assert_uint_gt(count, 0);
	raw_close(&r);
}
END_TEST

static Suite *dispatch_suite(void)
{
	Suite *s = suite_create("dispatch");
	TCase *tc = tcase_create("by the table");

	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, cluster_up, cluster_down);
	tcase_add_test(tc, ping_is_answered_by_every_server);
	tcase_add_test(tc, an_unknown_op_is_a_protocol_error);
	tcase_add_test(tc, a_flag_the_op_does_not_take_is_a_protocol_error);
	tcase_add_test(tc, a_metadata_op_on_an_io_only_server_is_refused);
	tcase_add_test(tc, a_path_op_is_served_by_the_paths_owner_only);
	tcase_add_test(tc, readdir_is_served_by_every_metadata_server);
	tcase_add_test(tc, an_op_for_servers_only_is_refused_to_a_client);
	tcase_add_test(tc, a_handle_op_without_a_capability_is_refused);
	tcase_add_test(tc, statistics_are_served_by_any_server);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, dispatch_suite);
}
