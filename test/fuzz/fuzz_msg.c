/* libFuzzer target: a received transport message (proto.h) as rpfsd and
 * librpfs see one: the header (proto_hdr_decode), where inline and fast
 * data lie (proto_data_fits), and the bulk descriptors after the body
 * (proto_desc_decode), checked as xport_bulk.c's decode_descs does.
 *
 * The input is the message, len bytes exactly (libFuzzer's buffer is sized
 * to it, so AddressSanitizer catches a read past the end). After a decode
 * that succeeds, the target checks what the transport relies on: body and
 * descriptors lie inside the message, the data of a message that "fits"
 * does too, accepted descriptors add up to data_len without wrapping, and
 * the header re-encodes to the bytes it came from. */
#include <string.h>

#include "fuzz.h"
#include "mraddr.h"
#include "params.h"
#include "proto.h"

static void check_hdr(const uint8_t *data, size_t size, const struct proto_hdr *h)
{
	uint8_t again[PROTO_HDR_SIZE];

	FUZZ_CHECK(size >= PROTO_HDR_SIZE);
	FUZZ_CHECK(h->type >= PROTO_HELLO && h->type <= PROTO_CREDIT);
	FUZZ_CHECK(h->path <= XP_PATH_BULK);
	FUZZ_CHECK(h->dir <= PROTO_DIR_READ);
	FUZZ_CHECK(proto_desc_off(h) <= size);
	FUZZ_CHECK(proto_data_off(h) <= size);
	FUZZ_CHECK(proto_data_off(h) >= proto_desc_off(h));
	/* The transport copies the body out of the message. */
	fuzz_touch(data + PROTO_HDR_SIZE, h->body_len);
	/* Every field comes back as it was sent; byte 9 is reserved (zero). */
	proto_hdr_encode(again, h);
	FUZZ_CHECK(memcmp(again, data, 9) == 0);
	FUZZ_CHECK(memcmp(again + 10, data + 10, PROTO_HDR_SIZE - 10) == 0);
}

/* Inline and fast data: what xp_client_reply scatters and what the server
 * takes as write data. */
static void check_data(const uint8_t *data, size_t size, const struct proto_hdr *h)
{
	if (!proto_data_fits(h, size))
		return;
	FUZZ_CHECK(h->data_off >= proto_data_off(h));
	FUZZ_CHECK(h->data_off <= size);
	FUZZ_CHECK(h->data_len <= size - h->data_off);
	fuzz_touch(data + h->data_off, (size_t)h->data_len);
}

/* decode_descs of xport_bulk.c: each descriptor non-empty and not wrapping,
 * their lengths adding up to data_len. Then the walk of rma_stream over
 * the whole stream in a few chunks must stay inside the descriptors. */
static void check_descs(const uint8_t *data, const struct proto_hdr *h)
{
	struct proto_desc d[64];
	uint64_t sum = 0, total, chunk;
	uint32_t n = h->ndesc < 64 ? h->ndesc : 64;

	for (uint32_t i = 0; i < h->ndesc; i++) {
		struct proto_desc one;

		proto_desc_decode(data + proto_desc_off(h) + (size_t)i * PROTO_DESC_SIZE,
				  &one);
		if (!one.len || sum + one.len < sum || one.addr + one.len < one.addr)
			return;
		sum += one.len;
		if (i < n)
			d[i] = one;
	}
	if (sum != h->data_len || h->ndesc > 64)
		return;
	/* Accepted: the RMA walk in chunks of total/3 (at least 1). */
	total = h->data_len;
	chunk = total / 3 ? total / 3 : 1;
	for (uint64_t start = 0; start < total;) {
		uint64_t at = start, pos = 0;
		uint64_t len = total - start < chunk ? total - start : chunk;

		for (uint32_t i = 0; i < n && len;) {
			uint64_t skip, piece, addr;

			if (at >= pos + d[i].len) {
				pos += d[i].len;
				i++;
				continue;
			}
			skip = at - pos;
			piece = d[i].len - skip < len ? d[i].len - skip : len;
			FUZZ_CHECK(piece > 0 && piece <= d[i].len - skip);
			FUZZ_CHECK(xp_remote_target(d[i].addr, skip, &addr) == 0);
			at += piece;
			len -= piece;
		}
		FUZZ_CHECK(len == 0);
		if (total - start <= chunk)
			break;
		start += chunk;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_hdr h;

	memset(&h, 0, sizeof(h));
	if (proto_hdr_decode(data, size, &h))
		return 0;
	check_hdr(data, size, &h);
	check_data(data, size, &h);
	check_descs(data, &h);
	return 0;
}
