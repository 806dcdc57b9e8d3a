/*
 * alert_stream.c - the alert events stream, its consumer group, dead
 * letters and notification records; see alert_stream.h.
 */
#include "store/alert_stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "store/keyspace.h"

#define STREAM KEY_ALERTS
#define DEAD_STREAM KEY_ALERTS_DEAD
#define GROUP KEY_ALERTS_GROUP
#define NOTIFICATIONS KEY_NOTIFICATIONS

/*
 * How a command went: r NULL (connection dropped), an error reply, or
 * fine (0).  what names the command in err.
 */
static int answer(struct conn *rc, const redisReply *r, const char *what, char *err,
		  size_t errlen)
{
	if (!r) {
		snprintf(err, errlen, "%s: %s", what, conn_errstr(rc)[0] ? conn_errstr(rc) : "no answer");
		return ALERT_STREAM_LOST;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "%s: %s", what, r->str);
		return strncmp(r->str, "NOGROUP", 7) ? ALERT_STREAM_REFUSED : ALERT_STREAM_NOGROUP;
	}
	return 0;
}

int alert_stream_create_group(struct conn *rc, char *err, size_t errlen)
{
	redisReply *r = conn_commandf(rc, STREAM, "XGROUP CREATE %s %s 0 MKSTREAM", STREAM, GROUP);
	int ret = answer(rc, r, "XGROUP CREATE " STREAM, err, errlen);

	if (ret == ALERT_STREAM_REFUSED && strstr(r->str, "BUSYGROUP"))
		ret = 0;	/* it exists */
	if (r)
		freeReplyObject(r);
	return ret;
}

/*
 * Give each entry of an XREADGROUP / XAUTOCLAIM entry list to cb.
 * Returns how many, or -1 if the reply is not of that shape.
 */
static int each_entry(const redisReply *entries, alert_stream_cb cb, void *arg, char *last,
		      size_t lastlen)
{
	int n = 0;

	if (entries->type != REDIS_REPLY_ARRAY)
		return -1;
	for (size_t i = 0; i < entries->elements; i++) {
		const redisReply *e = entries->element[i], *f, *id;
		const redisReply *event = NULL;

		if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
		    (id = e->element[0])->type != REDIS_REPLY_STRING)
			return -1;
		f = e->element[1];
		n++;
		if (last)
			snprintf(last, lastlen, "%s", id->str);
		for (size_t k = 0; f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements && !event;
		     k += 2)
			if (f->element[k]->type == REDIS_REPLY_STRING &&
			    f->element[k + 1]->type == REDIS_REPLY_STRING &&
			    !strcmp(f->element[k]->str, "e"))
				event = f->element[k + 1];
		if (event)
			cb(id->str, event->str, event->len, NULL, arg);
		else
			cb(id->str, NULL, 0, f->type == REDIS_REPLY_ARRAY ? "no \"e\" field" :
			   "trimmed from the stream before it was delivered", arg);
	}
	return n;
}

int alert_stream_read(struct conn *rc, const char *consumer, const char *from, int count,
		      int block_ms, alert_stream_cb cb, void *arg, char *last, size_t lastlen,
		      char *err, size_t errlen)
{
	char cnt[16], block[16];
	const char *argv[11] = { "XREADGROUP", "GROUP", GROUP, consumer, "COUNT", cnt };
	int argc = 6, n = 0, ret;
	redisReply *r;

	snprintf(cnt, sizeof(cnt), "%d", count);
	if (block_ms) {
		snprintf(block, sizeof(block), "%d", block_ms);
		argv[argc++] = "BLOCK";
		argv[argc++] = block;
	}
	argv[argc++] = "STREAMS";
	argv[argc++] = STREAM;
	argv[argc++] = from;
	r = conn_command(rc, STREAM, argc, argv, NULL);
	if ((ret = answer(rc, r, "XREADGROUP " STREAM, err, errlen))) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
		const redisReply *st = r->element[0];

		if (st->type != REDIS_REPLY_ARRAY || st->elements != 2 ||
		    (n = each_entry(st->element[1], cb, arg, last, lastlen)) < 0) {
			snprintf(err, errlen, "XREADGROUP " STREAM ": unexpected reply shape");
			n = ALERT_STREAM_REFUSED;
		}
	} else if (r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "XREADGROUP " STREAM ": unexpected reply type");
		n = ALERT_STREAM_REFUSED;
	}
	freeReplyObject(r);
	return n;
}

/*
 * One command of head[0..nh), then ids[0..n), then tail (NULL: none),
 * named what in err.
 */
static int ids_command(struct conn *rc, const char *const *head, int nh, const char *const *ids,
		       int n, const char *tail, const char *what, char *err, size_t errlen)
{
	const char **argv = malloc((size_t)(nh + n + 1) * sizeof(*argv));
	redisReply *r;
	int argc = 0, ret;

	if (!argv) {
		snprintf(err, errlen, "%s: out of memory", what);
		return ALERT_STREAM_REFUSED;
	}
	for (int i = 0; i < nh; i++)
		argv[argc++] = head[i];
	for (int i = 0; i < n; i++)
		argv[argc++] = ids[i];
	if (tail)
		argv[argc++] = tail;
	r = conn_command(rc, argv[1], argc, argv, NULL);
	free(argv);
	ret = answer(rc, r, what, err, errlen);
	if (r)
		freeReplyObject(r);
	return ret;
}

int alert_stream_ack(struct conn *rc, const char *const *ids, int n, char *err, size_t errlen)
{
	const char *const head[] = { "XACK", STREAM, GROUP };

	return n <= 0 ? 0 : ids_command(rc, head, 3, ids, n, NULL, "XACK " STREAM, err, errlen);
}

int alert_stream_hold(struct conn *rc, const char *consumer, const char *const *ids, int n,
		      char *err, size_t errlen)
{
	const char *const head[] = { "XCLAIM", STREAM, GROUP, consumer, "0" };

	return n <= 0 ? 0 : ids_command(rc, head, 5, ids, n, "JUSTID", "XCLAIM " STREAM, err,
					errlen);
}

int alert_stream_claim(struct conn *rc, const char *consumer, uint64_t idle_ms,
		       char cursor[32], alert_stream_cb cb, void *arg, char *err, size_t errlen)
{
	char idle[24];
	const char *argv[] = { "XAUTOCLAIM", STREAM, GROUP, consumer, idle, cursor, "COUNT", "100" };
	redisReply *r;
	int n, ret;

	snprintf(idle, sizeof(idle), "%llu", (unsigned long long)idle_ms);
	r = conn_command(rc, argv[1], 8, argv, NULL);
	if ((ret = answer(rc, r, "XAUTOCLAIM " STREAM, err, errlen))) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    (n = each_entry(r->element[1], cb, arg, NULL, 0)) < 0) {
		snprintf(err, errlen, "XAUTOCLAIM " STREAM ": unexpected reply shape");
		freeReplyObject(r);
		return ALERT_STREAM_REFUSED;
	}
	/* Redis >= 7: ids that were pending but are gone from the stream */
	if (r->elements >= 3 && r->element[2]->type == REDIS_REPLY_ARRAY)
		for (size_t i = 0; i < r->element[2]->elements; i++)
			if (r->element[2]->element[i]->type == REDIS_REPLY_STRING)
				cb(r->element[2]->element[i]->str, NULL, 0,
				   "trimmed from the stream before it was delivered", arg);
	snprintf(cursor, 32, "%s", r->element[0]->str);
	freeReplyObject(r);
	return n;
}

int alert_stream_dead_letter(struct conn *rc, const char *reason, const char *group,
			     const char *receiver, const char *ids, const char *body, size_t len,
			     char *err, size_t errlen)
{
	const char *argv[] = { "XADD", DEAD_STREAM, "MAXLEN", "~", KEY_STREAM_MAXLEN, "*",
			       "reason", reason, "group", group, "receiver", receiver,
			       "entries", ids, "body", body };
	size_t lens[16];
	redisReply *r;
	int ret;

	for (int i = 0; i < 16; i++)
		lens[i] = strlen(argv[i]);
	lens[15] = len;
	r = conn_command(rc, argv[1], 16, argv, lens);
	ret = answer(rc, r, "XADD " DEAD_STREAM, err, errlen);
	if (r)
		freeReplyObject(r);
	return ret;
}

int alert_stream_record(struct conn *rc, const char *what, const char *group,
			const char *detail, char *err, size_t errlen)
{
	redisReply *r = conn_commandf(rc, NOTIFICATIONS, "XADD %s MAXLEN ~ " KEY_STREAM_MAXLEN
				     " * what %s group %s detail %s",
				     NOTIFICATIONS, what, group, detail ? detail : "");
	int ret = answer(rc, r, "XADD " NOTIFICATIONS, err, errlen);

	if (r)
		freeReplyObject(r);
	return ret;
}

/* Stream ids "ms-seq" in order: -1, 0, 1. */
static int id_cmp(const char *a, const char *b)
{
	unsigned long long am = 0, as = 0, bm = 0, bs = 0;

	sscanf(a, "%llu-%llu", &am, &as);
	sscanf(b, "%llu-%llu", &bm, &bs);
	if (am != bm)
		return am < bm ? -1 : 1;
	return as < bs ? -1 : as > bs;
}

/* KEYS[1]: the fingerprint's key; ARGV: id, ttl ms.  Keeps the newer id. */
static const char MARK_SCRIPT[] =
	"local cur = redis.call('GET', KEYS[1])\n"
	"local function n(id) local m, s = string.match(id, '(%d+)-(%d+)')\n"
	"  return tonumber(m), tonumber(s) end\n"
	"if cur then\n"
	"  local cm, cs = n(cur)\n"
	"  local im, is = n(ARGV[1])\n"
	"  if cm > im or (cm == im and cs >= is) then return 0 end\n"
	"end\n"
	"redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
	"return 1\n";

int alert_stream_mark_latest(struct conn *rc, const char *fingerprint, const char *id,
			     char *err, size_t errlen)
{
	char key[96];
	redisReply *r;
	int ret;

	key_alert_latest(key, sizeof(key), fingerprint);
	r = conn_commandf(rc, STREAM, "EVAL %s 1 %s %s %llu", MARK_SCRIPT, key, id,
			  (unsigned long long)KEY_ALERT_LATEST_TTL_MS);
	ret = answer(rc, r, "EVAL (latest entry of an alert)", err, errlen);
	if (r)
		freeReplyObject(r);
	return ret;
}

int alert_stream_superseded(struct conn *rc, const char *const *fps, const char *const *ids,
			    int n, char *newer, char *err, size_t errlen)
{
	const char **argv = calloc((size_t)n + 1, sizeof(*argv));
	char (*keys)[96] = calloc((size_t)n + 1, sizeof(*keys));
	redisReply *r = NULL;
	int ret;

	memset(newer, 0, (size_t)n);
	if (!argv || !keys) {
		free(argv);
		free(keys);
		snprintf(err, errlen, "out of memory");
		return ALERT_STREAM_REFUSED;
	}
	argv[0] = "MGET";
	for (int i = 0; i < n; i++) {
		key_alert_latest(keys[i], sizeof(keys[i]), fps[i]);
		argv[1 + i] = keys[i];
	}
	r = n ? conn_command(rc, STREAM, n + 1, argv, NULL) : NULL;
	ret = n ? answer(rc, r, "MGET (latest entries of alerts)", err, errlen) : 0;
	if (!ret && n && (r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)n)) {
		snprintf(err, errlen, "MGET (latest entries of alerts): unexpected reply shape");
		ret = ALERT_STREAM_REFUSED;
	}
	for (int i = 0; !ret && i < n; i++)
		newer[i] = r->element[i]->type == REDIS_REPLY_STRING &&
			   id_cmp(r->element[i]->str, ids[i]) > 0;
	if (r)
		freeReplyObject(r);
	free(argv);
	free(keys);
	return ret;
}
