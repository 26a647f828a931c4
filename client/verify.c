/* rpfs_verify: are a mirrored file's copies the same bytes, an
 * erasure-coded file's parity the code of its data? (`rpfs verify`, as
 * Lustre's `lfs mirror verify`.) Each data slot's copies are
 * read side by side, VERIFY_CHUNK bytes at a time straight from each
 * copy's I/O server (an IO_READ naming the copy's slot, so no copy is
 * taken for another), and compared; their datafile sizes must agree too.
 * The first difference is reported with its file offset and the two
 * servers. A copy that cannot be read (its server down, a damaged block)
 * is an error naming it: it is not verified. Concurrent writes make the
 * answer meaningless for the bytes they touch, as for any comparison of
 * copies taken while they change.
 *
 * rpfs_mirror_repair (`rpfs verify --repair`) compares the same way and has
 * every copy that differs from its primary marked stale (MIRROR_REPAIR), so
 * that the resync rewrites it from the primary. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"
#include "ec_code.h"

#define VERIFY_CHUNK (1u << 20)
/* An ec group's members are read side by side: up to K + 2P buffers. */
#define VERIFY_EC_CHUNK (256u << 10)

/* len bytes at datafile offset off of slot's copy into buf, from its own
 * server; *got: bytes the server produced (fewer past its end). */
static int read_copy(struct rpfs_file *f, uint32_t slot, uint64_t off, uint64_t len,
		     char *buf, uint64_t *got)
{
	struct rpc_seg seg = {off, len};
	struct iovec iov = {buf, (size_t)len};

	return rpfsc_read_slot(f, slot, &seg, 1, &iov, 1, got);
}

/* Datafile sizes of every slot, every copy answering (sizes[layout_slots]). */
static int slot_sizes(struct rpfs_file *f, uint64_t *sizes)
{
	uint32_t n = layout_slots(&f->attr.layout);
	struct rpc_io_size *rs = calloc(n, sizeof(*rs));
	struct rpc_attr a = f->attr;
	int ret;

	if (!rs) {
		rpfsc_err_set("%s: out of memory", f->path);
		return -ENOMEM;
	}
	ret = rpfsc_file_cap(f, &a.cap);
	if (!ret)
		ret = rpfsc_per_slot(f->c, &a, NULL, f->path, RPC_IO_SIZE, 0, rs, true);
	for (uint32_t s = 0; s < n && !ret; s++)
		sizes[s] = rs[s].size;
	free(rs);
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

/* A difference of copy k: noted in diff (repair: the walk goes on), or
 * the result. */
static int note(bool *diff, uint32_t k, int ret)
{
	if (ret != -EILSEQ || !diff)
		return ret;
	diff[k] = true;
	return 0;
}

/* Compare every copy of data slot s with copy 0 (sizes: every slot's
 * datafile size), reading copy 0 once: 0, -EILSEQ with the message of the
 * first difference, or the error of a read. With diff (repair), a copy
 * that differs is noted there and the others still compared. *checked
 * grows by the bytes read. */
static int compare_slot(struct rpfs_file *f, uint32_t s, const uint64_t *sizes, char *a,
			char *b, bool *diff, uint64_t *checked, uint64_t *where)
{
	const struct rpfs_layout *l = &f->attr.layout;
	uint32_t copies = layout_copies(l);
	int ret = 0;

	for (uint32_t k = 1; k < copies && !ret; k++) {
		uint64_t sk = sizes[layout_copy_slot(l, s, k)];

		if (sk != sizes[s])
			ret = note(diff, k,
				   differs(f, s, k, sk < sizes[s] ? sk : sizes[s],
					   "one copy is longer", where));
	}
	for (uint64_t off = 0; off < sizes[s] && !ret; off += VERIFY_CHUNK) {
		uint64_t len =
			sizes[s] - off < VERIFY_CHUNK ? sizes[s] - off : VERIFY_CHUNK;
		uint64_t got0, got, nread = 1;

		ret = read_copy(f, s, off, len, a, &got0);
		for (uint32_t k = 1; k < copies && !ret; k++) {
			if (diff && diff[k])
				continue;
			ret = read_copy(f, layout_copy_slot(l, s, k), off, len, b, &got);
			if (ret)
				break;
			nread++;
			if (got != got0) {
				ret = note(diff, k,
					   differs(f, s, k,
						   off + (got < got0 ? got : got0),
						   "one copy is shorter", where));
			} else if (memcmp(a, b, got)) {
				uint64_t i = 0;

				while (a[i] == b[i])
					i++;
				ret = note(diff, k,
					   differs(f, s, k, off + i, "different bytes",
						   where));
			}
		}
		if (!ret)
			*checked += len * nread;
	}
	return ret;
}

/* Ask the file's metadata server to mark the member in slot cs of data
 * slot s's copies (an ec file: of its group's parity) stale, to be
 * rewritten by its resync (MIRROR_REPAIR). */
static int mark_repair(struct rpfs_file *f, uint32_t s, uint32_t cs)
{
	struct rpc_attr a = f->attr;
	int ret = rpfsc_file_cap(f, &a.cap);

	return ret ? ret : rpfsc_mark_member_stale(f->c, &a, s, cs, f->path);
}

/* Compare every copy of every slot with its primary; repair: have those
 * that differ rewritten from it (*marked of them) and go on, else stop at
 * the first difference. */
static int walk_copies(rpfs_file_t *f, bool repair, uint64_t *checked, uint64_t *where,
		       uint32_t *marked)
{
	const struct rpfs_layout *l = &f->attr.layout;
	uint32_t copies = layout_copies(l);
	uint64_t *sizes = calloc(layout_slots(l), sizeof(*sizes));
	char *a = malloc(VERIFY_CHUNK), *b = malloc(VERIFY_CHUNK);
	int ret;

	*checked = 0;
	*where = 0;
	*marked = 0;
	if (!sizes || !a || !b) {
		rpfsc_err_set("%s: out of memory", f->path);
		ret = -ENOMEM;
		goto out;
	}
	ret = copies > 1 ? rpfsc_file_view_reload(f, 0) : 0;
	/* A copy marked stale missed writes: comparing it tells nothing. */
	for (uint32_t cs = 0; copies > 1 && !ret && cs < layout_slots(l); cs++)
		if (rpfsc_copy_stale(f, cs)) {
			struct rpfs_client *c = f->c;

			rpfsc_err_set(
				"%s: the copy of stripe slot %u on %s is stale (it "
				"missed writes while it was down): it needs a resync",
				f->path, cs % l->stripe_count,
				rpfsc_desc(c, rpfsc_io_srv(c, layout_server(l, cs)),
					   RPFSC_IO));
			*where = UINT64_MAX;
			ret = -ESTALE;
		}
	if (!ret && copies > 1)
		ret = slot_sizes(f, sizes);
	for (uint32_t s = 0; s < l->stripe_count && copies > 1 && !ret; s++) {
		bool diff[RPFS_COPIES_MAX] = {false};

		ret = compare_slot(f, s, sizes, a, b, repair ? diff : NULL, checked,
				   where);
		for (uint32_t k = 1; k < copies && !ret; k++)
			if (diff[k]) {
				ret = mark_repair(f, s, layout_copy_slot(l, s, k));
				*marked += !ret;
			}
	}
out:
	free(sizes);
	free(a);
	free(b);
	return ret;
}

/* ---- ec:K+P: parity against the code of the data ---------------------- */

struct ec_walk {
	struct ec_code code;
	unsigned char *data[EC_CELLS_MAX], *stored[EC_CELLS_MAX], *want[EC_CELLS_MAX];
};

static void ec_walk_free(struct ec_walk *w)
{
	for (unsigned i = 0; i < EC_CELLS_MAX; i++) {
		free(w->data[i]);
		free(w->stored[i]);
		free(w->want[i]);
	}
	ec_code_fini(&w->code);
}

/* len bytes at local offset off of slot into buf, zeros past its end. */
static int read_member(struct rpfs_file *f, uint32_t slot, uint64_t off, uint64_t len,
		       unsigned char *buf)
{
	uint64_t got = 0;
	int ret = read_copy(f, slot, off, len, (char *)buf, &got);

	if (!ret && got < len)
		memset(buf + got, 0, (size_t)(len - got));
	return ret;
}

/* Group g's parity from local offset off for len bytes against the code
 * of its data: 0, or -EILSEQ naming the first parity member that differs
 * (its index into *bad). */
static int compare_group(struct rpfs_file *f, struct ec_walk *w, uint32_t g, uint64_t off,
			 uint64_t len, uint64_t *where, unsigned *bad)
{
	const struct rpfs_layout *l = &f->attr.layout;
	unsigned k = l->data_cells, p = l->parity_cells;
	int ret = 0;

	for (unsigned i = 0; i < k && !ret; i++)
		ret = read_member(f, layout_ec_member(l, g, i), off, len, w->data[i]);
	for (unsigned j = 0; j < p && !ret; j++)
		ret = read_member(f, layout_ec_member(l, g, k + j), off, len,
				  w->stored[j]);
	if (ret)
		return ret;
	ec_encode(&w->code, (size_t)len, w->data, w->want);
	for (unsigned j = 0; j < p; j++) {
		uint32_t slot = layout_ec_member(l, g, k + j);
		struct rpfs_client *c = f->c;
		uint64_t i = 0;

		if (!memcmp(w->want[j], w->stored[j], (size_t)len))
			continue;
		while (w->want[j][i] == w->stored[j][i])
			i++;
		/* the stripe's first data cell there */
		*where = layout_logical(l, layout_ec_member(l, g, 0), off + i);
		rpfsc_err_set(
			"%s: parity %u of group %u (slot %u) on %s disagrees with "
			"the code of its data at datafile offset %" PRIu64
			" (the stripe at file offset %" PRIu64 ")",
			f->path, j, g, slot,
			rpfsc_desc(c, rpfsc_io_srv(c, layout_server(l, slot)), RPFSC_IO),
			off + i, *where);
		*bad = j;
		return -EILSEQ;
	}
	return 0;
}

/* Group g's parity members' records of their data members' sizes
 * (server/ec_ends.c: the file's size with a data member lost) against the
 * sizes the data members answered: 0, or -EILSEQ naming the first member
 * whose record is wrong (*bad its parity index), or the error of asking.
 * Like the parity's bytes, a record is compared on a file nobody is
 * writing: a write between the two questions shows as a difference. */
static int compare_records(struct rpfs_file *f, uint32_t g, const uint64_t *sizes,
			   uint64_t *where, unsigned *bad)
{
	const struct rpfs_layout *l = &f->attr.layout;
	unsigned k = l->data_cells, p = l->parity_cells;
	struct rpfs_client *c = f->c;
	struct rpc_attr a = f->attr;
	int ret = rpfsc_file_cap(f, &a.cap);

	for (unsigned j = 0; j < p && !ret; j++) {
		uint32_t ps = layout_ec_member(l, g, k + j);
		int srv = rpfsc_io_srv(c, layout_server(l, ps));
		uint8_t body[64], rep[RPC_IO_SIZE_ENDS_REP];
		uint64_t ends[RPC_EC_MEMBERS_MAX];
		struct rpc_io_size rs;
		size_t rep_len = 0;
		uint32_t n;
		int len = rpc_enc_io_size_req(body, sizeof(body), a.handle, RPC_SIZE_ENDS,
					      &a.cap);

		if (len < 0 || srv < 0)
			return len < 0 ? len : -EINVAL;
		ret = rpfsc_call1(c, srv, RPFSC_IO, f->path, body, (size_t)len, rep,
				  sizeof(rep), &rep_len);
		if (!ret && rpc_dec_io_size_ends(rep, rep_len, &rs, ends, k, &n))
			ret = rpfsc_err_server(rpfsc_desc(c, srv, RPFSC_IO), f->path,
					       -EPROTO, 0, false);
		for (unsigned i = 0; i < k && !ret; i++) {
			uint32_t ds = layout_ec_member(l, g, i);

			if (ends[i] == sizes[ds])
				continue;
			*where = UINT64_MAX;
			*bad = j;
			rpfsc_err_set(
				"%s: parity %u of group %u (slot %u) on %s: its record "
				"of its data members' sizes says %" PRIu64
				" bytes for slot %u, which holds %" PRIu64,
				f->path, j, g, ps, rpfsc_desc(c, srv, RPFSC_IO), ends[i],
				ds, sizes[ds]);
			return -EILSEQ;
		}
	}
	return ret;
}

/* Every group of an ec file: its parity members' records of sizes, then
 * every byte up to its longest member (parity
 * past every data member's end must be zeros: the code of zeros). repair:
 * each parity member that disagrees is marked stale (MIRROR_REPAIR), for
 * its resync to re-encode it from the data (*marked of them), and the
 * walk goes on; else it stops at the first. */
static int walk_parity(rpfs_file_t *f, bool repair, uint64_t *checked, uint64_t *where,
		       uint32_t *marked)
{
	const struct rpfs_layout *l = &f->attr.layout;
	unsigned k = l->data_cells, p = l->parity_cells;
	uint32_t slots = layout_slots(l);
	uint64_t *sizes = calloc(slots, sizeof(*sizes));
	struct ec_walk w;
	int ret = 0;

	memset(&w, 0, sizeof(w));
	*checked = 0;
	*where = 0;
	if (!sizes || ec_code_init(&w.code, k, p))
		ret = -ENOMEM;
	for (unsigned i = 0; i < k && !ret; i++)
		if (!(w.data[i] = malloc(VERIFY_EC_CHUNK)))
			ret = -ENOMEM;
	for (unsigned j = 0; j < p && !ret; j++)
		if (!(w.stored[j] = malloc(VERIFY_EC_CHUNK)) ||
		    !(w.want[j] = malloc(VERIFY_EC_CHUNK)))
			ret = -ENOMEM;
	if (ret)
		rpfsc_err_set("%s: out of memory", f->path);
	else
		ret = rpfsc_file_view_reload(f, 0);
	/* A parity member marked stale missed deltas: its resync re-encodes
	 * it (comparing it tells nothing). */
	for (uint32_t ps = l->stripe_count; !ret && ps < slots; ps++)
		if (rpfsc_copy_stale(f, ps)) {
			struct rpfs_client *c = f->c;

			rpfsc_err_set(
				"%s: parity %u of group %u (slot %u) on %s is stale (it "
				"missed writes while it was down): it needs a resync",
				f->path, layout_ec_index(l, ps) - k,
				layout_ec_group(l, ps), ps,
				rpfsc_desc(c, rpfsc_io_srv(c, layout_server(l, ps)),
					   RPFSC_IO));
			*where = UINT64_MAX;
			ret = -ESTALE;
		}
	if (!ret)
		ret = slot_sizes(f, sizes);
	for (uint32_t g = 0; !ret && g < l->stripe_count / k; g++) {
		uint64_t end = 0;
		unsigned bad = 0;

		for (unsigned m = 0; m < k + p; m++)
			if (sizes[layout_ec_member(l, g, m)] > end)
				end = sizes[layout_ec_member(l, g, m)];
		/* the records of sizes first: a wrong one is a wrong size
		 * with a data member lost */
		ret = compare_records(f, g, sizes, where, &bad);
		if (ret == -EILSEQ && repair) {
			ret = mark_repair(f, layout_ec_member(l, g, 0),
					  layout_ec_member(l, g, k + bad));
			if (!ret)
				(*marked)++;
			continue;
		}
		for (uint64_t off = 0; off < end && !ret; off += VERIFY_EC_CHUNK) {
			uint64_t len =
				end - off < VERIFY_EC_CHUNK ? end - off : VERIFY_EC_CHUNK;

			ret = compare_group(f, &w, g, off, len, where, &bad);
			if (!ret)
				*checked += len * (k + p);
			if (ret == -EILSEQ && repair) {
				/* the group's first data slot names it */
				ret = mark_repair(f, layout_ec_member(l, g, 0),
						  layout_ec_member(l, g, k + bad));
				if (!ret)
					(*marked)++;
				break; /* the next group (one member a group at a
					* time: its resync re-encodes it whole) */
			}
		}
	}
	free(sizes);
	ec_walk_free(&w);
	return ret;
}

int rpfs_verify(rpfs_file_t *f, uint64_t *checked, uint64_t *where)
{
	uint32_t marked;

	if (f->attr.layout.kind == RPFS_LAYOUT_EC)
		return walk_parity(f, false, checked, where, &marked);
	return walk_copies(f, false, checked, where, &marked);
}

int rpfs_mirror_repair(rpfs_file_t *f, uint32_t *marked)
{
	uint64_t checked, where;

	*marked = 0;
	if (f->attr.layout.kind == RPFS_LAYOUT_EC)
		return walk_parity(f, true, &checked, &where, marked);
	return walk_copies(f, true, &checked, &where, marked);
}
