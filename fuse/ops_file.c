/* rpfs-fuse: open files. Each FUSE file handle holds the rpfs_file_t of
 * its open (and the capability the metadata server granted it), so reads
 * and writes go to the I/O servers without a metadata request. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>

#include "rpfs_fuse.h"

static rpfs_file_t *file_of(const struct fuse_file_info *fi)
{
	return (rpfs_file_t *)(uintptr_t)fi->fh;
}

static unsigned rpfs_flags(int flags)
{
	switch (flags & O_ACCMODE) {
	case O_WRONLY:
		return RPFS_O_WRITE;
	case O_RDWR:
		return RPFS_O_RDWR;
	}
	return RPFS_O_READ;
}

static int rfs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	unsigned flags = rpfs_flags(fi->flags) | (fi->flags & O_EXCL ? RPFS_O_EXCL : 0);
	rpfs_file_t *f;
	int ret = rpfs_create(rfs_get()->c, path, mode & 07777, flags, NULL, &f);

	if (ret)
		return rfs_result(ret, "create", path);
	rfs_give_to_caller(path);
	fi->fh = (uint64_t)(uintptr_t)f;
	return 0;
}

static int rfs_open(const char *path, struct fuse_file_info *fi)
{
	rpfs_file_t *f;
	int ret = rpfs_open(rfs_get()->c, path, rpfs_flags(fi->flags), &f);

	if (ret)
		return rfs_result(ret, "open", path);
	/* the kernel truncates by a setattr first; this covers atomic_o_trunc */
	if ((fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY) {
		ret = rpfs_truncate(f, 0);
		if (ret) {
			ret = rfs_result(ret, "truncate on open", path);
			rpfs_close(f);
			return ret;
		}
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	return 0;
}

static int rfs_release(const char *path, struct fuse_file_info *fi)
{
	rpfs_close(file_of(fi));
	return 0;
}

/* rpfs_pread fills past the end with zeros; POSIX stops at the end. The
 * read is posted first and the size asked while it moves, so knowing the
 * end costs no extra round trip. */
static int rfs_read(const char *path, char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	struct rfs *fs = rfs_get();
	rpfs_request_t *req;
	uint64_t size;
	ssize_t got;
	int ret = rpfs_ipread(file_of(fi), buf, len, (uint64_t)off, &req);

	rfs_count(&fs->reads, &fs->max_read, len);
	if (ret)
		return rfs_result(ret, "read", path);
	ret = rpfs_getsize(file_of(fi), &size);
	got = rpfs_wait(req);
	if (ret)
		return rfs_result(ret, "read (size)", path);
	if (got < 0)
		return rfs_result((int)got, "read", path);
	if ((uint64_t)off >= size)
		return 0;
	return (int)((uint64_t)got < size - (uint64_t)off ? (uint64_t)got
							  : size - (uint64_t)off);
}

void rfs_count(atomic_ulong *n, atomic_ulong *max, size_t len)
{
	unsigned long seen = atomic_load(max);

	atomic_fetch_add(n, 1);
	while (len > seen && !atomic_compare_exchange_weak(max, &seen, len))
		;
}

static int rfs_write(const char *path, const char *buf, size_t len, off_t off,
		     struct fuse_file_info *fi)
{
	struct rfs *fs = rfs_get();

	rfs_count(&fs->writes, &fs->max_write, len);
	return rfs_result((int)rpfs_pwrite(file_of(fi), buf, len, (uint64_t)off), "write",
			  path);
}

static int rfs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	rpfs_file_t *f;
	int ret;

	if (fi)
		return rfs_result(rpfs_truncate(file_of(fi), (uint64_t)size), "truncate",
				  path);
	ret = rpfs_open(rfs_get()->c, path, RPFS_O_WRITE, &f);
	if (ret)
		return rfs_result(ret, "truncate (open)", path);
	ret = rpfs_truncate(f, (uint64_t)size);
	rpfs_close(f);
	return rfs_result(ret, "truncate", path);
}

static int rfs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	return rfs_result(rpfs_sync(file_of(fi)), "fsync", path);
}

void rfs_file_ops(struct fuse_operations *ops)
{
	ops->create = rfs_create;
	ops->open = rfs_open;
	ops->release = rfs_release;
	ops->read = rfs_read;
	ops->write = rfs_write;
	ops->truncate = rfs_truncate;
	ops->fsync = rfs_fsync;
}
