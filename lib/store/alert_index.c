/*
 * alert_index.c - the fleet's active alerts; see alert_index.h.
 */
#include "store/alert_index.h"

#include <hiredis/hiredis.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "store/alert_stream.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store_internal.h"

#define ROUTE KEY_ALERTS

/* What store_hscan's walk of the index keeps. */
struct index_walk {
	struct alert_index *ix;
	size_t cap;
	int over, nomem;
};

/* One field of the index: its version, a resolution (counted), or a firing alert. */
static int index_one(const redisReply *f, const redisReply *v, void *arg)
{
	struct index_walk *w = arg;
	struct alert_index *ix = w->ix;
	const char *sp;
	char why[256];

	if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
		ix->bad++;
		return 0;
	}
	if (!strcmp(f->str, "_v")) {
		ix->version = strtoull(v->str, NULL, 10);
		return 0;
	}
	/* "ID r ...": a resolution, kept only to order late copies */
	sp = memchr(v->str, ' ', v->len);
	if (sp && (size_t)(sp - v->str) + 2 < v->len && sp[1] == 'r' && sp[2] == ' ') {
		ix->resolved++;
		return 0;
	}
	if (ix->n >= ALERT_INDEX_MAX) {
		w->over++;
		return 0;
	}
	if (ARRAY_GROW(ix->m, w->cap, ix->n + 1, 64)) {
		w->nomem = 1;
		return 1;
	}
	if (alert_group_record_parse(v->str, v->len, &ix->m[ix->n], why, sizeof(why)) == 0)
		ix->n++;
	else
		ix->bad++;	/* 'd' is a group's state, never the index's */
	return 0;
}

int alert_index_load(struct conn *rc, struct alert_index *ix, char *err, size_t errlen)
{
	struct index_walk w = { ix, 0, 0, 0 };
	int ret;

	memset(ix, 0, sizeof(*ix));
	err[0] = '\0';
	ret = store_hscan(rc, KEY_ALERTS_ACTIVE, 1000, index_one, &w, err, errlen);
	if (w.nomem) {
		snprintf(err, errlen, "out of memory loading the fleet's alerts");
		alert_index_free(ix);
		return ALERT_STREAM_REFUSED;
	}
	if (ret) {
		/* store_hscan said why; the caller reconnects, as after a dropped connection */
		alert_index_free(ix);
		return ALERT_STREAM_LOST;
	}
	if (w.over) {
		ix->bad += w.over;
		snprintf(err, errlen, "the fleet has %d firing alerts more than the %d loaded at "
			 "once; they were left out", w.over, ALERT_INDEX_MAX);
	}
	return 0;
}

void alert_index_free(struct alert_index *ix)
{
	for (int i = 0; i < ix->n; i++)
		alert_free(&ix->m[i].a);
	free(ix->m);
	memset(ix, 0, sizeof(*ix));
}

int alert_index_version(struct conn *rc, uint64_t *version, char *err, size_t errlen)
{
	redisReply *r = conn_commandf(rc, ROUTE, "HGET %s _v", KEY_ALERTS_ACTIVE);
	int ret;

	if ((ret = alert_stream_answer(rc, r, "HGET (the fleet's alerts' version)", err,
				       errlen))) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	*version = r->type == REDIS_REPLY_STRING ? strtoull(r->str, NULL, 10) : 0;
	freeReplyObject(r);
	return 0;
}

/*
 * KEYS[1] the index; ARGV cut (ms).  A page of HSCAN per call would bound
 * the script's time; the index holds what fires plus an hour of
 * resolutions, which one pass handles.
 */
static const char PRUNE_SCRIPT[] =
	"local cut = tonumber(ARGV[1])\n"
	"local all = redis.call('HGETALL', KEYS[1])\n"
	"local n = 0\n"
	"for i = 1, #all, 2 do\n"
	"  if all[i] ~= '_v' then\n"
	"    local ms, st = string.match(all[i + 1], '^(%d+)-%d+ (%a) ')\n"
	"    if not ms or (st ~= 'f' and st ~= 'r') or (st == 'r' and tonumber(ms) < cut) then\n"
	"      redis.call('HDEL', KEYS[1], all[i])\n"
	"      n = n + 1\n"
	"    end\n"
	"  end\n"
	"end\n"
	"if n > 0 then redis.call('HINCRBY', KEYS[1], '_v', 1) end\n"
	"return n\n";

int alert_index_prune(struct conn *rc, uint64_t now_ms, uint64_t keep_ms, char *err,
		      size_t errlen)
{
	char cut[24];
	const char *argv[] = { "EVAL", PRUNE_SCRIPT, "1", KEY_ALERTS_ACTIVE, cut };
	redisReply *r;
	int ret;

	snprintf(cut, sizeof(cut), "%" PRIu64, now_ms > keep_ms ? now_ms - keep_ms : 0);
	r = conn_command(rc, ROUTE, 5, argv, NULL);
	if ((ret = alert_stream_answer(rc, r, "EVAL (prune the fleet's alerts)", err, errlen))) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	ret = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : 0;
	freeReplyObject(r);
	return ret;
}

/* KEYS[1] the index; ARGV fp, id, record. */
static const char PUT_SCRIPT[] =
	LUA_ID_LT
	LUA_INDEX_PUT
	"index_put(KEYS[1], ARGV[1], ARGV[2], ARGV[3])\n"
	"return 0\n";

/* Every firing or resolved record of group hash key into the index. */
static int backfill_group(struct conn *rc, const char *key, int *taken, char *err, size_t errlen)
{
	redisReply *r = conn_commandf(rc, ROUTE, "HGETALL %s", key);
	int ret;

	if ((ret = alert_stream_answer(rc, r, "HGETALL (an alert group)", err, errlen))) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
		const redisReply *f = r->element[i], *v = r->element[i + 1];
		char id[32];
		const char *sp;
		redisReply *p;

		if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
		    f->str[0] == '_' || !(sp = memchr(v->str, ' ', v->len)) ||
		    (size_t)(sp - v->str) >= sizeof(id) || (size_t)(sp - v->str) + 2 >= v->len ||
		    (sp[1] != 'f' && sp[1] != 'r'))
			continue;	/* notified resolutions, versions, and what is not a record */
		memcpy(id, v->str, (size_t)(sp - v->str));
		id[sp - v->str] = '\0';
		{
			const char *argv[] = { "EVAL", PUT_SCRIPT, "1", KEY_ALERTS_ACTIVE, f->str, id,
					       v->str };
			size_t lens[] = { 4, sizeof(PUT_SCRIPT) - 1, 1, strlen(KEY_ALERTS_ACTIVE),
					  f->len, strlen(id), v->len };

			p = conn_command(rc, ROUTE, 7, argv, lens);
		}
		if ((ret = alert_stream_answer(rc, p, "EVAL (fill the fleet's alerts)", err,
					       errlen))) {
			if (p)
				freeReplyObject(p);
			freeReplyObject(r);
			return ret;
		}
		freeReplyObject(p);
		(*taken)++;
	}
	freeReplyObject(r);
	return 0;
}

struct backfill {
	int *taken, *groups;
};

static int backfill_one(struct conn *rc, const char *gid, void *arg, char *err, size_t errlen)
{
	struct backfill *bf = arg;
	char key[128];

	if (key_alert_group(key, sizeof(key), gid) < 0)
		return 0;
	(*bf->groups)++;
	return backfill_group(rc, key, bf->taken, err, errlen);
}

int alert_groups_each(struct conn *rc, alert_group_fn fn, void *arg, char *err, size_t errlen)
{
	static const char prefix[] = "{" KEY_ALERTS "}:group:";
	char cursor[32] = "0";
	redisReply *r;
	int ret;

	/* every group key sits in fl:alerts' slot: one node answers the SCAN */
	do {
		const redisReply *keys;

		r = conn_commandf(rc, ROUTE, "SCAN %s MATCH {" KEY_ALERTS "}:group:* COUNT 200",
				  cursor);
		if ((ret = alert_stream_answer(rc, r, "SCAN (alert groups)", err, errlen))) {
			if (r)
				freeReplyObject(r);
			return ret;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    (keys = r->element[1])->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(r);
			snprintf(err, errlen, "SCAN (alert groups): unexpected reply");
			return ALERT_STREAM_REFUSED;
		}
		for (size_t i = 0; i < keys->elements; i++) {
			const char *k = keys->element[i]->str;

			if (keys->element[i]->type != REDIS_REPLY_STRING ||
			    strncmp(k, prefix, sizeof(prefix) - 1))
				continue;
			if ((ret = fn(rc, k + sizeof(prefix) - 1, arg, err, errlen))) {
				freeReplyObject(r);
				return ret;
			}
		}
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		freeReplyObject(r);
	} while (strcmp(cursor, "0"));
	return 0;
}

int alert_index_backfill(struct conn *rc, int *groups, int *taken, char *err, size_t errlen)
{
	struct backfill bf;
	redisReply *r;
	int ret;

	*groups = *taken = 0;
	r = conn_commandf(rc, ROUTE, "HEXISTS %s _v", KEY_ALERTS_ACTIVE);
	if ((ret = alert_stream_answer(rc, r, "HEXISTS (the fleet's alerts)", err, errlen))) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	ret = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	freeReplyObject(r);
	if (ret)
		return 0;	/* written since this layout: nothing to fill */
	bf.taken = taken;
	bf.groups = groups;
	if ((ret = alert_groups_each(rc, backfill_one, &bf, err, errlen)))
		return ret;
	r = conn_commandf(rc, ROUTE, "HSETNX %s _v 1", KEY_ALERTS_ACTIVE);
	ret = alert_stream_answer(rc, r, "HSETNX (the fleet's alerts)", err, errlen);
	if (r)
		freeReplyObject(r);
	return ret;
}
