/* Leveled logging: see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* -1: not yet read from the environment. */
static atomic_int log_level = -1;

static int level_from_env(void)
{
	const char *s = getenv("RPFS_LOG");

	if (!s)
		return RPFS_LOG_WARN;
	if (!strcmp(s, "error"))
		return RPFS_LOG_ERROR;
	if (!strcmp(s, "info"))
		return RPFS_LOG_INFO;
	if (!strcmp(s, "debug"))
		return RPFS_LOG_DEBUG;
	return RPFS_LOG_WARN;
}

void rpfs_log_set_level(enum rpfs_log_level level)
{
	atomic_store(&log_level, (int)level);
}

int rpfs_log_enabled(enum rpfs_log_level level)
{
	int cur = atomic_load(&log_level);

	if (cur < 0) {
		cur = level_from_env();
		atomic_store(&log_level, cur);
	}
	return (int)level <= cur;
}

void rpfs_log(enum rpfs_log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	char line[1024];
	struct timespec ts;
	va_list ap;
	int n;

	if (!rpfs_log_enabled(level))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "rpfs[%d] %ld.%06ld %s: ", (int)getpid(),
		     (long)ts.tv_sec, ts.tv_nsec / 1000, names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line so lines from several processes do not interleave. */
	fprintf(stderr, "%s\n", line);
}
