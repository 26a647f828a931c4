/* Memory registration callbacks.
 *
 * The registration cache and the buffer pool do not know about libfabric:
 * they register memory through these callbacks, which the transport backend
 * provides (fi_mr_reg/fi_close) and the unit tests replace with fakes. */
#ifndef RPFS_REGOPS_H
#define RPFS_REGOPS_H

#include <stddef.h>

struct rpfs_regops {
	/* Register [addr, addr + len) for local and remote access; store an
	 * opaque handle in *handle. Returns 0 or a negative errno. */
	int (*reg)(void *ctx, void *addr, size_t len, void **handle);
	/* Release a handle returned by reg. */
	void (*dereg)(void *ctx, void *handle);
	void *ctx;
};

#endif
