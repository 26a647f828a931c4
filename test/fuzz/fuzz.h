/* Shared by the libFuzzer targets of test/fuzz: an invariant check that
 * survives NDEBUG and says which invariant broke, and a helper that reads
 * every byte of a range so that AddressSanitizer sees any range a decoder
 * claims to lie inside the input but does not. */
#ifndef RPFS_FUZZ_H
#define RPFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                                 \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__,       \
				__LINE__, #cond);                                        \
			abort();                                                         \
		}                                                                        \
	} while (0)

/* Sum of the bytes in [p, p + n): touches every one of them. */
static inline unsigned fuzz_touch(const void *p, size_t n)
{
	const volatile uint8_t *b = p;
	unsigned sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += b[i];
	return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
