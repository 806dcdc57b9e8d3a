/*
 * alert_group.c - alert groups' shared state in Redis; see alert_group.h.
 *
 * Each change is one Lua script on the group's hash (fl:alerts' slot), so
 * two alerters taking events of one group, or one notifying while another
 * takes, see each other's changes whole.
 */
#include "store/alert_group.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/digest.h"
#include "store/alert_stream.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store_internal.h"

#define ROUTE KEY_ALERTS
#define GROUP_TTL_MS (7ULL * 24 * 3600 * 1000)
#define NOTIFIED_KEEP_MS (3600ULL * 1000)

void alert_group_id(const char *group_key, char gid[33])
{
	char hex[65];

	sha256_hex(group_key, strlen(group_key), hex);
	memcpy(gid, hex, 32);
	gid[32] = '\0';
}

/*
 * KEYS[1] the group, KEYS[2] the fleet's active index (alert_index.h);
 * ARGV fp, id, state (f/r), starts, json, ttl.  The index takes the event
 * when it is newer than the one it holds for fp, whichever group it came
 * for.  Returns {verdict, unsent}: 0 new, 1 same, 2 older.
 */
static const char TAKE_SCRIPT[] =
	LUA_ID_LT
	LUA_INDEX_PUT
	"index_put(KEYS[2], ARGV[1], ARGV[2], ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4] ..\n"
	"          ' ' .. ARGV[5])\n"
	"local cur = redis.call('HGET', KEYS[1], ARGV[1])\n"
	"local verdict = 0\n"
	"if cur then\n"
	"  local cid, cst, cstart = string.match(cur, '^(%S+) (%a) (%d+) ')\n"
	"  if cid and not lt(cid, ARGV[2]) then verdict = 2\n"
	"  elseif cid and cstart == ARGV[4] and (cst == ARGV[3] or\n"
	"      (cst == 'd' and ARGV[3] == 'r')) then verdict = 1 end\n"
	"elseif ARGV[3] == 'r' then\n"
	"  verdict = 1\n"	/* a resolution of nothing the group holds: nothing to say */
	"end\n"
	"if verdict == 0 then\n"
	"  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4] ..\n"
	"             ' ' .. ARGV[5])\n"
	"  redis.call('HINCRBY', KEYS[1], '_v', 1)\n"
	"  redis.call('PEXPIRE', KEYS[1], ARGV[6])\n"
	"end\n"
	"local v = tonumber(redis.call('HGET', KEYS[1], '_v') or '0') or 0\n"
	"local n = tonumber(string.match(redis.call('HGET', KEYS[1], '_n') or '0', '^(%d+)')\n"
	"  or '0') or 0\n"
	"return {verdict, v ~= n and 1 or 0}\n";

int alert_group_take(struct conn *rc, const char *gid, const char *fp, const char *id,
		     int firing, uint64_t starts_ms, const char *json, size_t len,
		     enum alert_group_verdict *verdict, int *unsent, char *err, size_t errlen)
{
	char key[96], starts[24], ttl[24];
	const char *argv[] = { "EVAL", TAKE_SCRIPT, "2", key, KEY_ALERTS_ACTIVE, fp, id,
			       firing ? "f" : "r", starts, json, ttl };
	size_t lens[11];
	redisReply *r;
	int ret;

	key_alert_group(key, sizeof(key), gid);
	snprintf(starts, sizeof(starts), "%" PRIu64, starts_ms);
	snprintf(ttl, sizeof(ttl), "%" PRIu64, (uint64_t)GROUP_TTL_MS);
	for (int i = 0; i < 11; i++)
		lens[i] = strlen(argv[i]);
	lens[9] = len;
	r = conn_command(rc, ROUTE, 11, argv, lens);
	if ((ret = alert_stream_answer(rc, r, "EVAL (take an alert into its group)", err, errlen))) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[1]->type != REDIS_REPLY_INTEGER || r->element[0]->integer < 0 ||
	    r->element[0]->integer > 2) {
		freeReplyObject(r);
		snprintf(err, errlen, "EVAL (take an alert into its group): unexpected reply");
		return ALERT_STREAM_REFUSED;
	}
	*verdict = (enum alert_group_verdict)r->element[0]->integer;
	*unsent = r->element[1]->integer != 0;
	freeReplyObject(r);
	return 0;
}

int alert_group_record_parse(const char *rec, size_t len, struct alert_group_member *m,
			     char *err, size_t errlen)
{
	const char *p = rec, *end = rec + len;
	size_t idlen;
	char state;

	idlen = strcspn(p, " ");
	if (idlen == 0 || idlen >= sizeof(m->entry_id) || p + idlen >= end) {
		snprintf(err, errlen, "group record: no entry id");
		return -EINVAL;
	}
	for (size_t i = 0; i < idlen; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || p[i] == '-')) {
			snprintf(err, errlen, "group record: the entry id is not a stream id");
			return -EINVAL;
		}
	p += idlen + 1;
	if (end - p < 2 || (p[0] != 'f' && p[0] != 'r' && p[0] != 'd') || p[1] != ' ') {
		snprintf(err, errlen, "group record: the state is not f, r or d");
		return -EINVAL;
	}
	state = p[0];
	p += 2;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p >= end || *p != ' ') {
		snprintf(err, errlen, "group record: no startsAt");
		return -EINVAL;
	}
	p++;
	if (state == 'd')
		return 1;
	memset(m, 0, sizeof(*m));
	if (alert_parse(&m->a, p, (size_t)(end - p), err, errlen))
		return -EINVAL;
	if ((state == 'f') != (m->a.firing != 0)) {
		alert_free(&m->a);
		snprintf(err, errlen, "group record: its state and its event disagree");
		return -EINVAL;
	}
	memcpy(m->entry_id, rec, idlen);
	m->entry_id[idlen] = '\0';
	return 0;
}

static uint64_t u64_of(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	return end == s ? 0 : (uint64_t)v;
}

int alert_group_load(struct conn *rc, const char *gid, struct alert_group_state *st, char *err,
		     size_t errlen)
{
	char key[96], cursor[32] = "0";
	int ret = 0, over = 0;
	size_t cap = 0;

	memset(st, 0, sizeof(*st));
	key_alert_group(key, sizeof(key), gid);
	do {
		redisReply *r = conn_commandf(rc, ROUTE, "HSCAN %s %s COUNT 1000", key, cursor);
		const redisReply *kv;

		if ((ret = alert_stream_answer(rc, r, "HSCAN (an alert group)", err, errlen))) {
			if (r)
				freeReplyObject(r);
			goto fail;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    (kv = r->element[1])->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(r);
			snprintf(err, errlen, "HSCAN (an alert group): unexpected reply");
			ret = ALERT_STREAM_REFUSED;
			goto fail;
		}
		for (size_t i = 0; i + 1 < kv->elements; i += 2) {
			const redisReply *f = kv->element[i], *v = kv->element[i + 1];
			char why[256];
			int got;

			if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
				st->bad++;
				continue;
			}
			if (!strcmp(f->str, "_v")) {
				st->version = u64_of(v->str);
				continue;
			}
			if (!strcmp(f->str, "_n")) {
				char *sp;

				st->notified_version = u64_of(v->str);
				sp = strchr(v->str, ' ');
				st->notified_ms = sp ? u64_of(sp + 1) : 0;
				continue;
			}
			if (st->n >= ALERT_GROUP_MAX) {
				over++;
				continue;
			}
			if (ARRAY_GROW(st->m, cap, st->n + 1, 8)) {
				freeReplyObject(r);
				snprintf(err, errlen, "out of memory loading an alert group");
				ret = ALERT_STREAM_REFUSED;
				goto fail;
			}
			got = alert_group_record_parse(v->str, v->len, &st->m[st->n], why,
						       sizeof(why));
			if (got < 0)
				st->bad++;
			else if (got == 0)
				st->n++;
		}
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		freeReplyObject(r);
	} while (strcmp(cursor, "0"));
	if (over) {
		st->bad += over;
		snprintf(err, errlen, "alert group %s holds %d alerts more than the %d a "
			 "notification carries; they were left out", gid, over, ALERT_GROUP_MAX);
	}
	return 0;
fail:
	alert_group_state_free(st);
	return ret;
}

void alert_group_state_free(struct alert_group_state *st)
{
	for (int i = 0; i < st->n; i++)
		alert_free(&st->m[i].a);
	free(st->m);
	memset(st, 0, sizeof(*st));
}

/*
 * KEYS[1] the group; ARGV version, now ms, keep ms, then fp, id pairs of
 * the resolutions notified.
 */
static const char NOTIFIED_SCRIPT[] =
	LUA_ID_LT
	"local n = tonumber(string.match(redis.call('HGET', KEYS[1], '_n') or '0', '^(%d+)')\n"
	"  or '0') or 0\n"
	"if tonumber(ARGV[1]) > n then\n"
	"  redis.call('HSET', KEYS[1], '_n', ARGV[1] .. ' ' .. ARGV[2])\n"
	"end\n"
	"for i = 4, #ARGV - 1, 2 do\n"
	"  local cur = redis.call('HGET', KEYS[1], ARGV[i])\n"
	"  if cur then\n"
	"    local cid, cst, cstart = string.match(cur, '^(%S+) (%a) (%d+) ')\n"
	"    if cid == ARGV[i + 1] and cst == 'r' then\n"
	"      redis.call('HSET', KEYS[1], ARGV[i], cid .. ' d ' .. cstart .. ' ')\n"
	"    end\n"
	"  end\n"
	"end\n"
	"local cut = tonumber(ARGV[2]) - tonumber(ARGV[3])\n"
	"local all = redis.call('HGETALL', KEYS[1])\n"
	"for i = 1, #all, 2 do\n"
	"  local ms, st = string.match(all[i + 1], '^(%d+)-%d+ (%a) ')\n"
	"  if st == 'd' and tonumber(ms) < cut then redis.call('HDEL', KEYS[1], all[i]) end\n"
	"end\n"
	"return 0\n";

int alert_group_notified(struct conn *rc, const char *gid, uint64_t version, uint64_t now_ms,
			 const char *const *fps, const char *const *ids, int n, char *err,
			 size_t errlen)
{
	const char **argv = malloc((size_t)(7 + 2 * n) * sizeof(*argv));
	char key[96], v[24], now[24], keep[24];
	redisReply *r;
	int argc = 0, ret;

	if (!argv) {
		snprintf(err, errlen, "out of memory");
		return ALERT_STREAM_REFUSED;
	}
	key_alert_group(key, sizeof(key), gid);
	snprintf(v, sizeof(v), "%" PRIu64, version);
	snprintf(now, sizeof(now), "%" PRIu64, now_ms);
	snprintf(keep, sizeof(keep), "%" PRIu64, (uint64_t)NOTIFIED_KEEP_MS);
	argv[argc++] = "EVAL";
	argv[argc++] = NOTIFIED_SCRIPT;
	argv[argc++] = "1";
	argv[argc++] = key;
	argv[argc++] = v;
	argv[argc++] = now;
	argv[argc++] = keep;
	for (int i = 0; i < n; i++) {
		argv[argc++] = fps[i];
		argv[argc++] = ids[i];
	}
	r = conn_command(rc, ROUTE, argc, argv, NULL);
	free(argv);
	ret = alert_stream_answer(rc, r, "EVAL (an alert group notified)", err, errlen);
	if (r)
		freeReplyObject(r);
	return ret;
}

int alert_group_version(struct conn *rc, const char *gid, uint64_t *version, char *err,
			size_t errlen)
{
	char key[96];
	redisReply *r;
	int ret;

	key_alert_group(key, sizeof(key), gid);
	r = conn_commandf(rc, ROUTE, "HGET %s _v", key);
	if ((ret = alert_stream_answer(rc, r, "HGET (an alert group's version)", err, errlen))) {
		if (r)
			freeReplyObject(r);
		return ret;
	}
	*version = r->type == REDIS_REPLY_STRING ? u64_of(r->str) : 0;
	freeReplyObject(r);
	return 0;
}
