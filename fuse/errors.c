/* rpfs-fuse: librpfs errors as errno values, and the log.
 *
 * POSIX callers understand the errno values that describe their request
 * (a missing name, a refused permission, a full disk); a failing server
 * is not something ls or cp can act on, so those become EIO and the cause
 * goes to the log, where an administrator finds the server's name. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <syslog.h>

#include "rpfs_fuse.h"

struct rfs *rfs_get(void)
{
	return fuse_get_context()->private_data;
}

/* The mount's own lines, always written: to syslog, or to the log file in
 * the format of librpfs's lines there (log.h), which share the file. */
void rfs_log(struct rfs *fs, enum rpfs_log_level level, const char *fmt, ...)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
	char msg[1024], prefix[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!fs->log) {
		syslog(prio[level], "%s", msg);
		return;
	}
	rpfs_log_prefix(prefix, sizeof(prefix), level);
	fprintf(fs->log, "%s%s\n", prefix, msg);
	fflush(fs->log);
}

/* Errors that say something about the request itself. */
static int callers_error(int err)
{
	switch (err) {
	case ENOENT:
	case EEXIST:
	case EACCES:
	case EPERM:
	case ENOTDIR:
	case EISDIR:
	case ENOTEMPTY:
	case ENAMETOOLONG:
	case EINVAL:
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
	case EROFS:
	case EXDEV:
	case EBUSY:
	case ENOMEM:
		return 1;
	}
	return 0;
}

int rfs_result(int ret, const char *op, const char *path)
{
	const char *m;

	if (ret >= 0 || callers_error(-ret))
		return ret;
	m = rpfs_errmsg();
	rfs_log(rfs_get(), RPFS_LOG_ERROR, "%s %s: %s (%s): EIO", op, path,
		strerror(-ret), m && *m ? m : "no message");
	return -EIO;
}
