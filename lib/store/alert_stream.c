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
#include "store/store_internal.h"

#define STREAM KEY_ALERTS
#define DEAD_STREAM KEY_ALERTS_DEAD
#define GROUP KEY_ALERTS_GROUP
#define NOTIFICATIONS KEY_NOTIFICATIONS

int alert_stream_answer(struct conn *rc, const redisReply *r, const char *what, char *err,
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
	int ret = alert_stream_answer(rc, r, "XGROUP CREATE " STREAM, err, errlen);

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
	if ((ret = alert_stream_answer(rc, r, "XREADGROUP " STREAM, err, errlen))) {
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
	ret = alert_stream_answer(rc, r, what, err, errlen);
	if (r)
		freeReplyObject(r);
	return ret;
}

int alert_stream_ack(struct conn *rc, const char *const *ids, int n, char *err, size_t errlen)
{
	const char *const head[] = { "XACK", STREAM, GROUP };

	return n <= 0 ? 0 : ids_command(rc, head, 3, ids, n, NULL, "XACK " STREAM, err, errlen);
}

/*
 * KEYS[1] the stream; ARGV group, consumer, then ids.  Resets the idle time
 * of each id still pending for consumer; returns the ids that are not
 * (another consumer claimed them, or they were acknowledged).
 */
static const char HOLD_SCRIPT[] =
	"local gone = {}\n"
	"for i = 3, #ARGV do\n"
	"  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)\n"
	"  if p[1] and p[1][2] == ARGV[2] then\n"
	"    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')\n"
	"  else gone[#gone + 1] = ARGV[i] end\n"
	"end\n"
	"return gone\n";

/* KEYS[1] the stream; ARGV group, then ids: how many of them are pending. */
static const char PENDING_SCRIPT[] =
	"local n = 0\n"
	"for i = 2, #ARGV do\n"
	"  if redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)[1] then n = n + 1 end\n"
	"end\n"
	"return n\n";

int alert_stream_pending_of(struct conn *rc, const char *const *ids, int n, int *pending,
			    char *err, size_t errlen)
{
	const char *const head[] = { "EVAL", PENDING_SCRIPT, "1", STREAM, GROUP };
	const char **argv;
	redisReply *r;
	int argc = 0, ret;

	*pending = 0;
	if (n <= 0)
		return 0;
	argv = malloc((size_t)(n + 5) * sizeof(*argv));
	if (!argv) {
		snprintf(err, errlen, "out of memory");
		return ALERT_STREAM_REFUSED;
	}
	for (int i = 0; i < 5; i++)
		argv[argc++] = head[i];
	for (int i = 0; i < n; i++)
		argv[argc++] = ids[i];
	r = conn_command(rc, STREAM, argc, argv, NULL);
	free(argv);
	ret = alert_stream_answer(rc, r, "EVAL (pending entries) " STREAM, err, errlen);
	if (!ret && r->type == REDIS_REPLY_INTEGER)
		*pending = (int)r->integer;
	else if (!ret) {
		snprintf(err, errlen, "EVAL (pending entries) " STREAM ": not a count");
		ret = ALERT_STREAM_REFUSED;
	}
	if (r)
		freeReplyObject(r);
	return ret;
}

int alert_stream_hold(struct conn *rc, const char *consumer, const char *const *ids, int n,
		      alert_stream_gone_cb gone, void *arg, char *err, size_t errlen)
{
	const char **argv;
	redisReply *r;
	int argc = 0, ret;

	if (n <= 0)
		return 0;
	argv = malloc((size_t)(n + 6) * sizeof(*argv));
	if (!argv) {
		snprintf(err, errlen, "out of memory");
		return ALERT_STREAM_REFUSED;
	}
	argv[argc++] = "EVAL";
	argv[argc++] = HOLD_SCRIPT;
	argv[argc++] = "1";
	argv[argc++] = STREAM;
	argv[argc++] = GROUP;
	argv[argc++] = consumer;
	for (int i = 0; i < n; i++)
		argv[argc++] = ids[i];
	r = conn_command(rc, STREAM, argc, argv, NULL);
	free(argv);
	if ((ret = alert_stream_answer(rc, r, "EVAL (keep held entries) " STREAM, err, errlen))) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
		if (r->element[i]->type == REDIS_REPLY_STRING)
			gone(r->element[i]->str, arg);
	freeReplyObject(r);
	return 0;
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
	if ((ret = alert_stream_answer(rc, r, "XAUTOCLAIM " STREAM, err, errlen))) {
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
	ret = alert_stream_answer(rc, r, "XADD " DEAD_STREAM, err, errlen);
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
	int ret = alert_stream_answer(rc, r, "XADD " NOTIFICATIONS, err, errlen);

	if (r)
		freeReplyObject(r);
	return ret;
}

/* "ms-seq" into its two parts; 0 when it is not a stream id. */
static int parse_id(const char *id, unsigned long long *ms, unsigned long long *seq)
{
	return sscanf(id, "%llu-%llu", ms, seq) == 2 ? 0 : -1;
}

/* The value of field name in an XINFO reply's flat [name, value, ...] array. */
static const redisReply *info_field(const redisReply *a, const char *name)
{
	for (size_t i = 0; a->type == REDIS_REPLY_ARRAY && i + 1 < a->elements; i += 2)
		if (a->element[i]->type == REDIS_REPLY_STRING && !strcmp(a->element[i]->str, name))
			return a->element[i + 1];
	return NULL;
}

/*
 * What the groups of fl:alerts still need: *need_ms and *need_seq the oldest
 * entry some group has not acknowledged (UINT64_MAX when none: every
 * group is up to date), *undelivered the most unacknowledged of any group,
 * *ngroups how many groups.  Returns 0 or an ALERT_STREAM_ error.
 */
static int groups_need(struct conn *rc, unsigned long long *need_ms,
		       unsigned long long *need_seq, uint64_t *undelivered, int *ngroups,
		       char *err, size_t errlen)
{
	redisReply *r = conn_commandf(rc, STREAM, "XINFO GROUPS %s", STREAM);
	int ret = alert_stream_answer(rc, r, "XINFO GROUPS " STREAM, err, errlen);

	*need_ms = *need_seq = ~0ULL;
	*undelivered = 0;
	*ngroups = 0;
	if (ret) {
		if (r)
			freeReplyObject(r);
		/* no stream yet: nothing is needed */
		return ret == ALERT_STREAM_REFUSED && strstr(err, "no such key") ? 0 : ret;
	}
	if (r->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(r);
		snprintf(err, errlen, "XINFO GROUPS " STREAM ": unexpected reply");
		return ALERT_STREAM_REFUSED;
	}
	for (size_t g = 0; g < r->elements && !ret; g++) {
		const redisReply *name = info_field(r->element[g], "name");
		const redisReply *pend = info_field(r->element[g], "pending");
		const redisReply *lag = info_field(r->element[g], "lag");
		const redisReply *last = info_field(r->element[g], "last-delivered-id");
		unsigned long long ms = 0, seq = 0;
		uint64_t behind = 0;
		redisReply *x;

		if (!name || name->type != REDIS_REPLY_STRING || !pend ||
		    pend->type != REDIS_REPLY_INTEGER || !last || last->type != REDIS_REPLY_STRING ||
		    parse_id(last->str, &ms, &seq)) {
			snprintf(err, errlen, "XINFO GROUPS " STREAM ": unexpected group record");
			ret = ALERT_STREAM_REFUSED;
			break;
		}
		(*ngroups)++;
		behind = (uint64_t)pend->integer;
		/*
		 * Not read yet: after last-delivered-id.  Its lag is unknown (nil)
		 * when entries were deleted after it: then the whole length, an
		 * upper bound (counting them would read them all).
		 */
		if (lag && lag->type == REDIS_REPLY_INTEGER) {
			behind += (uint64_t)lag->integer;
		} else {
			x = conn_commandf(rc, STREAM, "XLEN %s", STREAM);
			if (x && x->type == REDIS_REPLY_INTEGER)
				behind += (uint64_t)x->integer;
			if (x)
				freeReplyObject(x);
		}
		if (behind > *undelivered)
			*undelivered = behind;
		/* the first entry after last-delivered-id */
		seq = seq == ~0ULL ? (ms++, 0) : seq + 1;
		if (ms < *need_ms || (ms == *need_ms && seq < *need_seq)) {
			*need_ms = ms;
			*need_seq = seq;
		}
		if (pend->integer > 0) {
			x = conn_commandf(rc, STREAM, "XPENDING %s %s", STREAM, name->str);
			ret = alert_stream_answer(rc, x, "XPENDING " STREAM, err, errlen);
			if (!ret && x->type == REDIS_REPLY_ARRAY && x->elements >= 2 &&
			    x->element[1]->type == REDIS_REPLY_STRING &&
			    !parse_id(x->element[1]->str, &ms, &seq) &&
			    (ms < *need_ms || (ms == *need_ms && seq < *need_seq))) {
				*need_ms = ms;
				*need_seq = seq;
			}
			if (x)
				freeReplyObject(x);
		}
	}
	freeReplyObject(r);
	return ret;
}

int alert_stream_backlog(struct conn *rc, uint64_t *undelivered, uint64_t *oldest_ms,
			 char *err, size_t errlen)
{
	unsigned long long ms, seq;
	int ngroups, ret = groups_need(rc, &ms, &seq, undelivered, &ngroups, err, errlen);
	redisReply *r;

	*oldest_ms = 0;
	if (ret)
		return ret;
	if (!ngroups) {
		/* nobody reads it yet: all of it waits */
		r = conn_commandf(rc, STREAM, "XLEN %s", STREAM);
		ret = alert_stream_answer(rc, r, "XLEN " STREAM, err, errlen);
		if (!ret && r->type == REDIS_REPLY_INTEGER)
			*undelivered = (uint64_t)r->integer;
		if (r)
			freeReplyObject(r);
		ms = seq = 0;
		if (ret || !*undelivered)
			return ret;
	} else if (!*undelivered) {
		return 0;
	}
	r = conn_commandf(rc, STREAM, "XRANGE %s %llu-%llu + COUNT 1", STREAM, ms, seq);
	ret = alert_stream_answer(rc, r, "XRANGE " STREAM, err, errlen);
	if (!ret && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
	    r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements >= 1 &&
	    r->element[0]->element[0]->type == REDIS_REPLY_STRING &&
	    !parse_id(r->element[0]->element[0]->str, &ms, &seq))
		*oldest_ms = ms;
	if (r)
		freeReplyObject(r);
	return ret;
}

int alert_stream_trim(struct conn *rc, uint64_t now_ms, uint64_t keep_ms, uint64_t keep_max,
		      uint64_t *trimmed, char *err, size_t errlen)
{
	unsigned long long ms, seq;
	uint64_t undelivered, len = 0;
	int ngroups, ret = groups_need(rc, &ms, &seq, &undelivered, &ngroups, err, errlen);
	redisReply *r;

	*trimmed = 0;
	if (ret || !ngroups)
		return ret;
	r = conn_commandf(rc, STREAM, "XLEN %s", STREAM);
	if ((ret = alert_stream_answer(rc, r, "XLEN " STREAM, err, errlen))) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	len = r->type == REDIS_REPLY_INTEGER ? (uint64_t)r->integer : 0;
	freeReplyObject(r);
	/* acknowledged entries younger than keep_ms stay, while there are not too many */
	if (len <= keep_max && now_ms > keep_ms && now_ms - keep_ms < ms) {
		ms = now_ms - keep_ms;
		seq = 0;
	}
	if (ms == ~0ULL)
		return 0;
	r = conn_commandf(rc, STREAM, "XTRIM %s MINID %llu-%llu", STREAM, ms, seq);
	ret = alert_stream_answer(rc, r, "XTRIM " STREAM, err, errlen);
	if (!ret && r->type == REDIS_REPLY_INTEGER)
		*trimmed = (uint64_t)r->integer;
	if (r)
		freeReplyObject(r);
	return ret;
}

int alert_stream_prune_consumers(struct conn *rc, const char *me, uint64_t idle_ms, int *removed,
				 char *err, size_t errlen)
{
	redisReply *r = conn_commandf(rc, STREAM, "XINFO CONSUMERS %s %s", STREAM, GROUP);
	int ret = alert_stream_answer(rc, r, "XINFO CONSUMERS " STREAM, err, errlen);

	*removed = 0;
	if (ret) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && !ret; i++) {
		const redisReply *name = info_field(r->element[i], "name");
		const redisReply *pend = info_field(r->element[i], "pending");
		const redisReply *idle = info_field(r->element[i], "idle");
		redisReply *d;

		if (!name || name->type != REDIS_REPLY_STRING || !pend ||
		    pend->type != REDIS_REPLY_INTEGER || !idle || idle->type != REDIS_REPLY_INTEGER ||
		    !strcmp(name->str, me) || pend->integer != 0 || (uint64_t)idle->integer < idle_ms)
			continue;
		/* DELCONSUMER drops what is pending: only now, with nothing pending */
		d = conn_commandf(rc, STREAM, "XGROUP DELCONSUMER %s %s %s", STREAM, GROUP, name->str);
		ret = alert_stream_answer(rc, d, "XGROUP DELCONSUMER " STREAM, err, errlen);
		if (!ret && d->type == REDIS_REPLY_INTEGER && d->integer == 0)
			(*removed)++;
		if (d)
			freeReplyObject(d);
	}
	freeReplyObject(r);
	return ret;
}

int alert_stream_dead_since(struct conn *rc, uint64_t since_ms, uint64_t *n, uint64_t *last_ms,
			    char *err, size_t errlen)
{
	redisReply *r = conn_commandf(rc, DEAD_STREAM, "XREVRANGE %s + %llu-0 COUNT 10000",
				      DEAD_STREAM, (unsigned long long)since_ms);
	unsigned long long ms, seq;
	int ret = alert_stream_answer(rc, r, "XREVRANGE " DEAD_STREAM, err, errlen);

	*n = 0;
	*last_ms = 0;
	if (ret) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	if (r->type == REDIS_REPLY_ARRAY) {
		*n = r->elements;
		if (r->elements && r->element[0]->type == REDIS_REPLY_ARRAY &&
		    r->element[0]->elements >= 1 &&
		    r->element[0]->element[0]->type == REDIS_REPLY_STRING &&
		    !parse_id(r->element[0]->element[0]->str, &ms, &seq))
			*last_ms = ms;
	}
	freeReplyObject(r);
	return 0;
}
