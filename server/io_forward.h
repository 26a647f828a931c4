/* Mirrored writes: the primary of a slot forwards each write to the slot's
 * copies before answering it (io_forward.c). */
#ifndef RPFS_IO_FORWARD_H
#define RPFS_IO_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

struct srv;
struct srv_op;

int io_forward_open(struct srv *s);
void io_forward_close(struct srv *s);
/* An IO_WRITE whose local part is done and that names copies: queue it for
 * forwarding (its reply follows when every copy has it). false: it needs
 * none (no copies, failed, or already forwarded); answer it now. */
bool io_forward_take(struct srv_op *op);
/* Have the file's metadata server mark copies stale[0..n) (slots) of
 * handle stale, for the primary of slot at epoch (MIRROR_STALE); this
 * datafile takes the new epoch (*new_epoch). -RPC_EBEHIND: the primary is
 * stale itself. quiet: a failure is the caller's to log. */
/* One call of body (len bytes, or a negative errno from its encoder) to
 * server (index in the config), the reply into rep (its length into
 * *rep_len, may be NULL); quiet: no log line for a failed connection. */
int io_peer_ask(struct srv *s, uint32_t server, const void *body, int len, void *rep,
		size_t rep_max, size_t *rep_len, bool quiet);
int io_mark_stale(struct srv *s, uint64_t handle, uint64_t epoch, uint32_t slot,
		  const uint32_t *stale, uint32_t n, bool quiet, uint64_t *new_epoch);
/* A forward or a truncate of handle reached this server from elsewhere:
 * a resync from it may have missed the change (it fails, and is tried
 * again). */
void io_forward_disturb(struct srv *s, uint64_t handle);

/* Counters for rpfs stats. */
struct io_forward_counts {
	uint64_t forwarded;	/* writes forwarded to their copies */
	uint64_t failed;	/* writes that failed for a copy */
	uint64_t marked;	/* copies marked stale */
	uint64_t resynced;	/* stale copies made whole from here */
	uint64_t resync_failed; /* resyncs that failed (tried again) */
	uint64_t resync_bytes;	/* bytes they sent */
	uint64_t resync_same;	/* bytes they found equal on the copy: not sent */
	uint64_t resyncing;	/* running now */
};
void io_forward_counts(struct srv *s, struct io_forward_counts *n);

#endif
