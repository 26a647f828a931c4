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
 * journald keeps the time. */
#ifndef RPFS_LOG_H
#define RPFS_LOG_H

enum rpfs_log_level { RPFS_LOG_ERROR, RPFS_LOG_WARN, RPFS_LOG_INFO, RPFS_LOG_DEBUG };

void rpfs_log_set_level(enum rpfs_log_level level);
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
