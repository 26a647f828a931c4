/* libFuzzer target: the cluster config parser (config.h).
 *
 * The input is a config file: written to a memfd and loaded by path with
 * rpfs_config_load (libinih underneath, with config.c's own line reader),
 * RPFS_* variables cleared first so only the file counts. A refusal must
 * come with a message. An accepted config satisfies the rules config.c
 * states (servers named, addressed, with a port in 1..65535, roles and a
 * storage directory, unique names, at least one io and one meta server,
 * io and meta indexes consistent with the io[] and meta[] lists,
 * stripe_count within the io servers, transport settings that pass
 * xp_params_check), every string ends inside its field, and what
 * rpfs_config_write makes of it loads back to the same config. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"
#include "placement.h"

static int memfd = -1;
static char mempath[64];
static char tmpdir[] = "/tmp/rpfs-fuzz-config-XXXXXX";
static char outpath[sizeof(tmpdir) + 16];

static void cleanup(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	char p[sizeof(tmpdir) + 300];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(tmpdir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	extern char **environ;
	char name[256];

	(void)argc;
	(void)argv;
	/* Only the file counts: drop every RPFS_* variable. */
	for (int again = 1; again;) {
		again = 0;
		for (char **e = environ; *e; e++) {
			const char *eq = strchr(*e, '=');

			if (strncmp(*e, "RPFS_", 5) || !eq ||
			    (size_t)(eq - *e) >= sizeof(name))
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
			unsetenv(name);
			again = 1;
			break;
		}
	}
	memfd = memfd_create("rpfs-fuzz-config", 0);
	if (memfd < 0 || !mkdtemp(tmpdir)) {
		perror("fuzz_config: setup");
		abort();
	}
	snprintf(mempath, sizeof(mempath), "/proc/self/fd/%d", memfd);
	snprintf(outpath, sizeof(outpath), "%s/rpfs.conf", tmpdir);
	atexit(cleanup);
	return 0;
}

static int terminated(const char *s, size_t size)
{
	return memchr(s, 0, size) != NULL;
}

static void check_server(const struct rpfs_config *cfg, uint32_t i)
{
	const struct rpfs_server_cfg *sv = &cfg->servers[i];
	unsigned long port;
	char *end;

	FUZZ_CHECK(terminated(sv->name, sizeof(sv->name)) && sv->name[0]);
	FUZZ_CHECK(terminated(sv->address, sizeof(sv->address)) && sv->address[0]);
	FUZZ_CHECK(terminated(sv->port, sizeof(sv->port)));
	FUZZ_CHECK(terminated(sv->dir, sizeof(sv->dir)) && sv->dir[0]);
	port = strtoul(sv->port, &end, 10);
	FUZZ_CHECK(!*end && port >= 1 && port <= 65535);
	FUZZ_CHECK(sv->roles && !(sv->roles & ~(RPFS_ROLE_META | RPFS_ROLE_IO)));
	FUZZ_CHECK((sv->io_index >= 0) == !!(sv->roles & RPFS_ROLE_IO));
	FUZZ_CHECK((sv->meta_index >= 0) == !!(sv->roles & RPFS_ROLE_META));
	if (sv->io_index >= 0)
		FUZZ_CHECK((uint32_t)sv->io_index < cfg->nio &&
			   cfg->io[sv->io_index] == i);
	if (sv->meta_index >= 0)
		FUZZ_CHECK((uint32_t)sv->meta_index < cfg->nmeta &&
			   cfg->meta[sv->meta_index] == i);
	for (uint32_t j = 0; j < i; j++)
		FUZZ_CHECK(strcmp(cfg->servers[j].name, sv->name));
	FUZZ_CHECK(rpfs_config_find(cfg, sv->name) == (int)i);
}

static void check_config(const struct rpfs_config *cfg)
{
	char why[256];

	FUZZ_CHECK(cfg->nservers >= 1 && cfg->nservers <= RPFS_MAX_SERVERS);
	FUZZ_CHECK(cfg->nio >= 1 && cfg->nio <= cfg->nservers);
	FUZZ_CHECK(cfg->nmeta >= 1 && cfg->nmeta <= cfg->nservers);
	FUZZ_CHECK(cfg->stripe_unit > 0 && cfg->stripe_count <= cfg->nio);
	FUZZ_CHECK(terminated(cfg->key_file, sizeof(cfg->key_file)));
	for (uint32_t i = 0; i < cfg->nservers; i++)
		check_server(cfg, i);
	for (uint32_t k = 0; k < cfg->nio; k++)
		FUZZ_CHECK(cfg->io[k] < cfg->nservers);
	for (uint32_t k = 0; k < cfg->nmeta; k++)
		FUZZ_CHECK(cfg->meta[k] < cfg->nservers);
	FUZZ_CHECK(xp_params_check(&cfg->xport, why, sizeof(why)) == 0);
	FUZZ_CHECK(place_meta_of_path(cfg, "/a/b") < cfg->nmeta);
}

/* Written and loaded again: the same cluster. */
static void check_round_trip(const struct rpfs_config *cfg)
{
	struct rpfs_config back;
	uint8_t f1[RPFS_FINGERPRINT_SIZE], f2[RPFS_FINGERPRINT_SIZE];
	const struct xp_setting *st;
	char why[512], v1[64], v2[64];
	int ret;

	ret = rpfs_config_write(cfg, outpath);
	if (ret == -EINVAL)
		return; /* a value that would not load back: refused, as documented */
	FUZZ_CHECK(ret == 0);
	ret = rpfs_config_load(outpath, &back, why, sizeof(why));
	if (ret)
		fprintf(stderr, "reload failed: %s\n", why);
	FUZZ_CHECK(ret == 0);
	FUZZ_CHECK(back.nservers == cfg->nservers && back.nio == cfg->nio &&
		   back.nmeta == cfg->nmeta);
	FUZZ_CHECK(back.stripe_unit == cfg->stripe_unit &&
		   back.stripe_count == cfg->stripe_count);
	FUZZ_CHECK(!strcmp(back.key_file, cfg->key_file));
	FUZZ_CHECK(!memcmp(back.cluster_id, cfg->cluster_id, sizeof(cfg->cluster_id)));
	for (uint32_t i = 0; i < cfg->nservers; i++) {
		const struct rpfs_server_cfg *a = &cfg->servers[i], *b = &back.servers[i];

		FUZZ_CHECK(!strcmp(a->name, b->name) && !strcmp(a->address, b->address));
		FUZZ_CHECK(!strcmp(a->port, b->port) && !strcmp(a->dir, b->dir));
		FUZZ_CHECK(a->roles == b->roles);
	}
	rpfs_config_fingerprint(cfg, f1);
	rpfs_config_fingerprint(&back, f2);
	FUZZ_CHECK(!memcmp(f1, f2, sizeof(f1)));
	for (int i = 0; (st = xp_setting_at(i)); i++) {
		xp_setting_format(&cfg->xport, st, v1, sizeof(v1));
		xp_setting_format(&back.xport, st, v2, sizeof(v2));
		FUZZ_CHECK(!strcmp(v1, v2));
	}
	rpfs_config_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpfs_config cfg;
	char why[512];
	int ret;

	if (size > 65536)
		return 0;
	if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	why[0] = 'x';
	ret = rpfs_config_load(mempath, &cfg, why, sizeof(why));
	if (ret) {
		/* Refused with a reason, and nothing left allocated. */
		FUZZ_CHECK(ret == -EINVAL || ret == -ENOMEM);
		FUZZ_CHECK(terminated(why, sizeof(why)) && why[0] && why[0] != 'x');
		FUZZ_CHECK(!cfg.servers && !cfg.io && !cfg.meta);
		return 0;
	}
	check_config(&cfg);
	check_round_trip(&cfg);
	rpfs_config_free(&cfg);
	return 0;
}
