/* rpfs_verify: are a mirrored file's copies the same bytes? (`rpfs
 * verify`, as Lustre's `lfs mirror verify`.) Each data slot's copies are
 * read side by side, VERIFY_CHUNK bytes at a time straight from each
 * copy's I/O server (an IO_READ naming the copy's slot, so no copy is
 * taken for another), and compared; their datafile sizes must agree too.
 * The first difference is reported with its file offset and the two
 * servers. A copy that cannot be read (its server down, a damaged block)
 * is an error naming it: it is not verified. Concurrent writes make the
 * answer meaningless for the bytes they touch, as for any comparison of
 * copies taken while they change. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"

#define VERIFY_CHUNK (1u << 20)

/* len bytes at datafile offset off of slot's copy into buf; *got: bytes
 * the server produced (fewer past its end). */
static int read_copy(struct rpfs_file *f, uint32_t slot, uint64_t off, uint64_t len,
		     char *buf, uint64_t *got)
{
	struct rpfs_client *c = f->c;
	int srv = rpfsc_io_srv(c, layout_server(&f->attr.layout, slot));
	struct rpc_seg seg = {off, len};
	uint8_t body[256], rep[16];
	struct iovec iov = {buf, (size_t)len};
	struct rpfsc_link *link;
	struct xp_call call;
	struct rpc_cap cap;
	int n, ret;

	if (srv < 0)
		return -EINVAL;
	ret = rpfsc_file_cap(f, &cap);
	if (ret)
		return ret;
	n = rpc_enc_io_slot(body, sizeof(body), RPC_IO_READ, f->attr.handle, &cap, &seg,
			    1, slot);
	if (n < 0)
		return n;
	ret = rpfsc_link_get(c, srv, RPFSC_IO, &link);
	if (ret)
		return ret;
	memset(&call, 0, sizeof(call));
	call.req = body;
	call.req_len = (size_t)n;
	call.rep = rep;
	call.rep_max = sizeof(rep);
	call.rd_iov = &iov;
	call.rd_cnt = 1;
	ret = xp_call_start(link->conn, &call);
	if (!ret)
		ret = xp_call_wait(&call);
	if (ret)
		ret = rpfsc_call_error(c, srv, RPFSC_IO, link, f->path, ret);
	rpfsc_link_put(c, srv, link);
	*got = call.rd_len;
	return ret;
}

/* Datafile sizes of every slot (sizes[layout_slots]). */
static int slot_sizes(struct rpfs_file *f, uint64_t *sizes)
{
	struct rpfs_client *c = f->c;
	uint32_t n = layout_slots(&f->attr.layout);
	struct rpfsc_op *ops = calloc(n, sizeof(*ops));
	uint8_t(*body)[64] = calloc(n, sizeof(*body));
	uint8_t(*rep)[RPC_IO_SIZE_REP] = calloc(n, sizeof(*rep));
	struct rpc_cap cap;
	int ret = -ENOMEM;

	if (!ops || !body || !rep)
		goto out;
	ret = rpfsc_file_cap(f, &cap);
	for (uint32_t s = 0; s < n && !ret; s++) {
		int len = rpc_enc_handle_op(body[s], sizeof(body[s]), RPC_IO_SIZE,
					    f->attr.handle, &cap);

		if (len < 0) {
			ret = len;
			break;
		}
		ops[s].srv = rpfsc_io_srv(c, layout_server(&f->attr.layout, s));
		ops[s].role = RPFSC_IO;
		ops[s].what = f->path;
		ops[s].body = body[s];
		ops[s].body_len = (size_t)len;
		ops[s].rep = rep[s];
		ops[s].rep_max = sizeof(rep[s]);
	}
	if (!ret)
		ret = rpfsc_run(c, ops, (int)n);
	for (uint32_t s = 0; s < n && !ret; s++) {
		struct rpc_io_size sz;

		if (rpc_dec_io_size(rep[s], ops[s].call.rep_len, &sz))
			ret = rpfsc_err_server(rpfsc_desc(c, ops[s].srv, RPFSC_IO),
					       f->path, -EPROTO, 0, false);
		sizes[s] = sz.size;
	}
out:
	if (ret == -ENOMEM)
		rpfsc_err_set("%s: out of memory", f->path);
	free(ops);
	free(body);
	free(rep);
	return ret;
}

/* Copy k of data slot s differs from copy 0 at datafile offset local. */
static int differs(struct rpfs_file *f, uint32_t s, uint32_t k, uint64_t local,
		   const char *how, uint64_t *where)
{
	const struct rpfs_layout *l = &f->attr.layout;
	struct rpfs_client *c = f->c;
	int s0 = rpfsc_io_srv(c, layout_server(l, s));
	int sk = rpfsc_io_srv(c, layout_server(l, layout_copy_slot(l, s, k)));

	*where = layout_logical(l, s, local);
	rpfsc_err_set("%s: the copies of slot %u differ at file offset %" PRIu64
		      " (%s): copy 0 on %s, copy %u on %s",
		      f->path, s, *where, how, rpfsc_desc(c, s0, RPFSC_IO), k,
		      rpfsc_desc(c, sk, RPFSC_IO));
	return -EILSEQ;
}

int rpfs_verify(rpfs_file_t *f, uint64_t *checked, uint64_t *where)
{
	const struct rpfs_layout *l = &f->attr.layout;
	uint32_t copies = layout_copies(l);
	uint64_t *sizes = calloc(layout_slots(l), sizeof(*sizes));
	char *a = malloc(VERIFY_CHUNK), *b = malloc(VERIFY_CHUNK);
	int ret;

	*checked = 0;
	*where = 0;
	if (!sizes || !a || !b) {
		rpfsc_err_set("%s: out of memory", f->path);
		ret = -ENOMEM;
		goto out;
	}
	ret = copies > 1 ? slot_sizes(f, sizes) : 0;
	for (uint32_t s = 0; s < l->stripe_count && copies > 1 && !ret; s++) {
		for (uint32_t k = 1; k < copies && !ret; k++) {
			uint64_t sk = sizes[layout_copy_slot(l, s, k)];

			if (sk != sizes[s])
				ret = differs(f, s, k, sk < sizes[s] ? sk : sizes[s],
					      "one copy is longer", where);
		}
		for (uint64_t off = 0; off < sizes[s] && !ret; off += VERIFY_CHUNK) {
			uint64_t len = sizes[s] - off < VERIFY_CHUNK ? sizes[s] - off
								     : VERIFY_CHUNK;
			uint64_t got0, got;

			ret = read_copy(f, s, off, len, a, &got0);
			for (uint32_t k = 1; k < copies && !ret; k++) {
				ret = read_copy(f, layout_copy_slot(l, s, k), off, len, b,
						&got);
				if (ret)
					break;
				if (got != got0)
					ret = differs(f, s, k,
						      off + (got < got0 ? got : got0),
						      "one copy is shorter", where);
				else if (memcmp(a, b, got)) {
					uint64_t i = 0;

					while (a[i] == b[i])
						i++;
					ret = differs(f, s, k, off + i, "different bytes",
						      where);
				}
			}
			if (!ret)
				*checked += len * copies;
		}
	}
out:
	free(sizes);
	free(a);
	free(b);
	return ret;
}
