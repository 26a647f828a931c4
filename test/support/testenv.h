/* Where tests put their servers: the address and provider come from the
 * environment, so that the same tests run on loopback over tcp and on a
 * verbs device (scripts/rxe-vm exports RPFS_PROVIDER=verbs and the guest's
 * Soft-RoCE address in RPFS_TEST_ADDR; rdmacm cannot route over loopback). */
#ifndef RPFS_TESTENV_H
#define RPFS_TESTENV_H

#include <stdlib.h>

#include "auth.h"

/* RPFS_TEST_ADDR, else 127.0.0.1: the IPv4 address servers listen on. */
static inline const char *test_addr(void)
{
	const char *a = getenv("RPFS_TEST_ADDR");

	return a && *a ? a : "127.0.0.1";
}

/* The cluster key of the transport tests: fixed, so that servers in other
 * processes and the test's clients agree without sharing a file. */
static inline const struct auth_key *test_key(void)
{
	static const struct auth_key k = {{'r', 'p', 'f', 's', '-', 't', 'e', 's',
					   't', '-', 'k', 'e', 'y', 1,	 2,   3,
					   4,	5,   6,	  7,   8,   9,	 10,  11,
					   12,	13,  14,  15,  16,  17,	 18,  19}};

	return &k;
}

#endif
