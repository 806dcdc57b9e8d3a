/*
 * wake.c - fl:wake's reader; see wake.h.  The writer is store.c's
 * store_put_wake, on the probe's spool.
 */
#include "store/wake.h"

#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store.h"


/* Whether s (n bytes) is a stream id, MS-SEQ, that fits a cursor. */
static int stream_id(const char *s, size_t n)
{
	size_t dash = 0;

	if (!n || n >= sizeof(((struct wake_cursor *)0)->id))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '-' && !dash && i)
			dash = i;
		else if (s[i] < '0' || s[i] > '9')
			return 0;
	}
	return dash && dash + 1 < n;
}

/* The host an entry's fields name: "h" as a valid host name, or NULL. */
static const char *entry_host(const redisReply *fields, char *buf, size_t len)
{
	if (!fields || fields->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (size_t i = 0; i + 1 < fields->elements; i += 2) {
		const redisReply *k = fields->element[i], *v = fields->element[i + 1];

		if (!k || !v || k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
		    k->len != 1 || k->str[0] != 'h' || v->len >= len)
			continue;
		memcpy(buf, v->str, v->len);
		buf[v->len] = '\0';
		if (strlen(buf) == v->len && store_host_valid(buf))
			return buf;
	}
	return NULL;
}

int wake_decode(const redisReply *r, struct wake_cursor *cur, wake_host_fn fn, void *arg,
		char *err, size_t errlen)
{
	const redisReply *st, *entries;
	int wanted = 0;

	if (!r || r->type == REDIS_REPLY_NIL)
		return 0;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 || !(st = r->element[0]) ||
	    st->type != REDIS_REPLY_ARRAY || st->elements != 2 || !(entries = st->element[1]) ||
	    entries->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "XREAD " KEY_WAKE ": unexpected reply shape");
		return -1;
	}
	for (size_t i = 0; i < entries->elements; i++) {
		const redisReply *e = entries->element[i], *id;
		char host[256];
		const char *h;

		if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !(id = e->element[0]) ||
		    id->type != REDIS_REPLY_STRING || !stream_id(id->str, id->len))
			continue;
		memcpy(cur->id, id->str, id->len);
		cur->id[id->len] = '\0';
		h = entry_host(e->element[1], host, sizeof(host));
		if (h && fn(h, arg) > 0)
			wanted++;
	}
	return wanted;
}

int wake_wait(struct conn *c, struct wake_cursor *cur, int block_ms, wake_host_fn fn, void *arg,
	      char *err, size_t errlen)
{
	char block[16];
	const char *argv[] = { "XREAD", "COUNT", "256", "BLOCK", block, "STREAMS", KEY_WAKE,
			       cur->id };
	redisReply *r;
	int n;

	snprintf(block, sizeof(block), "%d", block_ms > 0 ? block_ms : 1);
	r = conn_command(c, KEY_WAKE, 8, argv, NULL);
	if (!r) {
		snprintf(err, errlen, "XREAD " KEY_WAKE ": %s", conn_errstr(c));
		return -1;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "XREAD " KEY_WAKE ": %s", r->str);
		freeReplyObject(r);
		return -1;
	}
	n = wake_decode(r, cur, fn, arg, err, errlen);
	freeReplyObject(r);
	return n;
}

int wake_cursor_init(struct conn *c, struct wake_cursor *cur, char *err, size_t errlen)
{
	const char *argv[] = { "XREVRANGE", KEY_WAKE, "+", "-", "COUNT", "1" };
	redisReply *r = conn_command(c, KEY_WAKE, 6, argv, NULL);
	const redisReply *id;

	if (!r || r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "XREVRANGE " KEY_WAKE ": %s", !r ? conn_errstr(c) :
			 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply type");
		if (r)
			freeReplyObject(r);
		return -1;
	}
	snprintf(cur->id, sizeof(cur->id), "0-0");
	if (r->elements == 1 && r->element[0]->type == REDIS_REPLY_ARRAY &&
	    r->element[0]->elements == 2 && (id = r->element[0]->element[0])->type ==
	    REDIS_REPLY_STRING && stream_id(id->str, id->len)) {
		memcpy(cur->id, id->str, id->len);
		cur->id[id->len] = '\0';
	}
	freeReplyObject(r);
	return 0;
}
