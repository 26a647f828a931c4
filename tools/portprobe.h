/* Loopback port probes shared by the rpfs command and the integration
 * tests, which both start rpfsd processes and wait for them to listen. */
#ifndef RPFS_PORTPROBE_H
#define RPFS_PORTPROBE_H

/* 1 if a TCP socket listens on port (any address), read from /proc/net so
 * that the server does not see a probe connection; 0 otherwise. */
int rpfs_port_listening(int port);

#endif
