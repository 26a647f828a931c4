/* rpfsd --check: what the metadata servers that own the handles of this
 * server's datafiles know of them (check_orphans.c). */
#ifndef RPFS_CHECK_ORPHANS_H
#define RPFS_CHECK_ORPHANS_H

#include <stddef.h>
#include <stdint.h>

struct srv;

/* For h[0..n), each of a metadata server of the config (place_meta_of_handle(h)
 * < cfg.nmeta) other than this one: state[i] gets what its owner says (enum
 * rpc_handle_state), or 0 when its owner could not tell; then why[m] (one
 * per metadata server, NULL on entry) is a malloc'ed line naming owner m
 * and the cause (NULL still if out of memory). */
void orphans_ask(struct srv *s, const uint64_t *h, size_t n, uint8_t *state, char **why);

#endif
