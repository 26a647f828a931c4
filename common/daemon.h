/* Going into the background without losing the start-up's verdict (rpfsd
 * --daemon, rpfs-fuse without -f).
 *
 * daemon_fork forks; the command that was started (the parent) waits on a
 * pipe for the child's word and exits with it, so a script that starts a
 * daemon learns whether it came up, and why not, from its exit status and
 * stderr, although the daemon itself has left the terminal. The word is
 * one status byte (0: up and serving; anything else: the exit status),
 * then, on failure, a message that the parent prints on its stderr. A
 * child that dies without a word makes the parent say so and exit 1. */
#ifndef RPFS_DAEMON_H
#define RPFS_DAEMON_H

/* Fork. The parent never returns (see above; name, e.g. "rpfsd", starts
 * its own messages); it exits 1 if it cannot fork. The child returns the
 * pipe's write end, in a new session, with stdin and stdout on /dev/null;
 * stderr and the working directory are the caller's to change (a daemon
 * logs start-up errors to the terminal until it has a log). */
int daemon_fork(const char *name);
/* In the child: tell the parent how start-up went (status 0: up; else its
 * exit status, with msg, NULL for none) and close fd. Uses write(2) only,
 * so a signal handler may call it. Returns 0, or -1 if the parent could
 * not be told (it is gone). */
int daemon_notify(int fd, unsigned char status, const char *msg);

#endif
