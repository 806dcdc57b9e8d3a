/*
 * link.h - one byte stream to one Redis node: TCP (IPv4 or IPv6) or a unix
 * socket, in clear or over TLS, owned by lib/store.
 *
 * Debian 12's hiredis (0.14) has no TLS, and its redisContext owns its
 * socket.  faultline keeps hiredis for the protocol only - command
 * formatting (redisFormatCommand*) and reply parsing (redisReader) - and
 * does the transport itself: a blocking socket with send and receive
 * timeouts, and OpenSSL over it for rediss://.  conn.c speaks to every
 * node, single server or cluster, through a link.
 *
 * Replies are bounded: a reply is built by this file's reader functions,
 * which charge every string and every array slot to the reply's budget
 * (link_set_reply_limit, LINK_REPLY_LIMIT by default) before allocating
 * it, and the bytes received for one reply are counted as they arrive.  A
 * reply over the budget fails the link ("reply larger than ..."): the
 * rest of it is never read, so a hostile or corrupt value costs at most
 * the budget, never the reader's memory or the caller's interval.  An
 * array header announcing 2^31 elements is refused before any allocation.
 *
 * Not thread-safe: a link belongs to one conn, a conn to one thread.
 */
#ifndef FL_STORE_LINK_H
#define FL_STORE_LINK_H

#include <stddef.h>
#include <stdint.h>

struct redisReply;
struct link;
struct link_tls;

/* Default bound of one reply (bytes charged: payload plus per-item overhead). */
#define LINK_REPLY_LIMIT (512ULL << 20)

/*
 * A TLS client configuration: the CA bundle the server's certificate must
 * chain to (NULL or "": the system's), and a client certificate and key
 * (both or neither; Redis asks for one unless tls-auth-clients is no).
 * The server's certificate is always verified, and its name (or IP
 * address) must match the name the link connects to.  Returns it, or NULL
 * with the reason (file and OpenSSL's words) in err.
 */
struct link_tls *link_tls_new(const char *ca_file, const char *cert_file, const char *key_file,
			      char *err, size_t errlen);
void link_tls_free(struct link_tls *t);

/*
 * Connect to host:port (a name, an IPv4 or an IPv6 address; every address
 * it resolves to is tried in turn) within timeout_ns, which also bounds
 * every later send and receive.  With tls, the TLS handshake follows and
 * the server's certificate must name server_name (NULL: host).  Returns
 * the link or NULL with the reason in err.
 */
struct link *link_open_tcp(const char *host, int port, struct link_tls *tls,
			   const char *server_name, uint64_t timeout_ns, char *err, size_t errlen);

/* Connect to a unix socket; as link_open_tcp. */
struct link *link_open_unix(const char *path, uint64_t timeout_ns, char *err, size_t errlen);

/* Close the socket (a TLS close_notify first) and free l (NULL is fine). */
void link_close(struct link *l);

/*
 * Queue a formatted command (len bytes) to be sent before the next reply
 * is read.  Returns 0, or -ENOMEM.
 */
int link_append(struct link *l, const char *cmd, size_t len);

/*
 * Send what is queued, then read one reply.  Returns it (freeReplyObject),
 * or NULL when the link failed (link_errstr): an I/O error, a timeout,
 * the peer closing, a protocol error or a reply over its bound.  After a
 * NULL the link is unusable; close it.
 */
struct redisReply *link_reply(struct link *l);

/* One command (C strings) sent and its reply read: link_append + link_reply. */
struct redisReply *link_call(struct link *l, int argc, const char **argv);

/*
 * link_call for a command that must succeed (AUTH, SELECT): 0, -EIO (the
 * link failed) or -EACCES (Redis answered an error); "NAME: why" in why.
 */
int link_call_ok(struct link *l, int argc, const char **argv, char *why, size_t len);

/* Why the link failed ("" while it has not). */
const char *link_errstr(const struct link *l);

/* 1 when the link failed on a reply over its bound. */
int link_too_large(const struct link *l);

/* 1 when the link failed waiting longer than its timeout. */
int link_timed_out(const struct link *l);

/* Bound every later reply to bytes (0: LINK_REPLY_LIMIT). */
void link_set_reply_limit(struct link *l, size_t bytes);

/*
 * Parse one reply from buf (len bytes) as a link reads one, under a bound
 * of limit bytes: 1 and *out (freeReplyObject), 0 when buf holds no whole
 * reply, -1 on a protocol error or a reply over limit.  For the fuzzer and
 * tests: the same reader functions every connection uses.
 */
int link_parse_reply(const char *buf, size_t len, size_t limit, struct redisReply **out);

#endif
