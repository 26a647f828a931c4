/* File modes as chmod(1) and mkdir -m take them: octal (0640) or symbolic
 * (u+x, go-w, a=r, +t, g=u, u+rwX,o-rwx). Kept apart from the rest of the
 * command so that test/unit/test_mode.c can check it without a cluster. */
#ifndef RPFS_CLI_MODE_H
#define RPFS_CLI_MODE_H

#include <stdbool.h>
#include <stdint.h>

/* The mode that spec gives a file whose mode is now old (permission bits
 * and setuid, setgid, sticky: 07777), a directory if is_dir (for X).
 * Symbolic clauses without who (ugoa) leave the bits in umask_bits alone,
 * as POSIX says. 0, or -EINVAL if spec is neither octal nor symbolic. */
int mode_apply(const char *spec, uint32_t old, bool is_dir, uint32_t umask_bits,
	       uint32_t *out);
/* Is spec a mode mode_apply takes? */
bool mode_valid(const char *spec);

#endif
