/* The inline path ("PVFS over InfiniBand", section 4.1): data of at most
 * inline_max bytes rides inside the request (a write) or the reply (a
 * read), one copy, no registration. These are the copies; where the data
 * sits in a message is proto.h's (a reply leaves room for its body first:
 * xp_reply_data_off). */
#include <string.h>

#include "xport_path.h"

size_t xp_iov_len(const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

void xp_gather(char *dst, const struct iovec *iov, int cnt)
{
	for (int i = 0; i < cnt; i++) {
		memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
}

void xp_scatter(const struct iovec *iov, int cnt, const char *src, size_t len)
{
	for (int i = 0; i < cnt && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(iov[i].iov_base, src, n);
		src += n;
		len -= n;
	}
}
