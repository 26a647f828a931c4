/* Transport wire format: encoders and bounds-checked decoders (proto.h). */
#include "proto.h"
#include "wire.h"

#include <errno.h>
#include <string.h>

#include "params.h"

/* Header layout (offsets):
 *  0 magic u32 | 4 version u16 | 6 type u8 | 7 path u8 | 8 dir u8 | 9 zero |
 * 10 data_off u16
 * 12 tag | 16 credits | 20 acks | 24 body_len | 28 ndesc | 32 slot | 36 status
 * 40 data_len u64 */
void proto_hdr_encode(void *buf, const struct proto_hdr *h)
{
	uint8_t *p = buf;

	memset(p, 0, PROTO_HDR_SIZE);
	put32(p + 0, PROTO_MAGIC);
	put16(p + 4, PROTO_VERSION);
	put8(p + 6, h->type);
	put8(p + 7, h->path);
	put8(p + 8, h->dir);
	put16(p + 10, h->data_off);
	put32(p + 12, h->tag);
	put32(p + 16, h->credits);
	put32(p + 20, h->acks);
	put32(p + 24, h->body_len);
	put32(p + 28, h->ndesc);
	put32(p + 32, h->slot);
	put32(p + 36, (uint32_t)h->status);
	put64(p + 40, h->data_len);
}

int proto_hdr_decode(const void *buf, size_t len, struct proto_hdr *h)
{
	const uint8_t *p = buf;

	if (len < PROTO_HDR_SIZE || get32(p) != PROTO_MAGIC ||
	    get16(p + 4) != PROTO_VERSION)
		return -EPROTO;
	h->type = p[6];
	h->path = p[7];
	h->dir = p[8];
	h->data_off = get16(p + 10);
	h->tag = get32(p + 12);
	h->credits = get32(p + 16);
	h->acks = get32(p + 20);
	h->body_len = get32(p + 24);
	h->ndesc = get32(p + 28);
	h->slot = get32(p + 32);
	h->status = (int32_t)get32(p + 36);
	h->data_len = get64(p + 40);
	if (h->type < PROTO_HELLO || h->type > PROTO_CREDIT || h->path > XP_PATH_BULK ||
	    h->dir > PROTO_DIR_READ)
		return -EPROTO;
	/* 64-bit arithmetic: body_len and ndesc are 32-bit and cannot overflow it. */
	if ((uint64_t)PROTO_HDR_SIZE + h->body_len +
		    (uint64_t)h->ndesc * PROTO_DESC_SIZE >
	    len)
		return -EPROTO;
	return 0;
}

void proto_desc_encode(void *buf, const struct proto_desc *d)
{
	uint8_t *p = buf;

	put64(p, d->addr);
	put64(p + 8, d->len);
	put64(p + 16, d->key);
}

void proto_desc_decode(const void *buf, struct proto_desc *d)
{
	const uint8_t *p = buf;

	d->addr = get64(p);
	d->len = get64(p + 8);
	d->key = get64(p + 16);
}

static void fastbuf_encode(uint8_t *p, const struct proto_fastbuf *f)
{
	put64(p, f->addr);
	put64(p + 8, f->key);
	put32(p + 16, f->slot_size);
	put32(p + 20, f->slot_count);
}

static void fastbuf_decode(const uint8_t *p, struct proto_fastbuf *f)
{
	f->addr = get64(p);
	f->key = get64(p + 8);
	f->slot_size = get32(p + 16);
	f->slot_count = get32(p + 20);
}

/* Fast buffers no larger than 16 MiB slots and 4096 slots: a peer cannot make
 * us index outside what a sane configuration announces. */
static int fastbuf_ok(const struct proto_fastbuf *f)
{
	return f->slot_size >= PROTO_HDR_SIZE && f->slot_size <= (16u << 20) + 4096 &&
	       f->slot_count >= 1 && f->slot_count <= 4096;
}

/* HELLO: 0 conn_id | 4 recv_count | 8 recv_size | 12 max_requests |
 * 16 fastbuf (24) | 40 mac (16) | 56 app_len | 60 zero (20) | app data */
void proto_hello_encode(void *buf, const struct proto_hello *m)
{
	uint8_t *p = buf;

	memset(p, 0, PROTO_HELLO_SIZE);
	put32(p, m->conn_id);
	put32(p + 4, m->recv_count);
	put32(p + 8, m->recv_size);
	put32(p + 12, m->max_requests);
	fastbuf_encode(p + 16, &m->fast);
	memcpy(p + 40, m->mac, PROTO_MAC_SIZE);
	put32(p + 56, m->app_len);
}

int proto_hello_decode(const void *buf, size_t len, struct proto_hello *m)
{
	const uint8_t *p = buf;

	if (len < PROTO_HELLO_SIZE)
		return -EPROTO;
	m->conn_id = get32(p);
	m->recv_count = get32(p + 4);
	m->recv_size = get32(p + 8);
	m->max_requests = get32(p + 12);
	fastbuf_decode(p + 16, &m->fast);
	memcpy(m->mac, p + 40, PROTO_MAC_SIZE);
	m->app_len = get32(p + 56);
	if (m->max_requests < 1 || m->recv_count <= m->max_requests ||
	    m->recv_count > 4096 || m->recv_size < PROTO_HDR_SIZE + 64 ||
	    m->recv_size > (16u << 20) || !fastbuf_ok(&m->fast) ||
	    m->app_len > PROTO_APP_MAX || m->app_len > len - PROTO_HELLO_SIZE)
		return -EPROTO;
	return 0;
}

/* HELLO_REP: 0 status | 4 conn_id | 8 credits | 12 recv_size | 16 fastbuf (24) |
 * 40 max_requests | 44 app_len | 48 mac (16) | app data */
void proto_hello_rep_encode(void *buf, const struct proto_hello_rep *m)
{
	uint8_t *p = buf;

	memset(p, 0, PROTO_HELLO_REP_SIZE);
	put32(p, (uint32_t)m->status);
	put32(p + 4, m->conn_id);
	put32(p + 8, m->credits);
	put32(p + 12, m->recv_size);
	fastbuf_encode(p + 16, &m->fast);
	put32(p + 40, m->max_requests);
	put32(p + 44, m->app_len);
	memcpy(p + 48, m->mac, PROTO_MAC_SIZE);
}

int proto_hello_rep_decode(const void *buf, size_t len, struct proto_hello_rep *m)
{
	const uint8_t *p = buf;

	if (len < PROTO_HELLO_REP_SIZE)
		return -EPROTO;
	m->status = (int32_t)get32(p);
	m->conn_id = get32(p + 4);
	m->credits = get32(p + 8);
	m->recv_size = get32(p + 12);
	fastbuf_decode(p + 16, &m->fast);
	m->max_requests = get32(p + 40);
	m->app_len = get32(p + 44);
	memcpy(m->mac, p + 48, PROTO_MAC_SIZE);
	if (m->app_len > PROTO_APP_MAX || m->app_len > len - PROTO_HELLO_REP_SIZE ||
	    m->status > 0)
		return -EPROTO;
	if (m->status)
		return 0;
	if (m->credits < 2 || m->credits > 4096 || m->recv_size < PROTO_HDR_SIZE + 64 ||
	    m->recv_size > (16u << 20) || !fastbuf_ok(&m->fast) || m->max_requests < 1 ||
	    m->max_requests > 4096)
		return -EPROTO;
	return 0;
}

/* CM request: 0 magic | 4 version u16 | 6 zero | 8 nonce (16) | 24 time_s |
 * 32 mac (16) */
void proto_cm_req_encode(void *buf, const struct proto_cm_req *m)
{
	uint8_t *p = buf;

	memset(p, 0, PROTO_CM_REQ_SIZE);
	put32(p, m->magic);
	put16(p + 4, m->version);
	memcpy(p + 8, m->nonce, PROTO_NONCE_SIZE);
	put64(p + 24, m->time_s);
	memcpy(p + 32, m->mac, PROTO_MAC_SIZE);
}

int proto_cm_req_decode(const void *buf, size_t len, struct proto_cm_req *m)
{
	const uint8_t *p = buf;

	if (!buf || len < PROTO_CM_REQ_SIZE || get32(p) != PROTO_MAGIC)
		return -EPROTO;
	m->magic = get32(p);
	m->version = get16(p + 4);
	memcpy(m->nonce, p + 8, PROTO_NONCE_SIZE);
	m->time_s = get64(p + 24);
	memcpy(m->mac, p + 32, PROTO_MAC_SIZE);
	return 0;
}

/* CM accept: 0 magic | 4 version u16 | 6 zero | 8 nonce (16) | 24 mac (16) */
void proto_cm_acc_encode(void *buf, const struct proto_cm_acc *m)
{
	uint8_t *p = buf;

	memset(p, 0, PROTO_CM_ACC_SIZE);
	put32(p, m->magic);
	put16(p + 4, m->version);
	memcpy(p + 8, m->nonce, PROTO_NONCE_SIZE);
	memcpy(p + 24, m->mac, PROTO_MAC_SIZE);
}

int proto_cm_acc_decode(const void *buf, size_t len, struct proto_cm_acc *m)
{
	const uint8_t *p = buf;

	if (!buf || len < PROTO_CM_ACC_SIZE || get32(p) != PROTO_MAGIC)
		return -EPROTO;
	m->magic = get32(p);
	m->version = get16(p + 4);
	memcpy(m->nonce, p + 8, PROTO_NONCE_SIZE);
	memcpy(m->mac, p + 24, PROTO_MAC_SIZE);
	return 0;
}

/* CM reject: 0 magic | 4 version u16 | 6 zero | 8 status (s32) */
void proto_cm_rej_encode(void *buf, const struct proto_cm_rej *m)
{
	uint8_t *p = buf;

	memset(p, 0, PROTO_CM_REJ_SIZE);
	put32(p, m->magic);
	put16(p + 4, m->version);
	put32(p + 8, (uint32_t)m->status);
}

int proto_cm_rej_decode(const void *buf, size_t len, struct proto_cm_rej *m)
{
	const uint8_t *p = buf;

	if (!buf || len < PROTO_CM_REJ_SIZE || get32(p) != PROTO_MAGIC)
		return -EPROTO;
	m->magic = get32(p);
	m->version = get16(p + 4);
	m->status = (int32_t)get32(p + 8);
	if (m->status >= 0 || m->status < -4095)
		return -EPROTO;
	return 0;
}
