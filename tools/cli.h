/* The rpfs command's shared parts: the options the commands' tables set
 * (rpfs.c parses them), the helpers for errors, paths, the config and
 * sizes (cli_util.c), and the commands, one file per concern: namespace
 * (cli_files.c), copies (cli_copy.c), truncate (cli_truncate.c), servers
 * and settings (cli_admin.c), FUSE (cli_mount.c); chmod's modes are
 * cli_mode.c. rpfs.c has the table of commands, their usage and main.
 * Only librpfs's public headers (rpfs.h, rpfs_admin.h) are used. */
#ifndef RPFS_CLI_H
#define RPFS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli_mode.h"
#include "rpfs.h"
#include "rpfs_admin.h"

/* What a command's options said (rpfs.c parses them with the command's
 * table; each command reads the fields its options set). */
struct opts {
	int nservers;	  /* up -n, or up N */
	int port;	  /* up --port */
	bool new_cluster; /* up --new: a new cluster over a directory that has one */
	int longfmt;	  /* ls -l */
	int markdown;	  /* settings */
	int human;	  /* -h with ls, du, df: sizes in KiB, MiB, ... */
	int json;	  /* stats --json */
	int help;	  /* --help (-h where it is not human): the usage */
	int recursive;	  /* cp -r, rm -r, ls -R, chmod -R, chown -R, verify -r */
	int repair;	  /* verify --repair */
	int parents;	  /* mkdir -p, rmdir -p */
	int force;	  /* rm -f */
	int directory;	  /* ls -d: directories as themselves */
	int summary;	  /* du -s */
	int no_create;	  /* truncate -c */
	const char *mode; /* mkdir -m */
	const char *size; /* truncate -s */
	bool count_set;	  /* setstripe -c COUNT (-1: all I/O servers) */
	long count;
	bool start_set; /* setstripe -i START (-1: the metadata server picks) */
	long start;
	/* setstripe -N SPEC (none, mirror:N, default); up and genconfig
	 * --redundancy SPEC (none, mirror:N: redundancy_copies 1, N) */
	const char *redundancy;
	int redundancy_copies;
	const char *dir;
	const char *config;
	const char *address;  /* up: where the servers listen */
	const char *provider; /* up: written into the config's [transport] */
	uint64_t stripe_unit; /* up --stripe-unit, setstripe -S (0: the cluster's) */
	/* Options a command takes several of, or passes on, in their order
	 * (genconfig --host/--set..., mount -o/-f/--log): id and argument. */
	struct opt_arg {
		int id;
		const char *arg;
	} * given;
	int ngiven;
};

/* The options of every command (the ids of struct cli_opt in rpfs.c). */
enum opt_id {
	OPT_CONFIG = 1,
	OPT_DIR,
	OPT_HELP,
	OPT_NSERVERS,
	OPT_PORT,
	OPT_STRIPE_UNIT,
	OPT_ADDRESS,
	OPT_PROVIDER,
	OPT_NEW,
	OPT_LONG,
	OPT_HUMAN,
	OPT_RECURSIVE,
	OPT_DIRECTORY,
	OPT_PARENTS,
	OPT_MODE,
	OPT_FORCE,
	OPT_SUMMARY,
	OPT_SIZE,
	OPT_NO_CREATE,
	OPT_COUNT,
	OPT_START,
	OPT_JSON,
	OPT_MARKDOWN,
	OPT_REDUNDANCY,
	OPT_REPAIR,
	/* kept in opts.given, in order */
	OPT_HOST,
	OPT_STRIPE_COUNT,
	OPT_SET,
	OPT_LOG_DIR,
	OPT_OUT,
	OPT_FUSE_OPTS,
	OPT_FOREGROUND,
	OPT_LOG,
};

/* A command: argv[0] is its name. Returns the exit status. */
typedef int (*cli_cmd_fn)(const struct opts *o, int argc, char **argv);

/* cli_util.c */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* A failed library call: the errno text and rpfs_errmsg() (server, cause). */
void die_rpfs(int err, const char *what, const char *path) __attribute__((noreturn));
/* snprintf that dies rather than shorten a path or name. */
int strfmt(char *out, size_t len, const char *f, ...)
	__attribute__((format(printf, 3, 4)));
double now_s(void);
const char *default_dir(void);
const char *config_path(const struct opts *o);
rpfs_client_t *connect_cluster(const struct opts *o);
rpfs_admin_config_t *cli_load_config(const char *path);
/* "rpfs:/a//b/../c" -> "/a/c" */
void rpath(const char *in, char *out, size_t outlen);
int is_rpfs(const char *p);
const char *base_name(const char *p);
/* dir + "/" + name, for "/" too. */
void join(char *out, size_t len, const char *dir, const char *name);
void human(uint64_t b, char *out, size_t len);
void size_str(const struct opts *o, uint64_t b, char *out, size_t len);
/* A directory's names (rpfs_readdir's callback collect fills it). */
struct names {
	char **v;
	size_t n, cap;
};
int collect(const char *name, uint32_t type, void *arg);
int cmp_names(const void *a, const void *b);
/* The names of an rpfs directory, sorted; names_free releases them. */
int list_names(rpfs_client_t *c, const char *dir, struct names *nm);
void names_free(struct names *nm);
/* The usage of one command (rpfs.c), printed as its error or --help. */
void cmd_usage(const char *cmd, int status) __attribute__((noreturn));
/* "rpfs CMD: message" and the command's usage on stderr; exit 2. */
void usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
/* One operand's failure, and the command goes on: "rpfs CMD: PATH: cause
 * (the library's message, naming the server)" for a library call's -errno,
 * or without the library's message for a local one. */
void report(const char *cmd, const char *path, int err);
void report_local(const char *cmd, const char *path, int err);

/* cli_copy.c: copies of one file, within rpfs or across, with mode and
 * layout where both sides are rpfs. 0 or -errno, *side the failing one. */
int copy_within(rpfs_client_t *c, const char *from, const char *to,
		const struct rpfs_stat *st, const char **side);

/* The commands */
int cmd_up(const struct opts *o, int argc, char **argv);
int cmd_down(const struct opts *o, int argc, char **argv);
int cmd_genconfig(const struct opts *o, int argc, char **argv);
int cmd_settings(const struct opts *o, int argc, char **argv);
int cmd_df(const struct opts *o, int argc, char **argv);
int cmd_stats(const struct opts *o, int argc, char **argv);
int cmd_ping(const struct opts *o, int argc, char **argv);
int cmd_ls(const struct opts *o, int argc, char **argv);
int cmd_stat(const struct opts *o, int argc, char **argv);
int cmd_mkdir(const struct opts *o, int argc, char **argv);
int cmd_rmdir(const struct opts *o, int argc, char **argv);
int cmd_rm(const struct opts *o, int argc, char **argv);
int cmd_truncate(const struct opts *o, int argc, char **argv);
int cmd_chmod(const struct opts *o, int argc, char **argv);
int cmd_chown(const struct opts *o, int argc, char **argv);
int cmd_mv(const struct opts *o, int argc, char **argv);
int cmd_du(const struct opts *o, int argc, char **argv);
int cmd_find(const struct opts *o, int argc, char **argv);
int cmd_setstripe(const struct opts *o, int argc, char **argv);
int cmd_getstripe(const struct opts *o, int argc, char **argv);
int cmd_verify(const struct opts *o, int argc, char **argv);
int cmd_cp(const struct opts *o, int argc, char **argv);
int cmd_cat(const struct opts *o, int argc, char **argv);
int cmd_mount(const struct opts *o, int argc, char **argv); /* cli_mount.c */
int cmd_umount(const struct opts *o, int argc, char **argv);

#endif
