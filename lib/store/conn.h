/*
 * conn.h - one connection to faultline's Redis: a single server or a Redis
 * Cluster, behind one type.
 *
 * Every Redis command faultline sends goes through a struct conn, and only
 * lib/store uses it: the rest of the tree sees `struct conn *` as an opaque
 * handle it opens (conn_open), passes to lib/store's typed functions and
 * closes (conn_close).
 *
 * A command names the key it is routed by (NULL: any node).  On a single
 * server that is ignored.  On a cluster the key's hash slot is computed as
 * the Redis Cluster specification says (CRC16-XMODEM of the key, or of its
 * first non-empty {hash tag}, modulo 16384) and the command goes to the
 * master the slot map names.  The slot map is read with CLUSTER SLOTS from
 * any seed at open and again whenever a node answers MOVED or goes away.
 * A MOVED answer is followed at once (and the map refreshed before the
 * next command), an ASK answer is followed for that one command with
 * ASKING, TRYAGAIN is retried after a short pause; at most CONN_REDIRECTS
 * hops per command.
 *
 * Pipelines (conn_append ... conn_reply) keep their order: replies come
 * back in the order commands were appended.  On a cluster each command is
 * written to its own node's connection as it is appended, so one exchange
 * costs one round trip per node touched, not one per command; redirected
 * commands of a pipeline are sent again, one by one, after the rest has
 * been read.  A MULTI ... EXEC block must route every command (MULTI and
 * EXEC included) by keys of one slot; a redirect inside it is not followed
 * (EXEC then fails with EXECABORT and the caller retries it whole).
 *
 * A node whose connection fails is dropped and connected again on next
 * use, so a conn rides through a Redis restart or a cluster failover: the
 * commands in flight fail (NULL reply, conn_errstr says why) and later
 * ones reach whichever master the refreshed map names.
 *
 * Not thread-safe: one conn per thread.
 */
#ifndef FL_STORE_CONN_H
#define FL_STORE_CONN_H

#include <stddef.h>
#include <stdint.h>


/*
 * Replies are hiredis' (freeReplyObject); only lib/store's .c files include
 * hiredis, so this header names the type without it.
 */
struct redisReply;

#define CONN_MAX_SEEDS 16
#define CONN_SLOTS 16384
#define CONN_REDIRECTS 5

struct conn_addr {
	char host[256];
	int port;
};

struct conn_url {
	char host[256];		/* TCP host, or "" for unix (first seed of a cluster) */
	int port;
	char path[256];		/* unix socket path, or "" */
	char user[128];
	char password[256];
	char password_file[256];	/* the password is this file's content */
	int db;
	int cluster;		/* redis-cluster://, rediss-cluster:// */
	int tls;		/* rediss://, rediss-cluster:// */
	char tls_ca[256];	/* CA bundle ("": the system's) */
	char tls_cert[256];	/* client certificate and its key */
	char tls_key[256];
	char tls_server_name[256];	/* the name the certificate must have ("": the host's) */
	int nseeds;		/* cluster seeds, seeds[0] = host:port */
	struct conn_addr seeds[CONN_MAX_SEEDS];
};

/*
 * Parse "redis[s]://[[user]:password@]host[:port][/db][?options]",
 * "unix:///path/to.sock[?options]" or
 * "redis[s]-cluster://[[user]:password@]host:port[,host:port...][?options]".
 * rediss is TLS.  An IPv6 host is bracketed ([::1]:6379); the user info and
 * option values are percent-decoded.  Options, '&'-separated: db=N,
 * user=U, password=P, password_file=FILE (read at conn_open: one line,
 * mode 0600 or stricter), and with TLS tls_ca=FILE, tls_cert=FILE,
 * tls_key=FILE, tls_server_name=NAME.  Any other option is an error.
 * Returns 0 or -EINVAL with a reason in err (the password redacted).
 */
int conn_url_parse(const char *url, struct conn_url *u, char *err, size_t errlen);

/*
 * url with its password replaced by "****", for logs and messages: no
 * faultline binary prints a Redis password.
 */
void conn_url_redacted(const char *url, char *out, size_t len);

struct conn;

/*
 * Connect as url says, with a connect timeout and a command timeout (ns;
 * 0: 2 s): TLS handshake (rediss), AUTH and SELECT on a single server; on
 * a cluster, the first seed that answers CLUSTER SLOTS gives the slot map,
 * and every node is spoken to as the seeds are (TLS, the same user).
 * Returns the conn, or NULL with a reason in err.
 */
struct conn *conn_open(const char *url, uint64_t timeout_ns, char *err, size_t errlen);

/* Close every node connection and free c (NULL is fine). */
void conn_close(struct conn *c);

/*
 * Bound every reply read from now on to bytes (0: the default, 512 MiB):
 * a reply over it fails its command (conn_errstr: "a reply larger than
 * ...") and the node's connection is dropped, without reading the rest.
 */
void conn_set_reply_limit(struct conn *c, size_t bytes);

/*
 * 1 when the last failed command or pipeline reply failed because the
 * reply was over the bound (the node's data, not the network, is at fault).
 */
int conn_reply_too_large(const struct conn *c);

/* 1 when it failed waiting longer than the command timeout for a reply. */
int conn_reply_timed_out(const struct conn *c);

/* 1 on a Redis Cluster. */
int conn_is_cluster(const struct conn *c);

/* Why the last command that returned NULL failed ("" if none did). */
const char *conn_errstr(const struct conn *c);

/*
 * The hash slot of key (len bytes) as Redis Cluster computes it: CRC16 of
 * the content of the first {...} that has some, else of the whole key,
 * modulo 16384.
 */
unsigned conn_key_slot(const char *key, size_t len);

/*
 * argv (lens NULL: C strings) as the RESP command a node reads, into *out
 * (malloc'd, free()), byte for byte what hiredis's redisFormatCommandArgv
 * writes, without its sprintf per argument.  Its length, or -1 when out
 * of memory.
 */
int conn_format(char **out, int argc, const char **argv, const size_t *lens);

/*
 * Send one command (argc strings argv with lengths lens; lens NULL: C
 * strings) routed by route (a key, NULL: any node) and wait for its reply,
 * following redirects.  Returns the reply (free with freeReplyObject; an
 * error reply is a reply), or NULL when no node could be reached or the
 * connection failed (conn_errstr says why).
 */
struct redisReply *conn_command(struct conn *c, const char *route, int argc, const char **argv,
			 const size_t *lens);

/* conn_command with a hiredis format string ("HGET %s %s"). */
struct redisReply *conn_commandf(struct conn *c, const char *route, const char *fmt, ...);

/*
 * Queue a command of a pipeline (see above).  Returns 0, or -EIO when its
 * node cannot be reached (conn_errstr says why): the pipeline is then
 * abandoned, conn_reply returns NULL for it, and the next append starts a
 * new one.
 */
int conn_append(struct conn *c, const char *route, int argc, const char **argv,
		const size_t *lens);
int conn_appendf(struct conn *c, const char *route, const char *fmt, ...);

/*
 * The reply to the oldest queued command not yet answered, or NULL when
 * its connection failed (conn_errstr).  Read every queued command's reply
 * before any other command on c; the first command appended after a
 * failed reply starts a new pipeline (what was left is discarded).
 */
struct redisReply *conn_reply(struct conn *c);

/*
 * A transaction's answer: MULTI, then queued - 1 commands, then EXEC were
 * appended; skip the queued acknowledgements (MULTI's +OK and each
 * QUEUED: an error among them makes EXEC abort) and return EXEC's reply
 * (an array, nil when a WATCHed key changed, an error when it aborted),
 * or NULL when the connection failed (conn_errstr).
 */
struct redisReply *conn_exec_reply(struct conn *c, int queued);

struct conn_stats {
	uint64_t moved;		/* MOVED redirects followed */
	uint64_t ask;		/* ASK redirects followed */
	uint64_t refreshes;	/* slot map reads */
	uint64_t reconnects;	/* node connections made after the first */
	int nodes;		/* masters the slot map names (1 on a single server) */
};

void conn_get_stats(const struct conn *c, struct conn_stats *out);

/*
 * Parse a CLUSTER SLOTS reply into map (slot -> index into addrs, -1 when
 * no node serves it) and addrs (at most max_addrs masters).  Returns the
 * number of masters, or -EINVAL when the reply is not a slot map (with the
 * reason in err).  Exposed for tests and the fuzzer.
 */
int conn_parse_slots(const struct redisReply *r, int16_t *map, struct conn_addr *addrs,
		     int max_addrs, char *err, size_t errlen);

/* "host:port" (n bytes) into a; without ":port", 6379 unless need_port. */
int conn_addr_parse(const char *p, size_t n, struct conn_addr *a, int need_port);

/*
 * Parse a redirect error ("MOVED 3999 127.0.0.1:6381" / "ASK ...").
 * Returns 1 for MOVED, 2 for ASK, 0 for any other error, and -EINVAL for
 * a MOVED/ASK that does not parse.  Exposed for tests and the fuzzer.
 */
int conn_parse_redirect(const char *msg, unsigned *slot, struct conn_addr *to);

#endif
