/* Transport wire format: message header, handshake bodies, bulk descriptors.
 *
 * Everything on the wire is little-endian with fixed sizes and is encoded and
 * decoded field by field (never by casting a struct onto a buffer), so
 * client and server may differ in compiler, padding and byte order. Every
 * decoder checks lengths and counts against the bytes actually received
 * before using them; a message that fails a check is a protocol error and
 * closes that connection only.
 *
 * One message travels either in a send/recv buffer (requests, replies,
 * control) or at the start of a Fast RDMA buffer slot (a request or reply
 * whose data follows it in the slot). Layout of a message:
 *
 *   header (PROTO_HDR_SIZE) | body (body_len) | ndesc bulk descriptors | data
 *
 * where data is present only on the inline and fast paths and starts at
 * data_off: requests pack it right after the descriptors; replies leave a
 * gap, so a server can read storage straight into its place before it knows
 * how long the reply body will be. */
#ifndef RPFS_PROTO_H
#define RPFS_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC	     0x53465052u /* "RPFS" as little-endian bytes */
#define PROTO_VERSION	     2
#define PROTO_HDR_SIZE	     48
#define PROTO_DESC_SIZE	     24
#define PROTO_HELLO_SIZE     80 /* fixed part; application data follows */
#define PROTO_HELLO_REP_SIZE 64 /* fixed part; application data follows */
#define PROTO_APP_MAX	     1024
#define PROTO_CM_REQ_SIZE    48
#define PROTO_CM_ACC_SIZE    40
#define PROTO_CM_REJ_SIZE    12
#define PROTO_MAC_SIZE	     16
#define PROTO_NONCE_SIZE     16

enum proto_type {
	PROTO_HELLO = 1,     /* client -> server, first message of a connection */
	PROTO_HELLO_REP = 2, /* server -> client */
	PROTO_REQ = 3,	     /* client -> server request */
	PROTO_REP = 4,	     /* server -> client reply */
	PROTO_CREDIT = 5,    /* control: returns credits, carries no request */
};

enum proto_dir {
	PROTO_DIR_NONE = 0,  /* no data */
	PROTO_DIR_WRITE = 1, /* data from client to server */
	PROTO_DIR_READ = 2,  /* data from server to client */
};

struct proto_hdr {
	uint8_t type;	   /* enum proto_type */
	uint8_t path;	   /* enum xp_path: how the data travels */
	uint8_t dir;	   /* enum proto_dir */
	uint32_t tag;	   /* request tag, echoed in the reply */
	uint32_t credits;  /* receive credits returned to the receiver */
	uint32_t acks;	   /* control messages consumed (client -> server) */
	uint32_t body_len; /* upper-layer body bytes after the header */
	uint32_t ndesc;	   /* bulk descriptors after the body */
	uint32_t slot;	   /* Fast RDMA slot: server's (write) or client's (read) */
	int32_t status;	   /* reply: 0 or negative errno */
	uint64_t data_len; /* request: bytes to write or to read; reply: bytes read */
	uint16_t data_off; /* inline/fast: where data starts (>= proto_data_off) */
};

/* A client memory region the server may RDMA: remote address in the
 * provider's addressing mode (virtual address or offset), length, key. */
struct proto_desc {
	uint64_t addr;
	uint64_t len;
	uint64_t key;
};

/* Where a side's Fast RDMA buffer is: slot i is at addr + i * slot_size. */
struct proto_fastbuf {
	uint64_t addr;
	uint64_t key;
	uint32_t slot_size;
	uint32_t slot_count;
};

/* HELLO and HELLO_REP carry, after their fixed part, app_len bytes of
 * application data (who the client is, which server it expects; the
 * server's answer), opaque to the transport. Each has a MAC with the
 * cluster key over both nonces of the connection, its fixed part (MAC
 * field zeroed) and its application data (see auth.h). */
struct proto_hello {
	uint32_t conn_id;      /* client's id for this connection (in immediates) */
	uint32_t recv_count;   /* receives the client keeps posted */
	uint32_t recv_size;    /* bytes each receive buffer holds */
	uint32_t max_requests; /* requests the client keeps in flight at most */
	struct proto_fastbuf fast;
	uint8_t mac[PROTO_MAC_SIZE];
	uint32_t app_len;
};

struct proto_hello_rep {
	int32_t status;	    /* 0, or why the server refuses */
	uint32_t conn_id;   /* server's id for this connection (in immediates) */
	uint32_t credits;   /* receives the server posted for this connection */
	uint32_t recv_size; /* bytes each server receive buffer holds */
	struct proto_fastbuf fast;
	uint32_t max_requests; /* requests in flight the server allows (<= asked) */
	uint32_t app_len;
	uint8_t mac[PROTO_MAC_SIZE];
};

/* Connection-manager data. The request proves the client holds the
 * cluster key (MAC over its first 32 bytes: magic, version, nonce, time)
 * before the server allocates anything; the accept proves the server does
 * (MAC over both nonces); a reject says why. */
struct proto_cm_req {
	uint32_t magic;
	uint16_t version;
	uint8_t nonce[PROTO_NONCE_SIZE];
	uint64_t time_s; /* client's clock, seconds since the epoch */
	uint8_t mac[PROTO_MAC_SIZE];
};

struct proto_cm_acc {
	uint32_t magic;
	uint16_t version;
	uint8_t nonce[PROTO_NONCE_SIZE];
	uint8_t mac[PROTO_MAC_SIZE];
};

struct proto_cm_rej {
	uint32_t magic;
	uint16_t version; /* the server's */
	int32_t status;	  /* negative errno: why */
};

#define PROTO_CM_REQ_MAC_OFF 32 /* bytes of a request its MAC covers */

void proto_hdr_encode(void *buf, const struct proto_hdr *h);
/* Checks magic, version, type, path, dir and that body and descriptors fit in
 * len bytes; returns 0 or -EPROTO. Whether data_len bytes at data_off fit
 * depends on the path: see proto_data_fits. */
int proto_hdr_decode(const void *buf, size_t len, struct proto_hdr *h);

void proto_desc_encode(void *buf, const struct proto_desc *d);
void proto_desc_decode(const void *buf, struct proto_desc *d);

/* Decoders of bodies with application data check that app_len bytes
 * follow within len (the body's length). */
void proto_hello_encode(void *buf, const struct proto_hello *m);
int proto_hello_decode(const void *buf, size_t len, struct proto_hello *m);
void proto_hello_rep_encode(void *buf, const struct proto_hello_rep *m);
int proto_hello_rep_decode(const void *buf, size_t len, struct proto_hello_rep *m);
/* CM decoders check magic and length only: the caller checks the version
 * (to say which one the peer speaks) and the MAC. */
void proto_cm_req_encode(void *buf, const struct proto_cm_req *m);
int proto_cm_req_decode(const void *buf, size_t len, struct proto_cm_req *m);
void proto_cm_acc_encode(void *buf, const struct proto_cm_acc *m);
int proto_cm_acc_decode(const void *buf, size_t len, struct proto_cm_acc *m);
void proto_cm_rej_encode(void *buf, const struct proto_cm_rej *m);
int proto_cm_rej_decode(const void *buf, size_t len, struct proto_cm_rej *m);

/* Offset of the descriptors and of the data in a message. */
static inline size_t proto_desc_off(const struct proto_hdr *h)
{
	return PROTO_HDR_SIZE + (size_t)h->body_len;
}

static inline size_t proto_data_off(const struct proto_hdr *h)
{
	return proto_desc_off(h) + (size_t)h->ndesc * PROTO_DESC_SIZE;
}

/* Data of an inline or fast message lies inside the len bytes received. */
static inline int proto_data_fits(const struct proto_hdr *h, size_t len)
{
	return h->data_off >= proto_data_off(h) && h->data_off <= len &&
	       h->data_len <= len - h->data_off;
}

#endif
