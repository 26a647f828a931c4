/* Leveled logging to stderr, shared by client and server.
 *
 * The level comes from RPFS_LOG (error, warn, info, debug) or from
 * rpfs_log_set_level(); one process-wide setting, because a log level is a
 * property of the process, not of an object.
 *
 * A daemon may send its stderr to a file (rpfs_log_to_file) and open it
 * again after logrotate moved it (rpfs_log_reopen, on SIGHUP). When
 * stderr is journald's stream ($JOURNAL_STREAM names it: run by systemd)
 * each line starts with its syslog priority, <3> error .. <7> debug, and
 * journald keeps the time. Otherwise a line is
 *
 *   NAME[PID] 2026-11-27T08:30:01.123+00:00 LEVEL: message
 *
 * with the local time, milliseconds and UTC offset, and the program's name
 * (rpfs_log_set_name: rpfsd, rpfs-fuse; "rpfs" by default, the library's
 * in any program). */
#ifndef RPFS_LOG_H
#define RPFS_LOG_H

#include <stddef.h>

enum rpfs_log_level { RPFS_LOG_ERROR, RPFS_LOG_WARN, RPFS_LOG_INFO, RPFS_LOG_DEBUG };

void rpfs_log_set_level(enum rpfs_log_level level);
/* The program's name in its lines; main calls it before any thread. */
void rpfs_log_set_name(const char *name);
/* "NAME[PID] TIME LEVEL: " into buf, for a program that writes its own log
 * lines (rpfs-fuse's file); snprintf's return. */
int rpfs_log_prefix(char *buf, size_t len, enum rpfs_log_level level);
/* Create the directory of a log file, with its parents (mode 0755), if
 * missing. 0, or -errno with why naming the directory and the cause. */
int rpfs_log_make_dir(const char *file, char *why, size_t whylen);
/* Append stderr (fd 2) to path from now on; it is remembered for
 * rpfs_log_reopen. 0 or -errno (stderr unchanged). */
int rpfs_log_to_file(const char *path);
/* Open the log file again by its name (0 when there is none). */
int rpfs_log_reopen(void);
int rpfs_log_enabled(enum rpfs_log_level level);
void rpfs_log(enum rpfs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...)  rpfs_log(RPFS_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) rpfs_log(RPFS_LOG_WARN, __VA_ARGS__)
#define log_info(...) rpfs_log(RPFS_LOG_INFO, __VA_ARGS__)
#define log_dbg(...)                                                                     \
	do {                                                                             \
		if (rpfs_log_enabled(RPFS_LOG_DEBUG))                                    \
			rpfs_log(RPFS_LOG_DEBUG, __VA_ARGS__);                           \
	} while (0)

#endif
