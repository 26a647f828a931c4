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
#include <time.h>

#include "rpfs_fuse.h"

struct rfs *rfs_get(void)
{
	return fuse_get_context()->private_data;
}

void rfs_log(struct rfs *fs, const char *fmt, ...)
{
	char msg[1024], stamp[32];
	struct tm tm;
	time_t now = time(NULL);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!fs->log) {
		syslog(LOG_ERR, "%s", msg);
		return;
	}
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
	fprintf(fs->log, "%s rpfs-fuse: %s\n", stamp, msg);
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
	rfs_log(rfs_get(), "%s %s: %s (%s): EIO", op, path, strerror(-ret),
		m && *m ? m : "no message");
	return -EIO;
}
