/* What the integration test programs share besides the cluster (cluster.h):
 * reproducible data, a clock, and librpfs calls that fail the running Check
 * test with the library's own message, so a test reads as the operations
 * it makes. */
#ifndef RPFS_TEST_TESTKIT_H
#define RPFS_TEST_TESTKIT_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "rpfs.h"

/* splitmix64: the same seed gives the same bytes in every process, so a
 * writer and a checker need share nothing but the seed. */
uint64_t rnd_next(uint64_t *s);
uint64_t rnd_range(uint64_t *s, uint64_t lo, uint64_t hi); /* in [lo, hi] */
uint64_t rnd_size(uint64_t *s, uint64_t max);		   /* log-uniform in [1, max] */
void fill(void *buf, size_t len, uint64_t seed);
/* The first offset where a and b differ, or -1. */
long long first_diff(const void *a, const void *b, size_t len);

double now_ms(void); /* monotonic */

/* Each fails the test on error, naming the call and the library's message. */
rpfs_client_t *client(struct cluster *cl);
rpfs_file_t *create_opts(rpfs_client_t *c, const char *path,
			 const struct rpfs_create_opts *o);
rpfs_file_t *create(rpfs_client_t *c, const char *path);    /* 0644, defaults */
rpfs_file_t *open_file(rpfs_client_t *c, const char *path); /* read-write */
void write_all(rpfs_file_t *f, const void *buf, size_t len, uint64_t off);
void read_all(rpfs_file_t *f, void *buf, size_t len, uint64_t off);

#endif
