/* memsrv: an in-memory rpfs test service on the xport server API.
 *
 * Ops: PUT writes the request's data at an offset of a memory area, GET
 * reads it back; NOP replies at once; STATS replies with the server's
 * counters in the reply body (memsrv_stats_decode). The body of every
 * request is a struct memsrv_req encoded by memsrv_req_encode (op, offset,
 * length); a PUT's length must equal the data sent, a GET's length may be
 * less than the room offered (the reply's rd_len says how much came).
 *
 * Data moves only through the transport, as a storage server's would:
 * inline and fast data is copied straight out of (or into) the message,
 * bulk data goes through xp_req_pipeline, each chunk "stored" by a memcpy.
 * memsrv_opts can make that storage step slow, in a worker thread, so tests
 * can watch the pipeline overlap and can keep requests in flight long
 * enough to kill or stop the server under them.
 *
 * Used by test/xport/test_xport.c (in a forked child, memsrv_run_forever)
 * and by bench/xport_bench.c (in process, memsrv_start). */
#ifndef RPFS_MEMSRV_H
#define RPFS_MEMSRV_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"

enum memsrv_op { MEMSRV_NOP = 0, MEMSRV_PUT = 1, MEMSRV_GET = 2, MEMSRV_STATS = 3 };

struct memsrv_req {
	uint32_t op;  /* enum memsrv_op */
	uint64_t off; /* offset in the area */
	uint64_t len; /* bytes to put or get */
};

#define MEMSRV_REQ_SIZE 24

void memsrv_req_encode(void *buf, const struct memsrv_req *r);
/* Bounds-checked: -EPROTO when len is too short. Unknown ops decode (the
 * server answers them with -EOPNOTSUPP). */
int memsrv_req_decode(const void *buf, size_t len, struct memsrv_req *r);

/* Server counters; the STATS op returns them encoded in the reply body. */
struct memsrv_stats {
	uint64_t nops, puts, gets; /* requests served, by op */
	uint64_t errors;	   /* replies with a nonzero status */
	uint64_t chunks;	   /* pipeline chunks stored or loaded */
	uint64_t max_busy_chunks;  /* most chunks in the storage step at once */
	uint64_t bytes_in;	   /* bytes stored by PUTs */
	uint64_t bytes_out;	   /* bytes loaded by GETs */
	/* the transport's (xp_stats) */
	uint64_t conn_refused, conns_live, conn_bytes;
};

#define MEMSRV_STATS_SIZE 88

void memsrv_stats_encode(void *buf, const struct memsrv_stats *st);
int memsrv_stats_decode(const void *buf, size_t len, struct memsrv_stats *st);

struct memsrv_opts {
	/* Time the storage step takes per PUT/GET or per bulk chunk, spent in
	 * a worker thread (0: instant). */
	unsigned int delay_us;
	/* Do the storage step in the worker thread even with no delay, so that
	 * chunks complete from another thread (xp_chunk_done, xp_fabric_post). */
	int worker;
	/* Move bulk data with one RDMA straight into (or out of) the area,
	 * registered once, as a memory-backed server would, instead of through
	 * the pipeline's pool buffers and a storage copy. The transport
	 * benchmark uses this to compare rpfs's RMA with raw RMA; the tests use
	 * both. */
	int direct;
	/* The IPv4 address to listen on; NULL: test_addr() (testenv.h). */
	const char *addr;
	/* The cluster key; NULL: test_key() (testenv.h). */
	const struct auth_key *key;
	/* Refuse every client's hello with this negative errno, answering
	 * "memsrv refuses" (0: accept). */
	int refuse_hello;
};

struct memsrv;

/* Start a server (own progress thread) on test_addr() (testenv.h), port
 * chosen free;
 * area_size bytes, zero-filled. p NULL: defaults and RPFS_* variables.
 * Returns 0 or a negative errno. */
int memsrv_start(const struct xp_params *p, size_t area_size, struct memsrv **out);
int memsrv_start_opts(const struct xp_params *p, size_t area_size,
		      const struct memsrv_opts *o, struct memsrv **out);
int memsrv_port(struct memsrv *s);
/* The area itself, for in-process checks (no locking: look while idle). */
void *memsrv_area(struct memsrv *s, size_t *size);
void memsrv_get_stats(struct memsrv *s, struct memsrv_stats *st);
void memsrv_stop(struct memsrv *s);

/* Run a server in this process until SIGTERM/SIGINT (for fork-based use):
 * writes "port N\n" to out_fd when listening. Returns 0 after a clean stop
 * or a negative errno if the server could not start. */
int memsrv_run_forever(const struct xp_params *p, size_t area_size, int out_fd);
int memsrv_run_forever_opts(const struct xp_params *p, size_t area_size,
			    const struct memsrv_opts *o, int out_fd);

#endif
