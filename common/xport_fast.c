/* Fast RDMA Write ("PVFS over InfiniBand", section 4.2).
 *
 * Each side of a connection owns a pre-registered Fast RDMA buffer of
 * fast_slots slots, announced in the handshake. A message of the fast path
 * (header, body, data) is RDMA-written straight into a slot of the peer's
 * buffer with immediate data naming (connection id, slot): the target learns
 * of it from its completion queue, with no extra control message and no
 * registration on the data path. On verbs each such write consumes one of
 * the target's posted receives (FI_RX_CQ_DATA), which the credits account
 * for; the immediate carries only 32 bits.
 *
 * The client allocates every slot, on both sides (xport_client.c): a server
 * slot for a write request (free again when its reply arrives) and one of
 * its own for a read reply (free again once the data is copied out). So
 * slots need no separate return messages.
 *
 * Writes go zero-copy from the user's buffer when it is already registered
 * (a registration cache hit), else with one copy into the send buffer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mraddr.h"
#include "xport_path.h"

/* The user's pieces, if all are in registered memory and fit the iov limit. */
static int zero_copy_iov(struct xp_conn *c, struct xp_call *call, struct iovec *iov,
			 void **desc, size_t max)
{
	struct xp_fabric *fab = c->fab;
	size_t n = 0;

	if ((size_t)call->wr_cnt + 1 > max || !fab->rcache)
		return 0;
	call->priv.regions = calloc((size_t)call->wr_cnt, sizeof(void *));
	if (!call->priv.regions)
		return 0;
	for (int i = 0; i < call->wr_cnt; i++) {
		struct rcache_region *r;

		if (!call->wr_iov[i].iov_len)
			continue;
		if (rcache_find(fab->rcache, call->wr_iov[i].iov_base,
				call->wr_iov[i].iov_len, &r))
			return 0;
		call->priv.regions[call->priv.nregions++] = r;
		iov[1 + n] = call->wr_iov[i];
		desc[1 + n] = ((struct xp_mr *)r->handle)->desc;
		n++;
	}
	return (int)n + 1;
}

int xp_fast_send_call(struct xp_conn *c, struct xp_call *call, struct xp_sbuf *sb,
		      size_t hdr_len)
{
	struct xp_fabric *fab = c->fab;
	struct iovec iov[XP_FAST_IOV_MAX];
	void *desc[XP_FAST_IOV_MAX];
	size_t lim = fab->iov_limit < XP_FAST_IOV_MAX ? fab->iov_limit : XP_FAST_IOV_MAX;
	uint64_t addr;
	int cnt;

	cnt = zero_copy_iov(c, call, iov, desc, lim);
	if (cnt > 1) {
		fab->stats.fast_zero_copy++;
	} else {
		xp_bulk_release(call);
		xp_gather(sb->buf + hdr_len, call->wr_iov, call->wr_cnt);
		cnt = 1;
		hdr_len += call->priv.wr_len;
	}
	iov[0].iov_base = sb->buf;
	iov[0].iov_len = hdr_len;
	desc[0] = c->smr->desc;
	if (xp_remote_target(c->peer_fast.addr,
			     (uint64_t)call->priv.slot * c->peer_fast.slot_size, &addr))
		return -EINVAL;
	return xp_post_fast(c, &sb->op, iov, desc, (size_t)cnt, addr, c->peer_fast.key,
			    xp_imm(c->peer_id, call->priv.slot));
}

int xp_fast_send_reply(struct xp_req *r, size_t msg_len)
{
	struct xp_conn *c = r->conn;
	struct iovec iov = {r->sbuf->buf, msg_len};
	void *desc = c->smr->desc;
	uint64_t addr;

	if (xp_remote_target(c->peer_fast.addr,
			     (uint64_t)r->hdr.slot * c->peer_fast.slot_size, &addr))
		return -EINVAL;
	return xp_post_fast(c, &r->sbuf->op, &iov, &desc, 1, addr, c->peer_fast.key,
			    xp_imm(c->peer_id, r->hdr.slot));
}

struct xp_conn *xp_fast_arrival(struct xp_fabric *fab, uint64_t imm, struct xp_rbuf *rb,
				struct proto_hdr *h, const char **msg, uint32_t *slotp)
{
	uint32_t id = (uint32_t)(imm >> XP_IMM_SLOT_BITS);
	uint32_t slot = (uint32_t)(imm & ((1u << XP_IMM_SLOT_BITS) - 1));
	struct xp_conn *c = xp_conn_by_id(fab, id);

	if (rb && rb->op.conn != c) {
		/* verbs: the receive it consumed tells the true connection. */
		xp_conn_fail(rb->op.conn, -EPROTO,
			     "immediate data names another connection");
		return NULL;
	}
	if (!c || c->state != XP_CONN_UP) {
		log_warn("fast write for unknown or closed connection %u dropped", id);
		return NULL;
	}
	if (rb && xp_post_recv(c, rb))
		return NULL;
	if (slot >= c->nfast) {
		xp_conn_fail(c, -EPROTO, "fast write names a slot out of range");
		return NULL;
	}
	*msg = c->fast + (size_t)slot * c->slot_size;
	if (proto_hdr_decode(*msg, c->slot_size, h) || h->path != XP_PATH_FAST ||
	    h->slot != slot || !proto_data_fits(h, c->slot_size)) {
		xp_conn_fail(c, -EPROTO, "malformed fast message");
		return NULL;
	}
	*slotp = slot;
	return c;
}
