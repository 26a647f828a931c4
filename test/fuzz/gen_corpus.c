/* Seed corpora for the fuzz targets, made by rpfs's own encoders: one
 * small valid example of each message shape a target decodes, so the
 * fuzzer starts from inputs that pass the magic, version and length checks
 * and mutates from there. Writes DIR/msg, DIR/handshake, DIR/rpc and
 * DIR/config, DIR/meta_attr (run-fuzz.sh --gen-corpus DIR; the committed corpus is
 * test/fuzz/corpus). Deterministic: the same bytes every run. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hello.h"
#include "params.h"
#include "proto.h"
#include "rpc.h"
#include "../../server/meta_attr.h"

static const char *outdir;
static int failed;

static void put(const char *target, const char *name, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
		failed = 1;
	}
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + 13 * i);
}

/* header | body (body_len) | descriptors | data at data_off */
static size_t message(uint8_t *buf, struct proto_hdr *h, size_t body_len,
		      const struct proto_desc *d, uint32_t ndesc, size_t gap,
		      size_t data_len)
{
	size_t off = PROTO_HDR_SIZE;

	h->body_len = (uint32_t)body_len;
	h->ndesc = ndesc;
	fill(buf + off, body_len, 1);
	off += body_len;
	for (uint32_t i = 0; i < ndesc; i++, off += PROTO_DESC_SIZE)
		proto_desc_encode(buf + off, &d[i]);
	off += gap;
	h->data_off = (uint16_t)off;
	if (data_len)
		h->data_len = data_len;
	fill(buf + off, data_len, 7);
	proto_hdr_encode(buf, h);
	return off + data_len;
}

static void gen_msg(void)
{
	static uint8_t buf[4096];
	struct proto_desc d[3] = {{0x1000, 100, 7}, {0x9000, 4096, 8}, {0, 1, 9}};
	struct proto_hdr h;
	size_t n;

	h = (struct proto_hdr){.type = PROTO_REQ,
			       .path = XP_PATH_INLINE,
			       .dir = PROTO_DIR_WRITE,
			       .tag = 0x10001};
	n = message(buf, &h, 40, NULL, 0, 0, 64);
	put("msg", "inline-write-req", buf, n);
	h = (struct proto_hdr){.type = PROTO_REQ,
			       .path = XP_PATH_INLINE,
			       .dir = PROTO_DIR_READ,
			       .tag = 2,
			       .data_len = 4096};
	n = message(buf, &h, 24, NULL, 0, 0, 0);
	put("msg", "inline-read-req", buf, n);
	h = (struct proto_hdr){.type = PROTO_REP,
			       .path = XP_PATH_FAST,
			       .dir = PROTO_DIR_READ,
			       .tag = 3,
			       .slot = 5,
			       .credits = 2};
	n = message(buf, &h, 8, NULL, 0, 504, 100);
	put("msg", "fast-read-rep", buf, n);
	h = (struct proto_hdr){.type = PROTO_REQ,
			       .path = XP_PATH_FAST,
			       .dir = PROTO_DIR_WRITE,
			       .tag = 4,
			       .slot = 15};
	n = message(buf, &h, 32, NULL, 0, 0, 200);
	put("msg", "fast-write-req", buf, n);
	h = (struct proto_hdr){.type = PROTO_REQ,
			       .path = XP_PATH_BULK,
			       .dir = PROTO_DIR_WRITE,
			       .tag = 5,
			       .data_len = 4197};
	n = message(buf, &h, 56, d, 3, 0, 0);
	put("msg", "bulk-write-req", buf, n);
	h = (struct proto_hdr){.type = PROTO_REP,
			       .path = XP_PATH_BULK,
			       .dir = PROTO_DIR_READ,
			       .tag = 6,
			       .status = -5};
	n = message(buf, &h, 8, NULL, 0, 0, 0);
	put("msg", "bulk-read-rep-error", buf, n);
	h = (struct proto_hdr){.type = PROTO_CREDIT, .credits = 8};
	n = message(buf, &h, 0, NULL, 0, 0, 0);
	put("msg", "credit", buf, n);
}

static void gen_handshake(void)
{
	static uint8_t buf[2048];
	struct proto_cm_req req = {
		.magic = PROTO_MAGIC, .version = PROTO_VERSION, .time_s = 1700000000};
	struct proto_cm_acc acc = {.magic = PROTO_MAGIC, .version = PROTO_VERSION};
	struct proto_cm_rej rej = {PROTO_MAGIC, PROTO_VERSION, -EKEYREJECTED};
	struct proto_hello hm = {.conn_id = 3,
				 .recv_count = 36,
				 .recv_size = 8192,
				 .max_requests = 32,
				 .fast = {0x7f0000001000, 0x1234, 69632, 16}};
	struct proto_hello_rep hr = {.conn_id = 9,
				     .credits = 32,
				     .recv_size = 8192,
				     .fast = {4096, 77, 69632, 16},
				     .max_requests = 32};
	struct hello_req fr = {.server = 1,
			       .role = HELLO_CLIENT,
			       .uid = 1000,
			       .gid = 1000,
			       .ngroups = 3,
			       .groups = {4, 24, 27}};
	struct hello_rep fp = {.mismatch = HELLO_OTHER_SERVER,
			       .server = 0,
			       .io_index = 0,
			       .meta_index = 0};
	struct proto_hdr h;
	int n, app;

	fill(req.nonce, sizeof(req.nonce), 3);
	fill(req.mac, sizeof(req.mac), 5);
	proto_cm_req_encode(buf, &req);
	put("handshake", "cm-req", buf, PROTO_CM_REQ_SIZE);
	fill(acc.nonce, sizeof(acc.nonce), 9);
	fill(acc.mac, sizeof(acc.mac), 11);
	proto_cm_acc_encode(buf, &acc);
	put("handshake", "cm-acc", buf, PROTO_CM_ACC_SIZE);
	proto_cm_rej_encode(buf, &rej);
	put("handshake", "cm-rej", buf, PROTO_CM_REJ_SIZE);

	fill(fr.cluster_id, sizeof(fr.cluster_id), 21);
	fill(fr.fingerprint, sizeof(fr.fingerprint), 22);
	n = hello_req_encode(buf, sizeof(buf), &fr);
	put("handshake", "fs-hello-req", buf, (size_t)n);
	fill(fp.cluster_id, sizeof(fp.cluster_id), 21);
	fill(fp.fingerprint, sizeof(fp.fingerprint), 23);
	snprintf(fp.name, sizeof(fp.name), "0");
	snprintf(fp.addr, sizeof(fp.addr), "127.0.0.1:7100");
	n = hello_rep_encode(buf, sizeof(buf), &fp);
	put("handshake", "fs-hello-rep", buf, (size_t)n);

	/* HELLO with the file service's request as application data, bare
	 * and as a message; HELLO_REP likewise with its answer. */
	app = hello_req_encode(buf + PROTO_HDR_SIZE + PROTO_HELLO_SIZE, 1024, &fr);
	hm.app_len = (uint32_t)app;
	fill(hm.mac, sizeof(hm.mac), 31);
	proto_hello_encode(buf + PROTO_HDR_SIZE, &hm);
	put("handshake", "hello", buf + PROTO_HDR_SIZE, PROTO_HELLO_SIZE + (size_t)app);
	h = (struct proto_hdr){.type = PROTO_HELLO,
			       .body_len = (uint32_t)(PROTO_HELLO_SIZE + app)};
	h.data_off = (uint16_t)(PROTO_HDR_SIZE + h.body_len);
	proto_hdr_encode(buf, &h);
	put("handshake", "hello-msg", buf, PROTO_HDR_SIZE + h.body_len);
	app = hello_rep_encode(buf + PROTO_HDR_SIZE + PROTO_HELLO_REP_SIZE, 1024, &fp);
	hr.app_len = (uint32_t)app;
	fill(hr.mac, sizeof(hr.mac), 41);
	proto_hello_rep_encode(buf + PROTO_HDR_SIZE, &hr);
	put("handshake", "hello-rep", buf + PROTO_HDR_SIZE,
	    PROTO_HELLO_REP_SIZE + (size_t)app);
	h = (struct proto_hdr){.type = PROTO_HELLO_REP,
			       .body_len = (uint32_t)(PROTO_HELLO_REP_SIZE + app)};
	h.data_off = (uint16_t)(PROTO_HDR_SIZE + h.body_len);
	proto_hdr_encode(buf, &h);
	put("handshake", "hello-rep-msg", buf, PROTO_HDR_SIZE + h.body_len);
	hr.status = -EACCES;
	hr.app_len = 0;
	proto_hello_rep_encode(buf, &hr);
	put("handshake", "hello-rep-refused", buf, PROTO_HELLO_REP_SIZE);
}

static void gen_rpc(void)
{
	static uint8_t buf[4096];
	struct rpc_seg segs[3] = {{0, 4096}, {1 << 20, 100}, {8192, 1}};
	struct rpc_dirent ents[3] = {
		{RPC_TYPE_FILE, "a"}, {RPC_TYPE_DIR, "dir"}, {RPC_TYPE_FILE, "data.h5"}};
	struct rpc_attr fa = {.handle = 0x0001000000000007,
			      .type = RPC_TYPE_FILE,
			      .mode = 0644,
			      .layout = {1 << 20, 2, 1, 2}};
	struct rpc_attr da = {.handle = 1, .type = RPC_TYPE_DIR, .mode = 0755};
	struct rpc_statfs st = {1 << 30, 1 << 29, 12, 1 << 29, 0x0123456789abcdefull};
	struct rpc_io_size isz = {123456, 1795766949446409000ll, 1795766949446409001ll};
	struct rpc_probe pr = {3, 0x0000000000000009};
	struct rpc_search_rep sr = {2, -13}; /* -EACCES at /a/b */
	int n;

#define REQ(name, call)                                                                  \
	do {                                                                             \
		n = (call);                                                              \
		if (n < 0) {                                                             \
			fprintf(stderr, "gen_corpus: %s: %d\n", name, n);                \
			failed = 1;                                                      \
		} else {                                                                 \
			put("rpc", name, buf, (size_t)n);                                \
		}                                                                        \
	} while (0)

	REQ("ping", rpc_enc_path_op(buf, sizeof(buf), RPC_PING, 0, NULL));
	REQ("lookup", rpc_enc_path_op(buf, sizeof(buf), RPC_LOOKUP, 0, "/a/b"));
	REQ("mkdir", rpc_enc_mkdir(buf, sizeof(buf), "/d", 0755, 1000, 1000));
	REQ("create", rpc_enc_create(buf, sizeof(buf), "/d/f", 0644, 1000, 1000,
				     RPC_CREATE_EXCL, 65536, 2, -1));
	REQ("create-mirror",
	    rpc_enc_create_red(buf, sizeof(buf), "/d/f", 0644, 1000, 1000,
			       RPC_CREATE_EXCL, 65536, 2, -1, RED_PACK_MIRROR(2)));
	REQ("setattr", rpc_enc_setattr(buf, sizeof(buf), "/d/f",
				       RPC_SET_MODE | RPC_SET_TIMES, 0600, 0, 0, 1, 2));
	REQ("readdir", rpc_enc_readdir(buf, sizeof(buf), "/d", "f", 64));
	REQ("rename", rpc_enc_rename(buf, sizeof(buf), "/d/f", "/d/g"));
	REQ("setstripe", rpc_enc_setstripe(buf, sizeof(buf), "/d", 65536, 2));
	REQ("setstripe-mirror",
	    rpc_enc_setstripe_red(buf, sizeof(buf), "/d", 65536, 2, RED_PACK_MIRROR(2)));
	REQ("stats", rpc_enc_path_op(buf, sizeof(buf), RPC_STATS, 0, NULL));
	REQ("getattr", rpc_enc_handle_op(buf, sizeof(buf), RPC_GETATTR, 7, NULL));
	REQ("fetch-add", rpc_enc_fetch_add(buf, sizeof(buf), 7, NULL, -3));
	REQ("lock", rpc_enc_lock(buf, sizeof(buf), RPC_LOCK, RPC_LOCK_EXCL, 7, NULL, 0,
				 4096, 99));
	REQ("truncate", rpc_enc_truncate(buf, sizeof(buf), 7, NULL, 12345));
	REQ("io-write", rpc_enc_io(buf, sizeof(buf), RPC_IO_WRITE, 7, NULL, segs, 3));
	REQ("io-read", rpc_enc_io(buf, sizeof(buf), RPC_IO_READ, 7, NULL, segs, 1));
	REQ("io-write-copies",
	    rpc_enc_io_copies(
		    buf, sizeof(buf), 7, NULL, segs, 3, 0,
		    (const struct rpc_copy[]){{1, 2, 0}, {2, 4, RPC_COPY_STALE}}, 2, 5));
	REQ("io-write-forward",
	    rpc_enc_io_forward(buf, sizeof(buf), 7, segs, 3, 2, 5, 0));
	REQ("mirror-fresh",
	    rpc_enc_mirror_fresh(buf, sizeof(buf), RPC_FRESH_FAILED, 7, 5, 0, 2));
	REQ("io-resync", rpc_enc_io_resync(buf, sizeof(buf), 7, 0,
					   &(const struct rpc_copy){3, 2, 0}, 5));
	REQ("truncate-copies",
	    rpc_enc_truncate_copies(buf, sizeof(buf), 7, NULL, 4096, 0,
				    (const struct rpc_copy[]){{1, 2, 0}}, 1, 3));
	REQ("truncate-forward",
	    rpc_enc_truncate_forward(buf, sizeof(buf), 7, 4096, 2, 3, 0));
	REQ("truncate-forward-resync",
	    rpc_enc_truncate_forward(buf, sizeof(buf), 7, 4096, 2, 3,
				     RPC_COPY_STALE | RPC_FWD_RESYNC));
	REQ("io-write-repair",
	    rpc_enc_io_repair(buf, sizeof(buf), 7, NULL, segs, 1, 1, 0xabcdef));
	REQ("io-write-forward-xor",
	    rpc_enc_io_forward_xor(buf, sizeof(buf), 7, segs, 3, 4, 5, 2, 1, 65536));
	REQ("truncate-ends", rpc_enc_truncate_ends(buf, sizeof(buf), 7, NULL, 4096, 4,
						   (const uint64_t[]){8192, 4096}, 2));
	REQ("io-size-ends",
	    rpc_enc_io_size_req(buf, sizeof(buf), 7, RPC_SIZE_ENDS, NULL));
	REQ("io-write-forward-whole",
	    rpc_enc_io_forward(buf, sizeof(buf), 7, segs, 0, 2, 6, RPC_FWD_WHOLE));
	REQ("mirror-stale",
	    rpc_enc_mirror_stale(buf, sizeof(buf), 7, 4, 0, (const uint32_t[]){2}, 1));
	REQ("io-create", rpc_enc_io_create(buf, sizeof(buf), 7, 0x1234567, 1, 0));
	REQ("io-create-incomplete", rpc_enc_io_create(buf, sizeof(buf), 7, 0x1234567, 1,
						      RPC_IO_CREATE_INCOMPLETE));
	REQ("mirror-rebuild", rpc_enc_mirror_rebuild(buf, sizeof(buf), 2));
	REQ("mirror-damaged", rpc_enc_mirror_damaged(buf, sizeof(buf), 7, 2));
	REQ("mirror-repair", rpc_enc_mirror_repair(buf, sizeof(buf), 7, NULL, 1, 3));
	REQ("io-heartbeat",
	    rpc_enc_io_heartbeat(buf, sizeof(buf), 0, (const uint32_t[]){1, 3}, 2));
	REQ("io-write-parity",
	    rpc_enc_io_parity(buf, sizeof(buf), 9, NULL, segs, 3, 1,
			      (const struct rpc_copy[]){{3, 2, 0}}, 1, 1, 2, 1));
	REQ("io-heartbeat-none", rpc_enc_io_heartbeat(buf, sizeof(buf), 1, NULL, 0));
	REQ("io-digest",
	    rpc_enc_io_digest(buf, sizeof(buf), 7, 1, RPC_DIGEST_UNIT, RPC_DIGEST_SPAN));
	REQ("io-probe", rpc_enc_io_probe(buf, sizeof(buf), 1));
	REQ("io-resync-ec",
	    rpc_enc_io_resync_ec(buf, sizeof(buf), 7, 2,
				 (const struct rpc_copy[]){{0, 0, 0}, {1, 1, 0}}, 2, 1, 0,
				 5));
	REQ("io-hold",
	    rpc_enc_io_hold(buf, sizeof(buf), 0, 7, NULL, 1, 4096, 65536, 99, 3000, 2));
	REQ("io-hold-open", rpc_enc_io_hold(buf, sizeof(buf), 0, 7, NULL, 1, 4096, 0, 99,
					    3000, RPC_SLOT_ANY));
	REQ("io-hold-release", rpc_enc_io_hold(buf, sizeof(buf), RPC_HOLD_RELEASE, 7,
					       NULL, 1, 0, 0, 99, 0, 2));
	REQ("io-hold-end",
	    rpc_enc_io_hold(buf, sizeof(buf), RPC_HOLD_END, 7, NULL, 1, 0, 0, 0, 0, 2));
	{
		static const uint32_t groups[2] = {100, 65534};

		REQ("search", rpc_enc_search(buf, sizeof(buf), "/a/b/c", 4, 65534, 65534,
					     groups, 2));
	}
	{
		static const uint64_t hs[3] = {0x0000000000000007, 0x0001000000000009,
					       0x00000000000000ff};
		static const uint8_t states[3] = {RPC_HS_FILE, RPC_HS_NOT_MINE,
						  RPC_HS_GONE};

		REQ("meta-handles", rpc_enc_meta_handles(buf, sizeof(buf), hs, 3));
		REQ("rep-handle-states",
		    rpc_enc_handle_states(buf, sizeof(buf), states, 3));
	}
	REQ("rep-dirents", rpc_enc_dirents(buf, sizeof(buf), ents, 3, 1));
	{
		static const struct rpc_stat sv[2] = {{"req.io_write", 3},
						      {"bytes.fast", 65536}};

		REQ("rep-stats", rpc_enc_stats(buf, sizeof(buf), sv, 2));
	}
	rpc_enc_attr(buf, &fa);
	put("rpc", "rep-attr-file", buf, RPC_ATTR_SIZE);
	rpc_enc_attr(buf, &da);
	put("rpc", "rep-attr-dir", buf, RPC_ATTR_SIZE);
	rpc_enc_statfs(buf, &st);
	put("rpc", "rep-statfs", buf, RPC_STATFS_SIZE);
	rpc_enc_probe(buf, &pr);
	put("rpc", "rep-probe", buf, RPC_PROBE_SIZE);
	rpc_enc_search_rep(buf, &sr);
	put("rpc", "rep-search", buf, RPC_SEARCH_REP_SIZE);
	rpc_enc_io_size(buf, &isz);
	put("rpc", "rep-io-size", buf, RPC_IO_SIZE_REP);
	put("rpc", "rep-io-size-ends", buf,
	    (size_t)rpc_enc_io_size_ends(buf, sizeof(buf), &isz,
					 (const uint64_t[]){4096, 8192, 0}, 3));
}

static void text(const char *name, const char *s)
{
	put("config", name, s, strlen(s));
}

static void gen_config(void)
{
	text("two-servers", "; rpfs cluster configuration (see common/config.h)\n\n"
			    "[cluster]\nstripe_unit = 1M\nstripe_count = 0\n"
			    "redundancy = mirror:2\n"
			    "key_file = cluster.key\n"
			    "id = 00112233445566778899aabbccddeeff\n\n"
			    "[server.0]\naddress = 127.0.0.1\nport = 7100\n"
			    "roles = meta,io\ndir = /tmp/c/s0\n\n"
			    "[server.1]\naddress = 127.0.0.1\nport = 7101\n"
			    "roles = io\ndir = /tmp/c/s1\n");
	text("transport", "[cluster]\nstripe_unit = 64K\n\n"
			  "[server.a-1]\naddress = ::1\nport = 65535\n"
			  "roles = meta, io\ndir = /srv/rpfs\n\n"
			  "[transport]\ninline_max = 8K\nfast_max = 128K\n"
			  "fast_slots = 8\ncredits = 64\nforce_path = bulk\n"
			  "provider = tcp\ntimeout_ms = 5000\nidle_timeout_s = 0\n");
	text("roles-apart", "\xEF\xBB\xBF# comment\n[server.m]\naddress = h1\n"
			    "port = 1\nroles = meta\ndir = /m\n"
			    "[server.i]\naddress = h2\nport = 2\nroles = io\n"
			    "dir = /i ; inline comment\n");
}

/* Stored entries: a file and a directory in the newest version, and a
 * file as rpfsd wrote it before layouts had a kind (version 1: "RPA1",
 * then the 80 bytes of that time's wire attributes, which rpc_enc_attr
 * still writes). */
static void gen_meta_attr(void)
{
	struct rpc_attr f = {.handle = 0x0001000000000042ull,
			     .type = RPC_TYPE_FILE,
			     .mode = 0644,
			     .uid = 1000,
			     .gid = 1000,
			     .mtime = 1700000000000000000ll,
			     .layout = {.stripe_unit = 65536,
					.stripe_count = 2,
					.first_server = 1,
					.nservers = 4}};
	struct rpc_attr d = {
		.handle = 0x0001000000000001ull, .type = RPC_TYPE_DIR, .mode = 0755};
	uint8_t buf[META_ATTR_SIZE + 16];

	meta_attr_enc(buf, &f, "/dir/f", 6);
	put("meta_attr", "file", buf, meta_attr_size(6));
	meta_attr_enc(buf, &d, "/dir", 4);
	put("meta_attr", "dir", buf, meta_attr_size(4));
	memcpy(buf, "RPA1", 4);
	rpc_enc_attr(buf + 4, &f);
	memcpy(buf + META_ATTR_V1_SIZE, "/dir/f", 6);
	put("meta_attr", "file-v1", buf, META_ATTR_V1_SIZE + 6);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus DIR\n");
		return 2;
	}
	outdir = argv[1];
	mkdir(outdir, 0755);
	gen_msg();
	gen_handshake();
	gen_rpc();
	gen_config();
	gen_meta_attr();
	return failed;
}
