/* rpfs-fuse: namespace operations, one librpfs call each (chown and
 * utimens first look up what the caller leaves unchanged). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "rpfs_fuse.h"

static void to_timespec(int64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000);
	ts->tv_nsec = (long)(ns % 1000000000);
}

static void fill_stat(const struct rpfs_stat *st, struct stat *sb)
{
	int dir = st->type == RPFS_TYPE_DIR;

	memset(sb, 0, sizeof(*sb));
	sb->st_mode = (dir ? S_IFDIR : S_IFREG) | (st->mode & 07777);
	sb->st_nlink = dir ? 2 : 1;
	sb->st_uid = st->uid;
	sb->st_gid = st->gid;
	sb->st_size = (off_t)st->size;
	/* cp and friends move st_blksize at a time: a stripe unit makes
	 * each of their calls one large write */
	sb->st_blksize = st->stripe_unit ? (blksize_t)st->stripe_unit : RFS_MAX_IO;
	sb->st_blocks = (blkcnt_t)((st->size + 511) / 512);
	to_timespec(st->atime, &sb->st_atim);
	to_timespec(st->mtime, &sb->st_mtim);
	to_timespec(st->ctime, &sb->st_ctim);
}

static int rfs_getattr(const char *path, struct stat *sb, struct fuse_file_info *fi)
{
	struct rpfs_stat st;
	int ret = rpfs_stat(rfs_get()->c, path, &st);

	if (ret)
		return rfs_result(ret, "stat", path);
	fill_stat(&st, sb);
	return 0;
}

struct dir_fill {
	void *buf;
	fuse_fill_dir_t fill;
};

static int dir_entry(const char *name, uint32_t type, void *arg)
{
	struct dir_fill *d = arg;
	struct stat sb = {.st_mode = type == RPFS_TYPE_DIR ? S_IFDIR : S_IFREG};

	return d->fill(d->buf, name, &sb, 0, 0) ? 1 : 0;
}

static int rfs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct dir_fill d = {buf, fill};
	int ret;

	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	ret = rpfs_readdir(rfs_get()->c, path, dir_entry, &d);
	/* 1: libfuse's buffer is full, which it reports as ENOMEM */
	return ret == 1 ? -ENOMEM : rfs_result(ret, "readdir", path);
}

void rfs_give_to_caller(const char *path)
{
	struct rfs *fs = rfs_get();
	struct fuse_context *cx = fuse_get_context();
	struct rpfs_stat st;
	gid_t gid = cx->gid;
	int ret;

	if (fs->euid != 0 || cx->uid == 0)
		return;
	ret = rpfs_stat(fs->c, path, &st);
	/* the server gave a set-group-ID directory's group: keep it */
	if (!ret && st.gid != fs->egid)
		gid = st.gid;
	if (!ret)
		ret = rpfs_chown(fs->c, path, cx->uid, gid);
	if (ret)
		rfs_log(fs, RPFS_LOG_WARN, "chown %s to uid %u: %s (%s)", path,
			(unsigned)cx->uid, strerror(-ret), rpfs_errmsg());
}

static int rfs_mkdir(const char *path, mode_t mode)
{
	int ret = rpfs_mkdir(rfs_get()->c, path, mode & 07777);

	if (!ret)
		rfs_give_to_caller(path);
	return rfs_result(ret, "mkdir", path);
}

static int rfs_rmdir(const char *path)
{
	return rfs_result(rpfs_rmdir(rfs_get()->c, path), "rmdir", path);
}

static int rfs_unlink(const char *path)
{
	return rfs_result(rpfs_remove(rfs_get()->c, path), "unlink", path);
}

/* EXDEV (the names live on different metadata servers) makes mv(1) copy
 * and remove, as across file systems. */
static int rfs_rename(const char *from, const char *to, unsigned int flags)
{
	if (flags) /* RENAME_NOREPLACE, RENAME_EXCHANGE: not atomic in rpfs */
		return -EINVAL;
	return rfs_result(rpfs_rename(rfs_get()->c, from, to), "rename", from);
}

static int rfs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return rfs_result(rpfs_chmod(rfs_get()->c, path, mode & 07777), "chmod", path);
}

static int rfs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	struct rfs *fs = rfs_get();
	struct rpfs_stat st;
	int ret = 0;

	/* -1 keeps the current owner or group */
	if (uid == (uid_t)-1 || gid == (gid_t)-1)
		ret = rpfs_stat(fs->c, path, &st);
	if (!ret)
		ret = rpfs_chown(fs->c, path, uid == (uid_t)-1 ? st.uid : uid,
				 gid == (gid_t)-1 ? st.gid : gid);
	return rfs_result(ret, "chown", path);
}

static int64_t ns_of(const struct timespec *ts, int64_t now, int64_t old)
{
	if (ts->tv_nsec == UTIME_NOW)
		return now;
	if (ts->tv_nsec == UTIME_OMIT)
		return old;
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static int rfs_utimens(const char *path, const struct timespec tv[2],
		       struct fuse_file_info *fi)
{
	struct rfs *fs = rfs_get();
	struct rpfs_stat st = {0};
	struct timespec now;
	int ret = 0;

	if (tv[0].tv_nsec == UTIME_OMIT || tv[1].tv_nsec == UTIME_OMIT)
		ret = rpfs_stat(fs->c, path, &st);
	clock_gettime(CLOCK_REALTIME, &now);
	if (!ret)
		ret = rpfs_utimes(fs->c, path, ns_of(&tv[0], ns_of(&now, 0, 0), st.atime),
				  ns_of(&tv[1], ns_of(&now, 0, 0), st.mtime));
	return rfs_result(ret, "utimens", path);
}

#define RFS_BLOCK 4096

static int rfs_statfs(const char *path, struct statvfs *sv)
{
	struct rpfs_statfs st;
	int ret = rpfs_statfs(rfs_get()->c, &st);

	if (ret)
		return rfs_result(ret, "statfs", path);
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = RFS_MAX_IO; /* the preferred transfer */
	sv->f_frsize = RFS_BLOCK;
	sv->f_blocks = st.total / RFS_BLOCK;
	/* df's "used" is blocks - free: root's reserve is not in use */
	sv->f_bfree = st.free / RFS_BLOCK;
	sv->f_bavail = st.avail / RFS_BLOCK;
	/* no inode limit: objects are LMDB entries */
	sv->f_files = st.files + (1u << 30);
	sv->f_ffree = sv->f_favail = 1u << 30;
	sv->f_namemax = 255;
	return 0;
}

void rfs_ns_ops(struct fuse_operations *ops)
{
	ops->getattr = rfs_getattr;
	ops->readdir = rfs_readdir;
	ops->mkdir = rfs_mkdir;
	ops->rmdir = rfs_rmdir;
	ops->unlink = rfs_unlink;
	ops->rename = rfs_rename;
	ops->chmod = rfs_chmod;
	ops->chown = rfs_chown;
	ops->utimens = rfs_utimens;
	ops->statfs = rfs_statfs;
}
