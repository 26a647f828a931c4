/* List I/O: the core of the data path ("one request per server": List I/O in
 * docs/design/file-service.md).
 *
 * An access is a list of memory pieces and a list of file pieces of the
 * same total length; byte k of the memory stream goes to byte k of the file
 * stream. Both lists are walked in step, each overlap is cut at stripe
 * boundaries (layout_split), and every resulting piece, now contiguous in
 * memory, in the file, and on one server slot, is appended to that slot's
 * request: a datafile segment (merged with the previous one when adjacent)
 * and a memory piece (likewise merged). The server moves the data stream of
 * a request, which is its segments' bytes in order, to or from the memory
 * pieces in the same order, so a noncontiguous MPI access costs one request
 * per server however many pieces it has.
 *
 * A request is split over several calls to the same server only when it
 * must be: more segments than one request body holds (rpc_io_max_segs), more
 * memory pieces than a bulk call can describe (xp_call_max_desc), or more
 * data than RPFSC_IO_CALL_MAX. Every call to every server is started before
 * any is waited for, so servers work in parallel; the transport picks each
 * call's path (inline, Fast RDMA Write, bulk) by its size. As in MPI, file
 * pieces that overlap within one write land in an unspecified order.
 *
 * A server that finds damaged data (a block failing its checksum) answers
 * -EBADMSG with the datafile offset; the message turns it into the file's
 * own offset through the layout, so it names server, file and offset. */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_priv.h"
#include "log.h"

/* One call: a run of a slot's segments and memory pieces. */
struct iochunk {
	uint32_t slot;
	size_t seg0, nseg;
	size_t iov0, niov;
	uint64_t bytes;
};

/* Everything bound for one slot of the layout. */
struct slotlist {
	int srv;	   /* config index, -1 until first used */
	bool lost;	   /* an ec data cell's server down: read by decoding */
	bool suspect_only; /* lost as known not to answer, though connected */
	struct rpfsc_link *link;
	struct rpc_seg *segs;
	size_t nseg, capseg;
	struct iovec *iov;
	size_t niov, capiov;
	size_t cur; /* open chunk (index into io->ch), or NO_CHUNK */
};
#define NO_CHUNK SIZE_MAX

struct rpfs_request {
	struct rpfs_file *f;
	bool write;
	uint64_t total;
	struct slotlist *sl;
	uint32_t nslots;
	struct iochunk *ch;
	size_t nch, capch;
	struct xp_call *calls; /* one per chunk, stable while in flight */
	uint8_t (*reps)[16];   /* their reply bodies (an error's detail) */
	uint8_t *bodies;
	size_t nstarted; /* calls[0 .. nstarted) are in flight or done */
	size_t ntested;	 /* calls[0 .. ntested) are known done */
	size_t bytecap;	 /* data per call */
	bool live;	 /* on the client's list (started) */
	struct list_node node;
	struct xp_mem_hold *hold; /* the whole buffers, registered (bulk) */
	int hold_err;		  /* posted: the progress thread's registration */
	struct rpfsc_view view;	  /* a mirrored file's, as the request began */
};

static bool stale_in(const struct rpfsc_view *v, uint32_t slot)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (v->stale[i] == slot)
			return true;
	return false;
}

/* Did a call fail for want of its server (gone, stopped, cut off), rather
 * than with the server's answer? */
static bool server_lost(struct rpfsc_link *link, int ret)
{
	return (link && xp_conn_error(link->conn)) || rpfsc_lost_errno(ret);
}

/* The copies a write to copy slot cs of a mirrored file names: every other
 * copy of its data slot, the stale ones flagged (not written to), and
 * those whose servers are known not to answer (marked stale at once). */
static uint32_t copies_of(struct rpfs_client *c, const struct rpfs_layout *l,
			  const struct rpfsc_view *v, uint32_t cs, struct rpc_copy *cp)
{
	uint32_t nc = 0;

	for (uint32_t k = 0; k < layout_copies(l) && nc < RPC_COPIES_MAX; k++) {
		uint32_t other = layout_copy_slot(l, cs, k);

		if (other == cs)
			continue;
		cp[nc].slot = other;
		cp[nc].io = layout_server(l, other);
		cp[nc].flags = stale_in(v, other) ? RPC_COPY_STALE : 0;
		if (!cp[nc].flags && c &&
		    rpfsc_server_suspect(c, rpfsc_io_srv(c, cp[nc].io)))
			cp[nc].flags = RPC_COPY_DOWN;
		nc++;
	}
	return nc;
}

static int oom(struct rpfs_request *io)
{
	rpfsc_err_set("%s: out of memory", io->f->path);
	return -ENOMEM;
}

/* Room for need elements in p; the (possibly moved) array, or NULL. */
static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return p;
	while (n < need)
		n *= 2;
	np = realloc(p, n * size);
	if (np)
		*cap = n;
	return np;
}

/* A write of a mirrored file goes to each slot's primary with the list of
 * its copies (RPC_IO_COPIES): the body's extra bytes. */
static bool mirrored(const struct rpfs_request *io)
{
	return layout_copies(&io->f->attr.layout) > 1;
}

/* A write of an erasure-coded file goes to each data cell's server with
 * its group's parity members (RPC_IO_PARITY), which it sends the deltas. */
static bool coded(const struct rpfs_request *io)
{
	return io->f->attr.layout.kind == RPFS_LAYOUT_EC;
}

static size_t body_extra(const struct rpfs_request *io)
{
	return io->write && (mirrored(io) || coded(io)) ? RPC_IO_COPIES_ROOM : 0;
}

/* The parity members of data slot's group, in parity index order (what an
 * RPC_IO_PARITY write names): P of them, the stale ones flagged (not
 * written to, unless being resynced), and those whose servers are known
 * not to answer (the data server marks them stale at once rather than
 * wait for its own timeout). */
static uint32_t parity_of(struct rpfs_client *c, const struct rpfs_layout *l,
			  const struct rpfsc_view *v, uint32_t slot, struct rpc_copy *cp)
{
	_Static_assert(RPFS_COPIES_MAX - 1 <= RPC_COPIES_MAX,
		       "layout_ec's check keeps P within a write's list");
	uint32_t g = layout_ec_group(l, slot);

	for (uint32_t j = 0; j < l->parity_cells; j++) {
		cp[j].slot = layout_ec_member(l, g, l->data_cells + j);
		cp[j].io = layout_server(l, cp[j].slot);
		cp[j].flags = stale_in(v, cp[j].slot) ? RPC_COPY_STALE
			      : rpfsc_server_suspect(c, rpfsc_io_srv(c, cp[j].io))
				      ? RPC_COPY_DOWN
				      : 0;
	}
	return l->parity_cells;
}

/* Would a call of nseg segments, niov memory pieces and bytes data go? */
static bool call_fits(struct rpfs_request *io, struct slotlist *sl, size_t nseg,
		      size_t niov, uint64_t bytes)
{
	struct rpfs_client *c = io->f->c;
	const struct xp_params *p = &c->cfg.xport;
	bool bulk = p->force_path == XP_PATH_BULK ||
		    (p->force_path == XP_PATH_AUTO && bytes > p->fast_max);
	int maxdesc;

	if (nseg > c->io_max_segs || bytes > io->bytecap)
		return false;
	if (!bulk || sl->lost)
		return true; /* (a lost cell's chunks are decoded, not called) */
	/* Bulk calls describe each memory piece in the request message. */
	maxdesc = xp_call_max_desc(sl->link->conn,
				   c->io_hdr + nseg * RPC_SEG_SIZE + body_extra(io));
	return maxdesc > 0 && niov <= (size_t)maxdesc;
}

static int open_chunk(struct rpfs_request *io, struct slotlist *sl, uint32_t slot)
{
	struct iochunk *ch = grow(io->ch, &io->capch, io->nch + 1, sizeof(*io->ch));

	if (!ch)
		return -ENOMEM;
	io->ch = ch;
	ch = &io->ch[io->nch];
	ch->slot = slot;
	ch->seg0 = sl->nseg;
	ch->nseg = 0;
	ch->iov0 = sl->niov;
	ch->niov = 0;
	ch->bytes = 0;
	sl->cur = io->nch++;
	return 0;
}

static int slot_get(struct rpfs_request *io, uint32_t slot, struct slotlist **out)
{
	struct rpfs_client *c = io->f->c;
	struct slotlist *sl = &io->sl[slot];
	int ret;

	if (sl->srv < 0 && !sl->lost) {
		sl->srv = rpfsc_io_srv(c, layout_server(&io->f->attr.layout, slot));
		if (sl->srv < 0) {
			rpfsc_err_set("%s: layout names I/O server %u of %u", io->f->path,
				      layout_server(&io->f->attr.layout, slot),
				      c->cfg.nio);
			return -EINVAL;
		}
		/* Connect now: how many pieces a bulk call holds depends on
		 * the server's receive buffers. An ec data cell whose server
		 * can't be reached, or is known not to answer (stopped: a
		 * call would wait timeout_ms), is read by decoding
		 * (io_launch_degraded). */
		ret = rpfsc_link_get(c, sl->srv, RPFSC_IO, &sl->link);
		if (coded(io) && !io->write &&
		    ((ret && server_lost(NULL, ret)) ||
		     (!ret && rpfsc_server_suspect(c, sl->srv)))) {
			sl->suspect_only = !ret;
			if (!ret)
				rpfsc_link_put(c, sl->srv, sl->link);
			sl->link = NULL;
			sl->lost = true;
			*out = sl;
			return 0;
		}
		if (ret) {
			sl->srv = -1;
			return ret;
		}
	}
	*out = sl;
	return 0;
}

/* Append len bytes at datafile offset local of slot, from/to memory addr. */
static int add_piece(struct rpfs_request *io, uint32_t slot, uint64_t local, char *addr,
		     uint64_t len)
{
	struct slotlist *sl;
	int ret = slot_get(io, slot, &sl);

	if (ret)
		return ret;
	while (len) {
		struct iochunk *ch;
		struct rpc_seg *ls;
		struct iovec *li;
		bool mseg, miov;
		uint64_t n;

		if (sl->cur == NO_CHUNK && open_chunk(io, sl, slot))
			return oom(io);
		ch = &io->ch[sl->cur];
		if (ch->bytes >= io->bytecap) {
			sl->cur = NO_CHUNK;
			continue;
		}
		n = io->bytecap - ch->bytes < len ? io->bytecap - ch->bytes : len;
		ls = ch->nseg ? &sl->segs[sl->nseg - 1] : NULL;
		li = ch->niov ? &sl->iov[sl->niov - 1] : NULL;
		mseg = ls && ls->off + ls->len == local;
		miov = li && (char *)li->iov_base + li->iov_len == addr;
		if (!call_fits(io, sl, ch->nseg + !mseg, ch->niov + !miov,
			       ch->bytes + n)) {
			if (!ch->nseg) {
				rpfsc_err_set("%s: %s: one piece does not fit a request",
					      rpfsc_desc(io->f->c, sl->srv, RPFSC_IO),
					      io->f->path);
				return -E2BIG;
			}
			sl->cur = NO_CHUNK;
			continue;
		}
		if (mseg) {
			ls->len += n;
		} else {
			struct rpc_seg *ns =
				grow(sl->segs, &sl->capseg, sl->nseg + 1, sizeof(*ns));

			if (!ns)
				return oom(io);
			sl->segs = ns;
			sl->segs[sl->nseg].off = local;
			sl->segs[sl->nseg].len = n;
			sl->nseg++;
			ch->nseg++;
		}
		if (miov) {
			li->iov_len += n;
		} else {
			struct iovec *ni =
				grow(sl->iov, &sl->capiov, sl->niov + 1, sizeof(*ni));

			if (!ni)
				return oom(io);
			sl->iov = ni;
			sl->iov[sl->niov].iov_base = addr;
			sl->iov[sl->niov].iov_len = n;
			sl->niov++;
			ch->niov++;
		}
		ch->bytes += n;
		local += n;
		addr += n;
		len -= n;
	}
	return 0;
}

/* The first copy of data slot, from copy first on in turn, that is not
 * stale, whose server is not known to be down (then one known down) and
 * can be connected to (*out). Fails only when none can. */
static int pick_copy(struct rpfs_request *io, uint32_t slot, uint32_t first,
		     uint32_t *out)
{
	const struct rpfs_layout *l = &io->f->attr.layout;
	uint32_t n = layout_copies(l);
	int err = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < n; k++) {
			uint32_t cs = layout_copy_slot(l, slot, (first + k) % n);
			struct slotlist *sl = &io->sl[cs];
			int srv = rpfsc_io_srv(io->f->c, layout_server(l, cs));
			bool suspect = srv >= 0 && rpfsc_server_suspect(io->f->c, srv);
			int ret;

			if (suspect != (pass == 1) || stale_in(&io->view, cs))
				continue;
			ret = sl->srv >= 0 ? 0 : slot_get(io, cs, &sl);
			if (!ret) {
				*out = cs;
				return 0;
			}
			if (!err)
				err = ret;
		}
	}
	if (!err) {
		rpfsc_err_set("%s: every copy of stripe slot %u is stale (missed writes)",
			      io->f->path, slot);
		err = -EIO;
	}
	return err;
}

/* The copy of data slot a read of a mirrored file takes (*out): copies
 * take turns by row of stripe units, so a large read draws on every copy. */
static int read_slot(struct rpfs_request *io, uint32_t slot, uint64_t local,
		     uint32_t *out)
{
	const struct rpfs_layout *l = &io->f->attr.layout;

	return pick_copy(io, slot,
			 (uint32_t)((local / l->stripe_unit + slot) % layout_copies(l)),
			 out);
}

/* The copy of data slot a write of a mirrored file goes to (*out), its
 * primary for this write: the first that pick_copy takes from copy 0.
 * Every client with the same view picks the same one, so one server orders
 * a slot's writes. */
static int write_slot(struct rpfs_request *io, uint32_t slot, uint32_t *out)
{
	return pick_copy(io, slot, 0, out);
}

/* Walk the memory and file lists in step and distribute the pieces. */
static int map_lists(struct rpfs_request *io, const struct iovec *mem, int nmem,
		     const struct rpfs_seg *file, int nfile)
{
	const struct rpfs_layout *l = &io->f->attr.layout;
	struct rpfs_piece pc[64];
	int mi = 0;
	size_t moff = 0;

	for (int fi = 0; fi < nfile; fi++) {
		uint64_t fpos = file[fi].off, flen = file[fi].len;

		while (flen) {
			uint64_t n, done = 0;
			char *base;

			while (mi < nmem && moff == mem[mi].iov_len) {
				mi++;
				moff = 0;
			}
			/* Totals were checked, so the memory can't run out first. */
			assert(mi < nmem);
			n = mem[mi].iov_len - moff < flen ? mem[mi].iov_len - moff : flen;
			base = (char *)mem[mi].iov_base + moff;
			while (done < n) {
				uint64_t d;
				size_t k = layout_split(l, fpos + done, n - done, pc, 64,
							&d);

				for (size_t i = 0; i < k; i++) {
					uint32_t slot = pc[i].slot;
					int ret = 0;

					if (!io->write && mirrored(io))
						ret = read_slot(io, slot, pc[i].local_off,
								&slot);
					else if (mirrored(io))
						ret = write_slot(io, slot, &slot);
					if (!ret)
						ret = add_piece(
							io, slot, pc[i].local_off,
							base + (pc[i].logical_off - fpos),
							pc[i].len);
					if (ret)
						return ret;
				}
				/* check_lists() ruled out extents past 2^64. */
				assert(k > 0);
				done += d;
			}
			fpos += n;
			flen -= n;
			moff += (size_t)n;
		}
	}
	return 0;
}

static int check_lists(struct rpfs_request *io, const struct iovec *mem, int nmem,
		       const struct rpfs_seg *file, int nfile)
{
	uint64_t mt = 0, ft = 0;

	if (nmem < 0 || nfile < 0 || (nmem && !mem) || (nfile && !file))
		goto inval;
	for (int i = 0; i < nmem; i++) {
		if (mem[i].iov_len > SSIZE_MAX - mt)
			goto inval;
		mt += mem[i].iov_len;
	}
	for (int i = 0; i < nfile; i++) {
		if (file[i].len > UINT64_MAX - file[i].off ||
		    file[i].len > SSIZE_MAX - ft)
			goto inval;
		/* The largest file is 2^63 - 1 bytes, as for every Linux file
		 * system; a striped datafile holds only part of an offset, so
		 * its server cannot see this. */
		if (file[i].len && file[i].off + file[i].len > (uint64_t)INT64_MAX) {
			rpfsc_err_set("%s: bytes %llu to %llu are past the largest file "
				      "offset (2^63 - 1)",
				      io->f->path, (unsigned long long)file[i].off,
				      (unsigned long long)(file[i].off + file[i].len));
			return -EFBIG;
		}
		ft += file[i].len;
	}
	if (mt != ft) {
		rpfsc_err_set("%s: memory list has %lu bytes, file list %lu", io->f->path,
			      (unsigned long)mt, (unsigned long)ft);
		return -EINVAL;
	}
	io->total = mt;
	return 0;
inval:
	rpfsc_err_set(
		"%s: invalid memory or file list (negative count, or lengths beyond the 64-bit range)",
		io->f->path);
	return -EINVAL;
}

/* Started: on the client's list, holding a reference to its file. */
static void io_make_live(struct rpfs_request *io)
{
	struct rpfs_client *c = io->f->c;

	pthread_mutex_lock(&c->live_lock);
	io->f->refs++;
	list_push_back(&c->live, &io->node);
	io->live = true;
	pthread_mutex_unlock(&c->live_lock);
}

static void io_free(struct rpfs_request *io)
{
	struct rpfs_client *c = io->f->c;

	if (io->live) {
		pthread_mutex_lock(&c->live_lock);
		list_remove(&io->node);
		rpfsc_file_put_locked(io->f);
		pthread_mutex_unlock(&c->live_lock);
	}

	for (uint32_t s = 0; s < io->nslots; s++) {
		struct slotlist *sl = &io->sl[s];

		if (sl->link)
			rpfsc_link_put(c, sl->srv, sl->link);
		free(sl->segs);
		free(sl->iov);
	}
	free(io->sl);
	/* after the calls, whose pieces held references of their own */
	xp_mem_release(c->fab, io->hold);
	free(io->ch);
	free(io->calls);
	free(io->reps);
	free(io->bodies);
	free(io);
}

/* Data read past what the server produced reads as zeros (rpfs.h). */
static void zero_tail(const struct iovec *iov, size_t cnt, size_t skip)
{
	for (size_t i = 0; i < cnt; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		memset((char *)iov[i].iov_base + skip, 0, iov[i].iov_len - skip);
		skip = 0;
	}
}

/* One I/O call of body (len bytes) to server srv, waited for: data from
 * wr or into rd, the reply into rep (16 bytes). *rd_len the bytes read.
 * A failure other than -RPC_EBEHIND has its message set. */
int rpfsc_call_io(struct rpfs_file *f, int srv, const void *body, int len,
		  const struct iovec *wr, int nwr, const struct iovec *rd, int nrd,
		  uint8_t rep[16], size_t *rep_len, uint64_t *rd_len)
{
	struct rpfs_client *c = f->c;
	struct rpfsc_link *link = NULL;
	struct xp_call call;
	int ret = len < 0 ? len : rpfsc_link_get(c, srv, RPFSC_IO, &link);

	*rep_len = 0;
	*rd_len = 0;
	if (ret)
		return ret;
	memset(&call, 0, sizeof(call));
	call.req = body;
	call.req_len = (size_t)len;
	call.rep = rep;
	call.rep_max = 16;
	call.wr_iov = wr;
	call.wr_cnt = nwr;
	call.rd_iov = rd;
	call.rd_cnt = nrd;
	ret = xp_call_start(link->conn, &call);
	if (!ret)
		ret = xp_call_wait(&call);
	if (ret && ret != -RPC_EBEHIND)
		ret = rpfsc_call_error(c, srv, RPFSC_IO, link, f->path, ret);
	*rep_len = call.rep_len;
	*rd_len = call.rd_len;
	rpfsc_link_put(c, srv, link);
	return ret;
}

/* A read of a mirrored file whose call i failed (the copy's server gone,
 * stopped, cut off, or a damaged block): the same segments from the slot's
 * other copies, one after the other, into the same memory. 0 when one
 * answered (calls[i] then holds its result). */
int rpfsc_read_slot(struct rpfs_file *f, uint32_t slot, const struct rpc_seg *segs,
		    uint32_t nseg, const struct iovec *iov, int niov, uint64_t *got)
{
	struct rpfs_client *c = f->c;
	int srv = rpfsc_io_srv(c, layout_server(&f->attr.layout, slot));
	size_t room = c->io_hdr + nseg * RPC_SEG_SIZE;
	uint8_t *body = malloc(room), rep[16];
	struct rpc_cap cap;
	size_t rep_len;
	int ret;

	*got = 0;
	if (!body) {
		rpfsc_err_set("%s: out of memory", f->path);
		return -ENOMEM;
	}
	ret = srv < 0 ? -EINVAL : rpfsc_file_cap(f, &cap);
	if (!ret)
		ret = rpfsc_call_io(f, srv, body,
				    rpc_enc_io_slot(body, room, RPC_IO_READ,
						    f->attr.handle, &cap, segs, nseg,
						    slot),
				    NULL, 0, iov, niov, rep, &rep_len, got);
	free(body);
	return ret;
}

void rpfsc_read_slots(struct rpfs_file *f, const uint32_t *slots, uint32_t n,
		      const struct rpc_seg *segs, uint32_t nseg, const struct iovec *iov,
		      uint64_t *got, int *st)
{
	struct rpfs_client *c = f->c;
	size_t room = c->io_hdr + nseg * RPC_SEG_SIZE;
	uint8_t *body = malloc(room * (n ? n : 1)), (*rep)[16] = calloc(n ? n : 1, 16);
	struct rpfsc_link **link = calloc(n ? n : 1, sizeof(*link));
	struct xp_call *call = calloc(n ? n : 1, sizeof(*call));
	int *srv = calloc(n ? n : 1, sizeof(*srv));
	struct rpc_cap cap;
	int ret = body && rep && link && call && srv ? rpfsc_file_cap(f, &cap) : -ENOMEM;

	if (ret == -ENOMEM)
		rpfsc_err_set("%s: out of memory", f->path);
	/* every call started, then each waited for: the members' reads
	 * overlap (a degraded read's K members) */
	for (uint32_t i = 0; i < n; i++) {
		int len;

		got[i] = 0;
		st[i] = ret;
		if (ret)
			continue;
		srv[i] = rpfsc_io_srv(c, layout_server(&f->attr.layout, slots[i]));
		len = srv[i] < 0 ? -EINVAL
				 : rpc_enc_io_slot(body + room * i, room, RPC_IO_READ,
						   f->attr.handle, &cap, segs, nseg,
						   slots[i]);
		st[i] = len < 0 ? len : rpfsc_link_get(c, srv[i], RPFSC_IO, &link[i]);
		if (st[i])
			continue;
		call[i].req = body + room * i;
		call[i].req_len = (size_t)len;
		call[i].rep = rep[i];
		call[i].rep_max = sizeof(rep[i]);
		call[i].rd_iov = &iov[i];
		call[i].rd_cnt = 1;
		st[i] = xp_call_start(link[i]->conn, &call[i]);
		if (st[i])
			call[i].req = NULL; /* not started: nothing to wait for */
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!link[i])
			continue;
		if (call[i].req)
			st[i] = xp_call_wait(&call[i]);
		if (st[i] && st[i] != -RPC_EBEHIND)
			st[i] = rpfsc_call_error(c, srv[i], RPFSC_IO, link[i], f->path,
						 st[i]);
		got[i] = call[i].rd_len;
		rpfsc_link_put(c, srv[i], link[i]);
	}
	free(body);
	free(rep);
	free(link);
	free(call);
	free(srv);
}

static int read_other_copy(struct rpfs_request *io, size_t i)
{
	struct rpfs_client *c = io->f->c;
	const struct rpfs_layout *l = &io->f->attr.layout;
	struct iochunk *ch = &io->ch[i];
	struct slotlist *orig = &io->sl[ch->slot];
	uint32_t n = layout_copies(l);
	uint32_t c0 = ch->slot / l->stripe_count;

	for (uint32_t k = 1; k < n; k++) {
		uint32_t cs = layout_copy_slot(l, ch->slot, (c0 + k) % n);
		uint64_t got;

		if (stale_in(&io->view, cs))
			continue;
		if (rpfsc_read_slot(io->f, cs, &orig->segs[ch->seg0], (uint32_t)ch->nseg,
				    &orig->iov[ch->iov0], (int)ch->niov, &got))
			continue;
		log_info("%s: %s: read from the copy on %s instead", io->f->path,
			 rpfsc_desc(c, orig->srv, RPFSC_IO),
			 rpfsc_desc(c, rpfsc_io_srv(c, layout_server(l, cs)), RPFSC_IO));
		io->calls[i].status = 0;
		io->calls[i].rd_len = got;
		io->calls[i].rep_len = 0;
		return 0;
	}
	return -EIO;
}

/* One write of segs to copy slot cs as its primary, waited for; *epoch
 * the epoch its reply carries when it marked copies stale, else 0. */
static int write_copy(struct rpfs_request *io, uint32_t cs, const struct rpc_seg *segs,
		      uint32_t nseg, const struct iovec *iov, int niov, uint64_t *epoch)
{
	struct rpfs_file *f = io->f;
	struct rpfs_client *c = f->c;
	int srv = rpfsc_io_srv(c, layout_server(&f->attr.layout, cs));
	size_t room = c->io_hdr + nseg * RPC_SEG_SIZE + RPC_IO_COPIES_ROOM;
	uint8_t *body = malloc(room), rep[16];
	struct rpc_copy cp[RPC_COPIES_MAX];
	struct rpc_cap cap;
	size_t rep_len;
	uint64_t none;
	int ret;

	*epoch = 0;
	if (!body) {
		rpfsc_err_set("%s: out of memory", f->path);
		return -ENOMEM;
	}
	ret = srv < 0 ? -EINVAL : rpfsc_file_cap(f, &cap);
	if (!ret && coded(io)) {
		/* an ec data cell's write, to its own server */
		const struct rpfs_layout *l = &f->attr.layout;
		uint32_t np = parity_of(c, l, &io->view, cs, cp);

		ret = rpfsc_call_io(f, srv, body,
				    rpc_enc_io_parity(body, room, f->attr.handle, &cap,
						      segs, nseg, cs, cp, np,
						      io->view.epoch, l->data_cells,
						      layout_ec_index(l, cs)),
				    iov, niov, NULL, 0, rep, &rep_len, &none);
	} else if (!ret) {
		uint32_t nc = copies_of(f->c, &f->attr.layout, &io->view, cs, cp);

		ret = rpfsc_call_io(f, srv, body,
				    rpc_enc_io_copies(body, room, f->attr.handle, &cap,
						      segs, nseg, cs, cp, nc,
						      io->view.epoch),
				    iov, niov, NULL, 0, rep, &rep_len, &none);
	}
	if (!ret && rpc_dec_u64(rep, rep_len, epoch))
		*epoch = 0;
	free(body);
	return ret;
}

/* The view changed under a request (a write marked copies stale, or was
 * refused as behind): fetch it and take it for the rest of the request. */
static int reload_view(struct rpfs_request *io, uint64_t seen)
{
	int ret = rpfsc_file_view_reload(io->f, seen);

	if (!ret) {
		pthread_mutex_lock(&io->f->cap_lock);
		io->view = io->f->view;
		pthread_mutex_unlock(&io->f->cap_lock);
	}
	return ret;
}

/* A write of a mirrored file whose call i failed for want of its primary's
 * server, or was refused as behind (the view is old): the same segments
 * to another copy as primary, which forwards to the rest and marks the
 * lost one stale; a few times, as views change. 0 when one took it. */
static int write_other_copy(struct rpfs_request *io, size_t i, int err)
{
	const struct rpfs_layout *l = &io->f->attr.layout;
	struct rpfs_client *c = io->f->c;
	struct iochunk *ch = &io->ch[i];
	struct slotlist *orig = &io->sl[ch->slot];
	int srv0 = orig->srv;

	for (int attempt = 0; attempt < 4; attempt++) {
		uint32_t pick = UINT32_MAX;
		uint64_t epoch;
		int ret;

		if (err == -RPC_EBEHIND && attempt) {
			/* a resync's end: the copies took the new epoch a
			 * moment before the metadata server gives it out */
			struct timespec d = {0, 20000000L * attempt};

			nanosleep(&d, NULL);
		}
		if (err == -RPC_EBEHIND && (ret = reload_view(io, 0)))
			return ret;
		for (int pass = 0; pass < 2 && pick == UINT32_MAX; pass++)
			for (uint32_t k = 0; k < layout_copies(l) && pick == UINT32_MAX;
			     k++) {
				uint32_t cs = layout_copy_slot(l, ch->slot, k);
				int srv = rpfsc_io_srv(c, layout_server(l, cs));
				bool avoid = srv < 0 || rpfsc_server_suspect(c, srv) ||
					     (srv == srv0 && err != -RPC_EBEHIND);

				if (!stale_in(&io->view, cs) && avoid == (pass == 1))
					pick = cs;
			}
		if (pick == UINT32_MAX) {
			rpfsc_err_set("%s: every copy of stripe slot %u is stale (missed "
				      "writes): the write can't be stored",
				      io->f->path, ch->slot % l->stripe_count);
			return -EIO;
		}
		ret = write_copy(io, pick, &orig->segs[ch->seg0], (uint32_t)ch->nseg,
				 &orig->iov[ch->iov0], (int)ch->niov, &epoch);
		if (!ret) {
			log_info("%s: %s: written through the copy on %s instead",
				 io->f->path, rpfsc_desc(c, srv0, RPFSC_IO),
				 rpfsc_desc(c, rpfsc_io_srv(c, layout_server(l, pick)),
					    RPFSC_IO));
			io->calls[i].status = 0;
			io->calls[i].rep_len = 0;
			return epoch > io->view.epoch ? reload_view(io, epoch) : 0;
		}
		if (ret != -RPC_EBEHIND && !server_lost(NULL, ret) &&
		    (ret != -ESTALE || err == -ESTALE))
			return ret; /* -ESTALE twice: the file is gone */
		srv0 = rpfsc_io_srv(c, layout_server(l, pick));
		err = ret;
	}
	rpfsc_err_set("%s: stripe slot %u: the copies' view kept changing: the write "
		      "was not stored",
		      io->f->path, ch->slot % l->stripe_count);
	return -EIO;
}

/* A write of an ec file's call i refused as behind: a parity member's
 * resync ended, and its data members took the file's new epoch a moment
 * before the metadata server gives it out (server/ec_resync.c). The view
 * reloaded, the same segments again to the data cell's server; a few
 * times, waiting longer each time. 0 when it took them. */
static int write_coded_again(struct rpfs_request *io, size_t i)
{
	struct iochunk *ch = &io->ch[i];
	struct slotlist *orig = &io->sl[ch->slot];
	int ret = -RPC_EBEHIND;

	for (int attempt = 0; attempt < 10 && ret == -RPC_EBEHIND; attempt++) {
		uint64_t epoch;

		if (attempt) {
			struct timespec d = {0, 20000000L * attempt};

			nanosleep(&d, NULL);
		}
		ret = reload_view(io, 0);
		if (ret)
			return ret;
		ret = write_copy(io, ch->slot, &orig->segs[ch->seg0], (uint32_t)ch->nseg,
				 &orig->iov[ch->iov0], (int)ch->niov, &epoch);
		if (!ret) {
			io->calls[i].status = 0;
			io->calls[i].rep_len = 0;
			return epoch > io->view.epoch ? reload_view(io, epoch) : 0;
		}
	}
	if (ret == -RPC_EBEHIND)
		rpfsc_err_set("%s: stripe slot %u: the file's view kept changing: the "
			      "write was not stored",
			      io->f->path, ch->slot);
	return ret;
}

/* Wait for the started calls; the first failure (in call order) is the
 * result, with its message. */
static ssize_t io_collect(struct rpfs_request *io)
{
	struct rpfs_client *c = io->f->c;
	int first = 0;

	for (size_t i = 0; i < io->nstarted; i++) {
		struct iochunk *ch = &io->ch[i];
		struct slotlist *sl = &io->sl[ch->slot];
		struct xp_call *call = &io->calls[i];
		int ret = xp_call_wait(call);
		uint64_t local;

		if (ret && !io->write && mirrored(io) && !read_other_copy(io, i))
			ret = 0;
		if (ret && !io->write && coded(io) &&
		    (server_lost(sl->link, ret) || ret == -EBADMSG || ret == -ESTALE)) {
			/* an ec data cell's server lost, a damaged block there,
			 * or its datafile gone with its storage: decoded from
			 * the others of its group (ec_degraded.c), as ZFS reads
			 * around a bad sector */
			int orig = ret;
			bool damaged = ret == -EBADMSG &&
				       !xp_conn_error(sl->link->conn) &&
				       !rpc_dec_u64(io->reps[i], call->rep_len, &local);

			ret = rpfsc_ec_read_decoded(
				io->f, &io->view, ch->slot, &sl->segs[ch->seg0],
				(uint32_t)ch->nseg, &sl->iov[ch->iov0], (int)ch->niov);
			if (!ret) {
				call->status = 0;
				call->rd_len = ch->bytes;
				call->rep_len = 0;
				log_info("%s: %s: decoded from the rest of its group",
					 io->f->path, rpfsc_desc(c, sl->srv, RPFSC_IO));
				/* a damaged block there: mended (ZFS's way) */
				if (damaged)
					rpfsc_ec_mend(io->f, &io->view, ch->slot, local);
			} else if (orig == -ESTALE) {
				/* the file itself gone, most likely: said as
				 * the data cell's server said it */
				ret = orig;
			} else {
				if (!first)
					first = ret; /* its message is set */
				continue;
			}
		}
		/* -ESTALE: the primary's server lost the datafile (its
		 * storage replaced: rebuilt from the others, meta_rebuild.c) */
		if (ret && io->write && mirrored(io) &&
		    (ret == -RPC_EBEHIND || ret == -ESTALE ||
		     server_lost(sl->link, ret))) {
			ret = write_other_copy(io, i, ret);
			if (ret && !first)
				first = ret; /* its message is set */
			continue;
		}
		if (ret == -RPC_EBEHIND && io->write && coded(io)) {
			ret = write_coded_again(io, i);
			if (ret && !first)
				first = ret; /* its message is set (or the call's) */
			continue;
		}
		if (!ret && io->write && (mirrored(io) || coded(io)) &&
		    call->rep_len >= 8 &&
		    !rpc_dec_u64(io->reps[i], call->rep_len, &local) &&
		    local > io->view.epoch) {
			/* written, and the primary marked copies (the data
			 * server parity members) stale */
			ret = reload_view(io, local);
			if (ret && !first)
				first = ret;
			continue;
		}
		if (ret == -EREMOTEIO && io->write && !xp_conn_error(sl->link->conn) &&
		    !rpc_dec_u64(io->reps[i], call->rep_len, &local)) {
			/* The primary stored it; a copy could not (io_forward.c). */
			if (!first) {
				int csrv = local < c->cfg.nio
						   ? rpfsc_io_srv(c, (uint32_t)local)
						   : -1;

				rpfsc_err_set(
					"%s: %s couldn't write the file's copy on %s",
					io->f->path, rpfsc_desc(c, sl->srv, RPFSC_IO),
					csrv >= 0 ? rpfsc_desc(c, csrv, RPFSC_IO)
						  : "an unknown I/O server");
				first = ret;
			}
			continue;
		}

		if (ret && !first && ret == -EBADMSG && !xp_conn_error(sl->link->conn) &&
		    !rpc_dec_u64(io->reps[i], call->rep_len, &local)) {
			first = rpfsc_err_damaged(
				rpfsc_desc(c, sl->srv, RPFSC_IO), io->f->path,
				layout_logical(&io->f->attr.layout, ch->slot, local),
				ret);
			continue;
		}
		if (ret && !first && io->hold_err) {
			/* Posted: the buffer could not be registered, and no
			 * call started (the server is not the cause). */
			rpfsc_err_set(
				"%s: can't register the buffer for bulk transfer: %s",
				io->f->path, strerror(-io->hold_err));
			first = io->hold_err;
			continue;
		}
		if (ret) {
			if (!first)
				first = rpfsc_call_error(c, sl->srv, RPFSC_IO, sl->link,
							 io->f->path, ret);
			continue;
		}
		if (!io->write && call->rd_len < ch->bytes)
			zero_tail(&sl->iov[ch->iov0], ch->niov, call->rd_len);
	}
	return first ? first : (ssize_t)io->total;
}

/* A request too small for any bulk call needs no registration (inline and
 * fast messages carry their data); a larger one registers its buffers
 * whole (xp_mem_hold). */
static bool needs_hold(const struct rpfs_request *io)
{
	const struct xp_params *p = &io->f->c->cfg.xport;

	/* io->total: check_lists summed the memory list */
	return io->total > p->fast_max || p->force_path == XP_PATH_BULK;
}

/* async (a nonblocking request): hand the calls to the progress thread
 * rather than start them here (xp_calls_post_held), with the registration
 * of the buffers (mem, when they need one), so the post costs only its own
 * CPU, whatever the size: registering a cold 256 MiB buffer pins 65536
 * pages on verbs. */
/* A read of an ec file with a data cell's server down (slot_get found it
 * so): each chunk read here, one after the other, those of a lost cell
 * decoded from the rest of its group (ec_degraded.c); the request is then
 * done (nothing in flight). Slow, and only while a member is down. */
static int io_launch_degraded(struct rpfs_request *io)
{
	const struct rpfs_layout *l = &io->f->attr.layout;
	struct rpfs_client *c = io->f->c;
	int ret = 0;

	io->calls = calloc(io->nch ? io->nch : 1, sizeof(*io->calls));
	if (!io->calls) {
		rpfsc_err_set("%s: out of memory", io->f->path);
		return -ENOMEM;
	}
	for (size_t i = 0; i < io->nch && !ret; i++) {
		struct iochunk *ch = &io->ch[i];
		struct slotlist *sl = &io->sl[ch->slot];
		const struct rpc_seg *segs = &sl->segs[ch->seg0];
		const struct iovec *iov = &sl->iov[ch->iov0];
		uint64_t got = ch->bytes;

		if (sl->lost) {
			ret = rpfsc_ec_read_decoded(io->f, &io->view, ch->slot, segs,
						    (uint32_t)ch->nseg, iov,
						    (int)ch->niov);
			if (!ret)
				log_info("%s: %s: decoded from the rest of its group",
					 io->f->path,
					 rpfsc_desc(c,
						    rpfsc_io_srv(c, layout_server(
									    l, ch->slot)),
						    RPFSC_IO));
			/* too few others to decode from, and the server only
			 * suspected (a moment after its return): asked after
			 * all */
			if (ret && sl->suspect_only)
				ret = rpfsc_read_slot(io->f, ch->slot, segs,
						      (uint32_t)ch->nseg, iov,
						      (int)ch->niov, &got);
		} else {
			ret = rpfsc_read_slot(io->f, ch->slot, segs, (uint32_t)ch->nseg,
					      iov, (int)ch->niov, &got);
		}
		if (!ret && got < ch->bytes)
			zero_tail(iov, ch->niov, got);
	}
	return ret;
}

static int io_launch(struct rpfs_request *io, bool async, const struct iovec *mem,
		     int nmem)
{
	struct rpfs_client *c = io->f->c;
	size_t body_total = 0, off = 0;
	struct rpc_cap cap;
	struct xp_conn **conns;
	struct xp_call **callp;
	int ret, started = 0;

	for (uint32_t s = 0; s < io->nslots; s++)
		if (io->sl[s].lost)
			return io_launch_degraded(io);
	ret = rpfsc_file_cap(io->f, &cap);
	if (ret)
		return ret;
	io->calls = calloc(io->nch ? io->nch : 1, sizeof(*io->calls));
	io->reps = calloc(io->nch ? io->nch : 1, sizeof(*io->reps));
	for (size_t i = 0; i < io->nch; i++)
		body_total += c->io_hdr + io->ch[i].nseg * RPC_SEG_SIZE + body_extra(io);
	io->bodies = malloc(body_total ? body_total : 1);
	conns = malloc((io->nch ? io->nch : 1) * sizeof(*conns));
	callp = malloc((io->nch ? io->nch : 1) * sizeof(*callp));
	if (!io->calls || !io->reps || !io->bodies || !conns || !callp) {
		free(conns);
		free(callp);
		rpfsc_err_set("%s: out of memory", io->f->path);
		return -ENOMEM;
	}
	for (size_t i = 0; i < io->nch; i++) {
		struct iochunk *ch = &io->ch[i];
		struct slotlist *sl = &io->sl[ch->slot];
		struct xp_call *call = &io->calls[i];
		size_t room = c->io_hdr + ch->nseg * RPC_SEG_SIZE + body_extra(io);
		int len;

		conns[i] = sl->link->conn;
		callp[i] = call;
		/* The slot too: a server whose datafile holds another one
		 * refuses, so a layout gone wrong is an error, not bytes
		 * from the wrong place. */
		if (body_extra(io) && coded(io)) {
			/* to the data cell's server, which sends the parity
			 * members their deltas */
			const struct rpfs_layout *l = &io->f->attr.layout;
			struct rpc_copy cp[RPC_COPIES_MAX];
			uint32_t np = parity_of(io->f->c, l, &io->view, ch->slot, cp);

			len = rpc_enc_io_parity(
				io->bodies + off, room, io->f->attr.handle, &cap,
				&sl->segs[ch->seg0], (uint32_t)ch->nseg, ch->slot, cp, np,
				io->view.epoch, l->data_cells,
				layout_ec_index(l, ch->slot));
		} else if (body_extra(io)) {
			/* to the primary, which forwards to the copies */
			struct rpc_copy cp[RPC_COPIES_MAX];
			uint32_t nc = copies_of(io->f->c, &io->f->attr.layout, &io->view,
						ch->slot, cp);

			len = rpc_enc_io_copies(io->bodies + off, room,
						io->f->attr.handle, &cap,
						&sl->segs[ch->seg0], (uint32_t)ch->nseg,
						ch->slot, cp, nc, io->view.epoch);
		} else {
			len = rpc_enc_io_slot(io->bodies + off, room,
					      io->write ? RPC_IO_WRITE : RPC_IO_READ,
					      io->f->attr.handle, &cap,
					      &sl->segs[ch->seg0], (uint32_t)ch->nseg,
					      ch->slot);
		}
		if (len < 0) {
			rpfsc_err_set("%s: can't encode an I/O request: %s", io->f->path,
				      strerror(-len));
			free(conns);
			free(callp);
			return len;
		}
		call->req = io->bodies + off;
		call->req_len = (size_t)len;
		call->rep = io->reps[i];
		call->rep_max = sizeof(io->reps[i]);
		off += room;
		if (io->write) {
			call->wr_iov = &sl->iov[ch->iov0];
			call->wr_cnt = (int)ch->niov;
		} else {
			call->rd_iov = &sl->iov[ch->iov0];
			call->rd_cnt = (int)ch->niov;
		}
	}
	/* All at once: every server starts before any data moves. */
	if (async) {
		bool hold = needs_hold(io);

		ret = xp_calls_post_held(conns, callp, (int)io->nch, hold ? mem : NULL,
					 hold ? nmem : 0, &io->hold, &io->hold_err);
		started = ret ? 0 : (int)io->nch;
		if (ret) {
			free(conns);
			free(callp);
			rpfsc_err_set("%s: can't post the request: %s", io->f->path,
				      strerror(-ret));
			return ret;
		}
	} else if (mirrored(io) || (coded(io) && !io->write)) {
		/* a call whose primary's connection broke since it was picked
		 * ends with its error, and io_collect sends it to another
		 * copy (an ec read: decodes it), rather than failing the whole
		 * request here */
		xp_calls_start_each(conns, callp, (int)io->nch);
		started = (int)io->nch;
		ret = 0;
	} else {
		ret = xp_calls_start(conns, callp, (int)io->nch, &started);
	}
	io->nstarted = (size_t)started;
	free(conns);
	free(callp);
	if (ret) {
		struct slotlist *sl = &io->sl[io->ch[started].slot];

		return rpfsc_call_error(c, sl->srv, RPFSC_IO, sl->link, io->f->path, ret);
	}
	return 0;
}

/* A blocking request registers its buffers here (needs_hold). */
static int hold_buffers(struct rpfs_request *io, const struct iovec *mem, int nmem)
{
	struct rpfs_client *c = io->f->c;
	int ret;

	if (!needs_hold(io))
		return 0;
	ret = xp_mem_hold(c->fab, mem, nmem, &io->hold);
	if (ret)
		rpfsc_err_set("%s: can't register the buffer for bulk transfer: %s",
			      io->f->path, strerror(-ret));
	return ret;
}

int rpfsc_io_start(struct rpfs_file *f, bool write, const struct iovec *mem, int nmem,
		   const struct rpfs_seg *file, int nfile, bool async,
		   struct rpfs_request **out)
{
	const struct xp_params *p = &f->c->cfg.xport;
	struct rpfs_request *io = calloc(1, sizeof(*io));
	int ret;

	*out = NULL;
	if (!io) {
		rpfsc_err_set("%s: out of memory", f->path);
		return -ENOMEM;
	}
	io->f = f;
	io->write = write;
	io->nslots = layout_slots(&f->attr.layout);
	if (layout_redundant(&f->attr.layout)) {
		ret = rpfsc_file_view_ensure(f);
		if (ret) {
			free(io);
			return ret;
		}
		pthread_mutex_lock(&f->cap_lock);
		io->view = f->view;
		pthread_mutex_unlock(&f->cap_lock);
	}
	/* A forced path takes only what that path carries. */
	io->bytecap = p->force_path == XP_PATH_INLINE ? p->inline_max
		      : p->force_path == XP_PATH_FAST ? p->fast_max
						      : RPFSC_IO_CALL_MAX;
	if (!io->bytecap)
		io->bytecap = RPFSC_IO_CALL_MAX;
	io->sl = calloc(io->nslots, sizeof(*io->sl));
	if (!io->sl) {
		free(io);
		rpfsc_err_set("%s: out of memory", f->path);
		return -ENOMEM;
	}
	for (uint32_t s = 0; s < io->nslots; s++) {
		io->sl[s].srv = -1;
		io->sl[s].cur = NO_CHUNK;
	}
	ret = check_lists(io, mem, nmem, file, nfile);
	if (ret)
		goto fail;
	ret = async ? 0 : hold_buffers(io, mem, nmem);
	if (ret)
		goto fail;
	ret = map_lists(io, mem, nmem, file, nfile);
	if (ret)
		goto fail;
	ret = io_launch(io, async, mem, nmem);
	if (ret)
		goto fail;
	io_make_live(io);
	*out = io;
	return 0;
fail:
	/* Calls already under way finish before their memory goes. */
	if (io->nstarted) {
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s", rpfs_errmsg());
		io_collect(io);
		rpfsc_err_set("%s", msg);
	}
	io_free(io);
	return ret;
}

int rpfsc_io_test(struct rpfs_request *io)
{
	while (io->ntested < io->nstarted) {
		if (!xp_call_test(&io->calls[io->ntested]))
			return 0;
		io->ntested++;
	}
	return 1;
}

static int64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

int rpfsc_io_timedwait(struct rpfs_request *io, int64_t timeout_us)
{
	int64_t end = now_us() + timeout_us;

	while (io->ntested < io->nstarted) {
		int64_t left = end - now_us();

		if (left <= 0)
			return rpfsc_io_test(io);
		if (!xp_call_timedwait(&io->calls[io->ntested], left))
			return 0;
		io->ntested++;
	}
	return 1;
}

ssize_t rpfsc_io_finish(struct rpfs_request *io)
{
	ssize_t ret = io_collect(io);

	io_free(io);
	return ret;
}

/* Waiting holds the list's lock: a request finished meanwhile by its owner
 * waits to leave the list, so none is freed under us. The calls complete
 * without the owner (the engine, or this wait, drives them). */
void rpfsc_io_drain(struct rpfs_client *c, struct rpfs_file *f)
{
	struct list_node *n;

	pthread_mutex_lock(&c->live_lock);
	list_foreach(&c->live, n) {
		struct rpfs_request *io = list_entry(n, struct rpfs_request, node);

		if (!f || io->f == f)
			for (size_t i = io->ntested; i < io->nstarted; i++)
				xp_call_wait(&io->calls[i]);
	}
	pthread_mutex_unlock(&c->live_lock);
}

void rpfsc_io_abandon_all(struct rpfs_client *c)
{
	pthread_mutex_lock(&c->live_lock);
	while (!list_empty(&c->live)) {
		struct rpfs_request *io =
			list_entry(list_first(&c->live), struct rpfs_request, node);

		pthread_mutex_unlock(&c->live_lock);
		io_free(io); /* leaves the list */
		pthread_mutex_lock(&c->live_lock);
	}
	pthread_mutex_unlock(&c->live_lock);
}

/* ---- blocking entry points ---------------------------------------------- */

static ssize_t io_sync(rpfs_file_t *f, bool write, const struct iovec *mem, int nmem,
		       const struct rpfs_seg *file, int nfile)
{
	struct rpfs_request *io;
	int ret = rpfsc_io_start(f, write, mem, nmem, file, nfile, false, &io);

	return ret ? ret : rpfsc_io_finish(io);
}

ssize_t rpfs_writev(rpfs_file_t *f, const struct iovec *mem, int nmem,
		    const struct rpfs_seg *file, int nfile)
{
	return io_sync(f, true, mem, nmem, file, nfile);
}

ssize_t rpfs_readv(rpfs_file_t *f, const struct iovec *mem, int nmem,
		   const struct rpfs_seg *file, int nfile)
{
	return io_sync(f, false, mem, nmem, file, nfile);
}

ssize_t rpfs_pwrite(rpfs_file_t *f, const void *buf, size_t len, uint64_t off)
{
	struct iovec iov = {(void *)buf, len};
	struct rpfs_seg seg = {off, len};

	return io_sync(f, true, &iov, 1, &seg, 1);
}

ssize_t rpfs_pread(rpfs_file_t *f, void *buf, size_t len, uint64_t off)
{
	struct iovec iov = {buf, len};
	struct rpfs_seg seg = {off, len};

	return io_sync(f, false, &iov, 1, &seg, 1);
}

/* ---- truncate of a mirrored file ---------------------------------------------- */

/* Data slot s's share (local bytes) to its primary, which truncates its
 * datafile and forwards the truncate to the other copies in order with the
 * writes it forwards (server/io_forward.c), marking those it can't reach
 * stale; to the next copy when the primary's server is lost, as writes. */
static int truncate_slot(struct rpfs_file *f, uint32_t s, uint64_t local)
{
	const struct rpfs_layout *l = &f->attr.layout;
	struct rpfs_client *c = f->c;
	struct rpfsc_view v;
	int lost = -1, err = 0;

	for (int attempt = 0; attempt < 5; attempt++) {
		uint8_t body[128 + RPC_IO_COPIES_ROOM], rep[16];
		struct rpc_copy cp[RPC_COPIES_MAX];
		uint32_t pick = UINT32_MAX, nc;
		struct rpc_cap cap;
		uint64_t epoch;
		size_t rep_len = 0;
		int srv = -1, len, ret;

		if (err == -RPC_EBEHIND) {
			struct timespec d = {0, 20000000L * attempt};

			nanosleep(&d, NULL);
			if ((ret = rpfsc_file_view_reload(f, 0)))
				return ret;
		}
		pthread_mutex_lock(&f->cap_lock);
		v = f->view;
		pthread_mutex_unlock(&f->cap_lock);
		for (int pass = 0; pass < 2 && pick == UINT32_MAX; pass++)
			for (uint32_t k = 0; k < layout_copies(l) && pick == UINT32_MAX;
			     k++) {
				uint32_t cs = layout_copy_slot(l, s, k);
				int cand = rpfsc_io_srv(c, layout_server(l, cs));
				bool avoid = cand < 0 || cand == lost ||
					     rpfsc_server_suspect(c, cand);

				if (!stale_in(&v, cs) && avoid == (pass == 1)) {
					pick = cs;
					srv = cand;
				}
			}
		if (pick == UINT32_MAX || srv < 0) {
			rpfsc_err_set("%s: every copy of stripe slot %u is stale (missed "
				      "writes): it can't be truncated",
				      f->path, s);
			return -EIO;
		}
		ret = rpfsc_file_cap(f, &cap);
		if (ret)
			return ret;
		nc = copies_of(c, l, &v, pick, cp);
		len = rpc_enc_truncate_copies(body, sizeof(body), f->attr.handle, &cap,
					      local, pick, cp, nc, v.epoch);
		if (len < 0) {
			rpfsc_err_set("%s: can't encode a truncate: %s", f->path,
				      strerror(-len));
			return len;
		}
		ret = rpfsc_call1(c, srv, RPFSC_IO, f->path, body, (size_t)len, rep,
				  sizeof(rep), &rep_len);
		if (!ret) {
			if (!rpc_dec_u64(rep, rep_len, &epoch) && epoch > v.epoch)
				return rpfsc_file_view_reload(f, epoch);
			return 0;
		}
		/* -ESTALE once: the primary's server lost the datafile (its
		 * storage replaced); twice: the file is gone */
		if (ret != -RPC_EBEHIND && !server_lost(NULL, ret) &&
		    (ret != -ESTALE || err == -ESTALE))
			return ret;
		if (ret != -RPC_EBEHIND)
			lost = srv;
		err = ret;
	}
	return err;
}

int rpfsc_truncate_mirror(struct rpfs_file *f, uint64_t size)
{
	const struct rpfs_layout *l = &f->attr.layout;
	int ret = rpfsc_file_view_ensure(f);

	for (uint32_t s = 0; !ret && s < l->stripe_count; s++)
		ret = truncate_slot(f, s, layout_local_size(l, s, size));
	return ret;
}
