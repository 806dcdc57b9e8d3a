/*
 * profile_store.c - profile windows from Redis; see profile_store.h.
 */
#include "store/profile_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store.h"

struct merge_ctx {
	struct profile *into;
	const struct profile_scope *scope;
	size_t bad, windows;
};

static int merge_window(const char *blob, size_t len, void *arg)
{
	struct merge_ctx *m = arg;
	struct profile w;
	char err[128];

	if (profile_decode(blob, len, &w, err, sizeof(err))) {
		m->bad++;
		return 0;
	}
	if (profile_merge(m->into, &w, m->scope) == 0)
		m->windows++;
	profile_free(&w);
	return 0;
}

int profile_read_merge(struct conn *rc, const char *host, int kind, uint64_t from_ms,
		       uint64_t to_ms, const struct profile_scope *scope, struct profile *into,
		       size_t *bad, char *err, size_t errlen)
{
	struct merge_ctx m = { .into = into, .scope = scope };
	char key[300];
	int n;

	if (key_profile(key, sizeof(key), host, kind) < 0) {
		snprintf(err, errlen, "host name too long, or no profiles of kind %d", kind);
		return -EINVAL;
	}
	n = store_read_blobs(rc, key, from_ms, to_ms, merge_window, &m, err, errlen);
	if (bad)
		*bad = m.bad;
	return n < 0 ? n : (int)m.windows;
}

int profile_store_put(struct store *st, const char *host, int kind, uint64_t ts_ms,
		      uint64_t retention_ms, const void *blob, size_t len)
{
	char key[300];

	if (key_profile(key, sizeof(key), host, kind) < 0)
		return -EINVAL;
	if (!retention_ms)
		retention_ms = kind == PROFILE_CPU_HOURLY ? KEY_P3600_RETENTION_MS :
			       KEY_P10_RETENTION_MS;
	return store_put_stream(st, key, ts_ms, retention_ms, blob, len);
}

int profile_burst_set(struct conn *rc, const char *host, unsigned long hz, uint64_t ttl_ms,
		      char *err, size_t errlen)
{
	char key[300], val[32];
	redisReply *r;
	int ret = 0;

	key_profile_burst(key, sizeof(key), host);
	snprintf(val, sizeof(val), "%lu", hz);
	r = conn_commandf(rc, key, "SET %s %s PX %llu", key, val, (unsigned long long)ttl_ms);
	if (!r || r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "redis SET %s: %s", key,
			 r ? r->str : conn_errstr(rc)[0] ? conn_errstr(rc) : "no answer");
		ret = -EIO;
	}
	if (r)
		freeReplyObject(r);
	return ret;
}

long profile_burst_get(struct conn *rc, const char *host)
{
	char key[300];
	redisReply *r;
	long hz = 0;

	key_profile_burst(key, sizeof(key), host);
	r = conn_commandf(rc, key, "GET %s", key);
	if (!r)
		return -EIO;
	if (r->type == REDIS_REPLY_STRING)
		hz = (long)strtoul(r->str, NULL, 10);
	freeReplyObject(r);
	return hz;
}
