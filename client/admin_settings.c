/* Settings for tools (rpfs_admin.h): the table of transport settings with
 * the values a config gives them, and sizes with suffixes. The table and
 * the parsing are params.c's; this file only lets a tool reach them
 * through a public header. */
#include <errno.h>
#include <stdlib.h>

#include "admin_priv.h"

void rpfs_admin_settings_print(FILE *f, const rpfs_admin_config_t *cfg)
{
	struct xp_params p;

	if (cfg) {
		p = rpfsc_admin_cfg(cfg)->xport;
	} else {
		/* A bad RPFS_* variable is logged and left out. */
		xp_params_default(&p);
		xp_params_from_env(&p);
	}
	xp_settings_print(f, &p, p.provider[0] ? NULL : xp_provider_default());
}

void rpfs_admin_settings_markdown(FILE *f)
{
	xp_settings_markdown(f);
}

int rpfs_admin_parse_size(const char *s, uint64_t *out)
{
	size_t v;

	if (xp_parse_size(s, &v)) {
		rpfsc_err_set(
			"'%s' is not a size (a number with an optional K, M or G suffix)",
			s ? s : "");
		return -EINVAL;
	}
	*out = v;
	return 0;
}
