/* rpfsd: the stored form of a namespace entry (see meta_attr.h for both
 * versions' fields). meta.c writes every entry through meta_attr_enc and
 * reads it through meta_attr_dec; check.c and the upgrade of an old store
 * (meta_record.c) read through here too. Version 1 is frozen: its decoder
 * reads the bytes rpfsd wrote before layouts had a kind, whatever the wire
 * form (rpc.c) becomes. */
#include "meta_attr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "wire.h"

size_t meta_attr_size(size_t plen)
{
	return META_ATTR_SIZE + plen;
}

void meta_attr_enc(void *buf, const struct rpc_attr *a, const char *path, size_t plen)
{
	uint8_t *p = buf;

	put32(p + 0, META_ATTR_V2);
	put64(p + 4, a->handle);
	put32(p + 12, a->type);
	put32(p + 16, a->mode);
	put32(p + 20, a->uid);
	put32(p + 24, a->gid);
	put64(p + 28, (uint64_t)a->atime);
	put64(p + 36, (uint64_t)a->mtime);
	put64(p + 44, (uint64_t)a->ctime);
	put64(p + 52, (uint64_t)a->times_set);
	put32(p + 60, a->layout.kind);
	put64(p + 64, a->layout.stripe_unit);
	put32(p + 72, a->layout.stripe_count);
	put32(p + 76, a->layout.first_server);
	put32(p + 80, a->layout.nservers);
	put32(p + 84, a->layout.copies);
	put32(p + 88, a->layout.data_cells);
	put32(p + 92, a->layout.parity_cells);
	put64(p + 96, a->layout.cell_size);
	memcpy(p + META_ATTR_SIZE, path, plen);
}

/* Bytes before the path in an entry of the version buf says; 0 for a
 * version this rpfsd does not know (or too few bytes to say). */
static size_t attr_len(const uint8_t *p, size_t len)
{
	if (len < 4)
		return 0;
	switch (get32(p)) {
	case META_ATTR_V1:
		return META_ATTR_V1_SIZE;
	case META_ATTR_V2:
		return META_ATTR_SIZE;
	default:
		return 0;
	}
}

/* Version 1: the layout is of the stripe kind (no other existed). */
static void dec_v1(const uint8_t *p, struct rpc_attr *a)
{
	a->handle = get64(p + 4);
	a->type = get32(p + 12);
	a->mode = get32(p + 16);
	a->uid = get32(p + 20);
	a->gid = get32(p + 24);
	a->atime = (int64_t)get64(p + 28);
	a->mtime = (int64_t)get64(p + 36);
	a->ctime = (int64_t)get64(p + 44);
	a->layout.stripe_unit = get64(p + 52);
	a->layout.stripe_count = get32(p + 60);
	a->layout.first_server = get32(p + 64);
	a->layout.nservers = get32(p + 68);
	a->times_set = (int64_t)get64(p + 76);
	a->layout.kind = RPFS_LAYOUT_STRIPE;
}

static void dec_v2(const uint8_t *p, struct rpc_attr *a)
{
	a->handle = get64(p + 4);
	a->type = get32(p + 12);
	a->mode = get32(p + 16);
	a->uid = get32(p + 20);
	a->gid = get32(p + 24);
	a->atime = (int64_t)get64(p + 28);
	a->mtime = (int64_t)get64(p + 36);
	a->ctime = (int64_t)get64(p + 44);
	a->times_set = (int64_t)get64(p + 52);
	a->layout.kind = get32(p + 60);
	a->layout.stripe_unit = get64(p + 64);
	a->layout.stripe_count = get32(p + 72);
	a->layout.first_server = get32(p + 76);
	a->layout.nservers = get32(p + 80);
	a->layout.copies = get32(p + 84);
	a->layout.data_cells = get32(p + 88);
	a->layout.parity_cells = get32(p + 92);
	a->layout.cell_size = get64(p + 96);
}

/* A file's layout must be usable; a directory's holds the defaults of new
 * files (0: the cluster's), so only its kind must be one this rpfsd can
 * make. */
static int attr_ok(const struct rpc_attr *a, char *why, size_t whylen)
{
	char buf[160];
	int ret;

	switch (a->type) {
	case RPC_TYPE_FILE:
		ret = layout_check(&a->layout);
		if (ret)
			snprintf(why, whylen, "its layout is unusable: %s",
				 layout_problem(&a->layout, buf, sizeof(buf)));
		return ret == -EOPNOTSUPP ? ret : ret ? -EPROTO : 0;
	case RPC_TYPE_DIR:
		if (layout_kind_supported(a->layout.kind))
			return 0;
		snprintf(why, whylen,
			 "its default layout is of kind %s (%" PRIu32
			 "), which this rpfsd does not support",
			 layout_kind_name(a->layout.kind), a->layout.kind);
		return -EOPNOTSUPP;
	default:
		snprintf(why, whylen, "unknown type %" PRIu32, a->type);
		return -EPROTO;
	}
}

int meta_attr_dec(const void *buf, size_t len, struct rpc_attr *a, const char **path,
		  size_t *plen, char *why, size_t whylen)
{
	const uint8_t *p = buf;
	size_t hdr = attr_len(p, len);

	if (whylen)
		why[0] = 0;
	if (!hdr) {
		if (len < 4)
			snprintf(why, whylen, "%zu bytes: too short", len);
		else
			snprintf(why, whylen,
				 "unknown version (its first bytes are %#010" PRIx32
				 "; a newer rpfsd's?)",
				 get32(p));
		return len < 4 ? -EPROTO : -EPROTONOSUPPORT;
	}
	if (len <= hdr || len - hdr > RPC_PATH_MAX) {
		snprintf(why, whylen, "%zu bytes: %s", len,
			 len <= hdr ? "no path after the attributes"
				    : "the path is too long");
		return -EPROTO;
	}
	memset(a, 0, sizeof(*a));
	if (hdr == META_ATTR_V1_SIZE)
		dec_v1(p, a);
	else
		dec_v2(p, a);
	*path = (const char *)p + hdr;
	*plen = len - hdr;
	return attr_ok(a, why, whylen);
}

const char *meta_attr_path(const void *buf, size_t len, size_t *plen)
{
	size_t hdr = attr_len(buf, len);

	if (!hdr || len <= hdr)
		return NULL;
	*plen = len - hdr;
	return (const char *)buf + hdr;
}
