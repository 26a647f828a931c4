/* Going into the background with a pipe back to the parent: see daemon.h. */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The parent: the status byte, then the message up to the end of the pipe
 * (the child closes it, or dies). Never returns. */
static void wait_for_word(const char *name, int fd)
{
	unsigned char status;
	char buf[1024];
	bool newline = true;
	ssize_t n;

	if (read(fd, &status, 1) != 1) {
		fprintf(stderr, "%s: the background process died during start-up\n",
			name);
		_exit(1);
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (write(2, buf, (size_t)n) < 0)
			break;
		newline = buf[n - 1] == '\n';
	}
	if (!newline && write(2, "\n", 1) < 0) {
		/* stderr is gone: the status still tells */
	}
	_exit(status);
}

int daemon_fork(const char *name)
{
	int pfd[2], nul;
	pid_t pid;

	if (pipe(pfd)) {
		fprintf(stderr, "%s: can't make a pipe to go into the background: %s\n",
			name, strerror(errno));
		exit(1);
	}
	/* Nothing buffered may be written twice, by both processes. */
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: can't fork to go into the background: %s\n", name,
			strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		close(pfd[1]);
		wait_for_word(name, pfd[0]);
	}
	close(pfd[0]);
	setsid();
	nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		if (nul > 2)
			close(nul);
	}
	return pfd[1];
}

int daemon_notify(int fd, unsigned char status, const char *msg)
{
	int ret = 0;

	if (write(fd, &status, 1) != 1)
		ret = -1;
	else if (status && msg && msg[0] && write(fd, msg, strlen(msg)) < 0)
		ret = -1;
	close(fd);
	return ret;
}
