/* Where tests put their servers: the address and provider come from the
 * environment, so that the same tests run on loopback over tcp and on a
 * verbs device (scripts/rxe-vm exports RPFS_PROVIDER=verbs and the guest's
 * Soft-RoCE address in RPFS_TEST_ADDR; rdmacm cannot route over loopback). */
#ifndef RPFS_TESTENV_H
#define RPFS_TESTENV_H

#include <stdlib.h>

/* RPFS_TEST_ADDR, else 127.0.0.1: the IPv4 address servers listen on. */
static inline const char *test_addr(void)
{
	const char *a = getenv("RPFS_TEST_ADDR");

	return a && *a ? a : "127.0.0.1";
}

#endif
