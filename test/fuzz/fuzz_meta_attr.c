/* libFuzzer target: the stored form of a namespace entry
 * (server/meta_attr.h), as rpfsd reads it from an "ns" record whose
 * checksum passed (so only a bug or an older/newer rpfsd's bytes reach it,
 * never a guess).
 *
 * An entry is refused with one of the documented errors and a reason, or
 * accepted with a path that ends the input, fits RPC_PATH_MAX, and is the
 * one meta_attr_path finds; a file's layout passes layout_check (a client
 * would divide by its stripe unit). An accepted entry encodes again (in the
 * newest version) to one that decodes to the same attributes, and an
 * entry of the newest version encodes again to the very bytes it came
 * from: the decoder read every field where the encoder puts it. */
#include <errno.h>
#include <string.h>

#include "../../server/meta_attr.h"
#include "fuzz.h"
#include "layout.h"

static uint8_t again[META_ATTR_SIZE + RPC_PATH_MAX], twice[META_ATTR_SIZE + RPC_PATH_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpc_attr a, b;
	const char *path, *p2;
	size_t plen, plen2;
	char why[256];
	int ret = meta_attr_dec(data, size, &a, &path, &plen, why, sizeof(why));

	FUZZ_CHECK(memchr(why, 0, sizeof(why)));
	if (ret) {
		FUZZ_CHECK(ret == -EPROTO || ret == -EOPNOTSUPP ||
			   ret == -EPROTONOSUPPORT);
		FUZZ_CHECK(why[0]);
		return 0;
	}
	FUZZ_CHECK(plen >= 1 && plen <= RPC_PATH_MAX);
	FUZZ_CHECK((const uint8_t *)path > data &&
		   (const uint8_t *)path + plen == data + size);
	fuzz_touch(path, plen);
	FUZZ_CHECK(meta_attr_path(data, size, &plen2) == path && plen2 == plen);
	FUZZ_CHECK(a.type == RPC_TYPE_FILE || a.type == RPC_TYPE_DIR);
	FUZZ_CHECK(layout_kind_supported(a.layout.kind));
	if (a.type == RPC_TYPE_FILE)
		FUZZ_CHECK(layout_check(&a.layout) == 0);

	meta_attr_enc(again, &a, path, plen);
	if (size >= 4 && !memcmp(data, again, 4))
		FUZZ_CHECK(!memcmp(again, data, size));
	FUZZ_CHECK(!meta_attr_dec(again, meta_attr_size(plen), &b, &p2, &plen2, NULL, 0));
	FUZZ_CHECK(plen2 == plen && !memcmp(p2, path, plen));
	meta_attr_enc(twice, &b, p2, plen2);
	FUZZ_CHECK(!memcmp(twice, again, meta_attr_size(plen)));
	return 0;
}
