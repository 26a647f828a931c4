/* A client's life: rpfs_init makes the client (client.c) and starts its
 * background (keepalive.c: connections and capabilities kept fresh while
 * files are open); rpfs_close and rpfs_finalize end it so that what a
 * program posted lands before what it posted through goes, and a program
 * that closes or ends without waiting for its requests loses nothing
 * (request.c). These sit above everything else in client/, as they wait
 * for list I/O (listio.c), stop the background and then free files
 * (file.c) and the client (client.c). */
#include <pthread.h>

#include "client_priv.h"

int rpfs_init(const char *config, rpfs_client_t **out)
{
	return rpfs_init_opts(config, NULL, 0, out);
}

int rpfs_init_opts(const char *config, const struct rpfs_opt *opts, int nopts,
		   rpfs_client_t **out)
{
	int ret = rpfsc_client_new(config, opts, nopts, out);

	if (!ret)
		rpfsc_keepalive_start(*out);
	return ret;
}

/* The file's requests stay valid (and keep the file) until waited for. */
void rpfs_close(rpfs_file_t *f)
{
	struct rpfs_client *c;

	if (!f)
		return;
	c = f->c;
	rpfsc_io_drain(c, f);
	rpfsc_file_closing(f); /* a background renewal lands first */
	pthread_mutex_lock(&c->live_lock);
	rpfsc_file_put_locked(f);
	pthread_mutex_unlock(&c->live_lock);
}

/* Requests nobody will wait for now, and files left open, are freed with
 * the client. */
void rpfs_finalize(rpfs_client_t *c)
{
	if (!c)
		return;
	rpfsc_io_drain(c, NULL);
	rpfsc_io_abandon_all(c);
	rpfsc_keepalive_stop(c); /* its calls use the files */
	rpfsc_files_free_all(c);
	rpfsc_client_free(c);
}
