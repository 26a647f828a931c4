/* mpiglue.c: the MPI-independent glue of rpfs's two MPI-IO front ends
 * (rpfs_mpi.h): the ROMIO driver and the Open MPI components call these,
 * so the rules they share exist once and run as one copy.
 *
 * The one piece of state is the process's client for MPI-IO: one client
 * serves every file a process opens through MPI (it holds the connections
 * to the servers), and a process runs one MPI library, so there is one. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rpfs_mpi.h"

/* ---- the process's client ---------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	rpfs_client_t *client; /* or NULL */
	int open_files;	       /* files open on the client */
	bool ending;	       /* MPI_Finalize has begun */
} mpi = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* With mpi.lock held. */
static void end_locked(void)
{
	if (mpi.client != NULL)
		rpfs_finalize(mpi.client);
	mpi.client = NULL;
}

static void end_at_exit(void)
{
	pthread_mutex_lock(&mpi.lock);
	end_locked();
	pthread_mutex_unlock(&mpi.lock);
}

/* The client settings given as hints rpfs_<key> (rpfs_opt_name lists the
 * keys, from librpfs's table of settings), as options: *opts gets the list
 * with its values stored after it, in one malloc. Returns their number or
 * -ENOMEM. */
static int transport_opts(const struct rpfs_mpi_hints *h, struct rpfs_opt **opts)
{
	size_t vsize = (size_t)h->valuelen + 1;
	char key[64], *values;
	const char *name;
	int max = 0, n = 0;

	while (rpfs_opt_name(max) != NULL)
		max++;
	*opts = malloc((size_t)max * (sizeof(**opts) + vsize) + 1);
	if (*opts == NULL)
		return -ENOMEM;
	values = (char *)(*opts + max);
	for (int i = 0; (name = rpfs_opt_name(i)) != NULL; i++) {
		char *value = values + (size_t)n * vsize;

		snprintf(key, sizeof(key), "rpfs_%s", name);
		if (h->get(h->info, key, h->valuelen, value))
			(*opts)[n++] = (struct rpfs_opt){name, value};
	}
	return n;
}

/* A bad rpfs_<key> hint fails with a message naming it, as a bad
 * RPFS_<KEY> variable does; the user's environment wins over a hint
 * (rpfs.h). With mpi.lock held. */
static int client_make(const struct rpfs_mpi_hints *h)
{
	struct rpfs_opt *opts = NULL;
	char *config = NULL;
	int nopts = 0, ret;

	if (h != NULL) {
		nopts = transport_opts(h, &opts);
		if (nopts < 0)
			return nopts;
		config = malloc((size_t)h->valuelen + 1);
		if (config == NULL) {
			free(opts);
			return -ENOMEM;
		}
		if (!h->get(h->info, "rpfs_config", h->valuelen, config)) {
			free(config);
			config = NULL;
		}
	}
	ret = rpfs_init_opts(config, opts, nopts, &mpi.client);
	free(config);
	free(opts);
	if (ret < 0) {
		mpi.client = NULL;
		/* the config's errno is not the file's: its -ENOENT would be
		 * MPI_ERR_NO_SUCH_FILE, its -EACCES, -EINVAL, -EISDIR would
		 * blame the file's mode, the program's arguments, the file's
		 * name. MPI_ERR_IO, "other I/O error", is what ROMIO's own
		 * drivers report for a file system library they cannot start
		 * (ad_quobytefs). Out of memory stays itself. */
		return ret == -ENOMEM ? -ENOMEM : -EIO;
	}
	return 0;
}

int rpfs_mpi_client(const struct rpfs_mpi_hints *hints, void (*watch_finalize)(void),
		    rpfs_client_t **client)
{
	int ret = 0;

	pthread_mutex_lock(&mpi.lock);
	if (mpi.client == NULL) {
		ret = client_make(hints);
		/* once MPI_Finalize has begun, the client ends with its last
		 * file; a client made after that ends at exit() */
		if (ret == 0 && !mpi.ending && watch_finalize != NULL)
			watch_finalize();
	}
	*client = mpi.client;
	pthread_mutex_unlock(&mpi.lock);
	return ret;
}

void rpfs_mpi_finalize_begun(void)
{
	pthread_mutex_lock(&mpi.lock);
	if (!mpi.ending)
		atexit(end_at_exit);
	mpi.ending = true;
	/* a file still open keeps the client for whoever closes it: a delete
	 * callback attached before ours may yet write */
	if (mpi.open_files == 0)
		end_locked();
	pthread_mutex_unlock(&mpi.lock);
}

void rpfs_mpi_file_opened(void)
{
	pthread_mutex_lock(&mpi.lock);
	mpi.open_files++;
	pthread_mutex_unlock(&mpi.lock);
}

void rpfs_mpi_file_closed(void)
{
	pthread_mutex_lock(&mpi.lock);
	if (--mpi.open_files == 0 && mpi.ending)
		end_locked();
	pthread_mutex_unlock(&mpi.lock);
}

/* ---- opening ------------------------------------------------------------ */

uint32_t rpfs_mpi_create_mode(int perm)
{
	mode_t old_mask;

	if (perm >= 0)
		return (uint32_t)perm;
	old_mask = umask(022);
	umask(old_mask);
	return (uint32_t)(0666 & ~old_mask);
}

/* widen: read-write for a write-only file. */
static int open_as(rpfs_client_t *c, const char *path, unsigned amode, bool widen,
		   uint32_t mode, const struct rpfs_create_opts *opts, const char *red,
		   rpfs_file_t **file)
{
	unsigned rights = (amode & RPFS_MPI_RDONLY)		? RPFS_O_READ
			  : (amode & RPFS_MPI_WRONLY) && !widen ? RPFS_O_WRITE
								: RPFS_O_RDWR;
	int ret;

	if (!(amode & RPFS_MPI_CREATE))
		return rpfs_open(c, path, rights, file);
	ret = rpfs_create_redundancy(c, path, mode,
				     rights | ((amode & RPFS_MPI_EXCL) ? RPFS_O_EXCL : 0),
				     opts, red, file);
	/* a library that reports an existing file even without O_EXCL */
	if (ret == -EEXIST && !(amode & RPFS_MPI_EXCL))
		ret = rpfs_open(c, path, rights, file);
	return ret;
}

int rpfs_mpi_open(rpfs_client_t *client, const char *path, unsigned amode, int perm,
		  const struct rpfs_create_opts *opts, rpfs_file_t **file)
{
	return rpfs_mpi_open_redundancy(client, path, amode, perm, opts, NULL, file);
}

int rpfs_mpi_open_redundancy(rpfs_client_t *client, const char *path, unsigned amode,
			     int perm, const struct rpfs_create_opts *opts,
			     const char *redundancy, rpfs_file_t **file)
{
	uint32_t mode = (amode & RPFS_MPI_CREATE) ? rpfs_mpi_create_mode(perm) : 0;
	int ret = open_as(client, path, amode, true, mode, opts, redundancy, file);

	/* the servers check the rights against the file's mode */
	if (ret == -EACCES && (amode & RPFS_MPI_WRONLY))
		ret = open_as(client, path, amode, false, mode, opts, redundancy, file);
	return ret;
}

int rpfs_mpi_redundancy_hint(const struct rpfs_mpi_hints *hints, char *out, size_t len)
{
	char value[RPFS_REDUNDANCY_MAX + 64];

	if (len)
		out[0] = '\0';
	if (!hints || !hints->get ||
	    !hints->get(hints->info, RPFS_MPI_REDUNDANCY_HINT,
			hints->valuelen < (int)sizeof(value) - 1 ? hints->valuelen
								 : (int)sizeof(value) - 1,
			value))
		return 0;
	return rpfs_redundancy_parse(value, out, len);
}

void rpfs_mpi_file_redundancy(rpfs_file_t *file, char *out, size_t len)
{
	if (rpfs_file_redundancy(file, out, len) && len)
		snprintf(out, len, "none");
}

/* ---- the size a read trusts --------------------------------------------- */

void rpfs_mpi_size_is(uint64_t *known, uint64_t size)
{
	__atomic_store_n(known, size, __ATOMIC_RELAXED);
}

void rpfs_mpi_size_reaches(uint64_t *known, uint64_t end)
{
	uint64_t now = __atomic_load_n(known, __ATOMIC_RELAXED);

	while (end > now &&
	       !__atomic_compare_exchange_n(known, &now, end, 1, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

void rpfs_mpi_wrote(uint64_t *known, uint64_t end, uint64_t bytes, int64_t result)
{
	if (bytes > 0 && result == (int64_t)bytes)
		rpfs_mpi_size_reaches(known, end);
}

static uint64_t segs_end(const struct rpfs_seg *segs, int nsegs)
{
	uint64_t end = 0;

	for (int i = 0; i < nsegs; i++)
		if (segs[i].off + segs[i].len > end)
			end = segs[i].off + segs[i].len;
	return end;
}

uint64_t rpfs_mpi_read_count(uint64_t *known, rpfs_file_t *file,
			     const struct rpfs_seg *segs, int nsegs, uint64_t moved)
{
	uint64_t end = segs_end(segs, nsegs), size, count = 0;

	if (end <= __atomic_load_n(known, __ATOMIC_RELAXED))
		return moved;
	/* the read reaches past what we know: ask once */
	if (rpfs_getsize(file, &size) < 0)
		return moved;
	rpfs_mpi_size_is(known, size);
	if (end <= size)
		return moved;
	for (int i = 0; i < nsegs; i++) {
		uint64_t e = segs[i].off + segs[i].len;

		if (e > size)
			e = size;
		if (e > segs[i].off)
			count += e - segs[i].off;
	}
	return count < moved ? count : moved;
}

/* ---- list I/O ------------------------------------------------------------ */

int rpfs_mpi_list_init(struct rpfs_mpi_list *l, int cap, uint64_t end)
{
	memset(l, 0, sizeof(*l));
	l->first = UINT64_MAX;
	l->end = end;
	if (cap <= 0)
		return 0;
	l->mem = malloc((size_t)cap * sizeof(*l->mem));
	l->file = malloc((size_t)cap * sizeof(*l->file));
	if (l->mem == NULL || l->file == NULL) {
		rpfs_mpi_list_free(l);
		return -ENOMEM;
	}
	l->mem_cap = l->file_cap = cap;
	return 0;
}

/* base (n pieces of size each, room for *cap) with room for one more:
 * itself, or grown to twice its room, or NULL (base unchanged). */
static void *room(void *base, int n, int *cap, size_t size)
{
	int want = *cap ? *cap * 2 : 16;

	if (n < *cap)
		return base;
	base = realloc(base, (size_t)want * size);
	if (base != NULL)
		*cap = want;
	return base;
}

int rpfs_mpi_add_mem(struct rpfs_mpi_list *l, void *base, uint64_t len)
{
	struct iovec *mem;

	if (len == 0)
		return 0;
	if (l->nmem > 0) {
		struct iovec *last = &l->mem[l->nmem - 1];

		if ((char *)last->iov_base + last->iov_len == (char *)base) {
			last->iov_len += (size_t)len;
			return 0;
		}
	}
	mem = room(l->mem, l->nmem, &l->mem_cap, sizeof(*mem));
	if (mem == NULL)
		return -ENOMEM;
	l->mem = mem;
	l->mem[l->nmem].iov_base = base;
	l->mem[l->nmem].iov_len = (size_t)len;
	l->nmem++;
	return 0;
}

int rpfs_mpi_add_seg(struct rpfs_mpi_list *l, uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	if (l->nfile > 0 &&
	    l->file[l->nfile - 1].off + l->file[l->nfile - 1].len == off) {
		l->file[l->nfile - 1].len += len;
	} else {
		struct rpfs_seg *file =
			room(l->file, l->nfile, &l->file_cap, sizeof(*file));

		if (file == NULL)
			return -ENOMEM;
		l->file = file;
		l->file[l->nfile].off = off;
		l->file[l->nfile].len = len;
		l->nfile++;
	}
	if (off < l->first)
		l->first = off;
	if (off + len > l->end)
		l->end = off + len;
	return 0;
}

void rpfs_mpi_list_free(struct rpfs_mpi_list *l)
{
	free(l->mem);
	free(l->file);
	l->mem = NULL;
	l->file = NULL;
	l->nmem = l->nfile = l->mem_cap = l->file_cap = 0;
}

/* ---- errors ---------------------------------------------------------------- */

void rpfs_mpi_err_text(char *buf, size_t len, int rpfs_error, const char *what,
		       const char *msg)
{
	if (msg == NULL)
		msg = rpfs_errmsg();
	if (msg == NULL || msg[0] == '\0')
		msg = strerror(rpfs_error < 0 ? -rpfs_error : rpfs_error);
	snprintf(buf, len, "%s: %s", what, msg);
}
