/* meta_ops: metadata operation rates through librpfs, for bench/run
 * (issue 8). For each count N: create N empty files in a fresh directory,
 * list it (every name must be there), stat each (each must be a file of
 * size 0), remove each, list it again (it must be empty). Each phase is
 * timed as a whole; the CSV rows (experiment meta, no header) give
 * microseconds per operation, so growth with N shows whether an operation
 * costs O(log files) or O(files).
 *
 * usage: meta_ops [--system NAME] [--dir /PATH] N...
 * RPFS_CONFIG names the cluster. Any failed call or wrong answer prints it
 * and exits 1. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpfs.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *path, int rc)
{
	fprintf(stderr, "meta_ops: %s %s: %s (%s)\n", what, path, strerror(-rc),
		rpfs_errmsg());
	exit(1);
}

static int count_entry(const char *name, uint32_t type, void *arg)
{
	(void)name;
	if (type != RPFS_TYPE_FILE)
		return -EINVAL;
	++*(long *)arg;
	return 0;
}

static long count_dir(rpfs_client_t *c, const char *dir)
{
	long n = 0;
	int rc = rpfs_readdir(c, dir, count_entry, &n);

	if (rc)
		die("readdir", dir, rc);
	return n;
}

static void row(const char *system, const char *op, long n, double secs)
{
	printf("meta,%s,%s,files=%ld,%.6g,us/op\n", system, op, n, secs / n * 1e6);
}

static void run(rpfs_client_t *c, const char *system, const char *base, long n)
{
	char dir[256], path[320];
	struct rpfs_stat st;
	rpfs_file_t *f;
	double t0;
	long got;
	int rc;

	snprintf(dir, sizeof(dir), "%s/n%ld", base, n);
	rc = rpfs_mkdir(c, dir, 0755);
	if (rc)
		die("mkdir", dir, rc);

	t0 = now();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		rc = rpfs_create(c, path, 0644, RPFS_O_EXCL | RPFS_O_WRITE, NULL, &f);
		if (rc)
			die("create", path, rc);
		rpfs_close(f);
	}
	row(system, "create", n, now() - t0);

	got = count_dir(c, dir);
	if (got != n) {
		fprintf(stderr, "meta_ops: %s lists %ld files, not %ld\n", dir, got, n);
		exit(1);
	}

	t0 = now();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		rc = rpfs_stat(c, path, &st);
		if (rc)
			die("stat", path, rc);
		if (st.type != RPFS_TYPE_FILE || st.size != 0) {
			fprintf(stderr,
				"meta_ops: %s: type %u size %llu, not an empty file\n",
				path, (unsigned)st.type, (unsigned long long)st.size);
			exit(1);
		}
	}
	row(system, "stat", n, now() - t0);

	t0 = now();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		rc = rpfs_remove(c, path);
		if (rc)
			die("remove", path, rc);
	}
	row(system, "remove", n, now() - t0);

	got = count_dir(c, dir);
	if (got != 0) {
		fprintf(stderr, "meta_ops: %s still lists %ld files\n", dir, got);
		exit(1);
	}
	rc = rpfs_rmdir(c, dir);
	if (rc)
		die("rmdir", dir, rc);
}

int main(int argc, char **argv)
{
	const char *system = "rpfs", *base = "/meta";
	rpfs_client_t *c;
	int i = 1, rc;

	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "--system"))
			system = argv[i + 1];
		else if (!strcmp(argv[i], "--dir"))
			base = argv[i + 1];
		else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: meta_ops [--system NAME] [--dir /PATH] N...\n");
		return 2;
	}
	rc = rpfs_init(NULL, &c);
	if (rc)
		die("init", getenv("RPFS_CONFIG") ? getenv("RPFS_CONFIG") : "", rc);
	rc = rpfs_mkdir(c, base, 0755);
	if (rc && rc != -EEXIST)
		die("mkdir", base, rc);
	for (; i < argc; i++) {
		long n = atol(argv[i]);

		if (n < 1) {
			fprintf(stderr, "meta_ops: bad count '%s'\n", argv[i]);
			return 2;
		}
		run(c, system, base, n);
	}
	rpfs_finalize(c);
	fprintf(stderr, "meta_ops: every listing and stat checked\n");
	return 0;
}
