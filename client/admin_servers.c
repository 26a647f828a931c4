/* The servers of a config, for tools (rpfs_admin.h): what the config lists
 * and which I/O server holds a stripe slot of a file.
 *
 * A thin, opaque wrapper of common/config.h, so that a tool needs no
 * private header; the slot arithmetic is layout.h's, the only place that
 * does it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "admin_priv.h"

struct rpfs_admin_config {
	struct rpfs_config cfg;
};

int rpfs_admin_config_load(const char *path, rpfs_admin_config_t **out)
{
	struct rpfs_admin_config *a = calloc(1, sizeof(*a));
	char why[512] = "";
	int ret;

	*out = NULL;
	if (!a) {
		rpfsc_err_set("out of memory");
		return -ENOMEM;
	}
	ret = rpfs_config_load(path, &a->cfg, why, sizeof(why));
	if (ret) {
		rpfsc_err_set("%s", why[0] ? why : strerror(-ret));
		free(a);
		return ret;
	}
	*out = a;
	return 0;
}

int rpfs_admin_config_path(char *out, size_t len)
{
	char why[512] = "";
	int ret = rpfs_config_search(out, len, why, sizeof(why));

	if (ret)
		rpfsc_err_set("%s", why);
	return ret;
}

void rpfs_admin_config_free(rpfs_admin_config_t *a)
{
	if (!a)
		return;
	rpfs_config_free(&a->cfg);
	free(a);
}

int rpfs_admin_num_servers(const rpfs_admin_config_t *a)
{
	return (int)a->cfg.nservers;
}

void rpfsc_server_info(const struct rpfs_server_cfg *s, struct rpfs_server_info *out)
{
	*out = (struct rpfs_server_info){
		.name = s->name,
		.address = s->address,
		.port = atoi(s->port),
		.roles = (s->roles & RPFS_ROLE_META ? RPFS_ADMIN_ROLE_META : 0) |
			 (s->roles & RPFS_ROLE_IO ? RPFS_ADMIN_ROLE_IO : 0),
		.io_index = s->io_index,
		.meta_index = s->meta_index,
		.dir = s->dir,
	};
}

int rpfs_admin_server(const rpfs_admin_config_t *a, int server,
		      struct rpfs_server_info *out)
{
	if (server < 0 || (uint32_t)server >= a->cfg.nservers) {
		rpfsc_err_set("%s: no server %d (it lists %u)", a->cfg.path, server,
			      a->cfg.nservers);
		return -EINVAL;
	}
	rpfsc_server_info(&a->cfg.servers[server], out);
	return 0;
}

int rpfs_admin_slot_server(const rpfs_admin_config_t *a, const struct rpfs_stat *st,
			   uint32_t slot, struct rpfs_server_info *out)
{
	struct rpfs_layout l = {.stripe_unit = st->stripe_unit,
				.stripe_count = st->stripe_count,
				.first_server = st->first_server,
				.nservers = a->cfg.nio};
	uint32_t io;

	if (st->type == RPFS_TYPE_DIR) {
		rpfsc_err_set("a directory has no stripes");
		return -EINVAL;
	}
	if (layout_check(&l)) {
		rpfsc_err_set(
			"%s: a layout of %u servers from I/O server %u does not fit its %u I/O servers",
			a->cfg.path, st->stripe_count, st->first_server, a->cfg.nio);
		return -EINVAL;
	}
	if (slot >= layout_slots(&l)) {
		rpfsc_err_set("no slot %u in a layout of %u", slot, layout_slots(&l));
		return -EINVAL;
	}
	io = layout_server(&l, slot);
	rpfsc_server_info(&a->cfg.servers[a->cfg.io[io]], out);
	return (int)io;
}

const struct rpfs_config *rpfsc_admin_cfg(const rpfs_admin_config_t *a)
{
	return a ? &a->cfg : NULL;
}
