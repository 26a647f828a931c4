/* raw_ofi: the plain libfabric baseline of rpfs-xport-bench.
 *
 * The transport's figures only mean something next to what the provider
 * itself can do between two processes, so this measures fi_write, fi_read
 * and fi_send/fi_recv of the same sizes with nothing of rpfs in between: one
 * FI_EP_MSG connection (passive endpoint, fi_connect/fi_accept), one
 * completion queue, registered buffers, and the verbs rules for memory
 * registration (local descriptors, virtual or offset addressing, provider
 * keys) even where the provider would not enforce them.
 *
 * The server runs in its own process (tcp completes RMA only while the
 * target polls, see FACTS.md): raw_server_run() keeps polling its CQ until
 * the client says QUIT, disconnects, or SIGTERM arrives. It announces its
 * memory area (address, key, length) in a SETUP message after the connection
 * comes up. Send/recv runs are framed by a small control message that tells
 * the server how many data messages follow and whether to acknowledge each
 * (bandwidth) or echo it back (ping-pong latency). */
#ifndef RPFS_RAW_OFI_H
#define RPFS_RAW_OFI_H

#include <stddef.h>
#include <stdint.h>

enum raw_op { RAW_WRITE = 0, RAW_READ = 1, RAW_SEND = 2 };

/* Provider to use when none is named: verbs if an RDMA device exists, else
 * tcp. Looks at sysfs only, so it is safe to call before fork(). */
const char *raw_default_provider(void);

/* Server: listen on host (free port), write "port N\n" to out_fd, serve
 * one client with an RMA area of window slots of max_size bytes. Returns 0
 * after the client's QUIT, non-zero on any error (message on stderr). */
int raw_server_run(const char *provider, const char *host, size_t max_size, int window,
		   int out_fd);

/* The data pattern every benchmark moves: reproducible from a seed, so
 * arrivals are checked without keeping a copy. check returns the offset of
 * the first wrong byte, or -1. */
void raw_pattern_fill(void *buf, size_t len, uint64_t seed);
long long raw_pattern_check(const void *buf, size_t len, uint64_t seed);

struct raw_client;

/* Connect to the raw server on host:port; buffers for window transfers of
 * up to max_size bytes. Returns 0 or a negative errno; *why gets the cause. */
int raw_client_open(const char *provider, const char *host, int port, size_t max_size,
		    int window, struct raw_client **out, char *why, size_t whylen);
/* Tell the server to stop, then close everything. */
int raw_client_close(struct raw_client *c);
/* The last error message of this client. */
const char *raw_client_error(const struct raw_client *c);

/* Bandwidth in MB/s (1e6 bytes) with window operations in flight. For
 * RAW_SEND every message is acknowledged by the server, as a reply would be. */
int raw_bench_bw(struct raw_client *c, enum raw_op op, size_t size, int iters,
		 double *mbps);
/* Median latency in usec, one operation at a time: full completion for RMA,
 * half a ping-pong round trip for RAW_SEND. */
int raw_bench_lat(struct raw_client *c, enum raw_op op, size_t size, int iters,
		  double *usec);
/* Move size bytes of a known pattern with op and compare what arrived.
 * Returns 0, or -EIO with the first wrong byte in raw_client_error(). */
int raw_verify(struct raw_client *c, enum raw_op op, size_t size, unsigned seed);

#endif
