/* Leveled logging: see log.h. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* -1: not yet read from the environment. */
static atomic_int log_level = -1;
/* Whether stderr is journald's stream; -1: not yet looked at. */
static atomic_int log_journal = -1;
/* The log file's name, set once by the daemon's main thread before any
 * other thread (rpfs_log_to_file), read on SIGHUP by the same thread. */
static char log_path[PATH_MAX];

/* systemd sets JOURNAL_STREAM=device:inode of the stream it gave us; a
 * stderr redirected since is not it. */
static int journal_from_env(void)
{
	const char *s = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!s || sscanf(s, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st))
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

int rpfs_log_to_file(const char *path)
{
	int fd;

	if (strlen(path) >= sizeof(log_path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	if (dup2(fd, 2) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (fd != 2)
		close(fd);
	if (path != log_path)
		strcpy(log_path, path);
	atomic_store(&log_journal, 0);
	return 0;
}

int rpfs_log_reopen(void)
{
	return log_path[0] ? rpfs_log_to_file(log_path) : 0;
}

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
	static const int prio[] = {3, 4, 6, 7}; /* syslog's err, warning, info, debug */
	char line[1024];
	struct timespec ts;
	va_list ap;
	int n;

	if (!rpfs_log_enabled(level))
		return;
	if (atomic_load(&log_journal) < 0)
		atomic_store(&log_journal, journal_from_env());
	clock_gettime(CLOCK_REALTIME, &ts);
	if (atomic_load(&log_journal))
		n = snprintf(line, sizeof(line), "<%d>rpfs[%d] %s: ", prio[level],
			     (int)getpid(), names[level]);
	else
		n = snprintf(line, sizeof(line), "rpfs[%d] %ld.%06ld %s: ", (int)getpid(),
			     (long)ts.tv_sec, ts.tv_nsec / 1000, names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line so lines from several processes do not interleave. */
	fprintf(stderr, "%s\n", line);
}
