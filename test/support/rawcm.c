/* A raw connection-manager peer for tests: see rawcm.h. */
#include "rawcm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RAWCM_MAX_EPS 16

struct rawcm {
	char provider[32];
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_pep *pep;
	struct fid_ep *eps[RAWCM_MAX_EPS];
	int neps;
};

static int neg(int fi_ret)
{
	return fi_ret < 0 ? fi_ret : -fi_ret;
}

/* The same endpoint shape as rpfs's transport asks for. */
static struct fi_info *hints(const char *prov)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_MSG;
	h->ep_attr->type = FI_EP_MSG;
	h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	h->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup(prov);
	return h;
}

int rawcm_open(const char *provider, struct rawcm **out)
{
	struct fi_eq_attr eqa = {.size = 64, .wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cqa = {.size = 64, .format = FI_CQ_FORMAT_CONTEXT};
	struct rawcm *r = calloc(1, sizeof(*r));
	struct fi_info *h;
	int ret;

	if (!r)
		return -ENOMEM;
	snprintf(r->provider, sizeof(r->provider), "%s", provider);
	h = hints(provider);
	ret = h ? fi_getinfo(FI_VERSION(1, 11), NULL, NULL, 0, h, &r->info) : -FI_ENOMEM;
	fi_freeinfo(h);
	if (!ret)
		ret = fi_fabric(r->info->fabric_attr, &r->fabric, NULL);
	if (!ret)
		ret = fi_domain(r->fabric, r->info, &r->domain, NULL);
	if (!ret)
		ret = fi_eq_open(r->fabric, &eqa, &r->eq, NULL);
	if (!ret)
		ret = fi_cq_open(r->domain, &cqa, &r->cq, NULL);
	if (ret) {
		rawcm_close(r);
		return neg(ret);
	}
	*out = r;
	return 0;
}

void rawcm_close(struct rawcm *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->neps; i++)
		fi_close(&r->eps[i]->fid);
	if (r->pep)
		fi_close(&r->pep->fid);
	if (r->cq)
		fi_close(&r->cq->fid);
	if (r->eq)
		fi_close(&r->eq->fid);
	if (r->domain)
		fi_close(&r->domain->fid);
	if (r->fabric)
		fi_close(&r->fabric->fid);
	fi_freeinfo(r->info);
	free(r);
}

static int new_ep(struct rawcm *r, struct fi_info *info, struct fid_ep **out)
{
	int ret;

	if (r->neps == RAWCM_MAX_EPS)
		return -ENOSPC;
	ret = fi_endpoint(r->domain, info, out, NULL);
	if (ret)
		return neg(ret);
	r->eps[r->neps++] = *out;
	ret = fi_ep_bind(*out, &r->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(*out, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(*out);
	return neg(ret);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Next event within ms: its type (or -FI_EAVAIL with err filled). */
static int next_event(struct rawcm *r, int ms, uint8_t *buf, size_t len,
		      struct fi_eq_err_entry *err, ssize_t *got)
{
	uint32_t event;
	ssize_t n = fi_eq_sread(r->eq, &event, buf, len, ms, 0);

	if (n == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		fi_eq_readerr(r->eq, err, 0);
		return -FI_EAVAIL;
	}
	if (n < 0)
		return n == -FI_EAGAIN ? -ETIMEDOUT : (int)n;
	*got = n;
	return (int)event;
}

int rawcm_connect(struct rawcm *r, const char *host, const char *port, const void *data,
		  size_t len, int ms, void *ans, size_t *anslen)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 512];
	struct fi_eq_err_entry err;
	struct fi_info *h = hints(r->provider), *info = NULL;
	struct fid_ep *ep;
	int64_t end = now_ms() + ms;
	size_t max = anslen ? *anslen : 0;
	ssize_t got = 0;
	int ret;

	if (anslen)
		*anslen = 0;
	ret = h ? fi_getinfo(FI_VERSION(1, 11), host, port, 0, h, &info) : -FI_ENOMEM;
	fi_freeinfo(h);
	if (ret)
		return neg(ret);
	ret = new_ep(r, info, &ep);
	if (!ret)
		ret = neg(fi_connect(ep, info->dest_addr, data, len));
	fi_freeinfo(info);
	while (!ret) {
		int left = (int)(end - now_ms());
		int ev = next_event(r, left > 0 ? left : 0, buf, sizeof(buf), &err, &got);

		if (ev == FI_CONNECTED) {
			size_t n = (size_t)got - sizeof(struct fi_eq_cm_entry);

			if (ans && n <= max) {
				memcpy(ans, buf + sizeof(struct fi_eq_cm_entry), n);
				*anslen = n;
			}
			return 1;
		}
		if (ev == -FI_EAVAIL) {
			if (ans && err.err_data && err.err_data_size <= max) {
				memcpy(ans, err.err_data, err.err_data_size);
				*anslen = err.err_data_size;
			}
			return 0;
		}
		if (ev < 0)
			return ev;
	}
	return ret;
}

int rawcm_wait_shutdown(struct rawcm *r, int ms)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_err_entry err;
	int64_t end = now_ms() + ms;
	ssize_t got;

	for (;;) {
		struct fi_cq_entry ce;
		int left = (int)(end - now_ms());
		int ev;

		if (left <= 0)
			return -ETIMEDOUT;
		/* Software providers notice a closed connection while their
		 * endpoints make progress, which polling the CQ drives. */
		fi_cq_read(r->cq, &ce, 1);
		ev = next_event(r, left < 20 ? left : 20, buf, sizeof(buf), &err, &got);
		if (ev == FI_SHUTDOWN || ev == -FI_EAVAIL)
			return 0;
	}
}

int rawcm_listen(struct rawcm *r, const char *host, int *port)
{
	struct fi_info *h = hints(r->provider), *info = NULL;
	struct sockaddr_storage ss;
	size_t sslen = sizeof(ss);
	int ret;

	ret = h ? fi_getinfo(FI_VERSION(1, 11), host, "0", FI_SOURCE, h, &info)
		: -FI_ENOMEM;
	fi_freeinfo(h);
	if (!ret)
		ret = fi_passive_ep(r->fabric, info, &r->pep, NULL);
	fi_freeinfo(info);
	if (!ret)
		ret = fi_pep_bind(r->pep, &r->eq->fid, 0);
	if (!ret)
		ret = fi_listen(r->pep);
	if (!ret)
		ret = fi_getname(&r->pep->fid, &ss, &sslen);
	if (ret)
		return neg(ret);
	*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

int rawcm_serve(struct rawcm *r, const void *acc, size_t len, int ms)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 512];
	struct fi_eq_err_entry err;
	int64_t end = now_ms() + ms;
	int accepted = 0;
	ssize_t got;

	for (;;) {
		int left = (int)(end - now_ms());
		struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
		struct fid_ep *ep;
		int ev;

		if (left <= 0)
			return accepted;
		ev = next_event(r, left, buf, sizeof(buf), &err, &got);
		if (ev != FI_CONNREQ)
			continue;
		if (!new_ep(r, e->info, &ep) && !fi_accept(ep, acc, len))
			accepted++;
		fi_freeinfo(e->info);
	}
}
