/* CPU lists: see cpulist.h. */
#define _GNU_SOURCE /* cpu_set_t */
#include "cpulist.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A CPU number at *p, advancing it; -1 when there is none or it is too big. */
static long cpu_number(const char **p)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**p))
		return -1;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v >= CPU_SETSIZE)
		return -1;
	*p = end;
	return v;
}

int cpulist_parse(const char *text, cpu_set_t *set)
{
	const char *p = text;

	CPU_ZERO(set);
	if (!text)
		return -EINVAL;
	if (!strcmp(text, "all")) {
		for (int c = 0; c < CPU_SETSIZE; c++)
			CPU_SET(c, set);
		return 0;
	}
	do {
		long lo = cpu_number(&p), hi = lo;

		if (lo < 0)
			return -EINVAL;
		if (*p == '-') {
			p++;
			hi = cpu_number(&p);
			if (hi < lo)
				return -EINVAL;
		}
		for (long c = lo; c <= hi; c++)
			CPU_SET((int)c, set);
	} while (*p++ == ',');
	/* The loop stopped at a character that is neither ',' nor the end. */
	return p[-1] ? -EINVAL : 0;
}

void cpulist_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t n = 0;

	if (len)
		buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE && n < len; c++) {
		int hi = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (hi + 1 < CPU_SETSIZE && CPU_ISSET(hi + 1, set))
			hi++;
		if (hi > c)
			n += (size_t)snprintf(buf + n, len - n, "%s%d-%d", n ? "," : "",
					      c, hi);
		else
			n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? "," : "", c);
		c = hi;
	}
}
