/* rpfs mount / umount: POSIX access through FUSE. mount execs rpfs-fuse
 * (fuse/; beside this program, else on PATH) with the config resolved as
 * for every other command; umount runs fusermount3 -u. Options before DIR
 * are mount's (rpfs.c: --config, --dir, and -o, -f, --log passed on);
 * what follows DIR goes to rpfs-fuse as it is (-o OPTS, -f, -d, -s, --log
 * FILE). */
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
	char self[PATH_MAX], fuse[PATH_MAX + 16];
	/* 3 added, 2 per option given, NULL */
	char **av = calloc((size_t)argc + 2 * (size_t)o->ngiven + 4, sizeof(*av));
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int k = 0;

	if (!av)
		die("out of memory");
	self[n > 0 ? n : 0] = '\0';
	strfmt(fuse, sizeof(fuse), "%s/rpfs-fuse", n > 0 ? dirname(self) : ".");
	av[k++] = "rpfs-fuse";
	av[k++] = "--config";
	av[k++] = (char *)config_path(o);
	for (int i = 0; i < o->ngiven; i++) {
		int id = o->given[i].id;

		av[k++] = id == OPT_FUSE_OPTS ? "-o" : id == OPT_LOG ? "--log" : "-f";
		if (id != OPT_FOREGROUND)
			av[k++] = (char *)o->given[i].arg;
	}
	for (int i = 1; i < argc; i++)
		av[k++] = argv[i];
	if (n > 0 && !access(fuse, X_OK))
		execv(fuse, av);
	execvp("rpfs-fuse", av);
	die("can't run rpfs-fuse: %s (built when configure finds libfuse3-dev)",
	    strerror(errno));
}

int cmd_umount(const struct opts *o, int argc, char **argv)
{
	(void)o;
	(void)argc;
	execlp("fusermount3", "fusermount3", "-u", argv[1], (char *)NULL);
	die("can't run fusermount3: %s (apt-get install fuse3)", strerror(errno));
}
