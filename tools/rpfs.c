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
 * This file has the table of commands (name, synopsis, one-line summary,
 * help), the option parsing and main; the commands live in cli_files.c
 * (namespace), cli_copy.c (cp, cat), cli_admin.c (servers, settings) and
 * share cli_util.c (cli.h). The tool uses librpfs's public headers only.
 *
 * Errors print the library's message (rpfs_errmsg(), which names the
 * server and the cause) and exit with status 1; usage errors exit 2. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

struct command {
	const char *name;
	cli_cmd_fn fn;
	const char *synopsis; /* after the name */
	const char *summary;  /* one line */
	const char *help;     /* more, for `rpfs help NAME` (may be "") */
};

static const struct command commands[] = {
	{"up", cmd_up,
	 "[-n N] [--dir D] [--port P] [--stripe-unit S] [--address A] [--provider P]",
	 "start N rpfsd servers on this host (default 2)",
	 "Writes D/rpfs.conf and a cluster key, starts N rpfsd daemons on address A\n"
	 "(default 127.0.0.1; on a verbs device its IP address: rdmacm cannot use\n"
	 "loopback) at consecutive free ports from P (default: the first free run\n"
	 "from 7100) and waits until each answers. Server 0 has roles meta,io, the\n"
	 "others io. Storage in D/s0, D/s1, ...; default D is $RPFS_DIR or ~/.rpfs.\n"
	 "--provider writes the libfabric provider into the config.\n"},
	{"down", cmd_down, "[--dir D]",
	 "stop the servers started by up (SIGTERM, then SIGKILL)", ""},
	{"genconfig", cmd_genconfig,
	 "--host SPEC... [--provider P] [--stripe-unit S] [--stripe-count C] "
	 "[--set KEY=VALUE] [--log-dir D] --out DIR",
	 "write a config and a new key for servers on several hosts",
	 "SPEC: ADDR[:PORT][,name=N][,roles=meta,io][,dir=PATH], one per server.\n"
	 "Writes DIR/rpfs.conf (one server per --host, ids in that order, the first\n"
	 "meta,io and the others io unless roles= says; port 7100, dir\n"
	 "/var/lib/rpfs/NAME) and a new key DIR/rpfs.key (0600); copy both to\n"
	 "/etc/rpfs/ on every server and client. Refuses to overwrite either.\n"},
	{"ls", cmd_ls, "[-l] [-h] [PATH]", "list a directory (-l long, -h human sizes)",
	 ""},
	{"stat", cmd_stat, "PATH", "attributes, layout and the I/O server of each slot",
	 ""},
	{"mkdir", cmd_each, "PATH...", "make directories (mode 0755)", ""},
	{"rmdir", cmd_each, "PATH...", "remove empty directories", ""},
	{"rm", cmd_each, "PATH...", "remove files (their data on every I/O server)", ""},
	{"chmod", cmd_chmod, "MODE PATH...",
	 "change the permission bits (octal, e.g. 0640)", ""},
	{"chown", cmd_chown, "USER[:GROUP] PATH...",
	 "change owner and/or group (names or numbers; :GROUP alone too)",
	 "Root may give a file to anyone; an owner may only change the group, to\n"
	 "one of its own. USER: gives the user's login group.\n"},
	{"mv", cmd_mv, "SRC DST", "rename (into DST if it is a directory)",
	 "Atomic on the metadata server holding both paths: replaces a file or an\n"
	 "empty directory, moves a directory with everything below it. Where the\n"
	 "paths live on different metadata servers (rename says EXDEV), mv copies\n"
	 "and removes, entry by entry, as mv(1) does across file systems.\n"},
	{"cp", cmd_cp, "[-r] SRC DST", "copy; mark the rpfs side(s) with 'rpfs:/path'",
	 "Either side may be local or rpfs; -r copies a directory tree. Into an\n"
	 "existing directory DST as DST/NAME. A copy within rpfs keeps the mode and\n"
	 "the layout; the copy is synced before cp says it is done.\n"},
	{"cat", cmd_cat, "PATH...", "write files to stdout", ""},
	{"du", cmd_du, "[-s] [-h] [PATH...]",
	 "bytes of the files under each directory (-s: PATH only, -h human)", ""},
	{"find", cmd_find, "[PATH] [-name GLOB] [-type f|d]",
	 "list the entries under PATH that match, one per line", ""},
	{"setstripe", cmd_setstripe, "[-c COUNT] [-S UNIT] DIR|NEWFILE",
	 "a directory's default layout for new files; a new file with a layout",
	 "On a directory: files created in it get stripe count COUNT and stripe\n"
	 "unit UNIT (K/M/G; left out: the cluster's) unless their create gives a\n"
	 "layout (MPI hints striping_factor, striping_unit win); its new\n"
	 "subdirectories inherit the default. On a path that does not exist: a new\n"
	 "empty file with that layout. An existing file's layout is fixed.\n"},
	{"getstripe", cmd_getstripe, "PATH", "a file's layout, or a directory's default",
	 ""},
	{"df", cmd_df, "[-h]", "each server's storage, from the server, and a total",
	 "One row per server (its name and address in the config, its roles) from\n"
	 "its own answer: size, used and available bytes of the file system under\n"
	 "an I/O server's directory, the files a metadata server holds, and which\n"
	 "file system it is (fs: servers with the same number share one disk);\n"
	 "then the total, each file system counted once. -h: human sizes.\n"},
	{"stats", cmd_stats, "[--json]", "each server's counters",
	 "Requests by op (req.*), data by transport path (bytes.inline|fast|bulk),\n"
	 "credit, slot, bulk-cap and pool waits, cache hits and misses, errors,\n"
	 "connections now and in total, storage; --json: one JSON object.\n"},
	{"ping", cmd_ping, "", "round trip to every server", ""},
	{"settings", cmd_settings, "[--markdown]",
	 "every transport setting, its value and source",
	 "Name, type, default, range, whether a client may set it (rpfs_init_opts,\n"
	 "MPI hints rpfs_<name>), help, and its value and source (default, config,\n"
	 "environment) in the config in use; --markdown: the table alone, as the\n"
	 "README has it.\n"},
	{"mount", cmd_mount, "[--config F | --dir D] DIR [-o OPTS] [-f] [--log FILE]",
	 "mount rpfs on DIR through FUSE (rpfs-fuse)",
	 "Runs rpfs-fuse, which reaches the cluster, mounts and goes to the\n"
	 "background (-f: stays). -o takes mount.fuse3's options (allow_other,\n"
	 "ro, ...); --log FILE: where the daemon writes errors (default syslog).\n"
	 "The mount serves the user who runs it; see the README, POSIX access.\n"},
	{"umount", cmd_umount, "DIR", "unmount a FUSE mount (fusermount3 -u)", ""},
	{"help", NULL, "[COMMAND]", "this list, or one command's usage", ""},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char usage_tail[] =
	"\n"
	"Paths are in rpfs ('rpfs:' prefix optional). The config comes from\n"
	"--config FILE, --dir D (D/rpfs.conf), $RPFS_CONFIG, $RPFS_DIR/rpfs.conf,\n"
	"then /etc/rpfs/rpfs.conf, then ~/.rpfs/rpfs.conf. `rpfs help COMMAND` or\n"
	"`rpfs COMMAND --help` shows one command; `rpfs --version` the version.\n";

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* Every command, one per line: two spaces, the name, its summary. */
static void usage(FILE *to, int status)
{
	fprintf(to,
		"usage: rpfs [--config FILE | --dir D] COMMAND [args]\n\nCommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(to, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs(usage_tail, to);
	exit(status);
}

void cmd_usage(const char *name, int status)
{
	const struct command *cmd = find_command(name);
	FILE *to = status ? stderr : stdout;

	if (!cmd)
		usage(to, status);
	fprintf(to, "usage: rpfs %s%s%s\n  %s\n", cmd->name, cmd->synopsis[0] ? " " : "",
		cmd->synopsis, cmd->summary);
	if (cmd->help[0])
		fprintf(to, "\n%s", cmd->help);
	exit(status);
}

/* Where the command word is: global options (with their arguments) may
 * come before it. */
static int command_index(int argc, char **argv)
{
	static const char *const with_arg[] = {"dir",	      "port",	 "config",
					       "stripe-unit", "address", "provider"};

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-' || !a[1])
			return i;
		if (!strcmp(a, "--"))
			return i + 1;
		if (a[1] == '-') {
			for (size_t k = 0; k < sizeof(with_arg) / sizeof(with_arg[0]);
			     k++)
				if (!strcmp(a + 2, with_arg[k]))
					i++;
		} else if (strchr("ndpcsaP", a[1]) && !a[2]) {
			i++;
		}
	}
	return argc;
}

/* Commands whose options are their own (-c, -s, -name...): the global
 * options are only those before the command word. */
static int own_options(const char *cmd)
{
	return !strcmp(cmd, "setstripe") || !strcmp(cmd, "find") || !strcmp(cmd, "du") ||
	       !strcmp(cmd, "mount") || !strcmp(cmd, "genconfig");
}

static void parse(struct opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dir", required_argument, NULL, 'd'},
		{"port", required_argument, NULL, 'p'},
		{"config", required_argument, NULL, 'c'},
		{"stripe-unit", required_argument, NULL, 's'},
		{"address", required_argument, NULL, 'a'},
		{"provider", required_argument, NULL, 'P'},
		{"long", no_argument, NULL, 'l'},
		{"markdown", no_argument, NULL, 'M'},
		{"help", no_argument, NULL, 'H'},
		{"json", no_argument, NULL, 'J'},
		{"version", no_argument, NULL, 'V'},
		{"recursive", no_argument, NULL, 'r'},
		{NULL, 0, NULL, 0},
	};
	uint64_t sz;
	int ch;

	while ((ch = getopt_long(argc, argv, "n:d:p:c:s:a:P:lhrR", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'n':
			o->nservers = atoi(optarg);
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'p':
			o->port = atoi(optarg);
			if (o->port <= 0 || o->port > 65535)
				die("bad port %s", optarg);
			break;
		case 'c':
			o->config = optarg;
			break;
		case 's':
			if (rpfs_admin_parse_size(optarg, &sz) || !sz)
				die("bad stripe unit %s", optarg);
			o->stripe_unit = sz;
			break;
		case 'a':
			o->address = optarg;
			break;
		case 'P':
			o->provider = optarg;
			break;
		case 'l':
			o->longfmt = 1;
			break;
		case 'M':
			o->markdown = 1;
			break;
		case 'h':
			o->human = 1; /* or help: see main */
			break;
		case 'H':
			o->help = 1;
			break;
		case 'J':
			o->json = 1;
			break;
		case 'r':
		case 'R':
			o->recursive = 1;
			break;
		case 'V':
			printf("rpfs %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			usage(stderr, 2);
		}
	}
}

int main(int argc, char **argv)
{
	struct opts o = {.nservers = 2, .stripe_unit = 1 << 20, .address = "127.0.0.1"};
	int ci = command_index(argc, argv);
	const struct command *cmd;

	/* Options go anywhere, except for commands with options of their own. */
	parse(&o, ci < argc && own_options(argv[ci]) ? ci : argc, argv);
	if (ci < argc && own_options(argv[ci])) {
		argc -= ci;
		argv += ci;
		for (int i = 1; i < argc; i++)
			if (!strcmp(argv[i], "--help"))
				o.help = 1;
	} else {
		argc -= optind;
		argv += optind;
	}
	if (argc < 1)
		usage(o.help ? stdout : stderr, o.help ? 0 : 2);
	if (!strcmp(argv[0], "help")) {
		if (o.help)
			cmd_usage("help", 0);
		if (argc > 1)
			cmd_usage(argv[1], find_command(argv[1]) ? 0 : 2);
		usage(stdout, 0);
	}
	cmd = find_command(argv[0]);
	if (!cmd) {
		fprintf(stderr, "rpfs: unknown command '%s'\n", argv[0]);
		usage(stderr, 2);
	}
	/* -h is human sizes where sizes are shown, help elsewhere. */
	if (o.human && strcmp(cmd->name, "ls") && strcmp(cmd->name, "df"))
		o.help = 1;
	if (o.help)
		cmd_usage(cmd->name, 0);
	/* A peer that disappears must give an error, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	return cmd->fn(&o, argc, argv);
}
