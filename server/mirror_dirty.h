/* Role io: the mirrored datafiles whose copies may lag this primary, kept
 * on disk across crashes (mirror_dirty.c). */
#ifndef RPFS_MIRROR_DIRTY_H
#define RPFS_MIRROR_DIRTY_H

struct srv;
struct srv_op;

/* Start (reading what a crash left, to be reported) and stop. */
int mirror_dirty_open(struct srv *s);
void mirror_dirty_close(struct srv *s);
/* At start, before the server says it is ready: until the entries a crash
 * left are reported (their copies marked stale), DIRTY_READY_WAIT_S at
 * most. */
void mirror_dirty_wait(struct srv *s);
/* A mirrored write or truncate (op, with its copies) is about to change
 * its datafile: on return its handle is in the file on disk. Idempotent
 * per op. */
int mirror_dirty_hold(struct srv *s, struct srv_op *op);
/* The op ended (its status final): a failure is reported. */
void mirror_dirty_release(struct srv *s, struct srv_op *op);

#endif
