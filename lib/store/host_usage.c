/*
 * host_usage.c - what one host's data costs in Redis; see host_usage.h.
 */
#include "store/host_usage.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/chunk.h"
#include "model/drive.h"
#include "model/profile_span.h"
#include "store/conn.h"
#include "store/drives.h"
#include "store/keyspace.h"
#include "store/profile_store.h"
#include "store/store_internal.h"

static const char *const stream_names[USAGE_STREAMS] = {
	"s1", "s60", "s3600", "p10", "p3600", "io10", "iowait10"
};

/* the tier (1, 60, 3600) or the profile kind each stream is */
static const int stream_tier[USAGE_STREAMS] = { 1, 60, 3600, 0, 0, 0, 0 };
static const int stream_kind[USAGE_STREAMS] = { -1, -1, -1, PROFILE_CPU, PROFILE_CPU_HOURLY,
						PROFILE_IO, PROFILE_IO_WAIT };

const char *usage_stream_name(int k)
{
	return k >= 0 && k < USAGE_STREAMS ? stream_names[k] : "?";
}

const char *const usage_retention_keys[USAGE_RETENTION_KEYS] = {
	"s1", "s60", "s3600", "p10", "p3600"
};

int usage_stream_retention_key(int k)
{
	static const int key_of[USAGE_STREAMS] = { 0, 1, 2, 3, 4, 3, 3 };

	return k >= 0 && k < USAGE_STREAMS ? key_of[k] : 0;
}

uint64_t usage_stream_span_ms(int k)
{
	if (k < 0 || k >= USAGE_STREAMS)
		return 0;
	return stream_kind[k] < 0 ? chunk_span_ms((uint32_t)stream_tier[k]) :
	       key_profile_span_ms(stream_kind[k]);
}

/* An integer reply of c's command, or -1 with err. */
static long long integer_of(struct conn *c, redisReply *r, const char *what, char *err,
			    size_t errlen)
{
	long long v;

	if (!r) {
		snprintf(err, errlen, "%s: %s", what, conn_errstr(c));
		return -1;
	}
	if (r->type == REDIS_REPLY_NIL) {
		freeReplyObject(r);
		return 0;	/* MEMORY USAGE of a key that is not there */
	}
	if (r->type != REDIS_REPLY_INTEGER) {
		snprintf(err, errlen, "%s: %s", what,
			 r->type == REDIS_REPLY_ERROR ? r->str : "not an integer reply");
		freeReplyObject(r);
		return -1;
	}
	v = r->integer;
	freeReplyObject(r);
	return v;
}

/* Bytes of key (MEMORY USAGE, every element counted), 0 if absent; -1 with err. */
static long long key_bytes(struct conn *c, const char *key, char *err, size_t errlen)
{
	return integer_of(c, conn_commandf(c, key, "MEMORY USAGE %s SAMPLES 0", key),
			  "MEMORY USAGE", err, errlen);
}

/* The id (ms) of key's first (rev 0) or last (rev 1) entry, 0 if none; -1 with err. */
/*
 * The ids (ms) of key's first (rev: last) up to n entries into ids, in that
 * order: how many there are (0: none), or -1 with err.
 */
static int edge_ids(struct conn *c, const char *key, int rev, int n, int64_t *ids, char *err,
		    size_t errlen)
{
	redisReply *r = conn_commandf(c, key, rev ? "XREVRANGE %s + - COUNT %d" :
					     "XRANGE %s - + COUNT %d", key, n);
	int got = 0;

	if (!r) {
		snprintf(err, errlen, "XRANGE %s: %s", key, conn_errstr(c));
		return -1;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "XRANGE %s: %s", key, r->str);
		freeReplyObject(r);
		return -1;
	}
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && got < n; i++) {
		const redisReply *e = r->element[i];

		if (e->type == REDIS_REPLY_ARRAY && e->elements >= 1 &&
		    e->element[0]->type == REDIS_REPLY_STRING)
			ids[got++] = strtoll(e->element[0]->str, NULL, 10);
	}
	freeReplyObject(r);
	return got;
}

static int64_t edge_id(struct conn *c, const char *key, int rev, char *err, size_t errlen)
{
	int64_t id = 0;

	return edge_ids(c, key, rev, 1, &id, err, errlen) < 0 ? -1 : id;
}

struct chunk_count {
	int kind;		/* -1: a tier's chunk, else a profile span */
	struct stream_usage *u;
};

/* One chunk: its points (windows) counted, or counted bad. */
static int count_chunk(const char *blob, size_t len, void *arg)
{
	struct chunk_count *cc = arg;
	char err[256];

	cc->u->chunks++;
	if (cc->kind < 0) {
		struct snapshot *pts = NULL;
		size_t n = 0;

		if (chunk_decode(blob, len, 1, &pts, &n, err, sizeof(err))) {
			cc->u->bad_chunks++;
			return 0;
		}
		cc->u->chunk_points += n;
		for (size_t i = 0; i < n; i++)
			cc->u->chunk_ms += pts[i].interval_ms;
		chunk_points_free(pts, n);
	} else {
		struct profile_span s = { 0 };

		if (profile_span_decode(blob, len, &s, err, sizeof(err))) {
			cc->u->bad_chunks++;
			return 0;
		}
		cc->u->chunk_points += s.nwindows;
		for (uint32_t i = 0; i < s.nwindows; i++)
			cc->u->chunk_ms += s.windows[i].duration_ms;
		profile_span_free(&s);
	}
	return 0;
}

/* Stream k's entry and chunk keys for host; returns what one chunk spans (ms). */
static uint64_t stream_keys(const char *host, int k, char *key, size_t klen, char *ckey,
			    size_t cklen)
{
	if (stream_kind[k] < 0) {
		key_tier(key, klen, host, (uint32_t)stream_tier[k]);
		key_chunks(ckey, cklen, host, (uint32_t)stream_tier[k]);
	} else {
		key_profile(key, klen, host, stream_kind[k]);
		key_profile_chunks(ckey, cklen, host, stream_kind[k]);
	}
	return usage_stream_span_ms(k);
}

static int read_stream(struct conn *c, const char *host, int k, struct stream_usage *u,
		       char *err, size_t errlen)
{
	char key[300], ckey[320];
	struct chunk_count cc = { stream_kind[k], u };
	long long v;
	int64_t id;

	u->span_ms = stream_keys(host, k, key, sizeof(key), ckey, sizeof(ckey));
	if ((v = integer_of(c, conn_commandf(c, key, "XLEN %s", key), "XLEN", err, errlen)) < 0)
		return -1;
	u->entries = (uint64_t)v;
	if ((v = key_bytes(c, key, err, errlen)) < 0)
		return -1;
	u->entry_bytes = (uint64_t)v;
	if ((id = edge_id(c, key, 0, err, errlen)) < 0)
		return -1;
	u->oldest_ms = (uint64_t)id;
	if ((id = edge_id(c, key, 1, err, errlen)) < 0)
		return -1;
	u->newest_ms = (uint64_t)id;
	if ((v = key_bytes(c, ckey, err, errlen)) < 0)
		return -1;
	u->chunk_bytes = (uint64_t)v;
	if (v && store_read_field(c, ckey, "c", 4, 0, UINT64_MAX, count_chunk, &cc, err,
				  errlen) < 0)
		return -1;
	/*
	 * How often a point comes is the probe's (interval:, profile.window:),
	 * so it is measured: from the entries' ids, else from what the chunks'
	 * points say they cover, else the stream's usual period.
	 */
	if (u->entries >= 2 && u->newest_ms > u->oldest_ms) {
		int64_t last[2];
		int got;

		u->step_ms = (u->newest_ms - u->oldest_ms + (u->entries - 1) / 2) /
			     (u->entries - 1);
		/*
		 * A pause (the probe down or restarted) stretches that average:
		 * the step between the newest two is the probe's interval now,
		 * unless the pause came right between them.
		 */
		if ((got = edge_ids(c, key, 1, 2, last, err, errlen)) < 0)
			return -1;
		if (got == 2 && last[0] > last[1] && (uint64_t)(last[0] - last[1]) < u->step_ms)
			u->step_ms = (uint64_t)(last[0] - last[1]);
	} else if (u->chunk_points && u->chunk_ms)
		u->step_ms = (u->chunk_ms + u->chunk_points / 2) / u->chunk_points;
	else
		u->step_ms = stream_kind[k] < 0 ? (uint64_t)stream_tier[k] * 1000 :
			     stream_kind[k] == PROFILE_CPU_HOURLY ? 3600 * 1000 : 10 * 1000;
	if (!u->step_ms)
		u->step_ms = 1;
	return 0;
}

struct other {
	struct conn *c;
	const char *host;
	uint64_t bytes, keys;
	int failed;
	char *err;
	size_t errlen;
};

/* A drive's wear history hash, counted once per serial. */
static void count_wear(const struct drive_record *r, void *arg)
{
	struct other *o = arg;
	char key[400];
	long long v;

	if (o->failed || !r->serial[0] || key_wear(key, sizeof(key), o->host, r->serial) < 0)
		return;
	v = key_bytes(o->c, key, o->err, o->errlen);
	if (v < 0) {
		o->failed = 1;
		return;
	}
	o->bytes += (uint64_t)v;
	o->keys += v > 0;
}

static int read_other(struct conn *c, const char *host, struct host_usage *u, char *err,
		      size_t errlen)
{
	struct other o = { c, host, 0, 0, 0, err, errlen };
	char key[300];
	int (*const keys[])(char *, size_t, const char *) = {
		key_host_record, key_drives, key_profile_burst
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		long long v;

		keys[i](key, sizeof(key), host);
		if ((v = key_bytes(c, key, err, errlen)) < 0)
			return -1;
		o.bytes += (uint64_t)v;
		o.keys += v > 0;
	}
	if (drives_load(c, host, count_wear, &o, err, errlen) < 0 || o.failed)
		return -1;
	u->other_bytes = o.bytes;
	u->other_keys = o.keys;
	return 0;
}

int host_usage_read(struct conn *c, const char *host, struct host_usage *u, char *err,
		    size_t errlen)
{
	memset(u, 0, sizeof(*u));
	for (int k = 0; k < USAGE_STREAMS; k++)
		if (read_stream(c, host, k, &u->s[k], err, errlen))
			return -1;
	return read_other(c, host, u, err, errlen);
}

int host_history_oldest(struct conn *c, const char *host, uint64_t oldest_ms[USAGE_STREAMS],
			char *err, size_t errlen)
{
	for (int k = 0; k < USAGE_STREAMS; k++) {
		char key[300], ckey[320];
		int64_t entry, chunk;

		stream_keys(host, k, key, sizeof(key), ckey, sizeof(ckey));
		if ((entry = edge_id(c, key, 0, err, errlen)) < 0 ||
		    (chunk = edge_id(c, ckey, 0, err, errlen)) < 0)
			return -1;
		oldest_ms[k] = (uint64_t)(chunk && (!entry || chunk < entry) ? chunk : entry);
	}
	return 0;
}

int stream_chunks_young(const struct stream_usage *u)
{
	uint64_t per_span = u->step_ms ? u->span_ms / u->step_ms : 0;

	uint64_t good = u->chunks - (u->bad_chunks < u->chunks ? u->bad_chunks : u->chunks);

	return good && per_span && u->chunk_points * 2 < good * per_span;
}

double stream_usage_at(const struct stream_usage *u, uint64_t retention_ms, char *basis)
{
	double points = (double)retention_ms / (double)u->step_ms;
	double entry_cost = u->entries ? (double)u->entry_bytes / (double)u->entries : 0;
	double chunk_cost = u->chunk_points ? (double)u->chunk_bytes / (double)u->chunk_points : 0;
	double as_entries;

	if (!u->entries && !u->chunk_points) {
		*basis = '-';
		return 0;
	}
	if (!u->chunk_points) {
		*basis = 'e';
		return points * entry_cost;
	}
	/*
	 * Chunks holding under half a span on average (a probe's first day of
	 * hourly profiles: a chunk of its last two hours) share their tables
	 * among few points, and a point costs more than in a whole span.
	 */
	if (stream_chunks_young(u))
		*basis = 'y';
	else
		*basis = u->entries ? 'b' : 'c';
	if (!u->entries)
		return points * chunk_cost;
	/* the span under way is entries: half a span on average */
	as_entries = (double)(u->span_ms / 2) / (double)u->step_ms;
	if (as_entries > points)
		as_entries = points;
	return as_entries * entry_cost + (points - as_entries) * chunk_cost;
}
