/* File-service protocol: the request and reply bodies that travel in
 * transport calls (xport.h) between librpfs and rpfsd, and between servers.
 *
 * Every request body starts with a 8-byte preamble: op (u16), flags (u16),
 * reserved (u32). The transport reply status carries the result (0 or a
 * negative errno); reply bodies carry the result values. All fields are
 * little-endian, encoded field by field; every decoder checks lengths,
 * counts and string sizes before use and returns -EPROTO on a malformed
 * body (the server then replies -EPROTO; it never trusts a count).
 *
 * Handles: 64-bit, the owning metadata server's index in the top 16 bits,
 * so any server or client finds the owner of a handle without asking
 * (placement.h).
 * Paths: absolute, normalized ("/a/b", no "//", ".", ".." or trailing "/"),
 * at most RPC_PATH_MAX bytes; servers reject anything else. */
#ifndef RPFS_RPC_H
#define RPFS_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "placement.h"
#include "redundancy.h"
#include "rpc_ops.h"

#define RPC_PREAMBLE 8
#define RPC_PATH_MAX 4095
#define RPC_NAME_MAX 255

/* The ops, their numbers and everything else about them: rpc_ops.h. */
enum rpc_op {
#define RPC_OP_ENUM(NAME, code, ...) RPC_##NAME = code,
	RPC_OPS(RPC_OP_ENUM)
#undef RPC_OP_ENUM
};

/* An op's line of the table (rpc_ops.h) but its handler. */
struct rpc_op_desc {
	const char *name;
	uint16_t flags; /* the preamble flags it accepts */
	enum rpc_route route;
	enum rpc_body body;
	enum rpc_access access;
	enum rpc_runs runs;
};
/* The description of op, NULL for a code no op has. */
const struct rpc_op_desc *rpc_op_desc(uint16_t op);
/* Every op an I/O server serves (route RPC_TO_IO). */
int rpc_is_io_op(uint16_t op);

/* Reply statuses of the I/O ops for storage that is not what it should be:
 *   -EBADMSG  damaged data: a block fails its checksum, or the datafile is
 *             shorter than its checksums say. IO_READ, IO_WRITE (a partial
 *             block's old bytes) and IO_SIZE then carry a u64 body: the
 *             datafile offset of the first damaged byte asked for.
 *   -ESTALE   the handle has no datafile on this server (the file was
 *             removed, or the server lost its storage); never zeros.
 *   -EEXIST   IO_CREATE: the handle already has a datafile there that this
 *             create did not make (a handle used before).
 * A CREATE that fails because an I/O server could not make the new file's
 * datafile (with that server's status, or -EHOSTDOWN when the metadata
 * server could not reach it) carries a u64 body: that server's I/O index
 * (the numbering layouts use), so that the client names it. */

enum rpc_type { RPC_TYPE_FILE = 1, RPC_TYPE_DIR = 2 };

/* A stripe slot not said (struct rpc_req's slot). */
#define RPC_SLOT_ANY 0xffffffffu

/* RPC_IO_WRITE flags: the segments are followed by the copies list
 * (struct rpc_copy): the receiver is the primary of a mirrored slot and
 * forwards the write to them before answering (server/io_forward.c). */
#define RPC_IO_COPIES 1u
/* RPC_IO_WRITE flags: a primary's forward of a mirrored write to one copy
 * (peers only); the segments are followed by the primary's mirror epoch and
 * the copy's flags (RPC_COPY_STALE). */
#define RPC_IO_FORWARD 2u
/* RPC_IO_WRITE flags: a write of an erasure-coded data cell (ec:K+P,
 * docs/design/erasure-coding.md); the segments are followed by its group's
 * parity members as a copies list (struct rpc_copy, parity index j = the
 * place in the list), the file's epoch, then K, P and the cell's index i
 * in its group. The receiver stores it keeping old ^ new of each byte, and
 * before answering sends each parity member c(j, i) * (old ^ new) to XOR in
 * (an RPC_IO_FORWARD with RPC_FWD_XOR: server/io_forward.c). */
#define RPC_IO_PARITY 4u
/* RPC_IO_WRITE flag, alone: the mending of damaged blocks of an ec data
 * cell (client/ec_degraded.c). The segments are whole blocks (CSUM_BLOCK
 * aligned; the last may end at the datafile's end) that fail their
 * checksums, the bytes are theirs decoded from the rest of the group, and
 * the writer holds the range still there (IO_HOLD hold_id, after the
 * segments as a u64): the server checks all three and stores the bytes
 * with no parity delta, as the parity already holds them. */
#define RPC_IO_REPAIR 8u
/* Copies a write names at most (mirror:8 has 7 besides the primary), and
 * parity members (ec:K+P with P <= 7). */
#define RPC_COPIES_MAX 7
/* Bytes a copies list takes at most, with an ec write's code after it:
 * rpc_io_max_segs leaves this room. */
#define RPC_IO_COPIES_ROOM (12 + 12 * RPC_COPIES_MAX + 8)
/* A copy the metadata server marked stale (it missed writes): written to
 * when it answers, never read from, never made a primary. */
#define RPC_COPY_STALE 1u
/* A copy whose server the client knows not to answer (its connection
 * broken, silent, or down in the metadata server's list): the primary
 * marks it stale at once instead of waiting for the transport to give up
 * on it. A wrong guess costs a resync, never bytes. */
#define RPC_COPY_DOWN  2u
#define RPC_COPY_FLAGS (RPC_COPY_STALE | RPC_COPY_DOWN)
/* A forward's flags besides RPC_COPY_STALE, from a resync's source to its
 * target only (server/io_forward.c): RPC_FWD_RESYNC, a resync's first
 * truncate: the target is not whole until the resync ends, so it serves no
 * read and acts as no primary (a client that opened the file before the
 * copy was marked stale would read a half-copied datafile); RPC_FWD_WHOLE,
 * the resync's end: whole again, at the forward's epoch. RPC_FWD_KEEP, with
 * RPC_FWD_RESYNC: the target keeps the bytes it has (cut or grown to the
 * size), which the source compares unit by unit (IO_DIGEST) and sends only
 * where they differ; without it, the target is cut to nothing first. */
#define RPC_FWD_RESYNC 4u
#define RPC_FWD_WHOLE  8u
#define RPC_FWD_KEEP   16u
/* A forward's flag, from an ec data server to a parity member: the bytes
 * are a parity delta, XORed into the datafile (datafile_write_xor). The
 * forward's tail then also says which data member it is of (K and its
 * index i) and that member's datafile size after the write, which the
 * parity member keeps (its record of the members' ends, server/ec_ends.c):
 * the file's size with that member lost. */
#define RPC_FWD_XOR 32u
#define RPC_FWD_FLAGS                                                                    \
	(RPC_COPY_STALE | RPC_FWD_RESYNC | RPC_FWD_WHOLE | RPC_FWD_KEEP | RPC_FWD_XOR)
/* IO_CREATE flags: the datafile is a resync's target, made not whole
 * (RPC_FWD_RESYNC's rule) until the resync ends. */
#define RPC_IO_CREATE_INCOMPLETE 1u

/* A copy of a mirrored slot: its I/O server (index among the I/O servers),
 * the slot its datafile holds, RPC_COPY_* flags. */
struct rpc_copy {
	uint32_t io;
	uint32_t slot;
	uint32_t flags;
};

/* A primary, a copy or a client whose mirror epoch of a file is older than
 * the receiver's: its view of which copies are stale is out of date (the
 * sender reloads it, server/io_forward.c). */
#define RPC_EBEHIND EL2NSYNC
/* MIRROR_FRESH flags: the resync failed (the copy stays stale). */
#define RPC_FRESH_FAILED 1u
/* IO_RESYNC flags: the stale member is an ec parity slot, resynced by its
 * own server re-encoding it from its group's data members
 * (server/ec_resync.c): slot is the parity slot, members the group's K
 * data members in order, ec_k, ec_p and ec_index (its index j among the
 * parity members) the code. */
#define RPC_RESYNC_EC 1u
/* Data members an ec resync names at most (RED_EC_CELLS_MAX). */
#define RPC_EC_MEMBERS_MAX 32u
/* IO_HOLD flags (server/ec_hold.c). None: take a hold, id hold_id, on
 * [off, off + len) of the data cell's datafile (len 0: to its end, however
 * far it grows) for lease_ms; the reply (u64) is the datafile's size once
 * no ec write of the range is between its store and its last parity delta,
 * and none starts until the hold is released or lapses. With a session
 * (ncopies 1, copies[0].slot the parity slot being resynced) every ec write
 * of the datafile sends that parity member its deltas, stale or not, until
 * RPC_HOLD_END. RPC_HOLD_RELEASE: let go of hold_id; the reply (u32) is 1
 * if it was still held (0: it lapsed, or went with a restart: what was read
 * under it is not to be trusted). RPC_HOLD_END: end the
 * session; the reply (u32) is 1 if a write could not send it a delta. */
#define RPC_HOLD_RELEASE      1u
#define RPC_HOLD_END	      2u
#define RPC_HOLD_LEASE_MAX_MS 10000u
/* MIRROR_STALE flags: the sender's own copy (slot, the one stale slot)
 * failed its checksums on a read: marked stale, it is rewritten whole from
 * another copy by the resync (server/io_rebuild.c). */
#define RPC_STALE_DAMAGED 1u
/* Stale copies a file's mirror view lists at most. */
#define RPC_STALE_MAX 64

/* RPC_IO_TRUNCATE flags, as RPC_IO_WRITE's: to a mirrored slot's primary
 * with the copies list, which it forwards to (ordered with the writes it
 * forwards: io_forward.c); without, a mirrored file's truncate is refused
 * (it would reach one copy only: RPC_CAP_MIRRORED). RPC_TRUNCATE_FORWARD:
 * a primary's forward to one copy (peers only), with its epoch. */
#define RPC_TRUNCATE_COPIES  RPC_IO_COPIES
#define RPC_TRUNCATE_FORWARD RPC_IO_FORWARD
/* RPC_IO_TRUNCATE flag, alone: to an ec parity member (slot), with the new
 * sizes of its group's K data members' datafiles, which its record of the
 * members' ends takes (server/ec_ends.c). */
#define RPC_TRUNCATE_ENDS 4u
/* RPC_IO_SIZE flag: of an ec parity member, the reply also carries its
 * record of its group's data members' sizes (rpc_dec_io_size_ends). */
#define RPC_SIZE_ENDS 4u

/* RPC_CREATE flags */
#define RPC_CREATE_EXCL 1u
/* CREATE LOOKUP GETATTR flags: the rights wanted in the capability the
 * reply carries (files only). The metadata server checks them against the
 * file's mode for the caller; none asks for a capability that only lets
 * the caller learn the size (stat). */
#define RPC_WANT_READ	2u
#define RPC_WANT_WRITE	4u
#define RPC_WANT_RIGHTS (RPC_WANT_READ | RPC_WANT_WRITE)
/* RPC_SETATTR mask */
#define RPC_SET_MODE   1u
#define RPC_SET_OWNER  2u
#define RPC_SET_TIMES  4u
#define RPC_SET_LAYOUT 8u /* alone: a directory's default stripe unit and count */
/* RPC_LOCK flags */
#define RPC_LOCK_EXCL 1u
#define RPC_LOCK_WAIT 2u /* block (server-side queue) instead of -EAGAIN */

/* A capability: the metadata server's grant of rights on one file handle
 * until expiry, with a MAC under the cluster key (label "cap") over handle,
 * rights, lifetime and expiry. Every request from a client that names a
 * file by handle carries one, and the server (I/O or metadata) serves it
 * only if the MAC is right for that handle, the grant has not expired and
 * its rights cover the op (server/access.c): a guessed handle gets nothing.
 * Servers among themselves send a zero capability (their connections are
 * the cluster's own). */
#define RPC_CAP_READ  1u
#define RPC_CAP_WRITE 2u
/* Not a right but a fact the I/O servers must know: the file is mirrored,
 * so a write must come to a slot's primary with its copies (RPC_IO_COPIES).
 * A client that opened it without its redundancy (rpfs_open_attr from
 * bare attributes) would write to the primaries only: refused instead. */
#define RPC_CAP_MIRRORED 4u
struct rpc_cap {
	int64_t expiry;	     /* ns since the epoch, the issuing server's clock */
	uint32_t rights;     /* RPC_CAP_* */
	uint32_t lifetime_s; /* as issued: clients renew after half of it */
	uint8_t mac[16];
};
#define RPC_CAP_SIZE 32

struct rpc_attr {
	uint64_t handle;
	uint32_t type; /* enum rpc_type */
	uint32_t mode; /* permission bits */
	uint32_t uid, gid;
	int64_t atime, mtime, ctime; /* ns since the epoch */
	struct rpfs_layout layout;   /* files only */
	/* When the times were last set (SETATTR with RPC_SET_TIMES; 0:
	 * never): data writes before then no longer count for mtime (stat
	 * folds the datafiles' times in, rpfsc_attr_fold_data). */
	int64_t times_set;
	/* Replies only, never stored: the capability granted with these
	 * attributes (zero when none was). */
	struct rpc_cap cap;
};
#define RPC_ATTR_SIZE 80
/* A reply that grants a capability: the attributes, then the capability. */
#define RPC_ATTR_CAP_SIZE (RPC_ATTR_SIZE + RPC_CAP_SIZE)

struct rpc_seg {
	uint64_t off; /* datafile offset */
	uint64_t len;
};
#define RPC_SEG_SIZE 16

/* Supplementary groups an identity carries (as in the HELLO). */
#define RPC_GROUPS_MAX 64

/* One request, decoded. Which fields are used depends on op. */
struct rpc_req {
	uint16_t op;
	uint16_t flags;
	/* path ops: MKDIR RMDIR CREATE LOOKUP SETATTR REMOVE READDIR */
	const char *path; /* points into the body, NUL-terminated copy */
	char path_buf[RPC_PATH_MAX + 1];
	const char *to; /* RENAME: the new path, in to_buf */
	char to_buf[RPC_PATH_MAX + 1];
	uint32_t mode, uid, gid; /* MKDIR CREATE SETATTR(mode/owner) */
	int64_t atime, mtime;	 /* SETATTR */
	uint32_t mask;		 /* SETATTR */
	/* CREATE; SETATTR with RPC_SET_LAYOUT (a directory's default) */
	uint64_t stripe_unit;  /* CREATE: 0 = cluster default */
	uint32_t stripe_count; /* CREATE: 0 = cluster default */
	int32_t first_server;  /* CREATE: -1 = server chooses */
	/* CREATE; SETATTR with RPC_SET_LAYOUT: the redundancy asked for,
	 * packed (redundancy.h: red_unpack accepts it); 0 = not said (an
	 * older client's body, without the field) */
	uint32_t redundancy;
	char cookie[RPC_NAME_MAX + 1]; /* READDIR: resume after this name ("" = start) */
	uint32_t max;		       /* READDIR: entries wanted */
	/* handle ops */
	uint64_t handle;    /* GETATTR FETCH_ADD LOCK UNLOCK IO_* */
	struct rpc_cap cap; /* with every handle (zero from another server) */
	int64_t delta;	    /* FETCH_ADD */
	uint64_t off, len;  /* LOCK UNLOCK IO_DIGEST */
	uint64_t owner;	    /* LOCK UNLOCK: client-chosen lock owner id */
	uint64_t size;	    /* IO_TRUNCATE: datafile size */
	uint64_t nonce;	    /* IO_CREATE: the create's random id (retries match it) */
	/* IO_CREATE: the file's stripe slot the datafile holds; IO_WRITE,
	 * IO_READ: the slot the client takes the datafile to hold (its
	 * layout's), checked against it. RPC_SLOT_ANY: not said. */
	uint32_t slot;
	uint32_t meta; /* IO_PROBE: metadata server index; MIRROR_REBUILD: I/O index */
	/* META_HANDLES: nhandles (1..RPC_HANDLES_MAX) handles, u64 LE each,
	 * pointing into the body given to rpc_decode_req (rpc_req_handle) */
	uint32_t nhandles;
	const uint8_t *handles;
	/* IO_HEARTBEAT: ndown (0..RPC_HEARTBEAT_DOWN_MAX) I/O server indexes, u32 LE
	 * each, pointing into the body (rpc_req_down); meta: the sender */
	uint32_t ndown;
	const uint8_t *down;
	/* SEARCH: the identity asked about (uid, gid above), the access bits
	 * wanted on the path itself (0: only its ancestors are searched) */
	uint32_t want;
	uint32_t ngroups;
	uint32_t groups[RPC_GROUPS_MAX];
	/* IO_WRITE / IO_READ */
	uint32_t nseg;
	struct rpc_seg *segs; /* points into a caller buffer (rpc_decode_req's segs) */
	/* IO_WRITE with RPC_IO_COPIES: where to forward it (1..RPC_COPIES_MAX);
	 * MIRROR_STALE: the copies to mark (slots only) */
	uint32_t ncopies;
	struct rpc_copy copies[RPC_COPIES_MAX];
	/* IO_WRITE with RPC_IO_COPIES or RPC_IO_FORWARD, MIRROR_STALE: the
	 * sender's mirror epoch of the file */
	uint64_t epoch;
	uint32_t fwd_flags; /* IO_WRITE with RPC_IO_FORWARD: RPC_COPY_* */
	/* IO_WRITE with RPC_IO_PARITY: the code (K data, P parity cells) and
	 * this cell's index in its group (< K); copies are the P parity
	 * members */
	uint32_t ec_k, ec_p, ec_index;
	/* IO_WRITE with RPC_IO_FORWARD and RPC_FWD_XOR: the data member's
	 * datafile size after the write (ec_k and ec_index say which) */
	uint64_t ec_end;
	/* IO_TRUNCATE with RPC_TRUNCATE_ENDS: nends (1..RPC_EC_MEMBERS_MAX)
	 * data members' new sizes, u64 LE each, pointing into the body
	 * (rpc_req_end) */
	uint32_t nends;
	const uint8_t *ends;
	/* IO_HOLD: the hold's id (the holder's), its lease; off and len the
	 * range (len 0: to the end) */
	uint64_t hold_id;
	uint32_t lease_ms;
	/* IO_RESYNC with RPC_RESYNC_EC: nmembers (1..RPC_EC_MEMBERS_MAX) data
	 * members, io u32 and slot u32 each, pointing into the body
	 * (rpc_req_member) */
	uint32_t nmembers;
	const uint8_t *members;
};

/* Encoders return the body length, or -E2BIG if it does not fit cap. */
int rpc_enc_path_op(void *buf, size_t cap, uint16_t op, uint16_t flags, const char *path);
int rpc_enc_mkdir(void *buf, size_t cap, const char *path, uint32_t mode, uint32_t uid,
		  uint32_t gid);
int rpc_enc_create(void *buf, size_t cap, const char *path, uint32_t mode, uint32_t uid,
		   uint32_t gid, uint16_t flags, uint64_t stripe_unit,
		   uint32_t stripe_count, int32_t first_server);
int rpc_enc_setattr(void *buf, size_t cap, const char *path, uint32_t mask, uint32_t mode,
		    uint32_t uid, uint32_t gid, int64_t atime, int64_t mtime);
int rpc_enc_readdir(void *buf, size_t cap, const char *path, const char *cookie,
		    uint32_t max);
/* CREATE with a redundancy (red_pack; 0 = not said: the body has no
 * redundancy field, as rpc_enc_create's). -EINVAL for a value red_unpack
 * refuses. */
int rpc_enc_create_red(void *buf, size_t cap, const char *path, uint32_t mode,
		       uint32_t uid, uint32_t gid, uint16_t flags, uint64_t stripe_unit,
		       uint32_t stripe_count, int32_t first_server, uint32_t redundancy);
/* SETATTR of a directory's default layout for new files (0: the cluster's). */
int rpc_enc_setstripe(void *buf, size_t cap, const char *path, uint64_t stripe_unit,
		      uint32_t stripe_count);
/* The same with its default redundancy (red_pack; 0 = not said: the
 * directory keeps its own, and the body is rpc_enc_setstripe's). */
int rpc_enc_setstripe_red(void *buf, size_t cap, const char *path, uint64_t stripe_unit,
			  uint32_t stripe_count, uint32_t redundancy);
int rpc_enc_rename(void *buf, size_t cap, const char *from, const char *to);
/* Handle ops carry the capability for the handle (capa; NULL sends a zero
 * one, as servers do among themselves). */
int rpc_enc_handle_op(void *buf, size_t cap, uint16_t op, uint64_t handle,
		      const struct rpc_cap *capa);
/* GETATTR by handle, renewing a capability: flags RPC_WANT_*. */
int rpc_enc_getattr(void *buf, size_t cap, uint64_t handle, uint16_t flags,
		    const struct rpc_cap *capa);
/* IO_SIZE with flags (RPC_SIZE_ENDS or 0). */
int rpc_enc_io_size_req(void *buf, size_t cap, uint64_t handle, uint16_t flags,
			const struct rpc_cap *capa);
int rpc_enc_fetch_add(void *buf, size_t cap, uint64_t handle, const struct rpc_cap *capa,
		      int64_t delta);
int rpc_enc_lock(void *buf, size_t cap, uint16_t op, uint16_t flags, uint64_t handle,
		 const struct rpc_cap *capa, uint64_t off, uint64_t len, uint64_t owner);
/* To a mirrored slot's primary, with its copies (RPC_TRUNCATE_COPIES), and
 * from it to one copy (RPC_TRUNCATE_FORWARD): as IO_WRITE's. */
int rpc_enc_truncate_copies(void *buf, size_t cap, uint64_t handle,
			    const struct rpc_cap *capa, uint64_t size, uint32_t slot,
			    const struct rpc_copy *copies, uint32_t ncopies,
			    uint64_t epoch);
int rpc_enc_truncate_forward(void *buf, size_t cap, uint64_t handle, uint64_t size,
			     uint32_t slot, uint64_t epoch, uint32_t fwd_flags);
int rpc_enc_truncate(void *buf, size_t cap, uint64_t handle, const struct rpc_cap *capa,
		     uint64_t size);
/* To an ec parity member (slot): its new size and its group's data
 * members' (ends[0..n), 1 <= n <= RPC_EC_MEMBERS_MAX; RPC_TRUNCATE_ENDS). */
int rpc_enc_truncate_ends(void *buf, size_t cap, uint64_t handle,
			  const struct rpc_cap *capa, uint64_t size, uint32_t slot,
			  const uint64_t *ends, uint32_t n);
uint64_t rpc_req_end(const struct rpc_req *r, uint32_t i);
/* rpc_enc_io says no slot; rpc_enc_io_slot the stripe slot of the layout
 * the segments belong to, which the I/O server checks (a layout that
 * disagrees with the datafiles is -EBADMSG, not another slot's bytes). */
int rpc_enc_io(void *buf, size_t cap, uint16_t op, uint64_t handle,
	       const struct rpc_cap *capa, const struct rpc_seg *segs, uint32_t nseg);
int rpc_enc_io_slot(void *buf, size_t cap, uint16_t op, uint64_t handle,
		    const struct rpc_cap *capa, const struct rpc_seg *segs, uint32_t nseg,
		    uint32_t slot);
/* IO_WRITE to the primary of a mirrored slot, with the copies it forwards
 * to (1..RPC_COPIES_MAX; RPC_IO_COPIES). */
int rpc_enc_io_copies(void *buf, size_t cap, uint64_t handle, const struct rpc_cap *capa,
		      const struct rpc_seg *segs, uint32_t nseg, uint32_t slot,
		      const struct rpc_copy *copies, uint32_t ncopies, uint64_t epoch);
/* IO_WRITE of an ec data cell (RPC_IO_PARITY): its group's P parity members
 * (parity[j] for parity index j), the file's epoch, the code and this
 * cell's index in its group (index < k <= RED_EC_CELLS_MAX, 1 <= p <=
 * RPC_COPIES_MAX). */
int rpc_enc_io_parity(void *buf, size_t cap, uint64_t handle, const struct rpc_cap *capa,
		      const struct rpc_seg *segs, uint32_t nseg, uint32_t slot,
		      const struct rpc_copy *parity, uint32_t p, uint64_t epoch,
		      uint32_t k, uint32_t index);
/* IO_WRITE mending damaged blocks of an ec data cell (RPC_IO_REPAIR) under
 * the writer's hold hold_id. */
int rpc_enc_io_repair(void *buf, size_t cap, uint64_t handle, const struct rpc_cap *capa,
		      const struct rpc_seg *segs, uint32_t nseg, uint32_t slot,
		      uint64_t hold_id);
/* IO_WRITE from a primary to one copy (RPC_IO_FORWARD): its epoch and the
 * copy's flags. */
int rpc_enc_io_forward(void *buf, size_t cap, uint64_t handle, const struct rpc_seg *segs,
		       uint32_t nseg, uint32_t slot, uint64_t epoch, uint32_t fwd_flags);
/* A parity delta (RPC_FWD_XOR) from data member index (< k) of its group,
 * whose datafile is end bytes long after the write. */
int rpc_enc_io_forward_xor(void *buf, size_t cap, uint64_t handle,
			   const struct rpc_seg *segs, uint32_t nseg, uint32_t slot,
			   uint64_t epoch, uint32_t k, uint32_t index, uint64_t end);
/* IO_RESYNC, from a metadata server to the server of a fresh copy (slot) of
 * handle: make the stale copy target (its I/O server and slot) hold this
 * copy's bytes, then take epoch, in the background; MIRROR_FRESH says how
 * it went. MIRROR_FRESH (flags 0 or RPC_FRESH_FAILED), from that server to
 * the file's metadata server: epoch as the IO_RESYNC's, slot the source's,
 * stale[0] the target's (n 1). */
int rpc_enc_io_resync(void *buf, size_t cap, uint64_t handle, uint32_t slot,
		      const struct rpc_copy *target, uint64_t epoch);
/* IO_RESYNC with RPC_RESYNC_EC, to the server of the stale parity slot
 * (index j of k + p) of handle: members[0..k) the group's data members. */
int rpc_enc_io_resync_ec(void *buf, size_t cap, uint64_t handle, uint32_t slot,
			 const struct rpc_copy *members, uint32_t k, uint32_t p,
			 uint32_t j, uint64_t epoch);
/* Data member i of an IO_RESYNC with RPC_RESYNC_EC (i < nmembers). */
struct rpc_copy rpc_req_member(const struct rpc_req *r, uint32_t i);
/* IO_HOLD (flags 0, RPC_HOLD_RELEASE or RPC_HOLD_END) of the datafile of
 * handle holding data slot slot, with a capability for reading it (capa;
 * NULL among servers); session the parity slot a resync makes
 * (RPC_SLOT_ANY: none; servers only). */
int rpc_enc_io_hold(void *buf, size_t cap, uint16_t flags, uint64_t handle,
		    const struct rpc_cap *capa, uint32_t slot, uint64_t off, uint64_t len,
		    uint64_t id, uint32_t lease_ms, uint32_t session);
int rpc_enc_mirror_fresh(void *buf, size_t cap, uint16_t flags, uint64_t handle,
			 uint64_t epoch, uint32_t slot, uint32_t target);
/* MIRROR_STALE, from the primary of slot to the file's metadata server:
 * mark copies stale[0..n) (slots, 1..RPC_COPIES_MAX) that could not be
 * written. The reply is the file's mirror view (rpc_enc_view). */
int rpc_enc_mirror_stale(void *buf, size_t cap, uint64_t handle, uint64_t epoch,
			 uint32_t slot, const uint32_t *stale, uint32_t n);
/* MIRROR_STALE with RPC_STALE_DAMAGED: the sender's copy in slot. */
int rpc_enc_mirror_damaged(void *buf, size_t cap, uint64_t handle, uint32_t slot);
int rpc_enc_io_create(void *buf, size_t cap, uint64_t handle, uint64_t nonce,
		      uint32_t slot, uint16_t flags);
/* MIRROR_REBUILD, from an I/O server (index io) that started on empty
 * storage to every metadata server: each marks the copies of mirrored
 * files it holds on io stale, to be resynced (server/meta_rebuild.c). */
int rpc_enc_mirror_rebuild(void *buf, size_t cap, uint32_t io);
/* IO_HEARTBEAT, from metadata server meta to each I/O server every
 * heartbeat_ms (in place of a PING): the I/O servers it finds unreachable
 * or offline, down[0..n) (n <= RPC_HEARTBEAT_DOWN_MAX), so that a primary stops
 * forwarding to them (server/io_forward.c). */
int rpc_enc_io_heartbeat(void *buf, size_t cap, uint32_t meta, const uint32_t *down,
			 uint32_t n);
/* Down entry i of an IO_HEARTBEAT (0 past ndown). */
uint32_t rpc_req_down(const struct rpc_req *r, uint32_t i);
/* MIRROR_REPAIR, from a client holding write rights (rpfs verify
 * --repair): the copy in slot copy of data slot slot differs from that
 * slot's primary with neither stale; the metadata server marks it stale,
 * and the resync rewrites it from the primary (server/meta_mirror.c). */
int rpc_enc_mirror_repair(void *buf, size_t cap, uint64_t handle,
			  const struct rpc_cap *capa, uint32_t slot, uint32_t copy);
int rpc_enc_io_probe(void *buf, size_t cap, uint32_t meta);
/* IO_DIGEST, from a resync's source to the server of its stale target:
 * the digests of [off, off + len) of the datafile of handle holding slot,
 * one per RPC_DIGEST_UNIT (the last may be shorter), so that the source
 * sends only the units that differ (io_forward.c). off is a multiple of
 * RPC_DIGEST_UNIT, 0 < len <= RPC_DIGEST_SPAN. The reply is the digests,
 * RPC_DIGEST_SIZE bytes each, in order: BLAKE2b-256 of the unit's bytes,
 * those past the datafile's end read as zeros (rpc_digest). */
int rpc_enc_io_digest(void *buf, size_t cap, uint64_t handle, uint32_t slot, uint64_t off,
		      uint64_t len);
#define RPC_DIGEST_UNIT (64u * 1024)
#define RPC_DIGEST_SIZE 32u
#define RPC_DIGEST_MAX	32u
#define RPC_DIGEST_SPAN (RPC_DIGEST_MAX * RPC_DIGEST_UNIT)
/* The digest of one unit's bytes (len <= RPC_DIGEST_UNIT) into out. */
void rpc_digest(const void *bytes, size_t len, uint8_t out[RPC_DIGEST_SIZE]);
/* SEARCH, from one metadata server to another: may uid/gid/groups search
 * every ancestor of path this server holds, and (want != 0, mode bits) does
 * it hold path itself as a directory that grants want? */
int rpc_enc_search(void *buf, size_t cap, const char *path, uint32_t want, uint32_t uid,
		   uint32_t gid, const uint32_t *groups, uint32_t ngroups);
/* META_HANDLES, from a server (rpfsd --check) to the metadata server
 * owning handles[0..n): which of them does it know (rpc_handle_state)?
 * 1 <= n <= RPC_HANDLES_MAX. */
int rpc_enc_meta_handles(void *buf, size_t cap, const uint64_t *handles, uint32_t n);
/* Handle i of a decoded META_HANDLES (i < r->nhandles). */
uint64_t rpc_req_handle(const struct rpc_req *r, uint32_t i);
/* Segments that fit an I/O request body of cap bytes (a sender that may add
 * a copies list leaves RPC_IO_COPIES_ROOM of cap for it). */
uint32_t rpc_io_max_segs(size_t cap);

/* The room for segments that decoding the request body buf needs: as many
 * as fit the body for an op whose body has segments, else 0. */
uint32_t rpc_req_max_segs(const void *buf, size_t len);
/* Decode a request body. segs/maxseg: room for IO segments. -EPROTO on any
 * inconsistency (unknown op, short body, bad path, count beyond the body). */
int rpc_decode_req(const void *buf, size_t len, struct rpc_req *r, struct rpc_seg *segs,
		   uint32_t maxseg);
/* A path is absolute and normalized (see above). */
int rpc_path_ok(const char *path);

/* After the attributes and capability of a mirrored file's open reply
 * (CREATE LOOKUP GETATTR): the I/O servers of its layout that the metadata
 * server knows to be down (io_states), so that a client reads from the
 * other copies at once instead of waiting timeout_ms on them: count u32,
 * count x io index u32. At most RPC_DOWN_MAX entries. */
#define RPC_DOWN_MAX 32
int rpc_enc_down(void *buf, size_t cap, const uint32_t *io, uint32_t n);
/* 0 and *n entries into io (room for RPC_DOWN_MAX), or -EPROTO. An empty
 * body is an empty list. */
int rpc_dec_down(const void *buf, size_t len, uint32_t *io, uint32_t *n);
/* A mirrored file's view: its mirror epoch (raised by every mark) and the
 * slots of its stale copies: epoch u64, count u32, count x slot u32 (at
 * most RPC_STALE_MAX). It follows the down list in an open reply, and is
 * MIRROR_STALE's reply. */
int rpc_enc_view(void *buf, size_t cap, uint64_t epoch, const uint32_t *slots,
		 uint32_t n);
int rpc_dec_view(const void *buf, size_t len, uint64_t *epoch, uint32_t *slots,
		 uint32_t *n);
/* The longest open reply: attributes, capability, down list, view. */
#define RPC_OPEN_REP_MAX                                                                 \
	(RPC_ATTR_CAP_SIZE + 4 + 4 * RPC_DOWN_MAX + 12 + 4 * RPC_STALE_MAX)
/* An open reply's tail (after RPC_ATTR_CAP_SIZE): the down list, then the
 * view if there is one (*has_view). */
int rpc_dec_open_tail(const void *buf, size_t len, uint32_t *down, uint32_t *ndown,
		      uint64_t *epoch, uint32_t *stale, uint32_t *nstale, bool *has_view);

/* Reply bodies. rpc_enc_attr writes RPC_ATTR_SIZE bytes (no capability:
 * also the stored form); rpc_enc_attr_cap RPC_ATTR_CAP_SIZE (with a->cap).
 * rpc_dec_attr reads the capability when the body holds one, else zeroes it. */
void rpc_enc_attr(void *buf, const struct rpc_attr *a);
void rpc_enc_attr_cap(void *buf, const struct rpc_attr *a);
int rpc_dec_attr(const void *buf, size_t len, struct rpc_attr *a);
/* A capability on its own (RPC_CAP_SIZE bytes), e.g. in struct rpfs_stat. */
void rpc_enc_cap(void *buf, const struct rpc_cap *c);
void rpc_dec_cap(const void *buf, struct rpc_cap *c);
void rpc_enc_u64(void *buf, uint64_t v);
int rpc_dec_u64(const void *buf, size_t len, uint64_t *v);

/* READDIR reply: u32 count, u32 more (1 if entries remain), then count
 * entries: u32 type, u16 name length, name bytes (no NUL). */
struct rpc_dirent {
	uint32_t type;
	char name[RPC_NAME_MAX + 1];
};
int rpc_enc_dirents(void *buf, size_t cap, const struct rpc_dirent *e, uint32_t n,
		    uint32_t more);
int rpc_dec_dirents(const void *buf, size_t len, struct rpc_dirent *e, uint32_t max,
		    uint32_t *n, uint32_t *more);

/* STATFS replies: u64 total bytes, u64 available bytes (f_bavail: what
 * an unprivileged writer may still use), u64 objects, u64 free bytes
 * (f_bfree), u64 fsid: the file system holding the server's storage, the
 * same value for every server whose storage is on it (srv_storage in
 * server/stats.c), so a client counts each file system once. A reply of
 * RPC_STATFS_MIN bytes (an older server) decodes with free = avail and
 * fsid 0: unknown, a file system of its own. */
struct rpc_statfs {
	uint64_t total, avail, objects, free, fsid;
};
void rpc_enc_statfs(void *buf, const struct rpc_statfs *s);
int rpc_dec_statfs(const void *buf, size_t len, struct rpc_statfs *s);
#define RPC_STATFS_SIZE 40
#define RPC_STATFS_MIN	24

/* IO_SIZE reply: u64 the datafile's size, i64 its mtime, i64 its ctime (ns
 * since the epoch, the I/O server's clock): data writes and truncates
 * change a file's times there, never on the metadata server, and stat
 * folds them in (rpfsc_attr_fold_data). An 8-byte reply (an older server)
 * decodes with times 0. */
struct rpc_io_size {
	uint64_t size;
	int64_t mtime, ctime;
};
void rpc_enc_io_size(void *buf, const struct rpc_io_size *s);
int rpc_dec_io_size(const void *buf, size_t len, struct rpc_io_size *s);
#define RPC_IO_SIZE_REP 24
/* With RPC_SIZE_ENDS, after those 24 bytes: n u32 (0..RPC_EC_MEMBERS_MAX),
 * pad u32 (0), n x u64, the parity member's record of its group's data
 * members' sizes (n 0: none kept yet, every member empty; members past n
 * are empty too). */
int rpc_enc_io_size_ends(void *buf, size_t cap, const struct rpc_io_size *s,
			 const uint64_t *ends, uint32_t n);
int rpc_dec_io_size_ends(const void *buf, size_t len, struct rpc_io_size *s,
			 uint64_t *ends, uint32_t max, uint32_t *n);
#define RPC_IO_SIZE_ENDS_REP (RPC_IO_SIZE_REP + 8 + 8 * RPC_EC_MEMBERS_MAX)

/* STATS reply: u32 count (at most RPC_STATS_MAX), then count entries:
 * name str (1..RPC_STAT_NAME_MAX bytes of [a-z0-9_.]), value u64. A server
 * sends what it has (its roles' counters); names are stable, new ones may
 * come, so readers look them up by name. */
#define RPC_STAT_NAME_MAX 47
#define RPC_STATS_MAX	  128
struct rpc_stat {
	char name[RPC_STAT_NAME_MAX + 1];
	uint64_t value;
};
int rpc_enc_stats(void *buf, size_t cap, const struct rpc_stat *s, uint32_t n);
int rpc_dec_stats(const void *buf, size_t len, struct rpc_stat *s, uint32_t max,
		  uint32_t *n);
/* "create", "io_write", ...: the op's name in counters, NULL if unknown. */
const char *rpc_op_name(uint16_t op);

/* IO_PROBE reply: u64 datafiles of that metadata server's handles, u64 the
 * largest such handle with a datafile or a checksum file (0 if none). */
struct rpc_probe {
	uint64_t count, max_handle;
};
void rpc_enc_probe(void *buf, const struct rpc_probe *p);
int rpc_dec_probe(const void *buf, size_t len, struct rpc_probe *p);
#define RPC_PROBE_SIZE 16

/* SEARCH reply: u32 depth, i32 status: the first component (1 = the first
 * name below "/") of the path that this server holds and that refuses the
 * search (status -EACCES, -ENOENT, -ENOTDIR, -EIO), or depth 0 and status 0
 * when none of those it holds does. */
struct rpc_search_rep {
	uint32_t depth;
	int32_t status;
};
void rpc_enc_search_rep(void *buf, const struct rpc_search_rep *r);
int rpc_dec_search_rep(const void *buf, size_t len, struct rpc_search_rep *r);
#define RPC_SEARCH_REP_SIZE 8

/* META_HANDLES reply: u32 count (the request's), then count u8 states,
 * one per handle asked, in order. What the metadata server owning a
 * handle knows of it, for the orphan search of rpfsd --check (a datafile
 * of a GONE handle belongs to no file and no create can still make it
 * one; anything else keeps its datafiles). */
#define RPC_HANDLES_MAX 256
/* The most I/O servers an IO_HEARTBEAT names down. */
#define RPC_HEARTBEAT_DOWN_MAX 1024
enum rpc_handle_state {
	RPC_HS_FILE = 1,     /* an entry of the store has it */
	RPC_HS_GONE = 2,     /* handed out, no entry has it, no create of it runs */
	RPC_HS_CREATING = 3, /* a create that may have it is in progress */
	RPC_HS_NEVER = 4,    /* not handed out yet (the store is older than its data) */
	RPC_HS_NOT_MINE = 5, /* another metadata server's handle */
	RPC_HS_DAMAGED = 6,  /* its record fails its checksum: can't tell */
};
int rpc_enc_handle_states(void *buf, size_t cap, const uint8_t *states, uint32_t n);
/* Exactly n states (the count asked), each one of enum rpc_handle_state. */
int rpc_dec_handle_states(const void *buf, size_t len, uint8_t *states, uint32_t n);

#endif
