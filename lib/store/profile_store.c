/*
 * profile_store.c - profile windows from Redis; see profile_store.h.
 */
#include "store/profile_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>

#include "core/array.h"
#include "model/profile_span.h"
#include "store/compaction.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/spool_internal.h"
#include "store/store.h"
#include "store/store_internal.h"

/* chunks a read page holds: up to a few MB each */
#define CHUNK_READ_PAGE 4

struct merge_ctx {
	struct profile *into;
	const struct profile_scope *scope;
	uint64_t from_ms, to_ms;
	size_t bad, windows;
	uint64_t *seen;			/* end times of the entries merged */
	size_t nseen, cap_seen;
	int nomem;
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
	if (profile_merge(m->into, &w, m->scope) == 0) {
		m->windows++;
		if (ARRAY_GROW(m->seen, m->cap_seen, m->nseen + 1, 64))
			m->nomem = 1;
		else
			m->seen[m->nseen++] = w.ts_ms;
	}
	profile_free(&w);
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A chunk's windows in range that were not read as entries, merged. */
static int merge_chunk(const char *blob, size_t len, void *arg)
{
	struct merge_ctx *m = arg;
	struct profile_span s;
	char err[128];

	if (profile_span_decode(blob, len, &s, err, sizeof(err))) {
		m->bad++;
		return 0;
	}
	for (uint32_t i = 0; i < s.nwindows; i++) {
		const struct profile_span_window *w = &s.windows[i];
		struct profile view;

		if (w->ts_ms < m->from_ms || (m->to_ms && w->ts_ms > m->to_ms) ||
		    bsearch(&w->ts_ms, m->seen, m->nseen, sizeof(*m->seen), u64_cmp))
			continue;
		profile_span_view(&s, i, &view);
		if (profile_merge(m->into, &view, m->scope) == 0)
			m->windows++;
	}
	profile_span_free(&s);
	return 0;
}

int profile_read_merge(struct conn *rc, const char *host, int kind, uint64_t from_ms,
		       uint64_t to_ms, const struct profile_scope *scope, struct profile *into,
		       size_t *bad, char *err, size_t errlen)
{
	struct merge_ctx m = { .into = into, .scope = scope, .from_ms = from_ms, .to_ms = to_ms };
	uint64_t span = key_profile_span_ms(kind);
	char key[300], ckey[320];
	int n;

	if (key_profile(key, sizeof(key), host, kind) < 0 ||
	    key_profile_chunks(ckey, sizeof(ckey), host, kind) < 0) {
		snprintf(err, errlen, "host name too long, or no profiles of kind %d", kind);
		return -EINVAL;
	}
	/* entries first: a span compacted after they were read is then in its chunk */
	n = store_read_blobs(rc, key, from_ms, to_ms, merge_window, &m, err, errlen);
	if (n >= 0 && m.nomem) {
		snprintf(err, errlen, "out of memory");
		n = -ENOMEM;
	}
	if (n >= 0) {
		qsort(m.seen, m.nseen, sizeof(*m.seen), u64_cmp);
		/* the chunk at S holds the windows ending in (S, S + span] */
		n = store_read_field(rc, ckey, "c", CHUNK_READ_PAGE, from_ms > span ? from_ms - span :
				     0, to_ms, merge_chunk, &m, err, errlen);
	}
	free(m.seen);
	if (bad)
		*bad = m.bad;
	return n < 0 ? n : (int)m.windows;
}

int profile_store_put(struct store *st, const char *host, int kind, uint64_t ts_ms,
		      uint64_t retention_ms, const void *blob, size_t len)
{
	char key[300];
	int ret;

	if (key_profile(key, sizeof(key), host, kind) < 0)
		return -EINVAL;
	if (!retention_ms)
		retention_ms = kind == PROFILE_CPU_HOURLY ? KEY_P3600_RETENTION_MS :
			       KEY_P10_RETENTION_MS;
	ret = store_put_stream(st, key, ts_ms, retention_ms, blob, len);
	if (ret || st->opts.profiles_entries_only)
		return ret;
	return store_span_ended(st, host, COMPACT_PROFILE(kind), key, ts_ms,
				key_profile_span_ms(kind), retention_ms);
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
