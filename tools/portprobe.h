/* Port probes shared by the rpfs command and the integration tests, which
 * both start rpfsd processes and wait for them to listen. */
#ifndef RPFS_PORTPROBE_H
#define RPFS_PORTPROBE_H

/* 1 if a TCP socket listens on port (any address), read from /proc/net so
 * that the server does not see a probe connection; 0 if none does; -1 when
 * it cannot be told this way: the provider in RPFS_PROVIDER (verbs) listens
 * through rdmacm, which no kernel TCP socket shows. */
int rpfs_port_listening(int port);

#endif
