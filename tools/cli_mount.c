/* rpfs mount / umount: POSIX access through FUSE. mount execs rpfs-fuse
 * (fuse/; beside this program, else on PATH) with the config resolved as
 * for every other command; umount runs fusermount3 -u. mount takes its own
 * options (rpfs.c: own_options): what follows DIR belongs to rpfs-fuse
 * (-o OPTS, -f, --log FILE), and --config/--dir may come before DIR. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_mount(const struct opts *o, int argc, char **argv)
{
	struct opts mo = *o;
	char self[PATH_MAX], fuse[PATH_MAX + 16];
	char **av = calloc((size_t)argc + 3, sizeof(*av)); /* 3 added, NULL */
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int i = 1, k = 0;

	if (!av)
		die("out of memory");
	for (;
	     i + 1 < argc && (!strcmp(argv[i], "--config") || !strcmp(argv[i], "--dir"));
	     i += 2) {
		if (!strcmp(argv[i], "--config"))
			mo.config = argv[i + 1];
		else
			mo.dir = argv[i + 1];
	}
	if (i >= argc || argv[i][0] == '-')
		cmd_usage("mount", 2);
	self[n > 0 ? n : 0] = '\0';
	strfmt(fuse, sizeof(fuse), "%s/rpfs-fuse", n > 0 ? dirname(self) : ".");
	av[k++] = "rpfs-fuse";
	av[k++] = "--config";
	av[k++] = (char *)config_path(&mo);
	while (i < argc)
		av[k++] = argv[i++];
	if (n > 0 && !access(fuse, X_OK))
		execv(fuse, av);
	execvp("rpfs-fuse", av);
	die("can't run rpfs-fuse: %s (built when configure finds libfuse3-dev)",
	    strerror(errno));
}

int cmd_umount(const struct opts *o, int argc, char **argv)
{
	if (argc != 2)
		cmd_usage("umount", 2);
	execlp("fusermount3", "fusermount3", "-u", argv[1], (char *)NULL);
	die("can't run fusermount3: %s (apt-get install fuse3)", strerror(errno));
}
