/* The engine (xport_progress.c): polls the completion and event queues and
 * dispatches, posts backlogs, ends the work of broken connections, sweeps
 * timeouts, frees what is done, and runs deferred callbacks without the
 * fabric lock. It reaches the roles above it only through the ops tables
 * they give it: connection management (xport_handshake.c) and the client's
 * or the server's path (xport_client.c, xport_server.c). See xport_domain.h
 * for the layers. */
#ifndef RPFS_XPORT_ENGINE_H
#define RPFS_XPORT_ENGINE_H

#include "xport_path.h"

/* A side's part: all run under the fabric lock, from the engine. */
struct xp_role_ops {
	/* A message on an established connection. */
	void (*recv)(struct xp_conn *c, struct xp_rbuf *rb, size_t len);
	/* A fast message landed in our slot (decoded by xp_fast_arrival). */
	void (*fast)(struct xp_conn *c, const struct proto_hdr *h, const char *msg,
		     size_t len, uint32_t slot);
	/* A message or fast write we posted completed (status 0 or an error). */
	void (*send_done)(struct xp_conn *c, struct xp_sbuf *sb, int status);
	/* c broke: end its calls or requests. */
	void (*conn_failed)(struct xp_conn *c);
	/* Should c fail for lack of progress? Says why in why. */
	bool (*expired)(struct xp_conn *c, int64_t now, char *why, size_t whylen);
};

/* Connection management (both sides). */
struct xp_hs_ops {
	/* A connection-manager event: request, connected, shut down. */
	void (*event)(struct xp_fabric *fab, uint32_t event, struct fi_eq_cm_entry *e,
		      size_t len);
	/* A connection-manager error on c (refused, unreachable, reset):
	 * err, the provider's own code (verbs: rdma_cm's reject reason,
	 * negated) and the peer's reject data. */
	void (*error)(struct xp_conn *c, int err, int prov_errno, const void *data,
		      size_t len);
	/* A message on a connection whose handshake is not done. */
	void (*recv)(struct xp_conn *c, struct xp_rbuf *rb, size_t len);
	/* Has c's handshake run past its deadline? */
	bool (*expired)(struct xp_conn *c, int64_t now);
};

extern const struct xp_role_ops xp_client_ops, xp_server_ops;
extern const struct xp_hs_ops xp_hs_ops;

/* One round of the engine with the lock held; if nothing happened and
 * timeout_ms > 0, wait up to that long (letting go of the lock meanwhile).
 * Deferred callbacks are left for the caller, who runs them after
 * unlocking (xp_engine_run_deferred). Returns the events handled. */
int xp_engine_round(struct xp_fabric *fab, int timeout_ms);
/* The same without the spin: nothing to do means sleep in the wait fds at
 * once (the progress thread's round). */
int xp_engine_sleep_round(struct xp_fabric *fab, int timeout_ms);
/* The client's progress thread (xport_thread.c): started by
 * xp_fabric_open when the progress_thread setting asks for it, stopped
 * (and joined) by xp_fabric_close before anything is torn down. */
int xp_thread_start(struct xp_fabric *fab);
void xp_thread_stop(struct xp_fabric *fab);
/* Called by the progress driver with the lock held, between rounds: if a
 * caller waits in xp_lock, let go of the lock until it has taken it. */
void xp_engine_let_in(struct xp_fabric *fab);
/* Run what is deferred, without the lock held. */
void xp_engine_run_deferred(struct xp_fabric *fab);
/* Drive the engine until ready(arg) holds (checked under the lock) or
 * timeout_us passes (-1: no bound). One thread at a time sleeps in the wait
 * fds, others on the condition. Returns 0 or -ETIMEDOUT. */
int xp_engine_wait(struct xp_fabric *fab, bool (*ready)(void *arg), void *arg,
		   int64_t timeout_us);

#endif
