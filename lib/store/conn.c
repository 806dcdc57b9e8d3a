/*
 * conn.c - a connection to a single Redis server or a Redis Cluster; see
 * conn.h.
 *
 * Both shapes keep an array of nodes, each with its own hiredis context
 * (NULL until used, dropped on an I/O error).  A single server is node 0
 * and every command goes there; a cluster adds a node per master the slot
 * map names (and per address a MOVED/ASK points at) and routes by slot.
 *
 * Pipelines on a single server go straight through hiredis, so replies
 * stream as they arrive.  On a cluster every queued command is kept
 * (formatted) with its node, and the first conn_reply reads all of them,
 * node by node in queue order (each node answers its own commands in
 * order), then resends the redirected ones; replies are then handed out in
 * queue order.  Keeping the formatted command is what makes that resend
 * possible without the caller's help.
 */
#include "store/conn.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/log.h"
#include "core/secret.h"
#include "core/timeutil.h"
#include "store/link.h"
#include "store/store_internal.h"

#define CONN_MAX_NODES 128

struct conn_node {
	struct conn_addr addr;
	struct link *rc;
	int ever;		/* connected once (for the reconnect count) */
};

struct queued {
	char *cmd;		/* formatted command (cluster pipelines) */
	int len;
	int node;		/* -1: could not be sent */
	int slot;		/* -1: any node */
	int in_multi;		/* between MULTI and EXEC: no redirect following */
};

struct conn {
	struct conn_url url;
	struct link_tls *tls;	/* rediss:// */
	size_t reply_limit;
	uint64_t timeout_ns;
	int cluster;
	struct conn_node nodes[CONN_MAX_NODES];
	int nnodes;
	int16_t slot_node[CONN_SLOTS];	/* index into nodes, -1: unknown */
	int map_stale;
	/* cluster pipeline */
	struct queued *q;
	size_t nq, qcap;
	redisReply **replies;
	size_t next;		/* next reply to hand out */
	int drained;
	int in_multi;
	int failed;		/* this pipeline failed: no more replies from it */
	int too_large;		/* ...on a reply over the read bound */
	int timed_out;		/* ...waiting longer than the timeout */
	char errstr[256];
	struct conn_stats stats;
};

/* ---- nodes ------------------------------------------------------------- */

static void set_err(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_err(struct conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
	va_end(ap);
}

static const char *node_name(const struct conn *c, int i, char *buf, size_t len)
{
	if (!c->cluster && c->url.path[0])
		snprintf(buf, len, "%s", c->url.path);
	else
		snprintf(buf, len, "%s:%d", c->nodes[i].addr.host, c->nodes[i].addr.port);
	return buf;
}

static void node_drop(struct conn *c, int i)
{
	if (c->nodes[i].rc) {
		link_close(c->nodes[i].rc);
		c->nodes[i].rc = NULL;
	}
}

/* Node i's context, connecting (AUTH, SELECT) when it has none. */
static struct link *node_ctx(struct conn *c, int i)
{
	struct conn_node *n = &c->nodes[i];
	char name[300], why[300];
	struct link *rc;

	if (n->rc)
		return n->rc;
	node_name(c, i, name, sizeof(name));
	rc = !c->cluster && c->url.path[0] ?
		link_open_unix(c->url.path, c->timeout_ns, why, sizeof(why)) :
		link_open_tcp(n->addr.host, n->addr.port, c->tls, c->url.tls_server_name,
			      c->timeout_ns, why, sizeof(why));
	if (!rc) {
		set_err(c, "redis %s: %s", name, why);
		if (c->cluster)
			c->map_stale = 1;	/* its slots may have a new master */
		return NULL;
	}
	link_set_reply_limit(rc, c->reply_limit);
	if (c->url.password[0]) {
		const char *argv[3] = { "AUTH", c->url.user[0] ? c->url.user : c->url.password,
					c->url.password };

		if (link_call_ok(rc, c->url.user[0] ? 3 : 2, argv, why, sizeof(why)))
			goto fail;
	}
	if (c->url.db) {
		char db[16];
		const char *argv[2] = { "SELECT", db };

		snprintf(db, sizeof(db), "%d", c->url.db);
		if (link_call_ok(rc, 2, argv, why, sizeof(why)))
			goto fail;
	}
	if (n->ever)
		c->stats.reconnects++;
	n->ever = 1;
	n->rc = rc;
	return rc;
fail:
	set_err(c, "redis %s: %s", name, why);
	link_close(rc);
	return NULL;
}

/* Index of the node at a, adding it; -1 when the table is full. */
static int node_find(struct conn *c, const struct conn_addr *a)
{
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i].addr.port == a->port && !strcmp(c->nodes[i].addr.host, a->host))
			return i;
	if (c->nnodes == CONN_MAX_NODES)
		return -1;
	memset(&c->nodes[c->nnodes], 0, sizeof(c->nodes[0]));
	c->nodes[c->nnodes].addr = *a;
	return c->nnodes++;
}

/*
 * Read the slot map from the first node that answers: known nodes first
 * (the map may have moved on from the seeds), then the seeds.
 */
static int refresh_slots(struct conn *c)
{
	struct conn_addr addrs[CONN_MAX_NODES];
	int16_t *tmp = malloc(sizeof(int16_t) * CONN_SLOTS);
	int tried = 0, known = c->nnodes;
	char why[300] = "no node answered";

	if (!tmp) {
		set_err(c, "out of memory");
		return -ENOMEM;
	}
	for (int k = 0; k < known + c->url.nseeds; k++) {
		int i = k < known ? k : node_find(c, &c->url.seeds[k - known]);
		const char *argv[2] = { "CLUSTER", "SLOTS" };
		struct link *rc;
		redisReply *r;
		int n;

		if (i < 0 || (k >= known && i < known))
			continue;	/* table full, or a seed already tried as a node */
		tried++;
		rc = node_ctx(c, i);
		if (!rc) {
			snprintf(why, sizeof(why), "%s", c->errstr);
			continue;
		}
		r = link_call(rc, 2, argv);
		if (!r) {
			snprintf(why, sizeof(why), "%s:%d: %s", c->nodes[i].addr.host,
				 c->nodes[i].addr.port, link_errstr(rc));
			node_drop(c, i);
			continue;
		}
		if (r->type == REDIS_REPLY_ERROR) {
			snprintf(why, sizeof(why), "%s:%d: %s", c->nodes[i].addr.host,
				 c->nodes[i].addr.port, r->str);
			freeReplyObject(r);
			continue;
		}
		n = conn_parse_slots(r, tmp, addrs, CONN_MAX_NODES, why, sizeof(why));
		freeReplyObject(r);
		if (n <= 0) {
			if (n == 0)
				snprintf(why, sizeof(why), "CLUSTER SLOTS: no slot is served");
			continue;
		}
		for (int s = 0; s < CONN_SLOTS; s++)
			c->slot_node[s] = (int16_t)(tmp[s] < 0 ? -1 : node_find(c, &addrs[tmp[s]]));
		c->stats.refreshes++;
		c->stats.nodes = n;
		c->map_stale = 0;
		free(tmp);
		return 0;
	}
	free(tmp);
	set_err(c, "redis cluster: cannot read the slot map (%d nodes tried): %s", tried, why);
	return -EIO;
}

/* ---- open, close -------------------------------------------------------- */

struct conn *conn_open(const char *url, uint64_t timeout_ns, char *err, size_t errlen)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (conn_url_parse(url, &c->url, err, errlen)) {
		free(c);
		return NULL;
	}
	/*
	 * hiredis writes with write(2): a peer that went away would kill the
	 * process with SIGPIPE instead of returning EPIPE.  Nothing in faultline
	 * wants SIGPIPE's default action.
	 */
	signal(SIGPIPE, SIG_IGN);
	if (c->url.password_file[0] &&
	    secret_file_read(c->url.password_file, c->url.password, sizeof(c->url.password),
			     c->errstr, sizeof(c->errstr))) {
		char shown[600];

		conn_url_redacted(url, shown, sizeof(shown));
		snprintf(err, errlen, "redis URL '%s': password_file %s", shown, c->errstr);
		free(c);
		return NULL;
	}
	if (c->url.tls) {
		c->tls = link_tls_new(c->url.tls_ca, c->url.tls_cert, c->url.tls_key, c->errstr,
				      sizeof(c->errstr));
		if (!c->tls)
			goto fail;
	}
	c->timeout_ns = timeout_ns ? timeout_ns : 2 * NSEC_PER_SEC;
	c->cluster = c->url.cluster;
	for (int s = 0; s < CONN_SLOTS; s++)
		c->slot_node[s] = -1;
	if (c->cluster) {
		if (refresh_slots(c))
			goto fail;
	} else {
		snprintf(c->nodes[0].addr.host, sizeof(c->nodes[0].addr.host), "%s", c->url.host);
		c->nodes[0].addr.port = c->url.port;
		c->nnodes = 1;
		c->stats.nodes = 1;
		if (!node_ctx(c, 0))
			goto fail;
	}
	c->errstr[0] = '\0';
	return c;
fail:
	snprintf(err, errlen, "%s", c->errstr);
	conn_close(c);
	return NULL;
}

static void pipeline_reset(struct conn *c)
{
	/*
	 * Replies still owed by a node for an abandoned pipeline would answer
	 * the next commands sent there: such a node is dropped.
	 */
	if (!c->drained)
		for (size_t i = 0; i < c->nq; i++)
			if (c->q[i].node >= 0)
				node_drop(c, c->q[i].node);
	for (size_t i = 0; i < c->nq; i++) {
		free(c->q[i].cmd);
		if (c->replies && i >= c->next && c->replies[i])
			freeReplyObject(c->replies[i]);
	}
	c->nq = 0;
	c->next = 0;
	c->drained = 0;
	c->in_multi = 0;
	c->failed = 0;
	c->too_large = 0;
	c->timed_out = 0;
}

void conn_close(struct conn *c)
{
	if (!c)
		return;
	pipeline_reset(c);
	for (int i = 0; i < c->nnodes; i++)
		node_drop(c, i);
	free(c->q);
	free(c->replies);
	link_tls_free(c->tls);
	explicit_bzero(c->url.password, sizeof(c->url.password));
	free(c);
}

void conn_set_reply_limit(struct conn *c, size_t bytes)
{
	c->reply_limit = bytes;
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i].rc)
			link_set_reply_limit(c->nodes[i].rc, bytes);
}

int conn_is_cluster(const struct conn *c)
{
	return c->cluster;
}

const char *conn_errstr(const struct conn *c)
{
	return c->errstr;
}

int conn_reply_too_large(const struct conn *c)
{
	return c->too_large;
}

int conn_reply_timed_out(const struct conn *c)
{
	return c->timed_out;
}

void conn_get_stats(const struct conn *c, struct conn_stats *out)
{
	*out = c->stats;
}

/* ---- routing and one exchange -------------------------------------------- */

/* The node a command for slot goes to (-1: any), refreshing a stale map. */
static int route_node(struct conn *c, int slot)
{
	if (!c->cluster)
		return 0;
	if (c->map_stale)
		refresh_slots(c);	/* on failure keep the old map: it may still serve */
	if (slot >= 0 && c->slot_node[slot] >= 0)
		return c->slot_node[slot];
	if (slot >= 0) {
		set_err(c, "redis cluster: no node serves slot %d", slot);
		return -1;
	}
	for (int s = 0; s < CONN_SLOTS; s++)
		if (c->slot_node[s] >= 0)
			return c->slot_node[s];
	set_err(c, "redis cluster: the slot map names no node");
	return -1;
}

static int slot_of(const struct conn *c, const char *route)
{
	if (!c->cluster || !route)
		return -1;
	return (int)conn_key_slot(route, strlen(route));
}

/* Read one reply from node i; on an I/O error drop the node. */
static redisReply *node_reply(struct conn *c, int i)
{
	struct link *rc = c->nodes[i].rc;
	redisReply *r = rc ? link_reply(rc) : NULL;
	char name[300];

	if (r)
		return r;
	if (rc && link_too_large(rc))
		c->too_large = 1;
	if (rc && link_timed_out(rc))
		c->timed_out = 1;
	set_err(c, "redis %s: %s", node_name(c, i, name, sizeof(name)),
		rc && link_errstr(rc)[0] ? link_errstr(rc) : "connection lost");
	node_drop(c, i);
	if (c->cluster)
		c->map_stale = 1;
	return NULL;
}

static void pause_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Send formatted command cmd to node (-1: route by slot) and read its
 * reply, following MOVED, ASK and TRYAGAIN.
 */
static redisReply *exchange(struct conn *c, int slot, int node, const char *cmd, size_t len)
{
	int asking = 0;

	if (node < 0)
		node = route_node(c, slot);
	for (int hop = 0; node >= 0 && hop <= CONN_REDIRECTS; hop++) {
		static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
		struct link *rc = node_ctx(c, node);
		struct conn_addr to;
		unsigned rslot;
		redisReply *r;
		int kind;

		if (!rc)
			break;
		if ((asking && link_append(rc, asking_cmd, sizeof(asking_cmd) - 1)) ||
		    link_append(rc, cmd, len)) {
			set_err(c, "out of memory");
			return NULL;
		}
		if (asking) {
			r = node_reply(c, node);
			if (!r)
				return NULL;
			freeReplyObject(r);
			asking = 0;
		}
		r = node_reply(c, node);
		if (!r)
			return NULL;
		if (!c->cluster || r->type != REDIS_REPLY_ERROR)
			return r;
		if (!strncmp(r->str, "TRYAGAIN", 8)) {
			freeReplyObject(r);
			pause_ms(20 << hop);
			continue;
		}
		kind = conn_parse_redirect(r->str, &rslot, &to);
		if (kind <= 0)
			return r;
		freeReplyObject(r);
		node = node_find(c, &to);
		if (node < 0) {
			set_err(c, "redis cluster: more than %d nodes", CONN_MAX_NODES);
			return NULL;
		}
		if (kind == 1) {
			c->stats.moved++;
			c->slot_node[rslot] = (int16_t)node;
			c->map_stale = 1;
		} else {
			c->stats.ask++;
			asking = 1;
		}
	}
	if (node >= 0 && !c->errstr[0])
		set_err(c, "redis cluster: more than %d redirects", CONN_REDIRECTS);
	return NULL;
}

/* Send formatted cmd (len bytes, -1: formatting failed) routed by route; frees it. */
static redisReply *command_formatted(struct conn *c, const char *route, char *cmd, int len)
{
	redisReply *r;

	if (len < 0) {
		set_err(c, "bad command format or out of memory");
		return NULL;
	}
	c->errstr[0] = '\0';
	c->too_large = 0;
	c->timed_out = 0;
	r = exchange(c, slot_of(c, route), -1, cmd, (size_t)len);
	redisFreeCommand(cmd);
	return r;
}

redisReply *conn_command(struct conn *c, const char *route, int argc, const char **argv,
			 const size_t *lens)
{
	char *cmd = NULL;
	int len = conn_format(&cmd, argc, argv, lens);

	return command_formatted(c, route, cmd, len);
}

redisReply *conn_commandf(struct conn *c, const char *route, const char *fmt, ...)
{
	va_list ap;
	char *cmd = NULL;
	int len;

	va_start(ap, fmt);
	len = redisvFormatCommand(&cmd, fmt, ap);
	va_end(ap);
	return command_formatted(c, route, cmd, len);
}

int conn_masters(struct conn *c, int *idx, int max)
{
	int n = 0;

	if (!c->cluster) {
		if (max > 0)
			idx[n++] = 0;
		return n;
	}
	if (c->map_stale && refresh_slots(c))
		return -EIO;
	for (int s = 0; s < CONN_SLOTS; s++) {
		int node = c->slot_node[s], seen = 0;

		if (node < 0)
			continue;
		for (int i = 0; i < n && !seen; i++)
			seen = idx[i] == node;
		if (!seen && n < max)
			idx[n++] = node;
	}
	return n;
}

redisReply *conn_command_at(struct conn *c, int node, int argc, const char **argv,
			    const size_t *lens)
{
	char *cmd = NULL;
	int len = conn_format(&cmd, argc, argv, lens);
	redisReply *r;

	if (len < 0 || node < 0 || node >= c->nnodes) {
		redisFreeCommand(cmd);
		set_err(c, "bad command or node");
		return NULL;
	}
	c->errstr[0] = '\0';
	r = exchange(c, -1, node, cmd, (size_t)len);
	redisFreeCommand(cmd);
	return r;
}

/* ---- pipelines ------------------------------------------------------------ */

static int cmd_is(const char *cmd, int len, const char *name)
{
	/* "*N\r\n$L\r\nNAME\r\n": the first argument of a formatted command */
	const char *p = memchr(cmd, '\n', (size_t)len);
	size_t n = strlen(name);

	if (!p || !(p = memchr(p + 1, '\n', (size_t)(cmd + len - p - 1))))
		return 0;
	p++;
	return cmd + len - p > (long)n + 1 && !strncasecmp(p, name, n) && p[n] == '\r';
}

/* Queue formatted cmd (taken over) for route. */
static int append_formatted(struct conn *c, const char *route, char *cmd, int len)
{
	struct queued *q;
	int node;

	if (c->drained || c->failed)
		pipeline_reset(c);
	c->errstr[0] = '\0';
	if (!c->cluster) {
		struct link *rc = node_ctx(c, 0);
		int ret = rc && link_append(rc, cmd, (size_t)len) == 0;

		redisFreeCommand(cmd);
		if (!ret) {
			if (!c->errstr[0])
				set_err(c, "redis: %s", rc ? "out of memory" : "not connected");
			node_drop(c, 0);
			c->failed = 1;
		}
		return ret ? 0 : -EIO;
	}
	if (c->nq == c->qcap) {
		size_t cap = c->qcap ? 2 * c->qcap : 64;
		struct queued *nq = realloc(c->q, cap * sizeof(*nq));
		redisReply **nr;

		if (!nq) {
			redisFreeCommand(cmd);
			set_err(c, "out of memory");
			return -ENOMEM;
		}
		c->q = nq;
		nr = realloc(c->replies, cap * sizeof(*nr));
		if (!nr) {
			redisFreeCommand(cmd);
			set_err(c, "out of memory");
			return -ENOMEM;
		}
		c->replies = nr;
		c->qcap = cap;
	}
	q = &c->q[c->nq];
	q->cmd = cmd;
	q->len = len;
	q->slot = slot_of(c, route);
	if (cmd_is(cmd, len, "MULTI"))
		c->in_multi = 1;
	q->in_multi = c->in_multi;
	if (cmd_is(cmd, len, "EXEC") || cmd_is(cmd, len, "DISCARD"))
		c->in_multi = 0;
	node = route_node(c, q->slot);
	if (node >= 0 && (!node_ctx(c, node) ||
			  link_append(c->nodes[node].rc, cmd, (size_t)len)))
		node = -1;
	q->node = node;
	c->replies[c->nq] = NULL;
	c->nq++;
	if (node < 0) {
		c->failed = 1;
		return -EIO;
	}
	return 0;
}

int conn_append(struct conn *c, const char *route, int argc, const char **argv,
		const size_t *lens)
{
	char *cmd;
	int len = conn_format(&cmd, argc, argv, lens);

	if (len < 0) {
		set_err(c, "out of memory");
		return -ENOMEM;
	}
	return append_formatted(c, route, cmd, len);
}

int conn_appendf(struct conn *c, const char *route, const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int len;

	va_start(ap, fmt);
	len = redisvFormatCommand(&cmd, fmt, ap);
	va_end(ap);
	if (len < 0) {
		set_err(c, "bad command format or out of memory");
		return -ENOMEM;
	}
	return append_formatted(c, route, cmd, len);
}

/* Read every queued reply, then resend what was redirected (cluster). */
static void drain(struct conn *c)
{
	int failed[CONN_MAX_NODES] = { 0 };

	for (size_t i = 0; i < c->nq; i++) {
		int node = c->q[i].node;

		if (node < 0 || failed[node]) {
			c->replies[i] = NULL;
			continue;
		}
		c->replies[i] = node_reply(c, node);
		if (!c->replies[i])
			failed[node] = 1;
	}
	for (size_t i = 0; i < c->nq; i++) {
		redisReply *r = c->replies[i];
		struct conn_addr to;
		unsigned slot;

		if (!r || r->type != REDIS_REPLY_ERROR)
			continue;
		if (c->q[i].in_multi) {
			if (conn_parse_redirect(r->str, &slot, &to) > 0)
				c->map_stale = 1;
			continue;
		}
		if (conn_parse_redirect(r->str, &slot, &to) > 0 || !strncmp(r->str, "TRYAGAIN", 8)) {
			freeReplyObject(r);
			/* exchange follows this first answer again: same result */
			c->replies[i] = exchange(c, c->q[i].slot, -1, c->q[i].cmd,
						 (size_t)c->q[i].len);
		}
	}
	c->drained = 1;
}

redisReply *conn_reply(struct conn *c)
{
	redisReply *r;

	if (!c->cluster) {
		if (c->failed || !c->nodes[0].rc) {
			if (!c->errstr[0])
				set_err(c, "redis: connection lost");
			c->failed = 1;
			return NULL;
		}
		r = node_reply(c, 0);
		if (!r)
			c->failed = 1;
		return r;
	}
	if (c->failed) {
		if (!c->errstr[0])
			set_err(c, "redis cluster: this pipeline was abandoned");
		return NULL;
	}
	if (!c->drained)
		drain(c);
	if (c->next >= c->nq) {
		set_err(c, "redis: no command is waiting for a reply");
		return NULL;
	}
	r = c->replies[c->next];
	c->replies[c->next++] = NULL;
	if (!r && !c->errstr[0])
		set_err(c, "redis cluster: a node went away");
	if (c->next == c->nq) {
		int too_large = c->too_large, timed_out = c->timed_out;	/* for its caller */

		pipeline_reset(c);
		c->too_large = too_large;
		c->timed_out = timed_out;
	}
	return r;
}

int store_reply_failed(struct conn *c, redisReply *r, const char *what, char *err,
		       size_t errlen)
{
	snprintf(err, errlen, "redis %s: %s", what,
		 r && r->type == REDIS_REPLY_ERROR ? r->str : r ? "unexpected reply" :
		 conn_errstr(c));
	if (r)
		freeReplyObject(r);
	return -EIO;
}

int store_hscan(struct conn *c, const char *key, int count, store_hscan_cb cb, void *arg,
		char *err, size_t errlen)
{
	char cursor[32] = "0", what[160];

	snprintf(what, sizeof(what), "HSCAN %s", key);
	do {
		redisReply *r = conn_commandf(c, key, "HSCAN %s %s COUNT %d", key, cursor, count);
		const redisReply *kv;
		int stop = 0;

		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[0]->len >= sizeof(cursor) ||
		    (kv = r->element[1])->type != REDIS_REPLY_ARRAY)
			return store_reply_failed(c, r, what, err, errlen);
		for (size_t i = 0; i + 1 < kv->elements && !stop; i += 2)
			stop = cb(kv->element[i], kv->element[i + 1], arg);
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		freeReplyObject(r);
		if (stop)
			return stop;
	} while (strcmp(cursor, "0"));
	return 0;
}

redisReply *conn_exec_reply(struct conn *c, int queued)
{
	redisReply *r;

	for (int i = 0; i < queued; i++) {
		r = conn_reply(c);
		if (!r)
			return NULL;
		freeReplyObject(r);
	}
	return conn_reply(c);
}
