/* The three data paths of "PVFS over InfiniBand", as helpers both sides
 * use (xport_inline.c, xport_fast.c, xport_bulk.c). See xport_domain.h for
 * the layers: these post through the connection layer and call nothing
 * above them; what they finish is queued for the engine. */
#ifndef RPFS_XPORT_PATH_H
#define RPFS_XPORT_PATH_H

#include "xport_conn.h"

/* ---- inline: data inside the message (xport_inline.c) ------------------- */

size_t xp_iov_len(const struct iovec *iov, int cnt);
void xp_gather(char *dst, const struct iovec *iov, int cnt);
void xp_scatter(const struct iovec *iov, int cnt, const char *src, size_t len);
/* Where an inline or fast reply's data starts: after room for the body, so
 * storage can fill it before the body is known. */
static inline size_t xp_reply_data_off(void)
{
	return PROTO_HDR_SIZE + XP_REPLY_BODY_MAX;
}

/* ---- Fast RDMA Write (xport_fast.c) -------------------------------------- */

/* Client: a write call's message (header + body staged in sb, hdr_len
 * bytes, and the call's data) RDMA-written into the server's slot. */
int xp_fast_send_call(struct xp_conn *c, struct xp_call *call, struct xp_sbuf *sb,
		      size_t hdr_len);
/* Server: a read reply (msg_len bytes staged in r->sbuf) written into the
 * client's slot named by the request. */
int xp_fast_send_reply(struct xp_req *r, size_t msg_len);
/* An RDMA write with immediate data landed: find its connection and slot
 * and check the message there. Returns the connection (NULL: dropped or
 * failed) with *h decoded and *msg pointing at the slot. On verbs the write
 * consumed the posted receive rb, which is posted again here. */
struct xp_conn *xp_fast_arrival(struct xp_fabric *fab, uint64_t imm, struct xp_rbuf *rb,
				struct proto_hdr *h, const char **msg, uint32_t *slot);

/* ---- bulk: client memory the server moves itself (xport_bulk.c) ---------- */

/* Client: register the call's pieces through the registration cache. */
int xp_bulk_register(struct xp_conn *c, struct xp_call *call, const struct iovec *iov,
		     int cnt);
/* Client: the descriptors of the registered pieces at buf; returns how many. */
uint32_t xp_bulk_encode(struct xp_conn *c, struct xp_call *call, const struct iovec *iov,
			int cnt, char *buf);
/* Client: drop the registration cache references a call holds. */
void xp_bulk_release(struct xp_call *call);
/* Server: the request's descriptors from its message (lengths summed and
 * checked against data_len). 0 or -EPROTO / -ENOMEM. */
int xp_bulk_decode(struct xp_req *r, const char *msg);
/* Server: move [off, off + len) of the request's data stream between local
 * memory (registered: desc) and the client's described memory; done is
 * queued for the engine when all of it moved (or failed). */
int xp_bulk_move(struct xp_req *r, bool to_client, uint64_t off, void *buf, size_t len,
		 void *desc, xp_done_fn done, void *ctx);
/* Server: pool buffers came free: let waiting pipelines go on. */
void xp_pool_kick(struct xp_fabric *fab);

#endif
