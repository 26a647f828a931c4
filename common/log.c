/* Leveled logging: see log.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* tm_gmtoff */
#endif

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
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
/* The program's name in every line, set once by main before any thread
 * (rpfs_log_set_name): "rpfs" for the library in any program. */
static char log_name[32] = "rpfs";

void rpfs_log_set_name(const char *name)
{
	snprintf(log_name, sizeof(log_name), "%s", name);
}

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

int rpfs_log_make_dir(const char *file, char *why, size_t whylen)
{
	char dir[PATH_MAX];
	char *slash;
	struct stat st;

	if (snprintf(dir, sizeof(dir), "%s", file) >= (int)sizeof(dir)) {
		snprintf(why, whylen, "log file name too long: %.200s...", file);
		return -ENAMETOOLONG;
	}
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0; /* the working directory, or / */
	*slash = 0;
	/* mkdir -p: each missing parent in turn, then the directory. */
	for (char *p = dir + 1;; p++) {
		bool last = !*p;

		if (*p && *p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0755) && errno != EEXIST) {
			int err = errno;

			snprintf(why, whylen, "couldn't create log directory %s: %s", dir,
				 strerror(err));
			return -err;
		}
		if (last)
			break;
		*p = '/';
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "log directory %s is not a directory", dir);
		return -ENOTDIR;
	}
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

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* Local time, ISO 8601 with milliseconds and the UTC offset. */
static void stamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	long off;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	off = tm.tm_gmtoff / 60;
	snprintf(buf + n, len - n, ".%03ld%c%02ld:%02ld", ts.tv_nsec / 1000000,
		 off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60);
}

int rpfs_log_prefix(char *buf, size_t len, enum rpfs_log_level level)
{
	char t[48];

	stamp(t, sizeof(t));
	return snprintf(buf, len, "%s[%d] %s %s: ", log_name, (int)getpid(), t,
			level_names[level]);
}

void rpfs_log(enum rpfs_log_level level, const char *fmt, ...)
{
	static const int prio[] = {3, 4, 6, 7}; /* syslog's err, warning, info, debug */
	char line[1024];
	va_list ap;
	int n;

	if (!rpfs_log_enabled(level))
		return;
	if (atomic_load(&log_journal) < 0)
		atomic_store(&log_journal, journal_from_env());
	if (atomic_load(&log_journal))
		n = snprintf(line, sizeof(line), "<%d>%s[%d] %s: ", prio[level], log_name,
			     (int)getpid(), level_names[level]);
	else
		n = rpfs_log_prefix(line, sizeof(line), level);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line so lines from several processes do not interleave. */
	fprintf(stderr, "%s\n", line);
}
