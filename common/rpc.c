/* File-service protocol (rpc.h): encoders and the bounds-checked decoder of
 * the request and reply bodies exchanged between librpfs and rpfsd.
 *
 * Everything is little-endian and written field by field through the put/get
 * helpers below, never by casting a struct onto the buffer, so the wire format
 * does not depend on the compiler's padding or the host's byte order. The
 * decoder is the server's only view of a request: it checks every length and
 * count against the body before using it, and an accepted request satisfies
 * the invariants listed with rpc_decode_req() below.
 *
 * Why one file of ~1,300 lines: it is one concern, the wire format, and
 * 150 of its lines are the format's description; the encoders and the
 * decoder of a body sit side by side and share the write and read cursors
 * below, so a change of a body is one diff that shows both directions.
 * Cut in two, the cursors would move to a header and each body's two
 * halves to different files.
 *
 * Request bodies. Every request starts with the preamble
 *
 *   off size field
 *   0   2    op        enum rpc_op
 *   2   2    flags     CREATE: RPC_CREATE_EXCL | RPC_WANT_*; LOOKUP GETATTR:
 *                       RPC_WANT_*; LOCK/UNLOCK: RPC_LOCK_*
 *   4   4    reserved  written as 0, ignored by the decoder
 *
 * followed by the fields of the op's body shape (its column in the table
 * of operations, rpc_ops.h), in this order (path and name strings are
 * "str": u16 length then that many bytes, no NUL):
 *
 *   shape: its ops              fields after the preamble               bytes
 *   NONE: PING STATS            (none; trailing bytes are ignored)      0
 *     STATFS_META IO_STATFS
 *   PATH: RMDIR LOOKUP REMOVE   path str                                2+p
 *   MKDIR                       path str, mode u32, uid u32, gid u32    2+p+12
 *   CREATE                      path str, mode u32, uid u32, gid u32,   2+p+28
 *                               stripe_unit u64, stripe_count u32,
 *                               first_server i32 (-1 = server chooses)
 *                               [, redundancy u32]                      (+4)
 *   SETATTR                     path str, mask u32, mode u32, uid u32,  2+p+32
 *                               gid u32, atime i64, mtime i64; with     (+12)
 *                               mask RPC_SET_LAYOUT (alone, the others
 *                               0) then stripe_unit u64, stripe_count u32
 *                               [, redundancy u32]                      (+4)
 *   READDIR                     path str, cookie str (0..NAME_MAX,      2+p+2+c+4
 *                               "" = from the start), max u32
 *   RENAME                      path str, to str                        4+p+t
 *   HANDLE: GETATTR IO_SIZE     handle u64, cap                         40
 *     IO_SYNC IO_REMOVE
 *   FETCH_ADD                   handle u64, cap, delta i64              48
 *   LOCK: LOCK UNLOCK           handle u64, cap, off u64, len u64,      64
 *                               owner u64
 *   TRUNCATE: IO_TRUNCATE       handle u64, cap, size u64; with a flag  48
 *                               (RPC_TRUNCATE_COPIES, _FORWARD: as      (+8+tail)
 *                               IO_WRITE's) slot + 1 u32 (not 0), pad
 *                               u32 (0), then IO_WRITE's tail; with
 *                               RPC_TRUNCATE_ENDS (alone) the slot, then (+8+8n)
 *                               n u32 (1..RPC_EC_MEMBERS_MAX), pad u32
 *                               (0), n x end u64
 *   IO: IO_WRITE IO_READ        handle u64, cap, nseg u32, slot u32     48+16*nseg
 *                               (stripe slot + 1, 0 = not said),
 *                               nseg x { off u64, len u64 }; IO_WRITE   (+12+12*nc)
 *                               with flag RPC_IO_COPIES then ncopies
 *                               u32 (1..RPC_COPIES_MAX), epoch u64,
 *                               ncopies x { io u32, slot + 1 u32 (not
 *                               0), flags u32 (RPC_COPY_*) }; with      (+16)
 *                               flag RPC_IO_FORWARD (not both) then
 *                               epoch u64, flags u32, pad u32 (0),
 *                               with RPC_FWD_XOR then K | index << 8    (+16)
 *                               u32, pad u32 (0), the member's end u64;
 *                               with flag RPC_IO_REPAIR (alone) the     (+8)
 *                               holder's hold_id u64;
 *                               with flag RPC_IO_PARITY (alone) the     (+8)
 *                               copies list as RPC_IO_COPIES's (the
 *                               parity members), then K | P << 8 |
 *                               index << 16 u32, pad u32 (0)
 *   IO_CREATE                   handle u64, nonce u64 (not 0), slot     24
 *                               u32 (as IO_WRITE's), pad u32 (0)
 *   PROBE: IO_PROBE             meta u32, pad u32 (0)                   8
 *          MIRROR_REBUILD       io u32 (in r->meta), pad u32 (0)
 *   SEARCH                      path str, want u32, uid u32, gid u32,   2+p+16
 *                               ngroups u32 (<= RPC_GROUPS_MAX),        +4*ng
 *                               ngroups x gid u32
 *   HANDLES: META_HANDLES       count u32 (1..RPC_HANDLES_MAX), pad     8+8*count
 *                               u32 (0), count x handle u64
 *   STALE: MIRROR_STALE         handle u64, epoch u64, slot + 1 u32,    24+4*n
 *     MIRROR_FRESH              n u32 (1..RPC_COPIES_MAX), n x slot+1
 *   RESYNC: IO_RESYNC           handle u64, slot + 1 u32, target io     32
 *                               u32, target slot + 1 u32 (not the
 *                               slot), pad u32 (0), epoch u64
 *
 *   redundancy (CREATE, setstripe SETATTR; redundancy.h): optional, the
 *   last field when present; an older client's body ends before it (not
 *   said: the directory's default, then the cluster's), and an encoder
 *   leaves it out when nothing is said, so an older server takes the body.
 *   Packed: bits 0..7 the layout kind + 1 (0xff "default": the cluster's;
 *   on a directory, clears its own), bits 8..15 the mirror's copies or the
 *   ec's K, bits 16..23 the ec's P, bits 24..31 zero; any other value is
 *   -EPROTO, a present 0 too.
 *
 *   cap (32 bytes, the capability for the handle, rpc.h): expiry i64,
 *   rights u32, lifetime_s u32, mac 16 bytes
 *
 * Apart from the bodyless ops (shape NONE), a body must end exactly after its last
 * field: trailing bytes are -EPROTO (they would mean the peers disagree on
 * the format). Write data travels beside the body in the transport call.
 *
 * Reply bodies (the transport status carries the result):
 *
 *   attr (80 bytes; MKDIR CREATE LOOKUP GETATTR SETATTR; 112 with the
 *   capability granted on a file by CREATE LOOKUP GETATTR, @80): handle u64 @0, type u32
 * @8, mode u32 @12, uid u32 @16, gid u32 @20, atime i64 @24, mtime i64 @32, ctime i64
 * @40, layout: stripe_unit u64 @48, stripe_count u32 @56, first_server u32 @60, nservers
 * u32
 * @64, layout kind u8 @68 (enum rpfs_layout_kind; 0 = stripe, as in
 * servers that sent padding there), copies u8 @69 (mirror:N's N, else 0),
 * zero padding @70..71, times_set i64 @72 (when SETATTR last set the times, 0
 * never; 0 in stores written before it existed) u64 (8 bytes): FETCH_ADD old value
 *   io size (24 bytes; IO_SIZE): size u64, mtime i64, ctime i64 of the
 *   datafile (8 bytes from an older server: the size alone)
 *   dirents: count u32, more u32, count x { type u32, name str }
 *   statfs (40 bytes): total u64, avail u64, objects u64, free u64, fsid
 *   u64 (24 bytes from an older server: free = avail, fsid 0)
 *   stats (STATS): count u32, count x { name str, value u64 }, exact
 *   probe (16 bytes; IO_PROBE): count u64, max_handle u64
 *   search (8 bytes; SEARCH): depth u32, status i32
 *   handle states (META_HANDLES): count u32 (the request's), count x
 *   state u8 (enum rpc_handle_state), exact
 *   error detail: a reply whose status is -EBADMSG (IO_READ, IO_WRITE,
 *   IO_SIZE) carries u64 @0, the datafile offset of the damage; any other
 *   failed reply has an empty body
 *
 * The fixed-size reply decoders (attr, u64, io size, statfs) accept a longer
 * body than they need (room to grow) and the shorter form of an older server
 * where one is said above, never less; dirents must be exact. */
#include "rpc.h"
#include "wire.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#define RPC_LOCK_FLAGS (RPC_LOCK_EXCL | RPC_LOCK_WAIT)
#define RPC_SET_ALL    (RPC_SET_MODE | RPC_SET_OWNER | RPC_SET_TIMES)

/* ---- the table of operations (rpc_ops.h) --------------------------------- */

static const struct rpc_op_desc op_descs[] = {
#define RPC_OP_DESC(NAME, code, nm, rt, bd, fl, acc, rn, handler)                        \
	[code] = {.name = nm,                                                            \
		  .flags = fl,                                                           \
		  .route = rt,                                                           \
		  .body = bd,                                                            \
		  .access = acc,                                                         \
		  .runs = rn},
	RPC_OPS(RPC_OP_DESC)
#undef RPC_OP_DESC
};

const struct rpc_op_desc *rpc_op_desc(uint16_t op)
{
	if (op >= sizeof(op_descs) / sizeof(op_descs[0]) || !op_descs[op].name)
		return NULL;
	return &op_descs[op];
}

const char *rpc_op_name(uint16_t op)
{
	const struct rpc_op_desc *d = rpc_op_desc(op);

	return d ? d->name : NULL;
}

int rpc_is_io_op(uint16_t op)
{
	const struct rpc_op_desc *d = rpc_op_desc(op);

	return d && d->route == RPC_TO_IO;
}

static bool has_body(uint16_t op, enum rpc_body body)
{
	const struct rpc_op_desc *d = rpc_op_desc(op);

	return d && d->body == body;
}

/* ---- encoding ---------------------------------------------------------- */

/* A write cursor: once something does not fit, every later put is dropped
 * and the encoder returns -E2BIG at the end, so encoders need one check. */
struct wr {
	uint8_t *p;
	size_t cap, len;
	int err;
};

static uint8_t *wr_room(struct wr *w, size_t n)
{
	uint8_t *at;

	if (w->err || n > w->cap - w->len) {
		w->err = -E2BIG;
		return NULL;
	}
	at = w->p + w->len;
	w->len += n;
	return at;
}

static void wr_u16(struct wr *w, uint16_t v)
{
	uint8_t *at = wr_room(w, 2);

	if (at)
		put16(at, v);
}

static void wr_u32(struct wr *w, uint32_t v)
{
	uint8_t *at = wr_room(w, 4);

	if (at)
		put32(at, v);
}

static void wr_u64(struct wr *w, uint64_t v)
{
	uint8_t *at = wr_room(w, 8);

	if (at)
		put64(at, v);
}

static void wr_cap(struct wr *w, const struct rpc_cap *c)
{
	uint8_t *at = wr_room(w, RPC_CAP_SIZE);

	if (!at)
		return;
	if (c)
		rpc_enc_cap(at, c);
	else
		memset(at, 0, RPC_CAP_SIZE);
}

static void wr_str(struct wr *w, const char *s, size_t n)
{
	uint8_t *at;

	wr_u16(w, (uint16_t)n);
	at = wr_room(w, n);
	if (at)
		memcpy(at, s, n);
}

static void wr_preamble(struct wr *w, void *buf, size_t cap, uint16_t op, uint16_t flags)
{
	w->p = buf;
	w->cap = cap;
	w->len = 0;
	w->err = 0;
	wr_u16(w, op);
	wr_u16(w, flags);
	wr_u32(w, 0);
}

static int wr_end(const struct wr *w)
{
	return w->err ? w->err : (int)w->len;
}

/* Bodies are far below 2 GiB; refusing larger caps keeps the int result
 * of the encoders meaningful. */
static size_t cap_clamp(size_t cap)
{
	return cap > (size_t)INT32_MAX ? (size_t)INT32_MAX : cap;
}

/* Client-side path check, with the errno a caller can report: a name or path
 * too long is -ENAMETOOLONG, anything else malformed -EINVAL. */
static int path_errno(const char *path)
{
	size_t comp = 0;

	if (!path)
		return -EINVAL;
	if (rpc_path_ok(path))
		return 0;
	if (strnlen(path, RPC_PATH_MAX + 1) > RPC_PATH_MAX)
		return -ENAMETOOLONG;
	for (const char *c = path; *c; c++) {
		comp = *c == '/' ? 0 : comp + 1;
		if (comp > RPC_NAME_MAX)
			return -ENAMETOOLONG;
	}
	return -EINVAL;
}

static bool is_bodyless_op(uint16_t op)
{
	return has_body(op, RPC_BODY_NONE);
}

static bool is_handle_op(uint16_t op)
{
	return has_body(op, RPC_BODY_HANDLE);
}

/* Also encodes the bodyless ops (body RPC_BODY_NONE: PING, STATS,
 * STATFS_META, IO_STATFS): path must be NULL for them. For the ops that
 * only carry a path (RPC_BODY_PATH: RMDIR, LOOKUP, REMOVE) path is
 * required. */
int rpc_enc_path_op(void *buf, size_t cap, uint16_t op, uint16_t flags, const char *path)
{
	struct wr w;
	int ret;

	if (is_bodyless_op(op) && !path) {
		wr_preamble(&w, buf, cap_clamp(cap), op, flags);
		return wr_end(&w);
	}
	if (!has_body(op, RPC_BODY_PATH))
		return -EINVAL;
	ret = path_errno(path);
	if (ret)
		return ret;
	wr_preamble(&w, buf, cap_clamp(cap), op, flags);
	wr_str(&w, path, strlen(path));
	return wr_end(&w);
}

int rpc_enc_mkdir(void *buf, size_t cap, const char *path, uint32_t mode, uint32_t uid,
		  uint32_t gid)
{
	struct wr w;
	int ret = path_errno(path);

	if (ret)
		return ret;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_MKDIR, 0);
	wr_str(&w, path, strlen(path));
	wr_u32(&w, mode);
	wr_u32(&w, uid);
	wr_u32(&w, gid);
	return wr_end(&w);
}

int rpc_enc_create(void *buf, size_t cap, const char *path, uint32_t mode, uint32_t uid,
		   uint32_t gid, uint16_t flags, uint64_t stripe_unit,
		   uint32_t stripe_count, int32_t first_server)
{
	return rpc_enc_create_red(buf, cap, path, mode, uid, gid, flags, stripe_unit,
				  stripe_count, first_server, 0);
}

static bool red_ok(uint32_t v)
{
	struct red_spec r;

	return !red_unpack(v, &r);
}

int rpc_enc_create_red(void *buf, size_t cap, const char *path, uint32_t mode,
		       uint32_t uid, uint32_t gid, uint16_t flags, uint64_t stripe_unit,
		       uint32_t stripe_count, int32_t first_server, uint32_t redundancy)
{
	struct wr w;
	int ret = path_errno(path);

	if (ret)
		return ret;
	if ((flags & ~(RPC_CREATE_EXCL | RPC_WANT_RIGHTS)) || first_server < -1 ||
	    !red_ok(redundancy))
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_CREATE, flags);
	wr_str(&w, path, strlen(path));
	wr_u32(&w, mode);
	wr_u32(&w, uid);
	wr_u32(&w, gid);
	wr_u64(&w, stripe_unit);
	wr_u32(&w, stripe_count);
	wr_u32(&w, (uint32_t)first_server);
	if (redundancy)
		wr_u32(&w, redundancy);
	return wr_end(&w);
}

int rpc_enc_setattr(void *buf, size_t cap, const char *path, uint32_t mask, uint32_t mode,
		    uint32_t uid, uint32_t gid, int64_t atime, int64_t mtime)
{
	struct wr w;
	int ret = path_errno(path);

	if (ret)
		return ret;
	if (mask & ~RPC_SET_ALL)
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_SETATTR, 0);
	wr_str(&w, path, strlen(path));
	wr_u32(&w, mask);
	wr_u32(&w, mode);
	wr_u32(&w, uid);
	wr_u32(&w, gid);
	wr_u64(&w, (uint64_t)atime);
	wr_u64(&w, (uint64_t)mtime);
	return wr_end(&w);
}

/* A directory entry name: 1..RPC_NAME_MAX bytes, no '/', not "." or "..". */
static int name_ok(const char *s, size_t n)
{
	if (n == 0 || n > RPC_NAME_MAX)
		return 0;
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return 0;
	return !memchr(s, '/', n) && !memchr(s, '\0', n);
}

int rpc_enc_readdir(void *buf, size_t cap, const char *path, const char *cookie,
		    uint32_t max)
{
	struct wr w;
	size_t clen = cookie ? strnlen(cookie, RPC_NAME_MAX + 1) : 0;
	int ret = path_errno(path);

	if (ret)
		return ret;
	if (clen && !name_ok(cookie, clen))
		return clen > RPC_NAME_MAX ? -ENAMETOOLONG : -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_READDIR, 0);
	wr_str(&w, path, strlen(path));
	wr_str(&w, cookie ? cookie : "", clen);
	wr_u32(&w, max);
	return wr_end(&w);
}

int rpc_enc_setstripe(void *buf, size_t cap, const char *path, uint64_t stripe_unit,
		      uint32_t stripe_count)
{
	return rpc_enc_setstripe_red(buf, cap, path, stripe_unit, stripe_count, 0);
}

int rpc_enc_setstripe_red(void *buf, size_t cap, const char *path, uint64_t stripe_unit,
			  uint32_t stripe_count, uint32_t redundancy)
{
	struct wr w;
	int ret = path_errno(path);

	if (ret)
		return ret;
	if (!red_ok(redundancy))
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_SETATTR, 0);
	wr_str(&w, path, strlen(path));
	wr_u32(&w, RPC_SET_LAYOUT);
	for (int i = 0; i < 3; i++)
		wr_u32(&w, 0);
	wr_u64(&w, 0);
	wr_u64(&w, 0);
	wr_u64(&w, stripe_unit);
	wr_u32(&w, stripe_count);
	if (redundancy)
		wr_u32(&w, redundancy);
	return wr_end(&w);
}

int rpc_enc_rename(void *buf, size_t cap, const char *from, const char *to)
{
	struct wr w;
	int ret = path_errno(from);

	if (!ret)
		ret = path_errno(to);
	if (ret)
		return ret;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_RENAME, 0);
	wr_str(&w, from, strlen(from));
	wr_str(&w, to, strlen(to));
	return wr_end(&w);
}

/* Also encodes the bodyless ops when given one of them (handle and
 * capability are then not sent). */
/* A handle op's body (none for a bodyless op), with its flags. */
static int enc_handle_flags(void *buf, size_t cap, uint16_t op, uint16_t flags,
			    uint64_t handle, const struct rpc_cap *capa)
{
	struct wr w;

	wr_preamble(&w, buf, cap_clamp(cap), op, flags);
	if (is_handle_op(op)) {
		wr_u64(&w, handle);
		wr_cap(&w, capa);
	}
	return wr_end(&w);
}

int rpc_enc_handle_op(void *buf, size_t cap, uint16_t op, uint64_t handle,
		      const struct rpc_cap *capa)
{
	if (!is_handle_op(op) && !is_bodyless_op(op))
		return -EINVAL;
	return enc_handle_flags(buf, cap, op, 0, handle, capa);
}

int rpc_enc_getattr(void *buf, size_t cap, uint64_t handle, uint16_t flags,
		    const struct rpc_cap *capa)
{
	if (flags & ~RPC_WANT_RIGHTS)
		return -EINVAL;
	return enc_handle_flags(buf, cap, RPC_GETATTR, flags, handle, capa);
}

int rpc_enc_io_size_req(void *buf, size_t cap, uint64_t handle, uint16_t flags,
			const struct rpc_cap *capa)
{
	if (flags & ~RPC_SIZE_ENDS)
		return -EINVAL;
	return enc_handle_flags(buf, cap, RPC_IO_SIZE, flags, handle, capa);
}

int rpc_enc_fetch_add(void *buf, size_t cap, uint64_t handle, const struct rpc_cap *capa,
		      int64_t delta)
{
	struct wr w;

	wr_preamble(&w, buf, cap_clamp(cap), RPC_FETCH_ADD, 0);
	wr_u64(&w, handle);
	wr_cap(&w, capa);
	wr_u64(&w, (uint64_t)delta);
	return wr_end(&w);
}

int rpc_enc_lock(void *buf, size_t cap, uint16_t op, uint16_t flags, uint64_t handle,
		 const struct rpc_cap *capa, uint64_t off, uint64_t len, uint64_t owner)
{
	struct wr w;

	if ((op != RPC_LOCK && op != RPC_UNLOCK) || (flags & ~RPC_LOCK_FLAGS))
		return -EINVAL;
	if (!len || len > UINT64_MAX - off)
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), op, flags);
	wr_u64(&w, handle);
	wr_cap(&w, capa);
	wr_u64(&w, off);
	wr_u64(&w, len);
	wr_u64(&w, owner);
	return wr_end(&w);
}

int rpc_enc_io(void *buf, size_t cap, uint16_t op, uint64_t handle,
	       const struct rpc_cap *capa, const struct rpc_seg *segs, uint32_t nseg)
{
	return rpc_enc_io_slot(buf, cap, op, handle, capa, segs, nseg, RPC_SLOT_ANY);
}

/* A slot on the wire: slot + 1, 0 for none. */
static uint32_t slot_enc(uint32_t slot)
{
	return slot == RPC_SLOT_ANY ? 0 : slot + 1;
}

static uint32_t slot_dec(uint32_t v)
{
	return v ? v - 1 : RPC_SLOT_ANY;
}

/* The copies list or the forward's epoch after a body (IO_WRITE's and
 * IO_TRUNCATE's): flag RPC_IO_COPIES / RPC_TRUNCATE_COPIES (the same
 * value), RPC_IO_FORWARD / RPC_TRUNCATE_FORWARD (the same). */
struct io_tail {
	uint16_t flag;
	const struct rpc_copy *copies;
	uint32_t ncopies;
	uint64_t epoch;
	uint32_t fwd_flags;
	uint32_t ec_k, ec_index; /* RPC_IO_PARITY (ec_p is ncopies), RPC_FWD_XOR */
	uint64_t ec_end;	 /* RPC_FWD_XOR */
	uint64_t hold_id;	 /* RPC_IO_REPAIR */
};

/* The copies list's shape: RPC_IO_COPIES's, and RPC_IO_PARITY's (with the
 * code after it). */
static bool has_list(uint16_t flag)
{
	return flag == RPC_IO_COPIES || flag == RPC_IO_PARITY;
}

static size_t tail_len(const struct io_tail *t)
{
	if (has_list(t->flag))
		return 12 + 12 * (size_t)t->ncopies + (t->flag == RPC_IO_PARITY ? 8 : 0);
	if (t->flag == RPC_IO_FORWARD)
		return t->fwd_flags & RPC_FWD_XOR ? 32 : 16;
	return t->flag == RPC_IO_REPAIR ? 8 : 0;
}

/* An ec write's code: K data cells, P parity members, the cell's index. */
static bool ec_ok(uint32_t k, uint32_t p, uint32_t index)
{
	return k >= 1 && k <= RED_EC_CELLS_MAX && p >= 1 && p <= RPC_COPIES_MAX &&
	       index < k;
}

static int tail_check(const struct io_tail *t)
{
	if (has_list(t->flag) && (!t->ncopies || t->ncopies > RPC_COPIES_MAX))
		return -EINVAL;
	for (uint32_t i = 0; has_list(t->flag) && i < t->ncopies; i++)
		if (t->copies[i].slot == RPC_SLOT_ANY ||
		    (t->copies[i].flags & ~RPC_COPY_FLAGS))
			return -EINVAL;
	if (t->flag == RPC_IO_PARITY && !ec_ok(t->ec_k, t->ncopies, t->ec_index))
		return -EINVAL;
	if ((t->fwd_flags & RPC_FWD_XOR) && !ec_ok(t->ec_k, 1, t->ec_index))
		return -EINVAL;
	return t->fwd_flags & ~RPC_FWD_FLAGS ? -EINVAL : 0;
}

static void wr_tail(struct wr *w, const struct io_tail *t)
{
	if (has_list(t->flag)) {
		wr_u32(w, t->ncopies);
		wr_u64(w, t->epoch);
		for (uint32_t i = 0; i < t->ncopies; i++) {
			wr_u32(w, t->copies[i].io);
			wr_u32(w, slot_enc(t->copies[i].slot));
			wr_u32(w, t->copies[i].flags);
		}
		if (t->flag == RPC_IO_PARITY) {
			wr_u32(w, t->ec_k | t->ncopies << 8 | t->ec_index << 16);
			wr_u32(w, 0);
		}
	} else if (t->flag == RPC_IO_FORWARD) {
		wr_u64(w, t->epoch);
		wr_u32(w, t->fwd_flags);
		wr_u32(w, 0);
		if (t->fwd_flags & RPC_FWD_XOR) {
			wr_u32(w, t->ec_k | t->ec_index << 8);
			wr_u32(w, 0);
			wr_u64(w, t->ec_end);
		}
	} else if (t->flag == RPC_IO_REPAIR) {
		wr_u64(w, t->hold_id);
	}
}

static int enc_truncate(void *buf, size_t cap, uint64_t handle,
			const struct rpc_cap *capa, uint64_t size, uint32_t slot,
			const struct io_tail *t)
{
	struct wr w;
	int ret = tail_check(t);

	if (ret)
		return ret;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_IO_TRUNCATE, t->flag);
	wr_u64(&w, handle);
	wr_cap(&w, capa);
	wr_u64(&w, size);
	if (t->flag) {
		wr_u32(&w, slot_enc(slot));
		wr_u32(&w, 0);
	}
	wr_tail(&w, t);
	return wr_end(&w);
}

int rpc_enc_truncate(void *buf, size_t cap, uint64_t handle, const struct rpc_cap *capa,
		     uint64_t size)
{
	struct io_tail t = {0};

	return enc_truncate(buf, cap, handle, capa, size, RPC_SLOT_ANY, &t);
}

int rpc_enc_truncate_ends(void *buf, size_t cap, uint64_t handle,
			  const struct rpc_cap *capa, uint64_t size, uint32_t slot,
			  const uint64_t *ends, uint32_t n)
{
	struct wr w;

	if (!n || n > RPC_EC_MEMBERS_MAX || slot == RPC_SLOT_ANY)
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_IO_TRUNCATE, RPC_TRUNCATE_ENDS);
	wr_u64(&w, handle);
	wr_cap(&w, capa);
	wr_u64(&w, size);
	wr_u32(&w, slot_enc(slot));
	wr_u32(&w, 0);
	wr_u32(&w, n);
	wr_u32(&w, 0);
	for (uint32_t i = 0; i < n; i++)
		wr_u64(&w, ends[i]);
	return wr_end(&w);
}

uint64_t rpc_req_end(const struct rpc_req *r, uint32_t i)
{
	return i < r->nends ? get64(r->ends + 8 * (size_t)i) : 0;
}

int rpc_enc_truncate_copies(void *buf, size_t cap, uint64_t handle,
			    const struct rpc_cap *capa, uint64_t size, uint32_t slot,
			    const struct rpc_copy *copies, uint32_t ncopies,
			    uint64_t epoch)
{
	struct io_tail t = {.flag = RPC_IO_COPIES,
			    .copies = copies,
			    .ncopies = ncopies,
			    .epoch = epoch};

	return enc_truncate(buf, cap, handle, capa, size, slot, &t);
}

int rpc_enc_truncate_forward(void *buf, size_t cap, uint64_t handle, uint64_t size,
			     uint32_t slot, uint64_t epoch, uint32_t fwd_flags)
{
	struct io_tail t = {
		.flag = RPC_IO_FORWARD, .epoch = epoch, .fwd_flags = fwd_flags};

	return enc_truncate(buf, cap, handle, NULL, size, slot, &t);
}

static uint32_t io_segs_in(size_t cap, size_t reserve);

static int enc_io(void *buf, size_t cap, uint16_t op, uint64_t handle,
		  const struct rpc_cap *capa, const struct rpc_seg *segs, uint32_t nseg,
		  uint32_t slot, const struct io_tail *t)
{
	struct wr w;

	if (op != RPC_IO_WRITE && op != RPC_IO_READ)
		return -EINVAL;
	if (t->flag && op != RPC_IO_WRITE)
		return -EINVAL;
	if (tail_check(t))
		return -EINVAL;
	if (nseg > io_segs_in(cap_clamp(cap), tail_len(t)))
		return -E2BIG;
	for (uint32_t i = 0; i < nseg; i++)
		if (!segs[i].len || segs[i].len > UINT64_MAX - segs[i].off)
			return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), op, t->flag);
	wr_u64(&w, handle);
	wr_cap(&w, capa);
	wr_u32(&w, nseg);
	wr_u32(&w, slot_enc(slot));
	for (uint32_t i = 0; i < nseg; i++) {
		wr_u64(&w, segs[i].off);
		wr_u64(&w, segs[i].len);
	}
	wr_tail(&w, t);
	return wr_end(&w);
}

int rpc_enc_io_slot(void *buf, size_t cap, uint16_t op, uint64_t handle,
		    const struct rpc_cap *capa, const struct rpc_seg *segs, uint32_t nseg,
		    uint32_t slot)
{
	struct io_tail t = {0};

	return enc_io(buf, cap, op, handle, capa, segs, nseg, slot, &t);
}

int rpc_enc_io_copies(void *buf, size_t cap, uint64_t handle, const struct rpc_cap *capa,
		      const struct rpc_seg *segs, uint32_t nseg, uint32_t slot,
		      const struct rpc_copy *copies, uint32_t ncopies, uint64_t epoch)
{
	struct io_tail t = {.flag = RPC_IO_COPIES,
			    .copies = copies,
			    .ncopies = ncopies,
			    .epoch = epoch};

	return enc_io(buf, cap, RPC_IO_WRITE, handle, capa, segs, nseg, slot, &t);
}

int rpc_enc_io_parity(void *buf, size_t cap, uint64_t handle, const struct rpc_cap *capa,
		      const struct rpc_seg *segs, uint32_t nseg, uint32_t slot,
		      const struct rpc_copy *parity, uint32_t p, uint64_t epoch,
		      uint32_t k, uint32_t index)
{
	struct io_tail t = {.flag = RPC_IO_PARITY,
			    .copies = parity,
			    .ncopies = p,
			    .epoch = epoch,
			    .ec_k = k,
			    .ec_index = index};

	return enc_io(buf, cap, RPC_IO_WRITE, handle, capa, segs, nseg, slot, &t);
}

int rpc_enc_io_repair(void *buf, size_t cap, uint64_t handle, const struct rpc_cap *capa,
		      const struct rpc_seg *segs, uint32_t nseg, uint32_t slot,
		      uint64_t hold_id)
{
	struct io_tail t = {.flag = RPC_IO_REPAIR, .hold_id = hold_id};

	return enc_io(buf, cap, RPC_IO_WRITE, handle, capa, segs, nseg, slot, &t);
}

int rpc_enc_io_forward(void *buf, size_t cap, uint64_t handle, const struct rpc_seg *segs,
		       uint32_t nseg, uint32_t slot, uint64_t epoch, uint32_t fwd_flags)
{
	struct io_tail t = {
		.flag = RPC_IO_FORWARD, .epoch = epoch, .fwd_flags = fwd_flags};

	if (fwd_flags & RPC_FWD_XOR)
		return -EINVAL; /* rpc_enc_io_forward_xor */
	return enc_io(buf, cap, RPC_IO_WRITE, handle, NULL, segs, nseg, slot, &t);
}

int rpc_enc_io_forward_xor(void *buf, size_t cap, uint64_t handle,
			   const struct rpc_seg *segs, uint32_t nseg, uint32_t slot,
			   uint64_t epoch, uint32_t k, uint32_t index, uint64_t end)
{
	struct io_tail t = {.flag = RPC_IO_FORWARD,
			    .epoch = epoch,
			    .fwd_flags = RPC_FWD_XOR,
			    .ec_k = k,
			    .ec_index = index,
			    .ec_end = end};

	return enc_io(buf, cap, RPC_IO_WRITE, handle, NULL, segs, nseg, slot, &t);
}

static int enc_stale(void *buf, size_t cap, uint16_t op, uint16_t flags, uint64_t handle,
		     uint64_t epoch, uint32_t slot, const uint32_t *stale, uint32_t n);

int rpc_enc_mirror_stale(void *buf, size_t cap, uint64_t handle, uint64_t epoch,
			 uint32_t slot, const uint32_t *stale, uint32_t n)
{
	return enc_stale(buf, cap, RPC_MIRROR_STALE, 0, handle, epoch, slot, stale, n);
}

int rpc_enc_mirror_damaged(void *buf, size_t cap, uint64_t handle, uint32_t slot)
{
	return enc_stale(buf, cap, RPC_MIRROR_STALE, RPC_STALE_DAMAGED, handle, 0, slot,
			 &slot, 1);
}

int rpc_enc_mirror_fresh(void *buf, size_t cap, uint16_t flags, uint64_t handle,
			 uint64_t epoch, uint32_t slot, uint32_t target)
{
	if (flags & ~RPC_FRESH_FAILED)
		return -EINVAL;
	return enc_stale(buf, cap, RPC_MIRROR_FRESH, flags, handle, epoch, slot, &target,
			 1);
}

int rpc_enc_mirror_repair(void *buf, size_t cap, uint64_t handle,
			  const struct rpc_cap *capa, uint32_t slot, uint32_t copy)
{
	struct wr w;

	if (slot == RPC_SLOT_ANY || copy == RPC_SLOT_ANY || copy == slot)
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_MIRROR_REPAIR, 0);
	wr_u64(&w, handle);
	wr_cap(&w, capa);
	wr_u32(&w, slot_enc(slot));
	wr_u32(&w, slot_enc(copy));
	return wr_end(&w);
}

int rpc_enc_io_digest(void *buf, size_t cap, uint64_t handle, uint32_t slot, uint64_t off,
		      uint64_t len)
{
	struct wr w;

	if (slot == RPC_SLOT_ANY || off % RPC_DIGEST_UNIT || !len ||
	    len > RPC_DIGEST_SPAN)
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_IO_DIGEST, 0);
	wr_u64(&w, handle);
	wr_u32(&w, slot_enc(slot));
	wr_u32(&w, 0);
	wr_u64(&w, off);
	wr_u64(&w, len);
	return wr_end(&w);
}

void rpc_digest(const void *bytes, size_t len, uint8_t out[RPC_DIGEST_SIZE])
{
	crypto_generichash(out, RPC_DIGEST_SIZE, bytes, len, NULL, 0);
}

int rpc_enc_io_resync(void *buf, size_t cap, uint64_t handle, uint32_t slot,
		      const struct rpc_copy *target, uint64_t epoch)
{
	struct wr w;

	if (slot == RPC_SLOT_ANY || target->slot == RPC_SLOT_ANY || target->slot == slot)
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_IO_RESYNC, 0);
	wr_u64(&w, handle);
	wr_u32(&w, slot_enc(slot));
	wr_u32(&w, target->io);
	wr_u32(&w, slot_enc(target->slot));
	wr_u32(&w, 0);
	wr_u64(&w, epoch);
	return wr_end(&w);
}

int rpc_enc_io_resync_ec(void *buf, size_t cap, uint64_t handle, uint32_t slot,
			 const struct rpc_copy *members, uint32_t k, uint32_t p,
			 uint32_t j, uint64_t epoch)
{
	struct wr w;

	if (slot == RPC_SLOT_ANY || !k || k > RPC_EC_MEMBERS_MAX || !p ||
	    p > RPC_COPIES_MAX || j >= p)
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_IO_RESYNC, RPC_RESYNC_EC);
	wr_u64(&w, handle);
	wr_u32(&w, slot_enc(slot));
	wr_u32(&w, k);
	wr_u32(&w, p);
	wr_u32(&w, j);
	wr_u64(&w, epoch);
	for (uint32_t i = 0; i < k; i++) {
		if (members[i].slot == RPC_SLOT_ANY || members[i].slot == slot)
			return -EINVAL;
		wr_u32(&w, members[i].io);
		wr_u32(&w, slot_enc(members[i].slot));
	}
	return wr_end(&w);
}

struct rpc_copy rpc_req_member(const struct rpc_req *r, uint32_t i)
{
	struct rpc_copy c = {0, RPC_SLOT_ANY, 0};

	if (i < r->nmembers) {
		c.io = get32(r->members + 8 * (size_t)i);
		c.slot = slot_dec(get32(r->members + 8 * (size_t)i + 4));
	}
	return c;
}

int rpc_enc_io_hold(void *buf, size_t cap, uint16_t flags, uint64_t handle,
		    const struct rpc_cap *capa, uint32_t slot, uint64_t off, uint64_t len,
		    uint64_t id, uint32_t lease_ms, uint32_t session)
{
	struct wr w;

	if (slot == RPC_SLOT_ANY || (flags & ~(RPC_HOLD_RELEASE | RPC_HOLD_END)) ||
	    flags == (RPC_HOLD_RELEASE | RPC_HOLD_END) || len > UINT64_MAX - off ||
	    (!flags && (!lease_ms || lease_ms > RPC_HOLD_LEASE_MAX_MS)) ||
	    (flags == RPC_HOLD_END && session == RPC_SLOT_ANY))
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_IO_HOLD, flags);
	wr_u64(&w, handle);
	wr_cap(&w, capa);
	wr_u32(&w, slot_enc(slot));
	wr_u32(&w, slot_enc(session));
	wr_u64(&w, off);
	wr_u64(&w, len);
	wr_u64(&w, id);
	wr_u32(&w, lease_ms);
	wr_u32(&w, 0);
	return wr_end(&w);
}

static int enc_stale(void *buf, size_t cap, uint16_t op, uint16_t flags, uint64_t handle,
		     uint64_t epoch, uint32_t slot, const uint32_t *stale, uint32_t n)
{
	struct wr w;

	if (!n || n > RPC_COPIES_MAX || slot == RPC_SLOT_ANY)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (stale[i] == RPC_SLOT_ANY)
			return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), op, flags);
	wr_u64(&w, handle);
	wr_u64(&w, epoch);
	wr_u32(&w, slot_enc(slot));
	wr_u32(&w, n);
	for (uint32_t i = 0; i < n; i++)
		wr_u32(&w, slot_enc(stale[i]));
	return wr_end(&w);
}

int rpc_enc_io_create(void *buf, size_t cap, uint64_t handle, uint64_t nonce,
		      uint32_t slot, uint16_t flags)
{
	struct wr w;

	if (!nonce || (flags & ~RPC_IO_CREATE_INCOMPLETE))
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_IO_CREATE, flags);
	wr_u64(&w, handle);
	wr_u64(&w, nonce);
	wr_u32(&w, slot_enc(slot));
	wr_u32(&w, 0);
	return wr_end(&w);
}

static int enc_index(void *buf, size_t cap, uint16_t op, uint32_t index)
{
	struct wr w;

	wr_preamble(&w, buf, cap_clamp(cap), op, 0);
	wr_u32(&w, index);
	wr_u32(&w, 0);
	return wr_end(&w);
}

int rpc_enc_io_probe(void *buf, size_t cap, uint32_t meta)
{
	return enc_index(buf, cap, RPC_IO_PROBE, meta);
}

int rpc_enc_mirror_rebuild(void *buf, size_t cap, uint32_t io)
{
	return enc_index(buf, cap, RPC_MIRROR_REBUILD, io);
}

int rpc_enc_search(void *buf, size_t cap, const char *path, uint32_t want, uint32_t uid,
		   uint32_t gid, const uint32_t *groups, uint32_t ngroups)
{
	struct wr w;
	int ret = path_errno(path);

	if (ret)
		return ret;
	if (ngroups > RPC_GROUPS_MAX || (want & ~7u))
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_SEARCH, 0);
	wr_str(&w, path, strlen(path));
	wr_u32(&w, want);
	wr_u32(&w, uid);
	wr_u32(&w, gid);
	wr_u32(&w, ngroups);
	for (uint32_t i = 0; i < ngroups; i++)
		wr_u32(&w, groups[i]);
	return wr_end(&w);
}

int rpc_enc_meta_handles(void *buf, size_t cap, const uint64_t *handles, uint32_t n)
{
	struct wr w;

	if (!n || n > RPC_HANDLES_MAX)
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_META_HANDLES, 0);
	wr_u32(&w, n);
	wr_u32(&w, 0);
	for (uint32_t i = 0; i < n; i++)
		wr_u64(&w, handles[i]);
	return wr_end(&w);
}

int rpc_enc_io_heartbeat(void *buf, size_t cap, uint32_t meta, const uint32_t *down,
			 uint32_t n)
{
	struct wr w;

	if (n > RPC_HEARTBEAT_DOWN_MAX)
		return -EINVAL;
	wr_preamble(&w, buf, cap_clamp(cap), RPC_IO_HEARTBEAT, 0);
	wr_u32(&w, meta);
	wr_u32(&w, n);
	for (uint32_t i = 0; i < n; i++)
		wr_u32(&w, down[i]);
	return wr_end(&w);
}

uint32_t rpc_req_down(const struct rpc_req *r, uint32_t i)
{
	return i < r->ndown ? get32(r->down + 4 * (size_t)i) : 0;
}

uint64_t rpc_req_handle(const struct rpc_req *r, uint32_t i)
{
	return i < r->nhandles ? get64(r->handles + 8 * (size_t)i) : 0;
}

/* Segments that fit cap bytes after the IO body's head and reserve. */
static uint32_t io_segs_in(size_t cap, size_t reserve)
{
	size_t head = RPC_PREAMBLE + 16 + RPC_CAP_SIZE + reserve;
	size_t n;

	if (cap < head)
		return 0;
	n = (cap - head) / RPC_SEG_SIZE;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint32_t rpc_io_max_segs(size_t cap)
{
	return io_segs_in(cap, 0);
}

/* ---- request decoding -------------------------------------------------- */

/* A read cursor; like struct wr, the first short read poisons it. */
struct rd {
	const uint8_t *p;
	size_t len, pos;
	int err;
};

static const uint8_t *rd_take(struct rd *r, size_t n)
{
	const uint8_t *at;

	if (r->err || n > r->len - r->pos) {
		r->err = -EPROTO;
		return NULL;
	}
	at = r->p + r->pos;
	r->pos += n;
	return at;
}

static uint32_t rd_u32(struct rd *r)
{
	const uint8_t *at = rd_take(r, 4);

	return at ? get32(at) : 0;
}

static uint64_t rd_u64(struct rd *r)
{
	const uint8_t *at = rd_take(r, 8);

	return at ? get64(at) : 0;
}

/* A string into dst (dstlen >= max + 1), NUL-terminated; -EPROTO if longer
 * than max or holding a NUL. Returns its length. */
static size_t rd_str(struct rd *r, char *dst, size_t max)
{
	const uint8_t *at = rd_take(r, 2);
	size_t n;

	if (!at)
		return 0;
	n = get16(at);
	if (n > max) {
		r->err = -EPROTO;
		return 0;
	}
	at = rd_take(r, n);
	if (!at)
		return 0;
	if (memchr(at, '\0', n)) {
		r->err = -EPROTO;
		return 0;
	}
	memcpy(dst, at, n);
	dst[n] = '\0';
	return n;
}

/* ---- request decoding, one function per body shape (rpc_ops.h) ---------- */

/* Each reads its shape's fields after the preamble into r and returns 0 or
 * the error of a field's value; a short body is left in rd->err. */
typedef int (*dec_fn)(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		      uint32_t maxseg);

/* The handle and the capability that follows it. */
static void dec_handle(struct rd *rd, struct rpc_req *r)
{
	const uint8_t *at;

	r->handle = rd_u64(rd);
	at = rd_take(rd, RPC_CAP_SIZE);
	if (at)
		rpc_dec_cap(at, &r->cap);
}

static void dec_path(struct rd *rd, struct rpc_req *r)
{
	rd_str(rd, r->path_buf, RPC_PATH_MAX);
	if (!rd->err && !rpc_path_ok(r->path_buf))
		rd->err = -EPROTO;
	r->path = r->path_buf;
}

static int body_none(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		     uint32_t maxseg)
{
	return 0;
}

static int body_path(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		     uint32_t maxseg)
{
	dec_path(rd, r);
	return 0;
}

static int body_mkdir(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		      uint32_t maxseg)
{
	dec_path(rd, r);
	r->mode = rd_u32(rd);
	r->uid = rd_u32(rd);
	r->gid = rd_u32(rd);
	return 0;
}

/* The optional redundancy that ends a CREATE or a setstripe SETATTR: absent
 * in an older client's body (0, not said), else one red_unpack accepts
 * and not 0 (an encoder leaves the field out instead). */
static int dec_redundancy(struct rd *rd, struct rpc_req *r)
{
	if (rd->err || rd->pos == rd->len)
		return 0;
	r->redundancy = rd_u32(rd);
	return !rd->err && (!r->redundancy || !red_ok(r->redundancy)) ? -EPROTO : 0;
}

static int body_create(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		       uint32_t maxseg)
{
	body_mkdir(rd, r, segs, maxseg);
	r->stripe_unit = rd_u64(rd);
	r->stripe_count = rd_u32(rd);
	r->first_server = (int32_t)rd_u32(rd);
	if (!rd->err && r->first_server < -1)
		return -EPROTO;
	return dec_redundancy(rd, r);
}

static int body_setattr(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
			uint32_t maxseg)
{
	dec_path(rd, r);
	r->mask = rd_u32(rd);
	r->mode = rd_u32(rd);
	r->uid = rd_u32(rd);
	r->gid = rd_u32(rd);
	r->atime = (int64_t)rd_u64(rd);
	r->mtime = (int64_t)rd_u64(rd);
	if (r->mask != RPC_SET_LAYOUT)
		return !rd->err && (r->mask & ~RPC_SET_ALL) ? -EPROTO : 0;
	/* A directory's default layout, and nothing else. */
	r->stripe_unit = rd_u64(rd);
	r->stripe_count = rd_u32(rd);
	if (!rd->err && (r->mode || r->uid || r->gid || r->atime || r->mtime))
		return -EPROTO;
	return dec_redundancy(rd, r);
}

static int body_readdir(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
			uint32_t maxseg)
{
	size_t n;

	dec_path(rd, r);
	n = rd_str(rd, r->cookie, RPC_NAME_MAX);
	r->max = rd_u32(rd);
	return !rd->err && n && !name_ok(r->cookie, n) ? -EPROTO : 0;
}

static int body_rename(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		       uint32_t maxseg)
{
	dec_path(rd, r);
	rd_str(rd, r->to_buf, RPC_PATH_MAX);
	if (!rd->err && !rpc_path_ok(r->to_buf))
		rd->err = -EPROTO;
	r->to = r->to_buf;
	return 0;
}

static int body_handle(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		       uint32_t maxseg)
{
	dec_handle(rd, r);
	return 0;
}

static int body_fetch_add(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
			  uint32_t maxseg)
{
	dec_handle(rd, r);
	r->delta = (int64_t)rd_u64(rd);
	return 0;
}

static int body_lock(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		     uint32_t maxseg)
{
	dec_handle(rd, r);
	r->off = rd_u64(rd);
	r->len = rd_u64(rd);
	r->owner = rd_u64(rd);
	return !rd->err && (!r->len || r->len > UINT64_MAX - r->off) ? -EPROTO : 0;
}

/* The tail after IO_WRITE's segments or IO_TRUNCATE's size (flags
 * RPC_IO_COPIES or RPC_IO_FORWARD, the same values as RPC_TRUNCATE_*):
 * its length from the bytes at p (left of them), 0 for none, -EPROTO. */
static long tail_len_at(const struct rpc_req *r, const uint8_t *p, size_t left)
{
	uint32_t n;

	if (r->flags & RPC_IO_FORWARD) {
		if (left < 16)
			return -EPROTO;
		return get32(p + 8) & RPC_FWD_XOR ? 32 : 16;
	}
	if (r->flags & RPC_IO_REPAIR)
		return 8;
	if (!(r->flags & (RPC_IO_COPIES | RPC_IO_PARITY)))
		return 0;
	if (left < 4)
		return -EPROTO;
	n = get32(p);
	if (!n || n > RPC_COPIES_MAX)
		return -EPROTO;
	return 12 + 12 * (long)n + (r->flags & RPC_IO_PARITY ? 8 : 0);
}

static int dec_tail(struct rd *rd, struct rpc_req *r)
{
	r->ncopies = 0;
	r->epoch = 0;
	r->fwd_flags = 0;
	r->ec_k = r->ec_p = r->ec_index = 0;
	r->ec_end = 0;
	if (r->flags & RPC_IO_REPAIR) {
		r->hold_id = rd_u64(rd);
		return rd->err;
	}
	if (r->flags & (RPC_IO_COPIES | RPC_IO_PARITY)) {
		r->ncopies = rd_u32(rd);
		r->epoch = rd_u64(rd);
		for (uint32_t i = 0; i < r->ncopies && i < RPC_COPIES_MAX; i++) {
			r->copies[i].io = rd_u32(rd);
			r->copies[i].slot = slot_dec(rd_u32(rd));
			r->copies[i].flags = rd_u32(rd);
			if (r->copies[i].slot == RPC_SLOT_ANY ||
			    (r->copies[i].flags & ~RPC_COPY_FLAGS))
				return -EPROTO;
		}
	}
	if (r->flags & RPC_IO_PARITY) {
		uint32_t code = rd_u32(rd);

		r->ec_k = code & 0xff;
		r->ec_p = code >> 8 & 0xff;
		r->ec_index = code >> 16 & 0xff;
		if (!rd->err && (code >> 24 || rd_u32(rd) || r->ec_p != r->ncopies ||
				 !ec_ok(r->ec_k, r->ec_p, r->ec_index)))
			return -EPROTO;
	} else if (r->flags & RPC_IO_FORWARD) {
		/* a forward is a server's: its capability is zero */
		if (r->cap.expiry || r->cap.rights || r->cap.lifetime_s ||
		    memcmp(r->cap.mac, (const uint8_t[16]){0}, 16))
			return -EPROTO;
		r->epoch = rd_u64(rd);
		r->fwd_flags = rd_u32(rd);
		if (!rd->err && ((r->fwd_flags & ~RPC_FWD_FLAGS) || rd_u32(rd)))
			return -EPROTO;
		if (r->fwd_flags & RPC_FWD_XOR) {
			uint32_t code = rd_u32(rd);

			r->ec_k = code & 0xff;
			r->ec_index = code >> 8 & 0xff;
			if (!rd->err &&
			    (code >> 16 || rd_u32(rd) || !ec_ok(r->ec_k, 1, r->ec_index)))
				return -EPROTO;
			r->ec_end = rd_u64(rd);
			if (!rd->err && r->ec_end > (uint64_t)INT64_MAX)
				return -EPROTO;
		}
	}
	return rd->err;
}

static int body_truncate(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
			 uint32_t maxseg)
{
	long tail;

	dec_handle(rd, r);
	r->size = rd_u64(rd);
	r->slot = RPC_SLOT_ANY;
	r->nends = 0;
	r->ends = NULL;
	if (rd->err)
		return rd->err;
	if (r->flags == RPC_TRUNCATE_ENDS) {
		r->ncopies = 0;
		r->epoch = 0;
		r->fwd_flags = 0;
		r->slot = slot_dec(rd_u32(rd));
		if (rd_u32(rd) && !rd->err)
			return -EPROTO;
		r->nends = rd_u32(rd);
		if (rd_u32(rd) && !rd->err)
			return -EPROTO;
		if (rd->err)
			return rd->err;
		if (r->slot == RPC_SLOT_ANY || !r->nends ||
		    r->nends > RPC_EC_MEMBERS_MAX ||
		    rd->len - rd->pos != 8 * (size_t)r->nends)
			return -EPROTO;
		r->ends = rd->p + rd->pos;
		for (uint32_t i = 0; i < r->nends; i++)
			if (rd_u64(rd) > (uint64_t)INT64_MAX && !rd->err)
				return -EPROTO;
		return rd->err;
	}
	if ((r->flags & ~(RPC_TRUNCATE_COPIES | RPC_TRUNCATE_FORWARD)) ||
	    (r->flags & RPC_TRUNCATE_COPIES && r->flags & RPC_TRUNCATE_FORWARD))
		return -EPROTO;
	if (r->flags) {
		r->slot = slot_dec(rd_u32(rd));
		if (rd_u32(rd) && !rd->err)
			return -EPROTO;
		if (!rd->err && r->slot == RPC_SLOT_ANY)
			return -EPROTO;
	}
	tail = tail_len_at(r, rd->p + rd->pos, rd->len - rd->pos);
	if (tail < 0 || (size_t)tail != rd->len - rd->pos)
		return -EPROTO;
	return dec_tail(rd, r);
}

static int body_io(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		   uint32_t maxseg)
{
	bool copies = r->flags & RPC_IO_COPIES, fwd = r->flags & RPC_IO_FORWARD;
	bool parity = r->flags & RPC_IO_PARITY, repair = r->flags & RPC_IO_REPAIR;
	size_t left, segs_len;
	long tail;

	dec_handle(rd, r);
	r->nseg = rd_u32(rd);
	r->slot = slot_dec(rd_u32(rd));
	r->ncopies = 0;
	r->epoch = 0;
	r->fwd_flags = 0;
	if (rd->err)
		return rd->err;
	if ((r->flags &
	     ~(RPC_IO_COPIES | RPC_IO_FORWARD | RPC_IO_PARITY | RPC_IO_REPAIR)) ||
	    copies + fwd + parity + repair > 1 ||
	    ((copies || fwd || parity || repair) && r->op != RPC_IO_WRITE))
		return -EPROTO;
	/* The count must describe exactly the rest of the body (but for the
	 * tail). */
	left = rd->len - rd->pos;
	segs_len = (size_t)r->nseg * RPC_SEG_SIZE;
	if (segs_len / RPC_SEG_SIZE != r->nseg || segs_len > left)
		return -EPROTO;
	tail = tail_len_at(r, rd->p + rd->pos + segs_len, left - segs_len);
	if (tail < 0 || left != segs_len + (size_t)tail)
		return -EPROTO;
	if (r->nseg > maxseg)
		return -E2BIG;
	for (uint32_t i = 0; i < r->nseg; i++) {
		segs[i].off = rd_u64(rd);
		segs[i].len = rd_u64(rd);
		if (!segs[i].len || segs[i].len > UINT64_MAX - segs[i].off)
			return -EPROTO;
	}
	r->segs = segs;
	return dec_tail(rd, r);
}

/* Between servers only. */
static int body_stale(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		      uint32_t maxseg)
{
	/* (MIRROR_FRESH's flag of the same value is RPC_FRESH_FAILED) */
	bool damaged = r->op == RPC_MIRROR_STALE && (r->flags & RPC_STALE_DAMAGED);

	r->handle = rd_u64(rd);
	r->epoch = rd_u64(rd);
	r->slot = slot_dec(rd_u32(rd));
	r->ncopies = rd_u32(rd);
	if (rd->err)
		return rd->err;
	if (r->slot == RPC_SLOT_ANY || !r->ncopies || r->ncopies > RPC_COPIES_MAX ||
	    ((r->op == RPC_MIRROR_FRESH || damaged) && r->ncopies != 1))
		return -EPROTO;
	for (uint32_t i = 0; i < r->ncopies; i++) {
		r->copies[i].io = 0;
		r->copies[i].flags = 0;
		r->copies[i].slot = slot_dec(rd_u32(rd));
		if (!rd->err && r->copies[i].slot == RPC_SLOT_ANY)
			return -EPROTO;
	}
	/* a damaged copy is the sender's own, and carries no epoch */
	if (!rd->err && damaged && (r->epoch || r->copies[0].slot != r->slot))
		return -EPROTO;
	return rd->err;
}

/* Between servers only: no capability. */
static int body_io_create(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
			  uint32_t maxseg)
{
	r->handle = rd_u64(rd);
	r->nonce = rd_u64(rd);
	r->slot = slot_dec(rd_u32(rd));
	return !rd->err && (!r->nonce || rd_u32(rd)) ? -EPROTO : 0;
}

static int body_probe(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		      uint32_t maxseg)
{
	r->meta = rd_u32(rd);
	return rd_u32(rd) && !rd->err ? -EPROTO : 0;
}

static int body_search(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		       uint32_t maxseg)
{
	dec_path(rd, r);
	r->want = rd_u32(rd);
	r->uid = rd_u32(rd);
	r->gid = rd_u32(rd);
	r->ngroups = rd_u32(rd);
	if (!rd->err && ((r->want & ~7u) || r->ngroups > RPC_GROUPS_MAX))
		return -EPROTO;
	for (uint32_t i = 0; i < r->ngroups; i++)
		r->groups[i] = rd_u32(rd);
	return 0;
}

/* Between servers only. */
static int body_handles(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
			uint32_t maxseg)
{
	r->nhandles = rd_u32(rd);
	if (!rd->err && (rd_u32(rd) || !r->nhandles || r->nhandles > RPC_HANDLES_MAX))
		return -EPROTO;
	r->handles = rd_take(rd, 8 * (size_t)r->nhandles);
	return 0;
}

/* Between servers only. */
static int body_down(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		     uint32_t maxseg)
{
	r->meta = rd_u32(rd);
	r->ndown = rd_u32(rd);
	if (!rd->err && r->ndown > RPC_HEARTBEAT_DOWN_MAX)
		return -EPROTO;
	r->down = rd_take(rd, 4 * (size_t)r->ndown);
	return rd->err;
}

/* From a client: the capability, a data slot and one copy's slot. */
static int body_repair(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		       uint32_t maxseg)
{
	dec_handle(rd, r);
	r->slot = slot_dec(rd_u32(rd));
	r->ncopies = 1;
	r->copies[0].io = 0;
	r->copies[0].flags = 0;
	r->copies[0].slot = slot_dec(rd_u32(rd));
	if (!rd->err && (r->slot == RPC_SLOT_ANY || r->copies[0].slot == RPC_SLOT_ANY ||
			 r->copies[0].slot == r->slot))
		return -EPROTO;
	return rd->err;
}

/* Between servers only: an ec parity member's resync (RPC_RESYNC_EC). */
static int body_resync_ec(struct rd *rd, struct rpc_req *r)
{
	r->handle = rd_u64(rd);
	r->slot = slot_dec(rd_u32(rd));
	r->ec_k = rd_u32(rd);
	r->ec_p = rd_u32(rd);
	r->ec_index = rd_u32(rd);
	r->epoch = rd_u64(rd);
	if (rd->err)
		return rd->err;
	if (r->slot == RPC_SLOT_ANY || !r->ec_k || r->ec_k > RPC_EC_MEMBERS_MAX ||
	    !r->ec_p || r->ec_p > RPC_COPIES_MAX || r->ec_index >= r->ec_p)
		return -EPROTO;
	r->nmembers = r->ec_k;
	r->members = rd_take(rd, 8 * (size_t)r->nmembers);
	if (rd->err)
		return rd->err;
	for (uint32_t i = 0; i < r->nmembers; i++) {
		uint32_t ms = rpc_req_member(r, i).slot;

		if (ms == RPC_SLOT_ANY || ms == r->slot)
			return -EPROTO;
	}
	return 0;
}

/* Between servers only. */
static int body_hold(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		     uint32_t maxseg)
{
	uint32_t session;

	dec_handle(rd, r);
	r->slot = slot_dec(rd_u32(rd));
	session = slot_dec(rd_u32(rd));
	r->off = rd_u64(rd);
	r->len = rd_u64(rd);
	r->hold_id = rd_u64(rd);
	r->lease_ms = rd_u32(rd);
	if (rd_u32(rd) && !rd->err)
		return -EPROTO;
	if (rd->err)
		return rd->err;
	r->ncopies = session != RPC_SLOT_ANY;
	r->copies[0] = (struct rpc_copy){0, session, 0};
	if (r->slot == RPC_SLOT_ANY || r->len > UINT64_MAX - r->off ||
	    r->flags == (RPC_HOLD_RELEASE | RPC_HOLD_END) ||
	    (!r->flags && (!r->lease_ms || r->lease_ms > RPC_HOLD_LEASE_MAX_MS)) ||
	    (r->flags == RPC_HOLD_END && !r->ncopies) ||
	    (r->ncopies && session == r->slot))
		return -EPROTO;
	return 0;
}

/* Between servers only. */
static int body_resync(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		       uint32_t maxseg)
{
	if (r->flags & RPC_RESYNC_EC)
		return body_resync_ec(rd, r);
	r->handle = rd_u64(rd);
	r->slot = slot_dec(rd_u32(rd));
	r->ncopies = 1;
	r->copies[0].io = rd_u32(rd);
	r->copies[0].slot = slot_dec(rd_u32(rd));
	r->copies[0].flags = 0;
	if (rd_u32(rd) && !rd->err)
		return -EPROTO;
	r->epoch = rd_u64(rd);
	if (!rd->err && (r->slot == RPC_SLOT_ANY || r->copies[0].slot == RPC_SLOT_ANY ||
			 r->copies[0].slot == r->slot))
		return -EPROTO;
	return 0;
}

/* Between servers only. */
static int body_digest(struct rd *rd, struct rpc_req *r, struct rpc_seg *segs,
		       uint32_t maxseg)
{
	r->handle = rd_u64(rd);
	r->slot = slot_dec(rd_u32(rd));
	if (rd_u32(rd) && !rd->err)
		return -EPROTO;
	r->off = rd_u64(rd);
	r->len = rd_u64(rd);
	if (!rd->err && (r->slot == RPC_SLOT_ANY || r->off % RPC_DIGEST_UNIT || !r->len ||
			 r->len > RPC_DIGEST_SPAN))
		return -EPROTO;
	return 0;
}

static const dec_fn decoders[] = {
	[RPC_BODY_NONE] = body_none,	       [RPC_BODY_PATH] = body_path,
	[RPC_BODY_MKDIR] = body_mkdir,	       [RPC_BODY_CREATE] = body_create,
	[RPC_BODY_SETATTR] = body_setattr,     [RPC_BODY_READDIR] = body_readdir,
	[RPC_BODY_RENAME] = body_rename,       [RPC_BODY_HANDLE] = body_handle,
	[RPC_BODY_FETCH_ADD] = body_fetch_add, [RPC_BODY_LOCK] = body_lock,
	[RPC_BODY_TRUNCATE] = body_truncate,   [RPC_BODY_IO] = body_io,
	[RPC_BODY_IO_CREATE] = body_io_create, [RPC_BODY_PROBE] = body_probe,
	[RPC_BODY_SEARCH] = body_search,       [RPC_BODY_HANDLES] = body_handles,
	[RPC_BODY_STALE] = body_stale,	       [RPC_BODY_RESYNC] = body_resync,
	[RPC_BODY_REPAIR] = body_repair,       [RPC_BODY_DOWN] = body_down,
	[RPC_BODY_DIGEST] = body_digest,       [RPC_BODY_HOLD] = body_hold,
};

/* The fields of the preamble, and the defaults of those a body may not
 * carry (path "" and no "to", first_server -1, no slot). */
static void dec_start(struct rpc_req *r, const uint8_t *pre)
{
	memset(r, 0, offsetof(struct rpc_req, path_buf));
	memset(&r->mode, 0, sizeof(*r) - offsetof(struct rpc_req, mode));
	r->path_buf[0] = '\0';
	r->to = NULL;
	r->to_buf[0] = '\0';
	r->first_server = -1;
	r->slot = RPC_SLOT_ANY;
	if (pre) {
		r->op = get16(pre);
		r->flags = get16(pre + 2);
	}
}

uint32_t rpc_req_max_segs(const void *buf, size_t len)
{
	const struct rpc_op_desc *d = len >= 2 ? rpc_op_desc(get16(buf)) : NULL;

	return d && d->body == RPC_BODY_IO ? rpc_io_max_segs(len) : 0;
}

/* On success (0) the request satisfies:
 *   - op is one of enum rpc_op, its flags only those its line of the table
 *     accepts (rpc_ops.h): CREATE RPC_CREATE_EXCL | RPC_WANT_*; LOOKUP,
 *     GETATTR RPC_WANT_*; LOCK/UNLOCK RPC_LOCK_*; SEARCH, META_HANDLES none;
 *   - path ops: r->path == r->path_buf and rpc_path_ok(r->path);
 *   - READDIR: r->cookie is "" or a valid entry name;
 *   - RENAME: also r->to == r->to_buf and rpc_path_ok(r->to);
 *   - CREATE: first_server >= -1; redundancy 0 (not said) or one
 *     red_unpack accepts (also with RPC_SET_LAYOUT);
 *   - SETATTR: mask only RPC_SET_MODE|OWNER|TIMES, or RPC_SET_LAYOUT alone
 *     (mode, uid, gid and times 0; stripe_unit and stripe_count read);
 *   - LOCK/UNLOCK: len > 0, off + len <= UINT64_MAX;
 *   - IO_WRITE/IO_READ: nseg <= maxseg, r->segs == segs, each segment has
 *     len > 0 and off + len <= UINT64_MAX (segments may be unordered);
 *     flags only one of RPC_IO_COPIES, RPC_IO_FORWARD, RPC_IO_PARITY, and
 *     only on IO_WRITE: with RPC_IO_COPIES or RPC_IO_PARITY 1 <= ncopies <=
 *     RPC_COPIES_MAX (with RPC_IO_PARITY ec_p == ncopies, 1 <= ec_k <=
 *     RED_EC_CELLS_MAX, ec_index < ec_k),
 *     each copy's slot said (not RPC_SLOT_ANY) and its flags only
 *     RPC_COPY_FLAGS; the copies' I/O indexes are the receiver's to
 *     check; with RPC_IO_FORWARD a zero capability and fwd_flags only
 *     RPC_FWD_FLAGS;
 *   - MIRROR_STALE: slot said, 1 <= ncopies <= RPC_COPIES_MAX, each
 *     copies[i].slot said;
 *   - IO_CREATE: nonce != 0;
 *   - SEARCH: want only mode bits (0..7), ngroups <= RPC_GROUPS_MAX;
 *   - META_HANDLES: 1 <= nhandles <= RPC_HANDLES_MAX, r->handles
 *     points at them in buf (rpc_req_handle reads them);
 *   - the body had no bytes beyond its last field (bodyless ops excepted).
 * Errors: -EPROTO for a malformed body; -E2BIG for a well-formed IO request
 * with more than maxseg segments (a limit of the receiver, not a fault of
 * the sender: the server should reply -E2BIG, not -EPROTO). */
int rpc_decode_req(const void *buf, size_t len, struct rpc_req *r, struct rpc_seg *segs,
		   uint32_t maxseg)
{
	struct rd rd = {buf, len, 0, 0};
	const uint8_t *pre = rd_take(&rd, RPC_PREAMBLE);
	const struct rpc_op_desc *d;
	int ret;

	dec_start(r, pre);
	if (!pre)
		return -EPROTO;
	d = rpc_op_desc(r->op);
	if (!d || (r->flags & ~d->flags))
		return -EPROTO;
	ret = decoders[d->body](&rd, r, segs, maxseg);
	if (d->body == RPC_BODY_NONE)
		return 0;
	if (!ret)
		ret = rd.err;
	if (!ret && rd.pos != rd.len)
		ret = -EPROTO;
	if (ret) {
		r->nseg = 0;
		r->segs = NULL;
	}
	return ret;
}

int rpc_path_ok(const char *path)
{
	size_t comp = 0;
	size_t i;

	if (!path || path[0] != '/')
		return 0;
	if (!path[1])
		return 1; /* the root */
	for (i = 1; path[i]; i++) {
		if (i > RPC_PATH_MAX)
			return 0;
		if (path[i] != '/') {
			if (++comp > RPC_NAME_MAX)
				return 0;
			continue;
		}
		/* End of a component: reject "" (a "//"), "." and "..". */
		if (comp == 0 || (comp == 1 && path[i - 1] == '.') ||
		    (comp == 2 && path[i - 1] == '.' && path[i - 2] == '.'))
			return 0;
		comp = 0;
	}
	if (i > RPC_PATH_MAX)
		return 0;
	/* The last component: empty means a trailing '/'. */
	return !(comp == 0 || (comp == 1 && path[i - 1] == '.') ||
		 (comp == 2 && path[i - 1] == '.' && path[i - 2] == '.'));
}

/* ---- replies ----------------------------------------------------------- */

void rpc_enc_attr(void *buf, const struct rpc_attr *a)
{
	uint8_t *p = buf;

	memset(p, 0, RPC_ATTR_SIZE);
	put64(p + 0, a->handle);
	put32(p + 8, a->type);
	put32(p + 12, a->mode);
	put32(p + 16, a->uid);
	put32(p + 20, a->gid);
	put64(p + 24, (uint64_t)a->atime);
	put64(p + 32, (uint64_t)a->mtime);
	put64(p + 40, (uint64_t)a->ctime);
	put64(p + 48, a->layout.stripe_unit);
	put32(p + 56, a->layout.stripe_count);
	put32(p + 60, a->layout.first_server);
	put32(p + 64, a->layout.nservers);
	p[68] = (uint8_t)a->layout.kind;
	p[69] = (uint8_t)a->layout.copies;
	/* ec:K+P (K, P <= RED_EC_CELLS_MAX); the cell is the stripe unit */
	p[70] = (uint8_t)a->layout.data_cells;
	p[71] = (uint8_t)a->layout.parity_cells;
	put64(p + 72, (uint64_t)a->times_set);
}

void rpc_enc_cap(void *buf, const struct rpc_cap *c)
{
	uint8_t *p = buf;

	put64(p, (uint64_t)c->expiry);
	put32(p + 8, c->rights);
	put32(p + 12, c->lifetime_s);
	memcpy(p + 16, c->mac, sizeof(c->mac));
}

void rpc_dec_cap(const void *buf, struct rpc_cap *c)
{
	const uint8_t *p = buf;

	c->expiry = (int64_t)get64(p);
	c->rights = get32(p + 8);
	c->lifetime_s = get32(p + 12);
	memcpy(c->mac, p + 16, sizeof(c->mac));
}

void rpc_enc_attr_cap(void *buf, const struct rpc_attr *a)
{
	rpc_enc_attr(buf, a);
	rpc_enc_cap((uint8_t *)buf + RPC_ATTR_SIZE, &a->cap);
}

/* Rejects an unknown type and a file whose layout fails layout_check(): a
 * client would divide by its stripe unit. */
int rpc_dec_attr(const void *buf, size_t len, struct rpc_attr *a)
{
	const uint8_t *p = buf;

	if (len < RPC_ATTR_SIZE)
		return -EPROTO;
	memset(a, 0, sizeof(*a));
	a->handle = get64(p + 0);
	a->type = get32(p + 8);
	a->mode = get32(p + 12);
	a->uid = get32(p + 16);
	a->gid = get32(p + 20);
	a->atime = (int64_t)get64(p + 24);
	a->mtime = (int64_t)get64(p + 32);
	a->ctime = (int64_t)get64(p + 40);
	a->layout.stripe_unit = get64(p + 48);
	a->layout.stripe_count = get32(p + 56);
	a->layout.first_server = get32(p + 60);
	a->layout.nservers = get32(p + 64);
	a->layout.kind = p[68];
	a->layout.copies = p[69];
	a->layout.data_cells = p[70];
	a->layout.parity_cells = p[71];
	a->times_set = (int64_t)get64(p + 72);
	if (len >= RPC_ATTR_CAP_SIZE)
		rpc_dec_cap(p + RPC_ATTR_SIZE, &a->cap);
	if (a->type == RPC_TYPE_FILE)
		return layout_check(&a->layout) ? -EPROTO : 0;
	return a->type == RPC_TYPE_DIR ? 0 : -EPROTO;
}

void rpc_enc_u64(void *buf, uint64_t v)
{
	put64(buf, v);
}

int rpc_dec_u64(const void *buf, size_t len, uint64_t *v)
{
	if (len < 8)
		return -EPROTO;
	*v = get64(buf);
	return 0;
}

/* Returns the body length, -E2BIG if it does not fit cap, -EINVAL for a bad
 * entry (invalid name or type) or more not 0/1. */
int rpc_enc_dirents(void *buf, size_t cap, const struct rpc_dirent *e, uint32_t n,
		    uint32_t more)
{
	struct wr w = {buf, cap_clamp(cap), 0, 0};

	if (more > 1)
		return -EINVAL;
	wr_u32(&w, n);
	wr_u32(&w, more);
	for (uint32_t i = 0; i < n; i++) {
		size_t len = strnlen(e[i].name, RPC_NAME_MAX + 1);

		if (!name_ok(e[i].name, len) ||
		    (e[i].type != RPC_TYPE_FILE && e[i].type != RPC_TYPE_DIR))
			return -EINVAL;
		wr_u32(&w, e[i].type);
		wr_str(&w, e[i].name, len);
	}
	return wr_end(&w);
}

/* -EPROTO for a malformed body, -E2BIG if it holds more than max entries. */
int rpc_dec_dirents(const void *buf, size_t len, struct rpc_dirent *e, uint32_t max,
		    uint32_t *n, uint32_t *more)
{
	struct rd rd = {buf, len, 0, 0};
	uint32_t count, m;

	*n = 0;
	*more = 0;
	count = rd_u32(&rd);
	m = rd_u32(&rd);
	if (rd.err || m > 1)
		return -EPROTO;
	/* Each entry takes at least 7 bytes: reject impossible counts first. */
	if (count > (len - rd.pos) / 7)
		return -EPROTO;
	if (count > max)
		return -E2BIG;
	for (uint32_t i = 0; i < count; i++) {
		size_t nl;

		e[i].type = rd_u32(&rd);
		nl = rd_str(&rd, e[i].name, RPC_NAME_MAX);
		if (rd.err)
			return rd.err;
		if (!name_ok(e[i].name, nl) ||
		    (e[i].type != RPC_TYPE_FILE && e[i].type != RPC_TYPE_DIR))
			return -EPROTO;
	}
	if (rd.pos != rd.len)
		return -EPROTO;
	*n = count;
	*more = m;
	return 0;
}

void rpc_enc_statfs(void *buf, const struct rpc_statfs *s)
{
	uint8_t *p = buf;

	put64(p + 0, s->total);
	put64(p + 8, s->avail);
	put64(p + 16, s->objects);
	put64(p + 24, s->free);
	put64(p + 32, s->fsid);
}

int rpc_dec_statfs(const void *buf, size_t len, struct rpc_statfs *s)
{
	const uint8_t *p = buf;

	if (len < RPC_STATFS_MIN)
		return -EPROTO;
	s->total = get64(p + 0);
	s->avail = get64(p + 8);
	s->objects = get64(p + 16);
	s->free = len < RPC_STATFS_SIZE ? s->avail : get64(p + 24);
	s->fsid = len < RPC_STATFS_SIZE ? 0 : get64(p + 32);
	return 0;
}

void rpc_enc_io_size(void *buf, const struct rpc_io_size *s)
{
	uint8_t *p = buf;

	put64(p + 0, s->size);
	put64(p + 8, (uint64_t)s->mtime);
	put64(p + 16, (uint64_t)s->ctime);
}

int rpc_dec_io_size(const void *buf, size_t len, struct rpc_io_size *s)
{
	const uint8_t *p = buf;

	if (len < 8)
		return -EPROTO;
	s->size = get64(p);
	s->mtime = len < RPC_IO_SIZE_REP ? 0 : (int64_t)get64(p + 8);
	s->ctime = len < RPC_IO_SIZE_REP ? 0 : (int64_t)get64(p + 16);
	return 0;
}

int rpc_enc_io_size_ends(void *buf, size_t cap, const struct rpc_io_size *s,
			 const uint64_t *ends, uint32_t n)
{
	uint8_t *p = buf;

	if (n > RPC_EC_MEMBERS_MAX || cap < RPC_IO_SIZE_REP + 8 + 8 * (size_t)n)
		return -E2BIG;
	rpc_enc_io_size(p, s);
	put32(p + RPC_IO_SIZE_REP, n);
	put32(p + RPC_IO_SIZE_REP + 4, 0);
	for (uint32_t i = 0; i < n; i++)
		put64(p + RPC_IO_SIZE_REP + 8 + 8 * (size_t)i, ends[i]);
	return (int)(RPC_IO_SIZE_REP + 8 + 8 * (size_t)n);
}

int rpc_dec_io_size_ends(const void *buf, size_t len, struct rpc_io_size *s,
			 uint64_t *ends, uint32_t max, uint32_t *n)
{
	const uint8_t *p = buf;
	uint32_t count;

	if (len < RPC_IO_SIZE_REP + 8 || rpc_dec_io_size(buf, len, s))
		return -EPROTO;
	count = get32(p + RPC_IO_SIZE_REP);
	if (count > RPC_EC_MEMBERS_MAX || get32(p + RPC_IO_SIZE_REP + 4) ||
	    len != RPC_IO_SIZE_REP + 8 + 8 * (size_t)count)
		return -EPROTO;
	for (uint32_t i = 0; i < max; i++)
		ends[i] = i < count ? get64(p + RPC_IO_SIZE_REP + 8 + 8 * (size_t)i) : 0;
	*n = count;
	return 0;
}

void rpc_enc_probe(void *buf, const struct rpc_probe *p)
{
	uint8_t *b = buf;

	put64(b + 0, p->count);
	put64(b + 8, p->max_handle);
}

int rpc_dec_probe(const void *buf, size_t len, struct rpc_probe *p)
{
	const uint8_t *b = buf;

	if (len < RPC_PROBE_SIZE)
		return -EPROTO;
	p->count = get64(b + 0);
	p->max_handle = get64(b + 8);
	return 0;
}

void rpc_enc_search_rep(void *buf, const struct rpc_search_rep *r)
{
	uint8_t *b = buf;

	put32(b + 0, r->depth);
	put32(b + 4, (uint32_t)r->status);
}

int rpc_dec_search_rep(const void *buf, size_t len, struct rpc_search_rep *r)
{
	const uint8_t *b = buf;

	if (len < RPC_SEARCH_REP_SIZE)
		return -EPROTO;
	r->depth = get32(b + 0);
	r->status = (int32_t)get32(b + 4);
	/* Only a refusal, with where it is, or neither. */
	if (r->status > 0 || !r->status != !r->depth)
		return -EPROTO;
	return 0;
}

int rpc_enc_handle_states(void *buf, size_t cap, const uint8_t *states, uint32_t n)
{
	struct wr w = {buf, cap_clamp(cap), 0, 0};
	uint8_t *at;

	if (n > RPC_HANDLES_MAX)
		return -EINVAL;
	wr_u32(&w, n);
	at = wr_room(&w, n);
	if (at)
		memcpy(at, states, n);
	return wr_end(&w);
}

int rpc_dec_handle_states(const void *buf, size_t len, uint8_t *states, uint32_t n)
{
	struct rd rd = {buf, len, 0, 0};
	const uint8_t *at;

	if (rd_u32(&rd) != n || rd.err || n > RPC_HANDLES_MAX)
		return -EPROTO;
	at = rd_take(&rd, n);
	if (!at || rd.pos != rd.len)
		return -EPROTO;
	for (uint32_t i = 0; i < n; i++) {
		if (at[i] < RPC_HS_FILE || at[i] > RPC_HS_DAMAGED)
			return -EPROTO;
		states[i] = at[i];
	}
	return 0;
}

/* ---- STATS ------------------------------------------------------------- */

static int stat_name_ok(const char *s, size_t n)
{
	if (!n || n > RPC_STAT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_' || s[i] == '.'))
			return 0;
	return 1;
}

int rpc_enc_stats(void *buf, size_t cap, const struct rpc_stat *s, uint32_t n)
{
	struct wr w = {buf, cap_clamp(cap), 0, 0};

	if (n > RPC_STATS_MAX)
		return -EINVAL;
	wr_u32(&w, n);
	for (uint32_t i = 0; i < n; i++) {
		size_t len = strnlen(s[i].name, RPC_STAT_NAME_MAX + 1);

		if (!stat_name_ok(s[i].name, len))
			return -EINVAL;
		wr_str(&w, s[i].name, len);
		wr_u64(&w, s[i].value);
	}
	return wr_end(&w);
}

int rpc_dec_stats(const void *buf, size_t len, struct rpc_stat *s, uint32_t max,
		  uint32_t *n)
{
	struct rd rd = {buf, len, 0, 0};
	uint32_t count = rd_u32(&rd);

	if (rd.err || count > RPC_STATS_MAX || count > max)
		return -EPROTO;
	for (uint32_t i = 0; i < count; i++) {
		size_t nlen = rd_str(&rd, s[i].name, RPC_STAT_NAME_MAX);

		s[i].value = rd_u64(&rd);
		if (rd.err || !stat_name_ok(s[i].name, nlen))
			return -EPROTO;
	}
	if (rd.pos != rd.len)
		return -EPROTO;
	*n = count;
	return 0;
}

int rpc_enc_down(void *buf, size_t cap, const uint32_t *io, uint32_t n)
{
	uint8_t *p = buf;

	if (n > RPC_DOWN_MAX)
		n = RPC_DOWN_MAX;
	if (cap < 4 + 4 * (size_t)n)
		return -E2BIG;
	put32(p, n);
	for (uint32_t i = 0; i < n; i++)
		put32(p + 4 + 4 * (size_t)i, io[i]);
	return (int)(4 + 4 * n);
}

int rpc_dec_down(const void *buf, size_t len, uint32_t *io, uint32_t *n)
{
	const uint8_t *p = buf;

	*n = 0;
	if (!len)
		return 0;
	if (len < 4)
		return -EPROTO;
	*n = get32(p);
	if (*n > RPC_DOWN_MAX || len != 4 + 4 * (size_t)*n) {
		*n = 0;
		return -EPROTO;
	}
	for (uint32_t i = 0; i < *n; i++)
		io[i] = get32(p + 4 + 4 * (size_t)i);
	return 0;
}

int rpc_enc_view(void *buf, size_t cap, uint64_t epoch, const uint32_t *slots, uint32_t n)
{
	uint8_t *p = buf;

	if (n > RPC_STALE_MAX)
		return -EINVAL;
	if (cap < 12 + 4 * (size_t)n)
		return -E2BIG;
	put64(p, epoch);
	put32(p + 8, n);
	for (uint32_t i = 0; i < n; i++)
		put32(p + 12 + 4 * (size_t)i, slots[i]);
	return (int)(12 + 4 * n);
}

int rpc_dec_view(const void *buf, size_t len, uint64_t *epoch, uint32_t *slots,
		 uint32_t *n)
{
	const uint8_t *p = buf;
	uint32_t k;

	*n = 0;
	*epoch = 0;
	if (len < 12)
		return -EPROTO;
	k = get32(p + 8);
	if (k > RPC_STALE_MAX || len != 12 + 4 * (size_t)k)
		return -EPROTO;
	*epoch = get64(p);
	for (uint32_t i = 0; i < k; i++)
		slots[i] = get32(p + 12 + 4 * (size_t)i);
	*n = k;
	return 0;
}

int rpc_dec_open_tail(const void *buf, size_t len, uint32_t *down, uint32_t *ndown,
		      uint64_t *epoch, uint32_t *stale, uint32_t *nstale, bool *has_view)
{
	const uint8_t *p = buf;
	size_t dlen;
	int ret;

	*ndown = 0;
	*nstale = 0;
	*epoch = 0;
	*has_view = false;
	if (!len)
		return 0;
	if (len < 4 || get32(p) > RPC_DOWN_MAX)
		return -EPROTO;
	dlen = 4 + 4 * (size_t)get32(p);
	if (len < dlen)
		return -EPROTO;
	ret = rpc_dec_down(p, dlen, down, ndown);
	if (ret || len == dlen)
		return ret;
	ret = rpc_dec_view(p + dlen, len - dlen, epoch, stale, nstale);
	if (ret) {
		*ndown = 0;
		return ret;
	}
	*has_view = true;
	return 0;
}
