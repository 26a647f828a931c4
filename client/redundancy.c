/* A file's redundancy through librpfs (rpfs.h, "redundancy"): the spec
 * checked, sent with a create or a directory's default, read back from a
 * file's or directory's attributes; the servers of each copy; a cluster's
 * default as a launcher or genconfig writes it (rpfs_admin.h). The text and
 * its packed form are common/redundancy.c's; the metadata server decides
 * (server/meta_create.c), and its errors get their numbers here, where
 * the message is made. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "admin_priv.h"
#include "redundancy.h"

/* The spec of a call: NULL or "" is not said (*packed 0). */
static int spec_of(const char *spec, const char *what, struct red_spec *r,
		   uint32_t *packed)
{
	char why[128];

	*packed = 0;
	memset(r, 0, sizeof(*r));
	r->kind = RED_DEFAULT;
	if (!spec || !*spec)
		return 0;
	if (red_parse(spec, r, why, sizeof(why))) {
		rpfsc_err_set("%s: redundancy %s", what, why);
		return -EINVAL;
	}
	*packed = red_pack(r);
	return 0;
}

static int text_out(const struct red_spec *r, char *buf, size_t len)
{
	char text[RED_TEXT_MAX];

	red_format(r, text, sizeof(text));
	if (!buf || len <= strlen(text)) {
		rpfsc_err_set("redundancy %s: buffer of %zu bytes too short", text, len);
		return -ERANGE;
	}
	memcpy(buf, text, strlen(text) + 1);
	return 0;
}

int rpfs_redundancy_parse(const char *spec, char *norm, size_t len)
{
	struct red_spec r;
	char why[128];

	if (red_parse(spec, &r, why, sizeof(why))) {
		rpfsc_err_set("redundancy %s", why);
		return -EINVAL;
	}
	return norm ? text_out(&r, norm, len) : 0;
}

int rpfsc_cluster_redundancy(const char *spec, const char *what, struct red_spec *r)
{
	char why[128];

	if (red_parse(spec, r, why, sizeof(why)))
		rpfsc_err_set("%s%s", what, why);
	else if (r->kind == RPFS_LAYOUT_EC)
		rpfsc_err_set("%s%s: ec:K+P is not supported yet", what, spec);
	else if (r->kind == RED_DEFAULT)
		rpfsc_err_set("%s%s: a cluster's redundancy is none or mirror:N", what,
			      spec);
	else
		return 0;
	return -EINVAL;
}

int rpfs_admin_redundancy_copies(const char *spec)
{
	struct red_spec r;
	int ret = rpfsc_cluster_redundancy(spec, "", &r);

	return ret ? ret : (int)red_copies(&r);
}

/* The redundancy a new file of path (normalized) would take where the
 * request says none: its directory's default, else the cluster's. */
static void inherited(struct rpfs_client *c, const char *norm, struct red_spec *r)
{
	char parent[RPC_PATH_MAX + 1], pnorm[RPC_PATH_MAX + 1];
	const char *slash = strrchr(norm, '/');
	struct rpc_attr a;

	*r = c->cfg.redundancy;
	if (!slash)
		return;
	snprintf(parent, sizeof(parent), "%.*s", slash == norm ? 1 : (int)(slash - norm),
		 norm);
	if (rpfsc_lookup(c, parent, 0, pnorm, &a) || a.type != RPC_TYPE_DIR)
		return;
	red_of_layout(&a.layout, true, r);
	if (r->kind == RED_DEFAULT)
		*r = c->cfg.redundancy;
}

/* explain() of an ec:K+P layout: its slots are G * (K + P) for a count of
 * G * K data slots. */
static int explain_ec(struct rpfs_client *c, const char *what, const struct red_spec *r,
		      const char *text, uint32_t count, int err)
{
	uint32_t k = r->data_cells, kp = r->data_cells + r->parity_cells,
		 nio = c->cfg.nio;

	if (!count)
		count = k;

	if (err == -EOPNOTSUPP)
		rpfsc_err_set("%s: redundancy %s: ec:K+P is not supported yet (new files "
			      "of it only where the servers' ec_preview setting is 1)",
			      what, text);
	else if (kp > nio)
		rpfsc_err_set("%s: %s needs %u I/O servers, the cluster has %u", what,
			      text, kp, nio);
	else if (count % k)
		rpfsc_err_set("%s: %s over %u data slots: a multiple of %u", what, text,
			      count, k);
	else if (red_slots(r, count) > nio)
		rpfsc_err_set("%s: %s over %u data slots needs %llu I/O servers, the "
			      "cluster has %u",
			      what, text, count, (unsigned long long)red_slots(r, count),
			      nio);
	return err;
}

/* A create or setstripe the metadata server refused with -EINVAL or
 * -EOPNOTSUPP: say why with the numbers, when the redundancy is the cause
 * (r: the one in force; count: the data slots asked for, 0 none). */
static int explain(struct rpfs_client *c, const char *what, const struct red_spec *r,
		   uint32_t count, int err)
{
	uint32_t copies = red_copies(r), nio = c->cfg.nio;
	char text[RED_TEXT_MAX];

	red_format(r, text, sizeof(text));
	if (r->kind == RPFS_LAYOUT_EC)
		return explain_ec(c, what, r, text, count, err);
	if (err != -EINVAL || copies < 2)
		return err;
	if (copies > nio)
		rpfsc_err_set("%s: %s needs %u I/O servers, the cluster has %u", what,
			      text, copies, nio);
	else if ((uint64_t)count * copies > nio)
		rpfsc_err_set("%s: %s over %u slots needs %llu I/O servers, the cluster "
			      "has %u",
			      what, text, count, (unsigned long long)count * copies, nio);
	return err;
}

int rpfs_create_redundancy(rpfs_client_t *c, const char *path, uint32_t mode,
			   unsigned flags, const struct rpfs_create_opts *opts,
			   const char *redundancy, rpfs_file_t **out)
{
	char norm[RPC_PATH_MAX + 1];
	struct red_spec r;
	uint32_t packed, count = opts ? opts->stripe_count : 0;
	int ret;

	*out = NULL;
	ret = rpfsc_path_norm(path, norm);
	if (ret)
		return ret;
	ret = spec_of(redundancy, norm, &r, &packed);
	if (ret)
		return ret;
	if (!packed) {
		/* The directory's or the cluster's: the metadata server knows
		 * which; the parent is looked up only to explain a refusal
		 * (no second round trip on every create). */
		ret = rpfs_create(c, path, mode, flags, opts, out);
		if (ret != -EINVAL && ret != -EOPNOTSUPP)
			return ret;
		inherited(c, norm, &r);
		return explain(c, norm, &r, count, ret);
	}
	if (packed == RED_DEFAULT)
		r = c->cfg.redundancy;
	/* What can't fit is said before anything is sent. */
	if (!red_fits(&r, count, c->cfg.nio))
		return explain(c, norm, &r, count, -EINVAL);
	ret = rpfsc_create(c, path, mode, flags, opts, packed, out);
	return ret == -EINVAL || ret == -EOPNOTSUPP ? explain(c, norm, &r, count, ret)
						    : ret;
}

int rpfs_open_attr_redundancy(rpfs_client_t *c, const struct rpfs_stat *st,
			      const char *path, const char *redundancy, rpfs_file_t **out)
{
	struct rpfs_layout l;
	struct red_spec r;
	char why[128];
	int ret;

	*out = NULL;
	if (!redundancy || !*redundancy)
		redundancy = "none";
	if (red_parse(redundancy, &r, why, sizeof(why)) || r.kind == RED_DEFAULT) {
		rpfsc_err_set("%s: redundancy %s", path ? path : "attributes",
			      r.kind == RED_DEFAULT ? "default: not a file's" : why);
		return -EINVAL;
	}
	ret = rpfs_open_attr_path(c, st, path, out);
	if (ret || r.kind == RPFS_LAYOUT_STRIPE)
		return ret;
	/* Before anyone else sees the file: its whole layout. */
	l = (*out)->attr.layout;
	red_to_file_layout(&r, &l);
	if (layout_check(&l)) {
		rpfsc_err_set(
			"%s: redundancy %s over %u slots doesn't fit this cluster's "
			"%u I/O servers",
			path ? path : "attributes", redundancy, st->stripe_count,
			c->cfg.nio);
		rpfs_close(*out);
		*out = NULL;
		return -EINVAL;
	}
	(*out)->attr.layout = l;
	return 0;
}

int rpfs_setstripe_redundancy(rpfs_client_t *c, const char *dir, uint64_t stripe_unit,
			      uint32_t stripe_count, const char *redundancy)
{
	char norm[RPC_PATH_MAX + 1];
	uint8_t body[RPFSC_META_BODY_CAP];
	struct red_spec r;
	uint32_t packed;
	int srv, len, ret;

	ret = rpfsc_path_norm(dir, norm);
	if (ret)
		return ret;
	ret = spec_of(redundancy, norm, &r, &packed);
	if (ret)
		return ret;
	if (!red_fits(&r, stripe_count, c->cfg.nio))
		return explain(c, norm, &r, stripe_count, -EINVAL);
	srv = rpfsc_meta_srv(c, place_meta_of_path(&c->cfg, norm));
	len = rpc_enc_setstripe_red(body, sizeof(body), norm, stripe_unit, stripe_count,
				    packed);
	if (len < 0) {
		rpfsc_err_set("%s: can't encode the request: %s", norm, strerror(-len));
		return len;
	}
	ret = rpfsc_call1(c, srv, RPFSC_META, norm, body, (size_t)len, NULL, 0, NULL);
	if (ret == -EINVAL || ret == -EOPNOTSUPP)
		return explain(c, norm, &r, stripe_count, ret);
	return ret;
}

int rpfs_stat_redundancy(rpfs_client_t *c, const char *path, char *buf, size_t len)
{
	char norm[RPC_PATH_MAX + 1];
	struct rpc_attr a;
	struct red_spec r;
	int ret = rpfsc_lookup(c, path, 0, norm, &a);

	if (ret)
		return ret;
	red_of_layout(&a.layout, a.type == RPC_TYPE_DIR, &r);
	return text_out(&r, buf, len);
}

int rpfs_file_redundancy(rpfs_file_t *f, char *buf, size_t len)
{
	struct red_spec r;

	red_of_layout(&f->attr.layout, false, &r);
	return text_out(&r, buf, len);
}

int rpfs_copy_servers(rpfs_client_t *c, const struct rpfs_stat *st, const char *spec,
		      uint32_t copy, uint32_t *out)
{
	struct red_spec r;
	char why[128];
	uint32_t nio = c->cfg.nio;

	if (st->type != RPFS_TYPE_FILE || !nio) {
		rpfsc_err_set("handle %#llx: not a file", (unsigned long long)st->handle);
		return -EINVAL;
	}
	if (red_parse(spec, &r, why, sizeof(why)) || r.kind == RED_DEFAULT ||
	    copy >= red_copies(&r)) {
		rpfsc_err_set("redundancy %s: no copy %u", spec ? spec : "(null)", copy);
		return -EINVAL;
	}
	for (uint32_t s = 0; s < st->stripe_count; s++)
		out[s] = (uint32_t)(((uint64_t)st->first_server +
				     (uint64_t)copy * st->stripe_count + s) %
				    nio);
	return 0;
}
