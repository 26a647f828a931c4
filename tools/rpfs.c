/* rpfs: the command-line tool.
 *
 * Two kinds of commands. `rpfs up` and `rpfs down` manage a local server
 * set on loopback: up writes a cluster config and key into a directory,
 * starts one rpfsd daemon per server and waits until each answers a ping;
 * down stops them through their pidfiles; `rpfs genconfig` writes the config
 * and key of servers on several hosts. The others are clients of any
 * cluster through librpfs; they find the config by --config, --dir,
 * $RPFS_CONFIG, $RPFS_DIR, then librpfs's search (/etc/rpfs, ~/.rpfs).
 *
 * This file has the table of commands (name, options, operands, one-line
 * summary, help): the one source of each command's usage, its options and
 * the number of operands it takes. main parses the global options before
 * the command word, then the command's own with getopt_long (options may
 * follow operands, as in coreutils, unless after `--`); the command gets
 * its operands. The commands live in cli_files.c (namespace), cli_copy.c
 * (cp, cat), cli_truncate.c, cli_admin.c (servers, settings), cli_mount.c
 * and share cli_util.c (cli.h). The tool uses librpfs's public headers
 * only. test/build/manpages.sh checks that man/rpfs.1 documents every
 * command and option of the table.
 *
 * Errors print the library's message (rpfs_errmsg(), which names the
 * server and the cause) as "rpfs CMD: PATH: cause"; a command with several
 * operands goes on after one fails and exits 1 at the end. Usage errors
 * ("rpfs CMD: ..." and the usage) exit 2.
 *
 * Why one file of ~830 lines: the table of commands and of each command's
 * options (a third of it: parsing, usage and `rpfs help` come from it) and
 * the parser that reads it, kept together so that a command's options and
 * how they are read are in one place; the commands themselves are in
 * cli_*.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* An option of a command: its letter and/or long name, the name of its
 * argument (NULL: a flag), what it sets (opt_id, applied by set_option),
 * one line of help. */
struct cli_opt {
	char ch;
	const char *name;
	const char *arg;
	int id;
	const char *help;
	unsigned flags;
};
#define CO_LONG	    1u /* the synopsis shows the long name */
#define CO_REQUIRED 2u /* the synopsis shows it without [] */
#define CO_REPEAT   4u /* may be given several times */

#define MAX_OPTS 10

struct command {
	const char *name;
	cli_cmd_fn fn;
	struct cli_opt opts[MAX_OPTS]; /* up to the first with no id */
	const char *operands;	       /* after the options */
	int min, max;		       /* operands; max -1: any number */
	unsigned flags;
	const char *summary; /* one line */
	const char *help;    /* more, for `rpfs help NAME` (may be "") */
};
#define CMD_IN_ORDER 1u /* options end at the first operand (the rest is passed on) */
#define CMD_RAW	     2u /* find: -name and -type are an expression, not options */

#define HUMAN_OPT                                                                        \
	{                                                                                \
		'h', "human-readable", NULL, OPT_HUMAN, "sizes in KiB, MiB, GiB, ...", 0 \
	}

static const struct command commands[] = {
	{"up",
	 cmd_up,
	 {{'n', NULL, "N", OPT_NSERVERS, "servers to start, 1..256 (default 2)", 0},
	  {'d', "dir", "D", OPT_DIR, "their directory (default $RPFS_DIR, else ~/.rpfs)",
	   CO_LONG},
	  {'p', "port", "P", OPT_PORT, "the first port (default: a free run from 7100)",
	   CO_LONG},
	  {'s', "stripe-unit", "S", OPT_STRIPE_UNIT,
	   "new files' stripe unit (K, M, G; default 1M)", CO_LONG},
	  {'a', "address", "A", OPT_ADDRESS, "where they listen (default 127.0.0.1)",
	   CO_LONG},
	  {'P', "provider", "P", OPT_PROVIDER, "the libfabric provider of the config",
	   CO_LONG},
	  {'N', "redundancy", "SPEC", OPT_REDUNDANCY,
	   "new files' redundancy: none (default) or mirror:N", CO_LONG},
	  {0, "new", NULL, OPT_NEW, "a new cluster where D holds one", 0}},
	 "[N]",
	 0,
	 1,
	 0,
	 "start N rpfsd servers on this host (default 2), or the cluster in D again",
	 "Writes D/rpfs.conf and a cluster key, starts N rpfsd daemons on address A\n"
	 "(default 127.0.0.1; on a verbs device its IP address: rdmacm cannot use\n"
	 "loopback) at consecutive free ports from P (default: the first free run\n"
	 "from 7100) and waits until each answers. Server 0 has roles meta,io, the\n"
	 "others io. Storage in D/s0, D/s1, ...; default D is $RPFS_DIR or ~/.rpfs.\n"
	 "--provider writes the libfabric provider into the config.\n"
	 "--redundancy writes [cluster] redundancy = SPEC, the default of new files\n"
	 "(a directory's setstripe -N wins): none, or mirror:N (N copies of each\n"
	 "stripe slot on distinct I/O servers: it needs N servers at least, else\n"
	 "up exits 2; ec:K+P is not supported yet).\n"
	 "\n"
	 "When D holds a cluster (after rpfs down), up starts that cluster again:\n"
	 "the same id, key, config and ports, its data kept; options are checked\n"
	 "against its config and one that differs is an error naming it. On a\n"
	 "running cluster up says so and exits 0. --new removes the cluster in D\n"
	 "first (D/rpfs.conf, D/cluster.key, D/sN, the servers' logs and pid\n"
	 "files: its data is lost; its servers must be stopped) and makes a new one.\n"},
	{"down",
	 cmd_down,
	 {{'d', "dir", "D", OPT_DIR, "their directory (default $RPFS_DIR, else ~/.rpfs)",
	   CO_LONG}},
	 "",
	 0,
	 0,
	 0,
	 "stop the servers started by up (SIGTERM, then SIGKILL)",
	 "Their config, key and storage stay in D: rpfs up --dir D starts the same\n"
	 "cluster again, with its data (rpfs up --new --dir D makes a new one).\n"},
	{"genconfig",
	 cmd_genconfig,
	 {{0, "host", "SPEC", OPT_HOST,
	   "a server: ADDR[:PORT][,name=N][,roles=R][,dir=P]", CO_REQUIRED | CO_REPEAT},
	  {0, "provider", "P", OPT_PROVIDER, "the libfabric provider (tcp, verbs)", 0},
	  {0, "stripe-unit", "S", OPT_STRIPE_UNIT, "new files' stripe unit (K, M, G)", 0},
	  {0, "stripe-count", "C", OPT_STRIPE_COUNT, "new files' stripe count", 0},
	  {0, "redundancy", "SPEC", OPT_REDUNDANCY,
	   "new files' redundancy: none (default) or mirror:N", 0},
	  {0, "set", "KEY=VALUE", OPT_SET, "a transport setting", CO_REPEAT},
	  {0, "log-dir", "D", OPT_LOG_DIR, "where the servers write their logs", 0},
	  {0, "out", "DIR", OPT_OUT, "where to write rpfs.conf and rpfs.key",
	   CO_REQUIRED}},
	 "",
	 0,
	 0,
	 0,
	 "write a config and a new key for servers on several hosts",
	 "SPEC: ADDR[:PORT][,name=N][,roles=meta,io][,dir=PATH], one per server.\n"
	 "Writes DIR/rpfs.conf (one server per --host, ids in that order, the first\n"
	 "meta,io and the others io unless roles= says; port 7100, dir\n"
	 "/var/lib/rpfs/NAME) and a new key DIR/rpfs.key (0600); copy both to\n"
	 "/etc/rpfs/ on every server and client. Refuses to overwrite either.\n"},
	{"ls",
	 cmd_ls,
	 {{'l', "long", NULL, OPT_LONG, "mode, owner, group, size, time", 0},
	  HUMAN_OPT,
	  {'R', "recursive", NULL, OPT_RECURSIVE, "the directories below too", 0},
	  {'d', "directory", NULL, OPT_DIRECTORY, "a directory itself, not its entries",
	   0}},
	 "[PATH...]",
	 0,
	 -1,
	 0,
	 "list directories and files (default /)",
	 "Files first, by the name given, then each directory's entries, sorted,\n"
	 "under a 'PATH:' header when there are several (as ls does). Owners and\n"
	 "groups by name where this host knows them, else by number.\n"},
	{"stat",
	 cmd_stat,
	 {{0}},
	 "PATH...",
	 1,
	 -1,
	 0,
	 "attributes, layout and the I/O server of each slot",
	 ""},
	{"mkdir",
	 cmd_mkdir,
	 {{'p', "parents", NULL, OPT_PARENTS,
	   "make parents as needed; no error for an existing directory", 0},
	  {'m', "mode", "MODE", OPT_MODE, "the mode, octal or symbolic (default 0755)",
	   0}},
	 "PATH...",
	 1,
	 -1,
	 0,
	 "make directories",
	 "A symbolic MODE applies to a=rwx (mkdir -m go-w gives 0755).\n"},
	{"rmdir",
	 cmd_rmdir,
	 {{'p', "parents", NULL, OPT_PARENTS, "then each parent (rmdir -p a/b: a/b, a)",
	   0}},
	 "PATH...",
	 1,
	 -1,
	 0,
	 "remove empty directories",
	 ""},
	{"rm",
	 cmd_rm,
	 {{'r', "recursive", NULL, OPT_RECURSIVE, "directories with everything below", 0},
	  {'R', NULL, NULL, OPT_RECURSIVE, "as -r", 0},
	  {'f', "force", NULL, OPT_FORCE, "no error for a path that does not exist", 0}},
	 "PATH...",
	 1,
	 -1,
	 0,
	 "remove files (their data on every I/O server)",
	 "Never asks. Without -r a directory is an error; -r on / is refused.\n"},
	{"chmod",
	 cmd_chmod,
	 {{'R', "recursive", NULL, OPT_RECURSIVE, "the entries below too", 0}},
	 "MODE PATH...",
	 2,
	 -1,
	 0,
	 "change the permission bits (octal 0640, or symbolic u+x,go-w)",
	 "MODE: octal, or clauses [ugoa...][+-=][rwxXst...|u|g|o...] separated by\n"
	 "commas, as chmod(1): u+x, go-w, a=r, +t, g=u, u=rwX,go=rX. Without\n"
	 "u, g, o or a the umask's bits are left alone.\n"},
	{"chown",
	 cmd_chown,
	 {{'R', "recursive", NULL, OPT_RECURSIVE, "the entries below too", 0}},
	 "USER[:GROUP] PATH...",
	 2,
	 -1,
	 0,
	 "change owner and/or group (names or numbers; :GROUP alone too)",
	 "Root may give a file to anyone; an owner may only change the group, to\n"
	 "one of its own. USER: gives the user's login group.\n"},
	{"mv",
	 cmd_mv,
	 {{0}},
	 "SRC... DST",
	 2,
	 -1,
	 0,
	 "rename (into DST if it is a directory; with several SRC it must be)",
	 "Atomic on the metadata server holding both paths: replaces a file or an\n"
	 "empty directory, moves a directory with everything below it. Where the\n"
	 "paths live on different metadata servers (rename says EXDEV), mv copies\n"
	 "and removes, entry by entry, as mv(1) does across file systems.\n"},
	{"cp",
	 cmd_cp,
	 {{'r', "recursive", NULL, OPT_RECURSIVE, "copy directory trees", 0},
	  {'R', NULL, NULL, OPT_RECURSIVE, "as -r", 0}},
	 "SRC... DST",
	 2,
	 -1,
	 0,
	 "copy; mark the rpfs side(s) with 'rpfs:/path'",
	 "Either side may be local or rpfs. Into an existing directory DST as\n"
	 "DST/NAME; with several SRC, DST must be a directory. A copy within rpfs\n"
	 "keeps the mode and the layout; the copy is synced before cp says it is\n"
	 "done. A copy that fails removes the file it created; a file it\n"
	 "overwrote is said to be partly written.\n"},
	{"cat", cmd_cat, {{0}}, "PATH...", 1, -1, 0, "write files to stdout", ""},
	{"du",
	 cmd_du,
	 {{'s', "summarize", NULL, OPT_SUMMARY, "each PATH's total only", 0}, HUMAN_OPT},
	 "[PATH...]",
	 0,
	 -1,
	 0,
	 "bytes of the files under each directory (default /)",
	 ""},
	{"find",
	 cmd_find,
	 {{0}},
	 "[PATH...] [-name GLOB] [-type f|d]",
	 0,
	 -1,
	 CMD_RAW,
	 "list the entries under each PATH that match, one per line",
	 ""},
	{"truncate",
	 cmd_truncate,
	 {{'s', "size", "SIZE", OPT_SIZE, "the size, or the change of it (see below)",
	   CO_REQUIRED},
	  {'c', "no-create", NULL, OPT_NO_CREATE, "do not create missing files", 0}},
	 "PATH...",
	 1,
	 -1,
	 0,
	 "shrink or extend files to a size (creating them unless -c)",
	 "SIZE: bytes with an optional K, M, G, T (powers of 1024) or KB, MB, GB,\n"
	 "TB (of 1000) suffix; +SIZE extends by, -SIZE shrinks by, <SIZE at most,\n"
	 ">SIZE at least, /SIZE rounds down to, %SIZE up to a multiple.\n"},
	{"setstripe",
	 cmd_setstripe,
	 {{'c', "stripe-count", "COUNT", OPT_COUNT,
	   "I/O servers: 1..their number, -1 all, 0 the default", 0},
	  {'S', "stripe-size", "UNIT", OPT_STRIPE_UNIT,
	   "stripe unit (K, M, G; up to 4G; default the cluster's)", 0},
	  {'i', "stripe-index", "START", OPT_START,
	   "a new file's first I/O server (-1: any)", 0},
	  {'N', "redundancy", "SPEC", OPT_REDUNDANCY,
	   "none, mirror:N (N copies), default (the cluster's)", 0}},
	 "DIR|NEWFILE",
	 1,
	 1,
	 0,
	 "a directory's default layout for new files; a new file with a layout",
	 "On a directory: files created in it get stripe count COUNT, stripe\n"
	 "unit UNIT and redundancy SPEC (left out: the cluster's) unless their\n"
	 "create gives a layout (MPI hints striping_factor, striping_unit,\n"
	 "rpfs_redundancy win); its new subdirectories inherit the default. On a\n"
	 "path that does not exist: a new empty file with that layout, starting\n"
	 "at I/O server START. An existing file's layout is fixed.\n"
	 "SPEC: none (striping only), mirror:N (N copies of each stripe slot, 2\n"
	 "to 8, on distinct I/O servers: COUNT slots need COUNT*N servers; -c -1\n"
	 "takes as many as fit), default (a directory: the cluster's again);\n"
	 "ec:K+P (K data and P parity cells a stripe, COUNT a multiple of K on\n"
	 "COUNT/K*(K+P) servers) only where the servers' ec_preview setting is 1:\n"
	 "a preview, with no degraded service yet. Without -N a directory keeps\n"
	 "its own.\n"},
	{"getstripe",
	 cmd_getstripe,
	 {{0}},
	 "PATH...",
	 1,
	 -1,
	 0,
	 "a file's layout, or a directory's default",
	 ""},
	{"verify",
	 cmd_verify,
	 {{'r', "recursive", NULL, OPT_RECURSIVE, "every file in the directories below",
	   0},
	  {0, "repair", NULL, OPT_REPAIR,
	   "rewrite copies that differ (re-encode parity that disagrees), and wait",
	   CO_LONG}},
	 "PATH...",
	 1,
	 -1,
	 0,
	 "compare a mirrored file's copies byte for byte",
	 "Reads every copy of every stripe slot from its own I/O server and\n"
	 "compares them (as lfs mirror verify); exits 1 naming the first file\n"
	 "offset where two copies differ, the slot and both servers, or a copy\n"
	 "that cannot be read. An ec:K+P file: each group's parity cells are\n"
	 "made again from its data cells, each read from its own server, and\n"
	 "compared with the stored ones (exits 1 naming the parity member and\n"
	 "the stripe's file offset; --repair marks each one that disagrees\n"
	 "stale, and its server re-encodes it from the data). A file without\n"
	 "redundancy has nothing to compare.\n"
	 "Writes while it runs make its answer meaningless for their bytes.\n"
	 "With -r a directory's files are verified, and those of the directories\n"
	 "below. With --repair (as lfs mirror resync) each copy that differs from\n"
	 "its primary, the copy that orders the slot's writes, is marked stale\n"
	 "and rewritten from it by the resync, which the command waits for (at\n"
	 "most 10 minutes); the file is then verified again. Copies only differ\n"
	 "over a write that failed midway, whose bytes were never promised, or a\n"
	 "block rpfsd --check --repair --accept-damaged took as it is.\n"},
	{"df",
	 cmd_df,
	 {HUMAN_OPT},
	 "",
	 0,
	 0,
	 0,
	 "each server's storage, from the server, and a total",
	 "One row per server (its name and address in the config, its roles) from\n"
	 "its own answer: size, used and available bytes of the file system under\n"
	 "an I/O server's directory, the files a metadata server holds, and which\n"
	 "file system it is (fs: servers with the same number share one disk);\n"
	 "then the total, each file system counted once. An I/O server's state\n"
	 "is the metadata servers' view (the worst of theirs): unknown, online,\n"
	 "unreachable or offline with the seconds since (new files avoid the\n"
	 "last two). Its copies of mirrored files: good, needs-resync(N) (N\n"
	 "copies missed writes: resynced in the background once it is online),\n"
	 "or rebuilding (its storage was replaced: its copies are being found).\n"},
	{"stats",
	 cmd_stats,
	 {{0, "json", NULL, OPT_JSON, "one JSON object", 0}},
	 "",
	 0,
	 0,
	 0,
	 "each server's counters",
	 "Requests by op (req.*), data by transport path (bytes.inline|fast|bulk),\n"
	 "credit, slot, bulk-cap and pool waits, cache hits and misses, errors,\n"
	 "connections now and in total, storage.\n"},
	{"ping", cmd_ping, {{0}}, "", 0, 0, 0, "round trip to every server", ""},
	{"settings",
	 cmd_settings,
	 {{0, "markdown", NULL, OPT_MARKDOWN,
	   "the table alone, as docs/settings.md has it", 0}},
	 "",
	 0,
	 0,
	 0,
	 "every transport setting, its value and source",
	 "Name, type, default, range, whether a client may set it (rpfs_init_opts,\n"
	 "MPI hints rpfs_<name>), help, and its value and source (default, config,\n"
	 "environment) in the config in use.\n"},
	{"mount",
	 cmd_mount,
	 {{'o', NULL, "OPTS", OPT_FUSE_OPTS, "mount options (allow_other, ro, ...)",
	   CO_REPEAT},
	  {'f', NULL, NULL, OPT_FOREGROUND, "stay in the foreground", 0},
	  {0, "log", "FILE", OPT_LOG, "where the daemon writes errors (default syslog)",
	   0}},
	 "DIR [rpfs-fuse options]",
	 1,
	 -1,
	 CMD_IN_ORDER,
	 "mount rpfs on DIR through FUSE (rpfs-fuse)",
	 "Runs rpfs-fuse, which reaches the cluster, mounts and goes to the\n"
	 "background. What follows DIR goes to rpfs-fuse as it is. The mount\n"
	 "serves the user who runs it; see docs/design/fuse.md, Permissions.\n"},
	{"umount",
	 cmd_umount,
	 {{0}},
	 "DIR",
	 1,
	 1,
	 0,
	 "unmount a FUSE mount (fusermount3 -u)",
	 ""},
	{"help",
	 NULL,
	 {{0}},
	 "[COMMAND]",
	 0,
	 1,
	 0,
	 "this list, or one command's usage",
	 ""},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* Options every command takes (where its table has no option of the name). */
static const struct cli_opt common_opts[] = {
	{0, "config", "FILE", OPT_CONFIG, "the cluster's config", 0},
	{0, "dir", "D", OPT_DIR, "the config D/rpfs.conf", 0},
	{0, "help", NULL, OPT_HELP, "this usage", 0},
};
#define NCOMMON (sizeof(common_opts) / sizeof(common_opts[0]))

static const char usage_tail[] =
	"\n"
	"Paths are in rpfs ('rpfs:' prefix optional). The config is looked for\n"
	"in this order: --config FILE, --dir D (D/rpfs.conf), $RPFS_CONFIG,\n"
	"$RPFS_DIR/rpfs.conf (the first given wins), then /etc/rpfs/rpfs.conf,\n"
	"then ~/.rpfs/rpfs.conf (the first readable). `rpfs help COMMAND` or\n"
	"`rpfs COMMAND --help` shows one command; `rpfs --version` the version.\n";

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static int nopts(const struct command *cmd)
{
	int n = 0;

	while (n < MAX_OPTS && cmd->opts[n].id)
		n++;
	return n;
}

/* Every command, one per line: two spaces, the name, its summary. */
static void usage(FILE *to, int status)
{
	fprintf(to, "usage: rpfs [--config FILE | --dir D] COMMAND [options] [args]\n\n"
		    "Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(to, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs(usage_tail, to);
	exit(status);
}

/* "usage: rpfs NAME [-p] [-m MODE] [--json] OPERANDS", from the table. */
static void synopsis(FILE *to, const struct command *cmd)
{
	fprintf(to, "usage: rpfs %s", cmd->name);
	for (int i = 0; i < nopts(cmd); i++) {
		const struct cli_opt *op = &cmd->opts[i];
		bool req = op->flags & CO_REQUIRED;

		if (!op->name && i > 0 && cmd->opts[i - 1].id == op->id)
			continue; /* a second letter for the same option (-R) */
		if (op->ch && !(op->flags & CO_LONG))
			fprintf(to, " %s-%c", req ? "" : "[", op->ch);
		else
			fprintf(to, " %s--%s", req ? "" : "[", op->name);
		if (op->arg)
			fprintf(to, " %s", op->arg);
		fprintf(to, "%s%s", op->flags & CO_REPEAT ? "..." : "", req ? "" : "]");
	}
	fprintf(to, "%s%s\n", cmd->operands[0] ? " " : "", cmd->operands);
}

/* The options, one a line: "  -p, --parents      help". */
static void option_list(FILE *to, const struct command *cmd)
{
	if (!nopts(cmd))
		return;
	fprintf(to, "\nOptions:\n");
	for (int i = 0; i < nopts(cmd); i++) {
		const struct cli_opt *op = &cmd->opts[i];
		char head[64];
		int n = 0;

		if (op->ch)
			n += snprintf(head + n, sizeof(head) - (size_t)n, "-%c%s", op->ch,
				      op->name ? ", " : "");
		if (op->name)
			n += snprintf(head + n, sizeof(head) - (size_t)n, "--%s",
				      op->name);
		if (op->arg)
			snprintf(head + n, sizeof(head) - (size_t)n, " %s", op->arg);
		fprintf(to, "  %s%-*s %s\n", op->ch ? "" : "    ", op->ch ? 26 : 22, head,
			op->help);
	}
}

void cmd_usage(const char *name, int status)
{
	const struct command *cmd = find_command(name);
	FILE *to = status ? stderr : stdout;

	if (!cmd)
		usage(to, status);
	synopsis(to, cmd);
	fprintf(to, "  %s\n", cmd->summary);
	if (status) {
		fprintf(to, "`rpfs help %s` says more.\n", cmd->name);
		exit(status);
	}
	option_list(to, cmd);
	if (cmd->help[0])
		fprintf(to, "\n%s", cmd->help);
	fprintf(to, "\nEvery command also takes --config FILE, --dir D and --help.\n");
	exit(status);
}

void usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rpfs %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cmd_usage(cmd, 2);
}

/* A whole decimal number in lo..hi. */
static bool int_arg(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* What an option says, into o; a bad argument is a usage error. */
static void set_option(const char *cmd, struct opts *o, const struct cli_opt *op,
		       const char *arg)
{
	uint64_t sz;
	long v;

	switch (op->id) {
	case OPT_CONFIG:
		o->config = arg;
		break;
	case OPT_DIR:
		o->dir = arg;
		break;
	case OPT_HELP:
		o->help = 1;
		break;
	case OPT_NSERVERS:
		if (!int_arg(arg, 1, 256, &v))
			usage_error(cmd, "-n %s: the number of servers is 1..256", arg);
		o->nservers = (int)v;
		break;
	case OPT_PORT:
		if (!int_arg(arg, 1, 65535, &v))
			usage_error(cmd, "--port %s: a port is 1..65535", arg);
		o->port = (int)v;
		break;
	case OPT_STRIPE_UNIT:
		if (!strcmp(cmd, "genconfig"))
			goto given;
		if (rpfs_admin_parse_size(arg, &sz) || !sz || sz > (4ull << 30))
			usage_error(
				cmd,
				"stripe unit %s: a size from 1 to 4G (K, M, G suffixes)",
				arg);
		o->stripe_unit = sz;
		break;
	case OPT_ADDRESS:
		o->address = arg;
		break;
	case OPT_PROVIDER:
		if (!strcmp(cmd, "genconfig"))
			goto given;
		o->provider = arg;
		break;
	case OPT_NEW:
		o->new_cluster = true;
		break;
	case OPT_LONG:
		o->longfmt = 1;
		break;
	case OPT_HUMAN:
		o->human = 1;
		break;
	case OPT_RECURSIVE:
		o->recursive = 1;
		break;
	case OPT_DIRECTORY:
		o->directory = 1;
		break;
	case OPT_PARENTS:
		o->parents = 1;
		break;
	case OPT_MODE:
		if (!mode_valid(arg))
			usage_error(cmd, "invalid mode '%s'", arg);
		o->mode = arg;
		break;
	case OPT_FORCE:
		o->force = 1;
		break;
	case OPT_REPAIR:
		o->repair = 1;
		break;
	case OPT_SUMMARY:
		o->summary = 1;
		break;
	case OPT_SIZE:
		o->size = arg;
		break;
	case OPT_NO_CREATE:
		o->no_create = 1;
		break;
	case OPT_COUNT:
		if (!int_arg(arg, -1, 65535, &o->count))
			usage_error(
				cmd,
				"stripe count '%s': a number of I/O servers (-1: all of "
				"them, 0: the default)",
				arg);
		o->count_set = true;
		break;
	case OPT_START:
		if (!int_arg(arg, -1, 65535, &o->start))
			usage_error(cmd,
				    "stripe index '%s': an I/O server's number (-1: the "
				    "metadata server picks)",
				    arg);
		o->start_set = true;
		break;
	case OPT_REDUNDANCY:
		if (!strcmp(cmd, "up") || !strcmp(cmd, "genconfig")) {
			/* a cluster's default: none or mirror:N */
			o->redundancy_copies = rpfs_admin_redundancy_copies(arg);
			if (o->redundancy_copies < 0)
				usage_error(cmd, "--redundancy=%s", rpfs_errmsg());
		} else if (rpfs_redundancy_parse(arg, NULL, 0)) {
			usage_error(cmd, "%s", rpfs_errmsg());
		}
		o->redundancy = arg;
		break;
	case OPT_JSON:
		o->json = 1;
		break;
	case OPT_MARKDOWN:
		o->markdown = 1;
		break;
	default:
	given:
		o->given[o->ngiven++] = (struct opt_arg){op->id, arg};
	}
}

/* The option getopt_long found: by its letter, or by index (long). */
static const struct cli_opt *option_of(const struct command *cmd, int ch)
{
	static const struct cli_opt help = {'h', "help", NULL, OPT_HELP, "", 0};

	if (ch >= 512)
		return &common_opts[ch - 512];
	if (ch >= 256)
		return &cmd->opts[ch - 256];
	for (int i = 0; i < nopts(cmd); i++)
		if (cmd->opts[i].ch == ch)
			return &cmd->opts[i];
	return &help; /* -h where it is not human */
}

/* The option getopt_long did not take (unknown, or without its argument),
 * named in the message. */
static void bad_option(const char *cmd, char **argv, const struct option *lopts,
		       bool missing_arg)
{
	const char *a = argv[optind - 1];
	char name[64];

	if (optopt && strncmp(a, "--", 2))
		snprintf(name, sizeof(name), "-%c", optopt);
	else
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(a, "="), a);
	if (missing_arg)
		usage_error(cmd, "option '%s' needs an argument", name);
	for (; lopts->name && strchr(a, '='); lopts++)
		if (!strcmp(lopts->name, name + 2))
			usage_error(cmd, "option '%s' takes no argument", name);
	usage_error(cmd, "unknown option '%s'", name);
}

/* The command's options (argv[0] is its name): into o; returns the index
 * of the first operand, the operands moved to the end as getopt_long does. */
static int parse_command(const struct command *cmd, struct opts *o, int argc, char **argv)
{
	struct option lopts[MAX_OPTS + NCOMMON + 1];
	char sopts[3 * MAX_OPTS + 4];
	int nl = 0, ns = 0, ch;
	bool has_h = false;

	if (cmd->flags & CMD_IN_ORDER)
		sopts[ns++] = '+'; /* else operands and options mix, as in coreutils */
	sopts[ns++] = ':';	   /* a missing argument is ':', not '?' */
	for (int i = 0; i < nopts(cmd); i++) {
		const struct cli_opt *op = &cmd->opts[i];

		if (op->ch) {
			sopts[ns++] = op->ch;
			if (op->arg)
				sopts[ns++] = ':';
			has_h |= op->ch == 'h';
		}
		if (op->name)
			lopts[nl++] = (struct option){
				op->name, op->arg ? required_argument : no_argument, NULL,
				256 + i};
	}
	if (!has_h)
		sopts[ns++] = 'h';
	sopts[ns] = 0;
	for (size_t k = 0; k < NCOMMON; k++) {
		bool mine = false;

		for (int i = 0; i < nl; i++)
			mine |= !strcmp(lopts[i].name, common_opts[k].name);
		if (!mine)
			lopts[nl++] = (struct option){
				common_opts[k].name,
				common_opts[k].arg ? required_argument : no_argument,
				NULL, 512 + (int)k};
	}
	lopts[nl] = (struct option){NULL, 0, NULL, 0};
	o->given = calloc((size_t)argc, sizeof(*o->given));
	if (!o->given)
		die("out of memory");
	opterr = 0;
	optind = 0; /* a new scan */
	while ((ch = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		if (ch == '?' || ch == ':')
			bad_option(cmd->name, argv, lopts, ch == ':');
		set_option(cmd->name, o, option_of(cmd, ch), optarg);
	}
	return optind;
}

/* find's expression is its own: only --help is an option. */
static int raw_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

/* chmod -w FILE, chmod -x,o+r FILE: a mode that starts with '-' is not an
 * option (as in chmod(1)); taken out of argv (its slot is free at the end)
 * before the options are parsed. */
static char *take_dash_mode(const struct command *cmd, int *argc, char **argv)
{
	if (strcmp(cmd->name, "chmod"))
		return NULL;
	for (int i = 1; i < *argc && strcmp(argv[i], "--"); i++) {
		char *m = argv[i];

		if (m[0] != '-' || !mode_valid(m))
			continue;
		memmove(argv + i, argv + i + 1, (size_t)(*argc - i) * sizeof(*argv));
		--*argc;
		return m;
	}
	return NULL;
}

/* The options before the command word: --config, --dir, --help, --version;
 * returns the command word's index. */
static int parse_global(struct opts *o, int argc, char **argv)
{
	static const struct option lopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"dir", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+:h", lopts, NULL)) != -1) {
		const char *a = argv[optind - 1];

		switch (ch) {
		case 'c':
			o->config = optarg;
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'h':
			o->help = 1;
			break;
		case 'V':
			printf("rpfs %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			if (ch == ':')
				fprintf(stderr, "rpfs: option '%.*s' needs an argument\n",
					(int)strcspn(a, "="), a);
			else
				fprintf(stderr, "rpfs: unknown option '%.*s'\n",
					(int)strcspn(a, "="), a);
			usage(stderr, 2);
		}
	}
	return optind;
}

int main(int argc, char **argv)
{
	struct opts o = {.start = -1}; /* up: 0 and NULL are options not given */
	const struct command *cmd;
	int ci = parse_global(&o, argc, argv), first, nops, ret;
	char *dash_mode = NULL;

	if (ci >= argc)
		usage(o.help ? stdout : stderr, o.help ? 0 : 2);
	cmd = find_command(argv[ci]);
	if (!cmd) {
		fprintf(stderr, "rpfs: unknown command '%s'\n", argv[ci]);
		usage(stderr, 2);
	}
	argc -= ci;
	argv += ci;
	if (o.help)
		cmd_usage(cmd->name, 0);
	if (cmd->flags & CMD_RAW) {
		if (raw_help(argc, argv))
			cmd_usage(cmd->name, 0);
		first = 1;
	} else {
		dash_mode = take_dash_mode(cmd, &argc, argv);
		first = parse_command(cmd, &o, argc, argv);
	}
	if (o.help)
		cmd_usage(cmd->name, 0);
	nops = argc - first + (dash_mode ? 1 : 0);
	if (nops < cmd->min && !(o.force && !strcmp(cmd->name, "rm")))
		usage_error(cmd->name, "missing operand");
	if (cmd->max >= 0 && nops > cmd->max)
		usage_error(cmd->name, "extra operand '%s'", argv[first + cmd->max]);
	if (dash_mode) { /* chmod -w PATH: the mode is the first operand */
		memmove(argv + first + 1, argv + first,
			(size_t)(nops - 1) * sizeof(*argv));
		argv[first] = dash_mode;
	}
	argv[first - 1] = (char *)cmd->name; /* argv[0] of the command */
	if (!cmd->fn) {			     /* help */
		if (nops)
			cmd_usage(argv[first], find_command(argv[first]) ? 0 : 2);
		usage(stdout, 0);
	}
	/* A peer that disappears must give an error, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	ret = cmd->fn(&o, nops + 1, argv + first - 1);
	free(o.given);
	return ret;
}
