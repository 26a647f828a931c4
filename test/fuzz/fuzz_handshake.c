/* libFuzzer target: the connection handshake, both layers.
 *
 * Transport (proto.h): the connection manager's request, accept and reject
 * data, and HELLO / HELLO_REP, each decoded from the input as a bare body
 * and, for the two hellos, also as the body of a message after a header,
 * as xport_conn.c receives them. File service (hello.h): the client's
 * identity (hello_req, what rpfsd's identity check decodes) and the
 * server's answer (hello_rep, what a refused client decodes).
 *
 * After a decode that succeeds: every length or count stays within its
 * bound and inside the input (application data is read byte by byte, so
 * AddressSanitizer sees any overrun), the checks each decoder promises
 * hold (fast buffer geometry, credits, statuses, NUL-terminated names),
 * and the decoded message encodes back to the bytes it came from (reserved
 * bytes aside), so no field is misread. */
#include <string.h>

#include "fuzz.h"
#include "hello.h"
#include "proto.h"

static void check_fastbuf(const struct proto_fastbuf *f)
{
	FUZZ_CHECK(f->slot_size >= PROTO_HDR_SIZE && f->slot_size <= (16u << 20) + 4096);
	FUZZ_CHECK(f->slot_count >= 1 && f->slot_count <= 4096);
}

/* Bytes [0, n) equal but for the reserved ones in [skip, skip_end). */
static int same_but(const uint8_t *a, const uint8_t *b, size_t n, size_t skip,
		    size_t skip_end)
{
	return !memcmp(a, b, skip) && !memcmp(a + skip_end, b + skip_end, n - skip_end);
}

static void hello(const uint8_t *data, size_t size)
{
	struct proto_hello m;
	uint8_t again[PROTO_HELLO_SIZE];

	if (proto_hello_decode(data, size, &m))
		return;
	FUZZ_CHECK(size >= PROTO_HELLO_SIZE);
	FUZZ_CHECK(m.app_len <= PROTO_APP_MAX && m.app_len <= size - PROTO_HELLO_SIZE);
	FUZZ_CHECK(m.max_requests >= 1 && m.recv_count > m.max_requests);
	FUZZ_CHECK(m.recv_count <= 4096);
	FUZZ_CHECK(m.recv_size >= PROTO_HDR_SIZE + 64 && m.recv_size <= (16u << 20));
	check_fastbuf(&m.fast);
	fuzz_touch(data + PROTO_HELLO_SIZE, m.app_len);
	proto_hello_encode(again, &m);
	FUZZ_CHECK(same_but(again, data, PROTO_HELLO_SIZE, 60, PROTO_HELLO_SIZE));
}

static void hello_rep(const uint8_t *data, size_t size)
{
	struct proto_hello_rep m;
	uint8_t again[PROTO_HELLO_REP_SIZE];

	if (proto_hello_rep_decode(data, size, &m))
		return;
	FUZZ_CHECK(size >= PROTO_HELLO_REP_SIZE);
	FUZZ_CHECK(m.app_len <= PROTO_APP_MAX &&
		   m.app_len <= size - PROTO_HELLO_REP_SIZE);
	FUZZ_CHECK(m.status <= 0);
	if (!m.status) {
		/* What a client then allocates and indexes by. */
		FUZZ_CHECK(m.credits >= 2 && m.credits <= 4096);
		FUZZ_CHECK(m.recv_size >= PROTO_HDR_SIZE + 64 &&
			   m.recv_size <= (16u << 20));
		FUZZ_CHECK(m.max_requests >= 1 && m.max_requests <= 4096);
		check_fastbuf(&m.fast);
	}
	fuzz_touch(data + PROTO_HELLO_REP_SIZE, m.app_len);
	proto_hello_rep_encode(again, &m);
	FUZZ_CHECK(!memcmp(again, data, PROTO_HELLO_REP_SIZE));
}

/* A hello as a message: header, then the hello as the body (body_len). */
static void hello_msg(const uint8_t *data, size_t size)
{
	struct proto_hdr h;

	if (proto_hdr_decode(data, size, &h))
		return;
	FUZZ_CHECK(PROTO_HDR_SIZE + (uint64_t)h.body_len <= size);
	if (h.type == PROTO_HELLO)
		hello(data + PROTO_HDR_SIZE, h.body_len);
	else if (h.type == PROTO_HELLO_REP)
		hello_rep(data + PROTO_HDR_SIZE, h.body_len);
}

static void cm(const uint8_t *data, size_t size)
{
	struct proto_cm_req req;
	struct proto_cm_acc acc;
	struct proto_cm_rej rej;
	uint8_t again[PROTO_CM_REQ_SIZE];

	if (!proto_cm_req_decode(data, size, &req)) {
		FUZZ_CHECK(size >= PROTO_CM_REQ_SIZE && req.magic == PROTO_MAGIC);
		proto_cm_req_encode(again, &req);
		FUZZ_CHECK(same_but(again, data, PROTO_CM_REQ_SIZE, 6, 8));
	}
	if (!proto_cm_acc_decode(data, size, &acc)) {
		FUZZ_CHECK(size >= PROTO_CM_ACC_SIZE && acc.magic == PROTO_MAGIC);
		proto_cm_acc_encode(again, &acc);
		FUZZ_CHECK(same_but(again, data, PROTO_CM_ACC_SIZE, 6, 8));
	}
	if (!proto_cm_rej_decode(data, size, &rej)) {
		FUZZ_CHECK(size >= PROTO_CM_REJ_SIZE && rej.magic == PROTO_MAGIC);
		/* A client turns it into an errno it reports. */
		FUZZ_CHECK(rej.status < 0 && rej.status >= -4095);
		proto_cm_rej_encode(again, &rej);
		FUZZ_CHECK(same_but(again, data, PROTO_CM_REJ_SIZE, 6, 8));
	}
}

static void fs_hello_req(const uint8_t *data, size_t size)
{
	struct hello_req m;
	uint8_t again[56 + 4 * HELLO_MAX_GROUPS];
	int n;

	memset(&m, 0, sizeof(m));
	if (hello_req_decode(data, size, &m))
		return;
	FUZZ_CHECK(m.role == HELLO_CLIENT || m.role == HELLO_PEER);
	FUZZ_CHECK(m.ngroups <= HELLO_MAX_GROUPS);
	n = hello_req_encode(again, sizeof(again), &m);
	FUZZ_CHECK(n > 0 && (size_t)n <= size);
	FUZZ_CHECK(same_but(again, data, (size_t)n, 7, 8));
}

static void fs_hello_rep(const uint8_t *data, size_t size)
{
	struct hello_rep m, m2;
	uint8_t again[1024];
	int n;

	memset(&m, 0, sizeof(m));
	if (hello_rep_decode(data, size, &m))
		return;
	FUZZ_CHECK(m.mismatch <= HELLO_OTHER_SERVERS);
	/* Names a client prints: terminated inside their fields. */
	FUZZ_CHECK(memchr(m.name, 0, sizeof(m.name)) != NULL);
	FUZZ_CHECK(memchr(m.addr, 0, sizeof(m.addr)) != NULL);
	n = hello_rep_encode(again, sizeof(again), &m);
	FUZZ_CHECK(n > 0 && (size_t)n <= size);
	memset(&m2, 0, sizeof(m2));
	FUZZ_CHECK(hello_rep_decode(again, (size_t)n, &m2) == 0);
	FUZZ_CHECK(m2.mismatch == m.mismatch && m2.server == m.server);
	FUZZ_CHECK(m2.io_index == m.io_index && m2.meta_index == m.meta_index);
	FUZZ_CHECK(!memcmp(m2.cluster_id, m.cluster_id, sizeof(m.cluster_id)));
	FUZZ_CHECK(!memcmp(m2.fingerprint, m.fingerprint, sizeof(m.fingerprint)));
	FUZZ_CHECK(!strcmp(m2.name, m.name) && !strcmp(m2.addr, m.addr));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cm(data, size);
	hello(data, size);
	hello_rep(data, size);
	hello_msg(data, size);
	fs_hello_req(data, size);
	fs_hello_rep(data, size);
	return 0;
}
