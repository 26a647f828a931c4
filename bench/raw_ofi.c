/* raw_ofi: plain libfabric baseline for rpfs-xport-bench (see raw_ofi.h).
 *
 * Deliberately small and direct: what rpfs's transport does must be compared
 * with the provider alone, so nothing here uses librpfs-common except the
 * remote-addressing helpers in mraddr.h (header only), which carry the
 * FI_MR_VIRT_ADDR / FI_MR_PROV_KEY rules.
 *
 * Memory: the server's area (RMA target) is window slots of max_size bytes;
 * apart from it, window + 1 receive slots of max_size bytes have receives
 * posted at all times, so any message, control or data, finds room. They
 * must be apart: a control message waiting to be parsed would otherwise be
 * overwritten by the RMA it announces. The client has window
 * source/destination slots, window + 1 receive slots, a read-back buffer for
 * verification and a small control buffer.
 *
 * Ordering: messages on one connection complete in order, so the server
 * knows from its state (idle, or N data messages announced by SENDS) what a
 * received message is; no immediate data is needed.
 *
 * Why one file of ~1,300 lines: a baseline kept apart from rpfs's code on
 * purpose (see above), read top to bottom as one program; its parts (setup,
 * the window, each operation's loop) only make sense together. */
#include "raw_ofi.h"

#include <errno.h>
#include <netinet/in.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "mraddr.h"

#define RAW_FI_VERSION FI_VERSION(1, 11)
#define RAW_MAGIC      0x2177617273667072ull /* "rpfsraw!" */
#define RAW_CQ_BATCH   16
/* A client waiting this long without any completion gives up. */
#define RAW_STALL_NS (30ll * 1000 * 1000 * 1000)
/* SPIN (mode 1/0) brackets every run: RMA makes no completion at the target,
 * yet needs it to poll, and a raw baseline should not pay for wake-ups; so
 * the server spins while a run lasts. Otherwise it blocks in fi_cq_sread
 * (which still progresses, but wakes up late): even a short spin after a run
 * would steal a core from the rpfs run measured next, on two cores. */
enum raw_cmd { RAW_CMD_SETUP = 1, RAW_CMD_SENDS = 2, RAW_CMD_QUIT = 3, RAW_CMD_SPIN = 4 };
enum raw_mode { RAW_MODE_ACK = 1, RAW_MODE_ECHO = 2 };
enum raw_kind { RAW_CTX_RX = 1, RAW_CTX_TX, RAW_CTX_CTL };

/* Control message; both ends are on one host, so native byte order. */
struct raw_ctl {
	uint64_t magic;
	uint32_t cmd;
	uint32_t mode;
	uint64_t size;
	uint64_t count;
	uint64_t addr; /* SETUP: the area as a peer names it (VA or offset 0) */
	uint64_t key;
	uint64_t len;
};

#define RAW_ACK_SIZE 8

/* Operation context; fi_context first because the provider may ask for
 * FI_CONTEXT mode. */
struct raw_ctx {
	struct fi_context fctx;
	int kind;
	int slot;
	int busy;
};

struct raw_buf {
	char *addr;
	size_t len;
	struct fid_mr *mr;
	void *desc;
	uint64_t key;
};

/* The libfabric objects of one connected endpoint, client or server. */
struct raw_ep {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
	int virt_addr;
	int prov_key;
	uint64_t key_counter;
	char why[256];
};

struct raw_client {
	struct raw_ep e;
	int window;
	size_t max_size;
	struct raw_buf local; /* window slots: RMA/send sources and destinations */
	struct raw_buf rx;    /* window + 1 receive slots */
	struct raw_buf check; /* read-back room for verification */
	struct raw_buf ctl;
	struct raw_ctx *op;  /* window: RMA and data sends */
	struct raw_ctx *rxc; /* window + 1 */
	struct raw_ctx ctl_tx;
	/* receive completions not yet consumed, in arrival order */
	int *rxq;
	size_t *rxq_len;
	int rxq_head, rxq_count;
	uint64_t op_done;	       /* completions of op[] contexts */
	uint64_t r_addr, r_key, r_len; /* the server's area */
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int fail(struct raw_ep *e, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record why something failed and return ret as a negative errno. */
static int fail(struct raw_ep *e, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->why, sizeof(e->why), fmt, ap);
	va_end(ap);
	if (ret > 0)
		ret = -ret;
	return ret ? ret : -EIO;
}

/* ---- data patterns ----------------------------------------------------- */

static uint64_t pattern_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

void raw_pattern_fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = pattern_next(&x);

		memcpy(p + i, &v, 8);
	}
	for (; i < len; i++)
		p[i] = (unsigned char)pattern_next(&x);
}

long long raw_pattern_check(const void *buf, size_t len, uint64_t seed)
{
	const unsigned char *p = buf;
	unsigned char tmp[4096];
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
	size_t i = 0;

	/* Regenerate in blocks (the fill's 8-byte steps fit a 4 KiB block). */
	while (i < len) {
		size_t n = len - i < sizeof(tmp) ? len - i : sizeof(tmp);
		size_t j;

		for (j = 0; j + 8 <= n; j += 8) {
			uint64_t v = pattern_next(&x);

			memcpy(tmp + j, &v, 8);
		}
		for (; j < n; j++)
			tmp[j] = (unsigned char)pattern_next(&x);
		if (memcmp(tmp, p + i, n)) {
			for (j = 0; j < n; j++)
				if (tmp[j] != p[i + j])
					return (long long)(i + j);
		}
		i += n;
	}
	return -1;
}

/* ---- setup helpers ----------------------------------------------------- */

const char *raw_default_provider(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *de;
	int found = 0;

	if (!d)
		return "tcp";
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			found = 1;
	closedir(d);
	return found ? "verbs" : "tcp";
}

static struct fi_info *make_hints(const char *provider)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | FI_RMA;
	h->mode = FI_CONTEXT;
	/* Everything verbs may demand; the provider keeps what it needs. */
	h->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->fabric_attr->prov_name = strdup(provider);
	if (!h->fabric_attr->prov_name) {
		fi_freeinfo(h);
		return NULL;
	}
	return h;
}

static int open_cq(struct raw_ep *e, int window)
{
	struct fi_cq_attr attr = {
		.format = FI_CQ_FORMAT_DATA,
		.size = (size_t)window * 4 + 64,
		.wait_obj = FI_WAIT_UNSPEC,
	};
	int ret = fi_cq_open(e->domain, &attr, &e->cq, NULL);

	if (ret)
		return fail(e, ret, "fi_cq_open: %s", fi_strerror(-ret));
	return 0;
}

static int setup_ep(struct raw_ep *e, struct fi_info *info)
{
	int ret;

	e->virt_addr = !!(info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
	e->prov_key = !!(info->domain_attr->mr_mode & FI_MR_PROV_KEY);
	ret = fi_endpoint(e->domain, info, &e->ep, NULL);
	if (ret)
		return fail(e, ret, "fi_endpoint: %s", fi_strerror(-ret));
	ret = fi_ep_bind(e->ep, &e->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(e->ep);
	if (ret)
		return fail(e, ret, "binding the endpoint: %s", fi_strerror(-ret));
	return 0;
}

static int buf_alloc(struct raw_ep *e, struct raw_buf *b, size_t len)
{
	uint64_t access =
		FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	int ret;

	b->len = len;
	b->addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (b->addr == MAP_FAILED) {
		b->addr = NULL;
		return fail(e, errno, "mmap of %zu bytes: %s", len, strerror(errno));
	}
	/* Fault the pages in now, not in the first timed operation. */
	memset(b->addr, 0, len);
	ret = fi_mr_reg(e->domain, b->addr, len, access, 0,
			xp_requested_key(e->prov_key, &e->key_counter), 0, &b->mr, NULL);
	if (ret)
		return fail(e, ret, "fi_mr_reg of %zu bytes: %s", len, fi_strerror(-ret));
	b->desc = fi_mr_desc(b->mr);
	b->key = fi_mr_key(b->mr);
	return 0;
}

static void buf_free(struct raw_buf *b)
{
	if (b->mr)
		fi_close(&b->mr->fid);
	if (b->addr)
		munmap(b->addr, b->len);
	memset(b, 0, sizeof(*b));
}

static void ep_close(struct raw_ep *e)
{
	if (e->ep)
		fi_close(&e->ep->fid);
	e->ep = NULL;
}

static void ep_close_rest(struct raw_ep *e)
{
	if (e->cq)
		fi_close(&e->cq->fid);
	if (e->eq)
		fi_close(&e->eq->fid);
	if (e->domain)
		fi_close(&e->domain->fid);
	if (e->fabric)
		fi_close(&e->fabric->fid);
	e->cq = NULL;
	e->eq = NULL;
	e->domain = NULL;
	e->fabric = NULL;
}

/* Wait for one connection-manager event; anything else is an error. */
static int eq_expect(struct raw_ep *e, uint32_t want, int timeout_ms,
		     volatile sig_atomic_t *stop, struct fi_eq_cm_entry *entry)
{
	int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
	uint32_t event;
	ssize_t n;

	for (;;) {
		n = fi_eq_sread(e->eq, &event, entry, sizeof(*entry), 100, 0);
		if (n >= 0)
			break;
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = {0};

			fi_eq_readerr(e->eq, &err, 0);
			return fail(e, err.err ? err.err : EIO, "connection: %s",
				    fi_eq_strerror(e->eq, err.prov_errno, err.err_data,
						   NULL, 0));
		}
		if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT && n != -FI_EINTR)
			return fail(e, (int)n, "fi_eq_sread: %s", fi_strerror((int)-n));
		if ((stop && *stop) || now_ns() > deadline)
			return fail(e, ETIMEDOUT, "no connection event within %d ms",
				    timeout_ms);
	}
	if (event != want) {
		if (event == FI_CONNREQ)
			fi_freeinfo(entry->info);
		return fail(e, EPROTO, "unexpected connection event %u (wanted %u)",
			    event, want);
	}
	return 0;
}

static int cq_error(struct raw_ep *e)
{
	struct fi_cq_err_entry err = {0};
	char buf[128];

	if (fi_cq_readerr(e->cq, &err, 0) < 0)
		return fail(e, EIO, "completion error (unreadable)");
	return fail(
		e, err.err ? err.err : EIO, "completion error: %s (%s)",
		fi_strerror(err.err),
		fi_cq_strerror(e->cq, err.prov_errno, err.err_data, buf, sizeof(buf)));
}

/* ---- server ------------------------------------------------------------ */

struct raw_server {
	struct raw_ep e;
	struct fid_pep *pep;
	int nslots;
	size_t slot_size;
	struct raw_buf area;  /* RMA target: window slots */
	struct raw_buf rx;    /* nslots receive slots */
	struct raw_buf ctl;   /* [0] SETUP, [RAW_ACK_SIZE...] acks */
	struct raw_ctx *rxc;  /* nslots receives */
	struct raw_ctx *echo; /* nslots echo sends */
	struct raw_ctx ctl_tx;
	/* what the next received message is */
	int mode;
	uint64_t size, remaining;
	int quit;
	int spin;
	/* completions read while retrying a post, handled later */
	struct fi_cq_data_entry *backlog;
	int nbacklog, backlog_max;
};

static volatile sig_atomic_t raw_stop;

static void raw_on_term(int sig)
{
	(void)sig;
	raw_stop = 1;
}

static int srv_drain(struct raw_server *s)
{
	ssize_t n;

	if (s->nbacklog >= s->backlog_max)
		return fail(&s->e, ENOSPC, "completion backlog full");
	n = fi_cq_read(s->e.cq, s->backlog + s->nbacklog, 1);
	if (n > 0)
		s->nbacklog += (int)n;
	else if (n == -FI_EAVAIL)
		return cq_error(&s->e);
	else if (n != -FI_EAGAIN)
		return fail(&s->e, (int)n, "fi_cq_read: %s", fi_strerror((int)-n));
	return 0;
}

/* Posting can meet a full queue; completions read meanwhile are kept for
 * the main loop, so handlers never recurse. */
static int srv_post_recv(struct raw_server *s, int k)
{
	ssize_t ret;

	for (;;) {
		ret = fi_recv(s->e.ep, s->rx.addr + (size_t)k * s->slot_size,
			      s->slot_size, s->rx.desc, 0, &s->rxc[k].fctx);
		if (ret != -FI_EAGAIN)
			break;
		if ((ret = srv_drain(s)))
			return (int)ret;
	}
	if (ret)
		return fail(&s->e, (int)ret, "fi_recv: %s", fi_strerror((int)-ret));
	return 0;
}

static int srv_post_send(struct raw_server *s, void *buf, size_t len, void *desc,
			 struct raw_ctx *ctx)
{
	ssize_t ret;

	for (;;) {
		ret = fi_send(s->e.ep, buf, len, desc, 0, &ctx->fctx);
		if (ret != -FI_EAGAIN)
			break;
		if ((ret = srv_drain(s)))
			return (int)ret;
	}
	if (ret)
		return fail(&s->e, (int)ret, "fi_send: %s", fi_strerror((int)-ret));
	return 0;
}

static int srv_control(struct raw_server *s, int k, size_t len)
{
	struct raw_ctl m;

	if (len < sizeof(m))
		return fail(&s->e, EPROTO, "short control message (%zu bytes)", len);
	memcpy(&m, s->rx.addr + (size_t)k * s->slot_size, sizeof(m));
	if (m.magic != RAW_MAGIC)
		return fail(&s->e, EPROTO, "bad control message");
	switch (m.cmd) {
	case RAW_CMD_SENDS:
		if (m.size == 0 || m.size > s->slot_size ||
		    (m.mode != RAW_MODE_ACK && m.mode != RAW_MODE_ECHO))
			return fail(&s->e, EPROTO, "bad SENDS size %llu",
				    (unsigned long long)m.size);
		s->mode = (int)m.mode;
		s->size = m.size;
		s->remaining = m.count;
		break;
	case RAW_CMD_QUIT:
		/* No receive again: the client closes next, and a receive
		 * posted on the closing endpoint comes back cancelled (seen as
		 * "completion error: Operation canceled" at the end of a run). */
		s->quit = 1;
		return 0;
	case RAW_CMD_SPIN:
		s->spin = m.mode != 0;
		break;
	default:
		return fail(&s->e, EPROTO, "unknown command %u", m.cmd);
	}
	return srv_post_recv(s, k);
}

static int srv_handle(struct raw_server *s, const struct fi_cq_data_entry *c)
{
	struct raw_ctx *ctx = c->op_context;
	int k = ctx->slot, ret;

	if (ctx->kind == RAW_CTX_CTL)
		return 0;
	if (ctx->kind == RAW_CTX_TX) /* echo sent: the slot can receive again */
		return srv_post_recv(s, k);
	if (!s->remaining)
		return srv_control(s, k, c->len);
	if (c->len != s->size)
		return fail(&s->e, EPROTO, "data message of %zu bytes, expected %llu",
			    c->len, (unsigned long long)s->size);
	s->remaining--;
	if (s->mode == RAW_MODE_ECHO)
		return srv_post_send(s, s->rx.addr + (size_t)k * s->slot_size, c->len,
				     s->rx.desc, &s->echo[k]);
	/* Repost before acknowledging, so the client never outruns our receives. */
	ret = srv_post_recv(s, k);
	if (!ret)
		ret = srv_post_send(s, s->ctl.addr + RAW_ACK_SIZE, RAW_ACK_SIZE,
				    s->ctl.desc, &s->ctl_tx);
	return ret;
}

/* The client went away without QUIT? */
static int srv_check_eq(struct raw_server *s)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;
	ssize_t n = fi_eq_read(s->e.eq, &event, &entry, sizeof(entry), 0);

	if (n == -FI_EAGAIN)
		return 0;
	if (n >= 0 && event == FI_SHUTDOWN)
		return fail(&s->e, ECONNRESET, "client disconnected without QUIT");
	if (n == -FI_EAVAIL) {
		struct fi_eq_err_entry err = {0};

		fi_eq_readerr(s->e.eq, &err, 0);
		return fail(&s->e, ECONNRESET, "connection error %d", err.err);
	}
	return 0;
}

static int srv_loop(struct raw_server *s)
{
	struct fi_cq_data_entry comp[RAW_CQ_BATCH];
	unsigned empty = 0;
	ssize_t n;
	int ret;

	while (!s->quit) {
		while (s->nbacklog) {
			struct fi_cq_data_entry c = s->backlog[0];

			memmove(s->backlog, s->backlog + 1,
				(size_t)--s->nbacklog * sizeof(*s->backlog));
			if ((ret = srv_handle(s, &c)))
				return ret;
		}
		if (raw_stop)
			return fail(&s->e, EINTR, "stopped by a signal");
		if (s->spin)
			n = fi_cq_read(s->e.cq, comp, RAW_CQ_BATCH);
		else
			n = fi_cq_sread(s->e.cq, comp, RAW_CQ_BATCH, NULL, 100);
		if (n > 0) {
			for (ssize_t i = 0; i < n; i++)
				if ((ret = srv_handle(s, &comp[i])))
					return ret;
			continue;
		}
		if (n == -FI_EAVAIL)
			return cq_error(&s->e);
		if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT && n != -FI_EINTR)
			return fail(&s->e, (int)n, "fi_cq_read: %s",
				    fi_strerror((int)-n));
		/* Blocked waits are rare enough to look every time. */
		if (!s->spin || (++empty & 1023) == 0) {
			if ((ret = srv_check_eq(s)))
				return ret;
		}
	}
	return 0;
}

static int srv_listen(struct raw_server *s, const char *provider, const char *host,
		      int out_fd)
{
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_info *hints = make_hints(provider), *info = NULL;
	struct sockaddr_storage ss;
	size_t sslen = sizeof(ss);
	int port, ret;

	if (!hints)
		return fail(&s->e, ENOMEM, "out of memory");
	ret = fi_getinfo(RAW_FI_VERSION, host, "0", FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return fail(&s->e, ret, "fi_getinfo(%s, FI_EP_MSG, FI_MSG|FI_RMA): %s",
			    provider, fi_strerror(-ret));
	ret = fi_fabric(info->fabric_attr, &s->e.fabric, NULL);
	if (!ret)
		ret = fi_eq_open(s->e.fabric, &eq_attr, &s->e.eq, NULL);
	if (!ret)
		ret = fi_passive_ep(s->e.fabric, info, &s->pep, NULL);
	if (!ret)
		ret = fi_pep_bind(s->pep, &s->e.eq->fid, 0);
	if (!ret)
		ret = fi_listen(s->pep);
	fi_freeinfo(info);
	if (ret)
		return fail(&s->e, ret, "listening: %s", fi_strerror(-ret));
	ret = fi_getname(&s->pep->fid, &ss, &sslen);
	if (ret)
		return fail(&s->e, ret, "fi_getname: %s", fi_strerror(-ret));
	if (ss.ss_family == AF_INET)
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	else if (ss.ss_family == AF_INET6)
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	else
		return fail(&s->e, EAFNOSUPPORT, "listening address family %d",
			    ss.ss_family);
	if (dprintf(out_fd, "port %d\n", port) < 0)
		return fail(&s->e, errno, "writing the port: %s", strerror(errno));
	return 0;
}

static int srv_accept(struct raw_server *s, int window)
{
	struct fi_eq_cm_entry entry;
	struct raw_ctl setup = {.magic = RAW_MAGIC, .cmd = RAW_CMD_SETUP};
	int ret;

	/* A benchmark client connects within seconds of reading the port. */
	ret = eq_expect(&s->e, FI_CONNREQ, 60000, &raw_stop, &entry);
	if (ret)
		return ret;
	/* The request names the device the client reached: the domain is its. */
	ret = fi_domain(s->e.fabric, entry.info, &s->e.domain, NULL);
	if (ret) {
		fi_freeinfo(entry.info);
		return fail(&s->e, ret, "fi_domain: %s", fi_strerror(-ret));
	}
	ret = open_cq(&s->e, window);
	if (!ret)
		ret = setup_ep(&s->e, entry.info);
	fi_freeinfo(entry.info);
	if (!ret)
		ret = buf_alloc(&s->e, &s->area, (size_t)window * s->slot_size);
	if (!ret)
		ret = buf_alloc(&s->e, &s->rx, (size_t)s->nslots * s->slot_size);
	if (!ret)
		ret = buf_alloc(&s->e, &s->ctl, 4096);
	for (int k = 0; !ret && k < s->nslots; k++)
		ret = srv_post_recv(s, k);
	if (ret)
		return ret;
	ret = fi_accept(s->e.ep, NULL, 0);
	if (ret)
		return fail(&s->e, ret, "fi_accept: %s", fi_strerror(-ret));
	ret = eq_expect(&s->e, FI_CONNECTED, 10000, &raw_stop, &entry);
	if (ret)
		return ret;
	setup.addr = xp_remote_addr(s->e.virt_addr, s->area.addr, s->area.addr);
	setup.key = s->area.key;
	setup.len = s->area.len;
	memcpy(s->ctl.addr, &setup, sizeof(setup));
	return srv_post_send(s, s->ctl.addr, sizeof(setup), s->ctl.desc, &s->ctl_tx);
}

int raw_server_run(const char *provider, const char *host, size_t max_size, int window,
		   int out_fd)
{
	struct sigaction sa = {.sa_handler = raw_on_term};
	struct raw_server s = {0};
	int ret = -ENOMEM;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	s.nslots = window + 1;
	s.slot_size =
		max_size < sizeof(struct raw_ctl) ? sizeof(struct raw_ctl) : max_size;
	s.backlog_max = s.nslots * 2 + 8;
	s.rxc = calloc((size_t)s.nslots, sizeof(*s.rxc));
	s.echo = calloc((size_t)s.nslots, sizeof(*s.echo));
	s.backlog = calloc((size_t)s.backlog_max, sizeof(*s.backlog));
	if (!s.rxc || !s.echo || !s.backlog) {
		fail(&s.e, ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < s.nslots; k++) {
		s.rxc[k] = (struct raw_ctx){.kind = RAW_CTX_RX, .slot = k};
		s.echo[k] = (struct raw_ctx){.kind = RAW_CTX_TX, .slot = k};
	}
	s.ctl_tx.kind = RAW_CTX_CTL;
	ret = srv_listen(&s, provider, host, out_fd);
	if (!ret)
		ret = srv_accept(&s, window);
	if (!ret)
		ret = srv_loop(&s);
out:
	/* Stopped by a signal: the benchmark is ending, nothing to report. */
	if (ret && !raw_stop)
		fprintf(stderr, "raw_ofi server: %s\n", s.e.why);
	ep_close(&s.e);
	if (s.pep)
		fi_close(&s.pep->fid);
	buf_free(&s.area);
	buf_free(&s.rx);
	buf_free(&s.ctl);
	ep_close_rest(&s.e);
	free(s.rxc);
	free(s.echo);
	free(s.backlog);
	return ret ? 1 : 0;
}

/* ---- client ------------------------------------------------------------ */

const char *raw_client_error(const struct raw_client *c)
{
	return c->e.why;
}

/* Read completions; mark operations done and queue receives. */
static int cli_poll(struct raw_client *c)
{
	struct fi_cq_data_entry comp[RAW_CQ_BATCH];
	ssize_t n = fi_cq_read(c->e.cq, comp, RAW_CQ_BATCH);

	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL)
		return cq_error(&c->e);
	if (n < 0)
		return fail(&c->e, (int)n, "fi_cq_read: %s", fi_strerror((int)-n));
	for (ssize_t i = 0; i < n; i++) {
		struct raw_ctx *ctx = comp[i].op_context;

		if (ctx->kind == RAW_CTX_RX) {
			int at = (c->rxq_head + c->rxq_count) % (c->window + 1);

			c->rxq[at] = ctx->slot;
			c->rxq_len[at] = comp[i].len;
			c->rxq_count++;
		} else if (ctx->kind == RAW_CTX_TX) {
			c->op_done++;
		}
		ctx->busy = 0;
	}
	return (int)n;
}

/* Poll until *flag clears; a long stall is an error, not a hang. */
static int cli_wait_idle(struct raw_client *c, const int *busy)
{
	int64_t last = now_ns();
	int ret;

	while (*busy) {
		ret = cli_poll(c);
		if (ret < 0)
			return ret;
		if (ret > 0)
			last = now_ns();
		else if (now_ns() - last > RAW_STALL_NS)
			return fail(&c->e, ETIMEDOUT, "no completion for 30 s");
	}
	return 0;
}

static int cli_wait_rx(struct raw_client *c)
{
	int64_t last = now_ns();
	int ret;

	while (!c->rxq_count) {
		ret = cli_poll(c);
		if (ret < 0)
			return ret;
		if (ret > 0)
			last = now_ns();
		else if (now_ns() - last > RAW_STALL_NS)
			return fail(&c->e, ETIMEDOUT,
				    "no message from the server for 30 s");
	}
	return 0;
}

static int cli_post_recv(struct raw_client *c, int k)
{
	ssize_t ret;

	for (;;) {
		ret = fi_recv(c->e.ep, c->rx.addr + (size_t)k * c->max_size, c->max_size,
			      c->rx.desc, 0, &c->rxc[k].fctx);
		if (ret != -FI_EAGAIN)
			break;
		if ((ret = cli_poll(c)) < 0)
			return (int)ret;
	}
	if (ret)
		return fail(&c->e, (int)ret, "fi_recv: %s", fi_strerror((int)-ret));
	c->rxc[k].busy = 1;
	return 0;
}

/* Take the oldest received message; the caller reposts its slot. */
static int cli_take_rx(struct raw_client *c, size_t *len)
{
	int k = c->rxq[c->rxq_head];

	*len = c->rxq_len[c->rxq_head];
	c->rxq_head = (c->rxq_head + 1) % (c->window + 1);
	c->rxq_count--;
	return k;
}

static int cli_post_send(struct raw_client *c, void *buf, size_t len, void *desc,
			 struct raw_ctx *ctx)
{
	ssize_t ret;

	for (;;) {
		ret = fi_send(c->e.ep, buf, len, desc, 0, &ctx->fctx);
		if (ret != -FI_EAGAIN)
			break;
		if ((ret = cli_poll(c)) < 0)
			return (int)ret;
	}
	if (ret)
		return fail(&c->e, (int)ret, "fi_send of %zu bytes: %s", len,
			    fi_strerror((int)-ret));
	ctx->busy = 1;
	return 0;
}

/* One fi_write or fi_read between local memory in b and remote slot rslot. */
static int cli_post_rma(struct raw_client *c, enum raw_op op, struct raw_buf *b,
			size_t boff, size_t len, int rslot, struct raw_ctx *ctx)
{
	uint64_t raddr;
	ssize_t ret;

	if (xp_remote_target(c->r_addr, (uint64_t)rslot * len, &raddr) ||
	    !xp_range_ok((uint64_t)rslot * len, len, c->r_len))
		return fail(&c->e, ERANGE,
			    "remote slot %d of %zu bytes is outside the area", rslot,
			    len);
	for (;;) {
		if (op == RAW_WRITE)
			ret = fi_write(c->e.ep, b->addr + boff, len, b->desc, 0, raddr,
				       c->r_key, &ctx->fctx);
		else
			ret = fi_read(c->e.ep, b->addr + boff, len, b->desc, 0, raddr,
				      c->r_key, &ctx->fctx);
		if (ret != -FI_EAGAIN)
			break;
		if ((ret = cli_poll(c)) < 0)
			return (int)ret;
	}
	if (ret)
		return fail(&c->e, (int)ret, "%s of %zu bytes: %s",
			    op == RAW_WRITE ? "fi_write" : "fi_read", len,
			    fi_strerror((int)-ret));
	ctx->busy = 1;
	return 0;
}

static int cli_rma_sync(struct raw_client *c, enum raw_op op, struct raw_buf *b,
			size_t boff, size_t len, int rslot)
{
	int ret = cli_post_rma(c, op, b, boff, len, rslot, &c->op[0]);

	return ret ? ret : cli_wait_idle(c, &c->op[0].busy);
}

static int cli_control(struct raw_client *c, uint32_t cmd, uint32_t mode, size_t size,
		       uint64_t count)
{
	struct raw_ctl m = {.magic = RAW_MAGIC,
			    .cmd = cmd,
			    .mode = mode,
			    .size = size,
			    .count = count};
	int ret;

	/* The previous control send may still own the buffer. */
	ret = cli_wait_idle(c, &c->ctl_tx.busy);
	if (ret)
		return ret;
	memcpy(c->ctl.addr, &m, sizeof(m));
	return cli_post_send(c, c->ctl.addr, sizeof(m), c->ctl.desc, &c->ctl_tx);
}

static int check_data(struct raw_client *c, const char *what, const void *buf, size_t len,
		      uint64_t seed)
{
	long long bad = raw_pattern_check(buf, len, seed);

	if (bad < 0)
		return 0;
	return fail(&c->e, EIO, "%s of %zu bytes: wrong data at byte %lld", what, len,
		    bad);
}

static uint64_t slot_seed(size_t size, int slot, unsigned salt)
{
	return (uint64_t)size * 131 + (uint64_t)slot * 7 + salt;
}

static void cli_free(struct raw_client *c)
{
	ep_close(&c->e);
	buf_free(&c->local);
	buf_free(&c->rx);
	buf_free(&c->check);
	buf_free(&c->ctl);
	ep_close_rest(&c->e);
	free(c->op);
	free(c->rxc);
	free(c->rxq);
	free(c->rxq_len);
	free(c);
}

int raw_client_open(const char *provider, const char *host, int port, size_t max_size,
		    int window, struct raw_client **out, char *why, size_t whylen)
{
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_info *hints, *info = NULL;
	struct fi_eq_cm_entry entry;
	struct raw_client *c;
	struct raw_ctl m;
	char service[16];
	size_t len;
	int k, ret;

	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	c->window = window;
	c->max_size = max_size < sizeof(m) ? sizeof(m) : max_size;
	c->op = calloc((size_t)window, sizeof(*c->op));
	c->rxc = calloc((size_t)window + 1, sizeof(*c->rxc));
	c->rxq = calloc((size_t)window + 1, sizeof(*c->rxq));
	c->rxq_len = calloc((size_t)window + 1, sizeof(*c->rxq_len));
	hints = make_hints(provider);
	if (!c->op || !c->rxc || !c->rxq || !c->rxq_len || !hints) {
		ret = fail(&c->e, ENOMEM, "out of memory");
		goto err;
	}
	for (k = 0; k < window; k++)
		c->op[k] = (struct raw_ctx){.kind = RAW_CTX_TX, .slot = k};
	for (k = 0; k <= window; k++)
		c->rxc[k] = (struct raw_ctx){.kind = RAW_CTX_RX, .slot = k};
	c->ctl_tx.kind = RAW_CTX_CTL;

	snprintf(service, sizeof(service), "%d", port);
	ret = fi_getinfo(RAW_FI_VERSION, host, service, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret) {
		ret = fail(&c->e, ret, "fi_getinfo(%s, FI_EP_MSG, FI_MSG|FI_RMA): %s",
			   provider, fi_strerror(-ret));
		goto err;
	}
	ret = fi_fabric(info->fabric_attr, &c->e.fabric, NULL);
	if (!ret)
		ret = fi_eq_open(c->e.fabric, &eq_attr, &c->e.eq, NULL);
	if (!ret)
		ret = fi_domain(c->e.fabric, info, &c->e.domain, NULL);
	if (ret) {
		ret = fail(&c->e, ret, "opening the %s domain: %s", provider,
			   fi_strerror(-ret));
		goto err;
	}
	ret = open_cq(&c->e, window);
	if (!ret)
		ret = setup_ep(&c->e, info);
	if (!ret)
		ret = buf_alloc(&c->e, &c->local, (size_t)window * c->max_size);
	if (!ret)
		ret = buf_alloc(&c->e, &c->rx, (size_t)(window + 1) * c->max_size);
	if (!ret)
		ret = buf_alloc(&c->e, &c->check, c->max_size);
	if (!ret)
		ret = buf_alloc(&c->e, &c->ctl, 4096);
	/* Receives go up before the connection: the SETUP may come at once. */
	for (k = 0; !ret && k <= window; k++)
		ret = cli_post_recv(c, k);
	if (ret)
		goto err;
	ret = fi_connect(c->e.ep, info->dest_addr, NULL, 0);
	if (ret) {
		ret = fail(&c->e, ret, "fi_connect to %s:%d: %s", host, port,
			   fi_strerror(-ret));
		goto err;
	}
	ret = eq_expect(&c->e, FI_CONNECTED, 10000, NULL, &entry);
	if (!ret)
		ret = cli_wait_rx(c);
	if (ret)
		goto err;
	k = cli_take_rx(c, &len);
	memcpy(&m, c->rx.addr + (size_t)k * c->max_size, sizeof(m));
	if (len != sizeof(m) || m.magic != RAW_MAGIC || m.cmd != RAW_CMD_SETUP) {
		ret = fail(&c->e, EPROTO, "bad SETUP message from the raw server");
		goto err;
	}
	c->r_addr = m.addr;
	c->r_key = m.key;
	c->r_len = m.len;
	ret = cli_post_recv(c, k);
	if (ret)
		goto err;
	fi_freeinfo(info);
	*out = c;
	return 0;
err:
	snprintf(why, whylen, "%s", c->e.why);
	if (info)
		fi_freeinfo(info);
	cli_free(c);
	return ret;
}

int raw_client_close(struct raw_client *c)
{
	int ret;

	ret = cli_control(c, RAW_CMD_QUIT, 0, 0, 0);
	if (!ret)
		ret = cli_wait_idle(c, &c->ctl_tx.busy);
	cli_free(c);
	return ret;
}

static int check_size(struct raw_client *c, size_t size, int iters)
{
	if (size == 0 || size > c->max_size || iters < 1)
		return fail(&c->e, EINVAL, "size %zu or count %d out of range", size,
			    iters);
	return 0;
}

/* Stream iters messages, window unacknowledged at a time, each answered by
 * a small ack as a request would be by its reply. */
static int send_bw(struct raw_client *c, size_t size, int iters, double *mbps)
{
	int64_t t0, t1, last;
	int posted = 0, acked = 0, ret, k;
	size_t len;

	for (k = 0; k < c->window; k++)
		raw_pattern_fill(c->local.addr + (size_t)k * c->max_size, size,
				 slot_seed(size, k, 3));
	ret = cli_control(c, RAW_CMD_SENDS, RAW_MODE_ACK, size, (uint64_t)iters);
	if (ret)
		return ret;
	t0 = last = now_ns();
	while (acked < iters) {
		while (posted < iters && posted - acked < c->window) {
			struct raw_ctx *ctx = &c->op[posted % c->window];

			/* The ack may beat the local send completion. */
			if (ctx->busy && (ret = cli_wait_idle(c, &ctx->busy)))
				return ret;
			ret = cli_post_send(
				c, c->local.addr + (size_t)ctx->slot * c->max_size, size,
				c->local.desc, ctx);
			if (ret)
				return ret;
			posted++;
		}
		ret = cli_poll(c);
		if (ret < 0)
			return ret;
		if (ret > 0)
			last = now_ns();
		else if (now_ns() - last > RAW_STALL_NS)
			return fail(&c->e, ETIMEDOUT, "send stream: no ack for 30 s");
		while (c->rxq_count) {
			k = cli_take_rx(c, &len);
			if (len != RAW_ACK_SIZE)
				return fail(&c->e, EPROTO, "ack of %zu bytes", len);
			if ((ret = cli_post_recv(c, k)))
				return ret;
			acked++;
		}
	}
	t1 = now_ns();
	for (k = 0; k < c->window; k++)
		if ((ret = cli_wait_idle(c, &c->op[k].busy)))
			return ret;
	*mbps = (double)size * iters / 1e6 / ((double)(t1 - t0) / 1e9);
	return 0;
}

static int rma_bw(struct raw_client *c, enum raw_op op, size_t size, int iters,
		  double *mbps)
{
	int64_t t0, t1, last;
	int posted = 0, ret, k;
	uint64_t start;

	/* Writes send slot k's pattern to remote slot k; reads fetch it back. */
	for (k = 0; k < c->window; k++) {
		char *p = c->local.addr + (size_t)k * c->max_size;

		raw_pattern_fill(p, size, slot_seed(size, k, 1));
		if (op == RAW_READ) {
			ret = cli_rma_sync(c, RAW_WRITE, &c->local,
					   (size_t)k * c->max_size, size, k);
			if (ret)
				return ret;
			memset(p, 0, size);
		}
	}
	start = c->op_done;
	t0 = last = now_ns();
	while (c->op_done - start < (uint64_t)iters) {
		while (posted < iters && !c->op[posted % c->window].busy) {
			k = posted % c->window;
			ret = cli_post_rma(c, op, &c->local, (size_t)k * c->max_size,
					   size, k, &c->op[k]);
			if (ret)
				return ret;
			posted++;
		}
		ret = cli_poll(c);
		if (ret < 0)
			return ret;
		if (ret > 0)
			last = now_ns();
		else if (now_ns() - last > RAW_STALL_NS)
			return fail(&c->e, ETIMEDOUT, "RMA: no completion for 30 s");
	}
	t1 = now_ns();
	*mbps = (double)size * iters / 1e6 / ((double)(t1 - t0) / 1e9);
	/* What was measured must have moved the right bytes. */
	for (k = 0; k < c->window && k < iters; k += c->window - 1) {
		if (op == RAW_WRITE) {
			memset(c->check.addr, 0, size);
			ret = cli_rma_sync(c, RAW_READ, &c->check, 0, size, k);
			if (!ret)
				ret = check_data(c, "fi_write (read back)", c->check.addr,
						 size, slot_seed(size, k, 1));
		} else {
			ret = check_data(c, "fi_read",
					 c->local.addr + (size_t)k * c->max_size, size,
					 slot_seed(size, k, 1));
		}
		if (ret)
			return ret;
		if (c->window == 1)
			break;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int lat(struct raw_client *c, enum raw_op op, size_t size, int iters, double *usec)
{
	double *v;
	int ret = 0, i, k;
	size_t len;

	v = malloc(sizeof(*v) * (size_t)iters);
	if (!v)
		return fail(&c->e, ENOMEM, "out of memory");
	raw_pattern_fill(c->local.addr, size, slot_seed(size, 0, 2));
	if (op == RAW_SEND)
		ret = cli_control(c, RAW_CMD_SENDS, RAW_MODE_ECHO, size, (uint64_t)iters);
	else if (op == RAW_READ)
		ret = cli_rma_sync(c, RAW_WRITE, &c->local, 0, size, 0);
	for (i = 0; !ret && i < iters; i++) {
		int64_t t0 = now_ns(), t1;

		if (op != RAW_SEND) {
			ret = cli_rma_sync(c, op, &c->local, 0, size, 0);
			t1 = now_ns();
			v[i] = (double)(t1 - t0) / 1e3;
			continue;
		}
		ret = cli_post_send(c, c->local.addr, size, c->local.desc, &c->op[0]);
		if (!ret)
			ret = cli_wait_rx(c);
		if (!ret)
			ret = cli_wait_idle(c, &c->op[0].busy);
		t1 = now_ns();
		if (ret)
			break;
		v[i] = (double)(t1 - t0) / 2e3;
		k = cli_take_rx(c, &len);
		if (len != size)
			ret = fail(&c->e, EPROTO, "echo of %zu bytes, sent %zu", len,
				   size);
		else if (i == 0 || i == iters - 1)
			ret = check_data(c, "send/recv echo",
					 c->rx.addr + (size_t)k * c->max_size, size,
					 slot_seed(size, 0, 2));
		if (!ret)
			ret = cli_post_recv(c, k);
	}
	if (!ret && op != RAW_SEND) {
		if (op == RAW_WRITE) {
			memset(c->check.addr, 0, size);
			ret = cli_rma_sync(c, RAW_READ, &c->check, 0, size, 0);
		}
		if (!ret)
			ret = check_data(
				c, op == RAW_WRITE ? "fi_write (read back)" : "fi_read",
				op == RAW_WRITE ? c->check.addr : c->local.addr, size,
				slot_seed(size, 0, 2));
	}
	if (!ret)
		*usec = median(v, iters);
	free(v);
	return ret;
}

static int verify(struct raw_client *c, enum raw_op op, size_t size, unsigned seed)
{
	uint64_t sd = slot_seed(size, 0, 100 + seed);
	size_t len;
	int ret, k;

	raw_pattern_fill(c->local.addr, size, sd);
	memset(c->check.addr, 0, size);
	switch (op) {
	case RAW_WRITE:
	case RAW_READ:
		/* A write checked by a read, or a read of what a write put there:
		 * either way both must be right for the bytes to come back. */
		ret = cli_rma_sync(c, RAW_WRITE, &c->local, 0, size, 1 % c->window);
		if (!ret)
			ret = cli_rma_sync(c, RAW_READ, &c->check, 0, size,
					   1 % c->window);
		if (!ret)
			ret = check_data(c, op == RAW_WRITE ? "fi_write" : "fi_read",
					 c->check.addr, size, sd);
		return ret;
	case RAW_SEND:
		ret = cli_control(c, RAW_CMD_SENDS, RAW_MODE_ECHO, size, 1);
		if (!ret)
			ret = cli_post_send(c, c->local.addr, size, c->local.desc,
					    &c->op[0]);
		if (!ret)
			ret = cli_wait_rx(c);
		if (!ret)
			ret = cli_wait_idle(c, &c->op[0].busy);
		if (ret)
			return ret;
		k = cli_take_rx(c, &len);
		if (len != size)
			return fail(&c->e, EPROTO, "echo of %zu bytes, sent %zu", len,
				    size);
		ret = check_data(c, "send/recv", c->rx.addr + (size_t)k * c->max_size,
				 size, sd);
		if (!ret)
			ret = cli_post_recv(c, k);
		return ret;
	}
	return fail(&c->e, EINVAL, "unknown op %d", op);
}

static int spin(struct raw_client *c, int on)
{
	return cli_control(c, RAW_CMD_SPIN, (uint32_t)on, 0, 0);
}

int raw_bench_bw(struct raw_client *c, enum raw_op op, size_t size, int iters,
		 double *mbps)
{
	int ret = check_size(c, size, iters);

	if (!ret)
		ret = spin(c, 1);
	if (!ret)
		ret = op == RAW_SEND ? send_bw(c, size, iters, mbps)
				     : rma_bw(c, op, size, iters, mbps);
	if (!ret)
		ret = spin(c, 0);
	return ret;
}

int raw_bench_lat(struct raw_client *c, enum raw_op op, size_t size, int iters,
		  double *usec)
{
	int ret = check_size(c, size, iters);

	if (!ret)
		ret = spin(c, 1);
	if (!ret)
		ret = lat(c, op, size, iters, usec);
	if (!ret)
		ret = spin(c, 0);
	return ret;
}

int raw_verify(struct raw_client *c, enum raw_op op, size_t size, unsigned seed)
{
	int ret = check_size(c, size, 1);

	if (!ret)
		ret = spin(c, 1);
	if (!ret)
		ret = verify(c, op, size, seed);
	if (!ret)
		ret = spin(c, 0);
	return ret;
}
