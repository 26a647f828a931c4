/* rpfsd: the checksum math of datafiles (see blocksum.h for the format):
 * the CRC, the binding of a block to its place, entries, the checksum
 * file's header and the names of a datafile and its checksum file.
 *
 * The CRC is ISA-L's crc32_iscsi (CRC32C with the hardware instruction
 * where the CPU has it), never one of ours. */
#include <errno.h>
#include <inttypes.h>
#include <isa-l/crc.h>
#include <stdio.h>
#include <string.h>

#include "blocksum.h"
#include "wire.h"

#define CSUM_MAGIC "RPFSSUM1"

uint32_t csum_crc(const void *buf, uint64_t len)
{
	uint32_t crc = 0xffffffffu;

	/* crc32_iscsi takes an int length: feed it in pieces. */
	while (len) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		crc = crc32_iscsi((unsigned char *)buf, n, crc);
		buf = (const char *)buf + n;
		len -= (uint64_t)n;
	}
	return crc ^ 0xffffffffu;
}

void csum_ent_dec(const uint8_t *p, struct csum_ent *e)
{
	e->cur.crc = get32(p);
	e->cur.end = get32(p + 4);
	e->pend.crc = get32(p + 8);
	e->pend.end = get32(p + 12);
}

void csum_ent_enc(uint8_t *p, const struct csum_ent *e)
{
	put32(p, e->cur.crc);
	put32(p + 4, e->cur.end);
	put32(p + 8, e->pend.crc);
	put32(p + 12, e->pend.end);
}

bool csum_ent_empty(const struct csum_ent *e)
{
	return !e->cur.end && !e->pend.end;
}

/* A block's place as 32 bits: handle, slot and block number mixed by
 * splitmix64's finalizer (a bijection of 64 bits: two places of one file
 * differ before the fold to 32). A few nanoseconds a block, against the
 * tens to thousands the block's own CRC takes. */
uint32_t csum_place(uint64_t handle, uint32_t slot, uint64_t k)
{
	uint64_t x = k * 0x9e3779b97f4a7c15ull ^ handle ^
		     (uint64_t)slot * 0xc2b2ae3d27d4eb4full;

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return (uint32_t)(x ^ x >> 32);
}

static bool ver_match(const struct csum_ver *v, uint32_t crc, uint32_t avail)
{
	return v->end && v->end <= CSUM_BLOCK && avail >= v->end && crc == v->crc;
}

/* crc is the bare block's; a version's is bound to its place. A hole has
 * no place to be bound to: it is zeros. */
static int match_crc(const struct csum_ent *e, uint32_t crc, uint32_t avail,
		     uint32_t bind)
{
	if (e->cur.end ? ver_match(&e->cur, crc ^ bind, avail) : crc == CSUM_ZERO_CRC)
		return 1;
	return ver_match(&e->pend, crc ^ bind, avail) ? 2 : 0;
}

int csum_match(const struct csum_ent *e, const void *bytes, uint32_t avail, uint32_t bind)
{
	return match_crc(e, csum_crc(bytes, CSUM_BLOCK), avail, bind);
}

/* The version that matched (a hole is the empty version). */
struct csum_ver csum_matched(const struct csum_ent *e, int m)
{
	struct csum_ver none = {0, 0};

	return m == 2 ? e->pend : e->cur.end ? e->cur : none;
}

/* ---- names and header ------------------------------------------------------ */

void csum_data_name(uint64_t handle, char *buf, size_t len)
{
	snprintf(buf, len, "%016" PRIx64, handle);
}

void csum_sum_name(uint64_t handle, char *buf, size_t len)
{
	snprintf(buf, len, "%016" PRIx64 CSUM_SUFFIX, handle);
}

int csum_parse_name(const char *name, uint64_t *handle)
{
	uint64_t h = 0;
	int i;

	for (i = 0; i < 16; i++) {
		char c = name[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
					       : -1;

		if (d < 0)
			return -1;
		h = h << 4 | (uint64_t)d;
	}
	*handle = h;
	if (!name[16])
		return 0;
	if (!strcmp(name + 16, CSUM_SUFFIX))
		return 1;
	return strcmp(name + 16, CSUM_ENDS_SUFFIX) ? -1 : 2;
}

void csum_hdr_enc(uint8_t hdr[CSUM_HDR], uint64_t handle, uint64_t nonce, uint32_t slot)
{
	memset(hdr, 0, CSUM_HDR);
	memcpy(hdr, CSUM_MAGIC, 8);
	put32(hdr + 8, CSUM_VERSION);
	put32(hdr + 12, CSUM_BLOCK);
	put64(hdr + 16, handle);
	put64(hdr + 24, nonce);
	put32(hdr + CSUM_HDR_SLOT, slot);
	put64(hdr + CSUM_HDR_EXTENT, 0);
}

int csum_hdr_check(const uint8_t *hdr, size_t len, uint64_t handle, uint64_t *nonce)
{
	uint32_t v = len >= CSUM_HDR ? get32(hdr + 8) : 0;

	if (len < CSUM_HDR || memcmp(hdr, CSUM_MAGIC, 8) || v < 1 || v > CSUM_VERSION ||
	    get32(hdr + 12) != CSUM_BLOCK || get64(hdr + 16) != handle)
		return -EBADMSG;
	if (nonce)
		*nonce = get64(hdr + 24);
	return 0;
}
