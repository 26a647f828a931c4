/* A peer that speaks only the connection-manager step of rpfs's handshake,
 * with bytes the test chooses, straight on libfabric (FI_EP_MSG): to try
 * what a peer can do before any message (a replayed or stale connection
 * request, a half-open connection), and to play a server that does not
 * hold the cluster key. */
#ifndef RPFS_TEST_RAWCM_H
#define RPFS_TEST_RAWCM_H

#include <stddef.h>

struct rawcm;

/* One fabric, domain, event and completion queue on provider. 0 or -errno. */
int rawcm_open(const char *provider, struct rawcm **out);
void rawcm_close(struct rawcm *r);

/* Connect to host:port with data as the connection request's private
 * data; wait up to ms. Returns 1 accepted, 0 rejected, or -errno (-ETIMEDOUT
 * when nothing came). The accept's or reject's private data goes to ans
 * (*anslen bytes, at most its value on entry). The endpoint stays open. */
int rawcm_connect(struct rawcm *r, const char *host, const char *port, const void *data,
		  size_t len, int ms, void *ans, size_t *anslen);
/* After an accepted rawcm_connect: 0 when the server shuts the connection
 * within ms, -ETIMEDOUT if it keeps it. */
int rawcm_wait_shutdown(struct rawcm *r, int ms);

/* Listen on host (free port, *port set); then rawcm_serve accepts every
 * connection request that arrives within ms with acc as accept data, and
 * returns how many it accepted. */
int rawcm_listen(struct rawcm *r, const char *host, int *port);
int rawcm_serve(struct rawcm *r, const void *acc, size_t len, int ms);

#endif
