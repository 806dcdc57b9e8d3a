/*
 * store_read.c - the readers of the snapshot tiers and of raw streams; see
 * store.h.  A reply is decoded entry by entry; an entry that does not
 * decode is counted and named, never fatal.  Rollup tiers may hold deltas
 * (model/snapshot.h): their reads start at the chain's whole entry and
 * keep the entry before as the next one's base.  Every tier's ended spans
 * may be chunks (compaction.h): a rollup tier's are read in the same
 * pipeline as its entries, the 1 s tier's only when its entries show that
 * they may hold part of the range (chunks_may_hold), which a reader that
 * keeps up (the rules, every second) almost never needs.  The pipelined
 * reader of many hosts is store_read_ranges.c; what both share is in
 * store_read_internal.h.
 */
#include "store/store.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/array.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "model/chunk.h"
#include "store/chunk_cache.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store_read_internal.h"
#include "store/store_internal.h"

void chunk_points_release(struct chunk_points *cp)
{
	if (!cp)
		return;
	for (size_t i = 0; i < cp->nholder; i++) {
		if (cp->holder[i].ref)
			chunk_cache_put(cp->cache, cp->holder[i].ref);
		else
			chunk_points_free(cp->holder[i].pts, cp->holder[i].n);
	}
	free(cp->holder);
	free(cp->run);
	free(cp);
}

void chunk_points_keep(struct chunk_points *cp, uint64_t before, size_t need)
{
	size_t left = 0;

	for (size_t r = cp->cur; r < cp->nrun; r++) {
		struct chunk_run *g = &cp->run[r];

		while (g->n > g->at && g->pts[g->n - 1].ts_ms >= before)
			g->n--;
		left += g->n - g->at;
	}
	for (size_t r = cp->cur; r < cp->nrun && left > need; r++) {
		struct chunk_run *g = &cp->run[r];
		size_t drop = g->n - g->at < left - need ? g->n - g->at : left - need;

		g->at += drop;
		left -= drop;
	}
}

/* The base rc holds (NULL: none), then s as the next entry's. */
static void chain_advance(struct read_ctx *rc, struct snapshot *s)
{
	if (!rc->base) {
		rc->base = malloc(sizeof(*rc->base));
		if (!rc->base) {
			snapshot_free(s);
			return;
		}
	} else {
		snapshot_free(rc->base);
	}
	*rc->base = *s;
}

void chain_end(struct read_ctx *rc)
{
	if (rc->base) {
		snapshot_free(rc->base);
		free(rc->base);
		rc->base = NULL;
	}
}

/*
 * Where a read of tier from from_ms must start: the whole entry of the
 * chain of the first entry at or after from_ms.  Entries end windows on
 * the tier's grid (rollup_window_of), so that one is the window ending at
 * the first multiple of the tier at or after from_ms, and its chain is the
 * span its window starts in: the hour before, for a window ending on the
 * hour.
 */
uint64_t chain_start(uint32_t tier, uint64_t from_ms)
{
	uint64_t span = snapshot_delta_span_ms(tier), iv = (uint64_t)tier * 1000, w;

	if (!span)
		return from_ms;
	w = (from_ms + iv - 1) / iv * iv;
	w = w >= iv ? w - iv : 0;
	return w - w % span;
}

static void entry_bad(const struct read_ctx *rc, const redisReply *e, const char *why,
		      size_t *bad)
{
	uint64_t ms = 0;

	if (bad)
		(*bad)++;
	if (e->type == REDIS_REPLY_ARRAY && e->elements >= 1 &&
	    e->element[0]->type == REDIS_REPLY_STRING)
		ms = strtoull(e->element[0]->str, NULL, 10);
	if (rc && rc->bad_cb)
		rc->bad_cb(rc->index, ms, why, rc->arg);
	else
		log_warn("%s: skipping stream entry %" PRIu64 ": %s", rc && rc->host ? rc->host : "?",
			 ms, why);
}

/* A new run of cp over holder h's points from `at` (its end set as it grows). */
static struct chunk_run *run_open(struct chunk_points *cp, uint32_t h, size_t at)
{
	struct chunk_run *g;

	if (ARRAY_GROW(cp->run, cp->caprun, cp->nrun + 1, 8))
		return NULL;
	g = &cp->run[cp->nrun++];
	g->pts = cp->holder[h].pts;
	g->at = g->n = at;
	g->holder = h;
	return g;
}

/*
 * Decode the chunks of reply r into rc->chunks: the points of
 * [rc->deliver_from, to_ms] (0: no end), in ts order: runs of each
 * chunk's points that rise strictly and follow the run before (a point
 * that does not, in a hostile or overlapping chunk, is left out).  A
 * chunk that does not decode is reported like an entry that does not.
 */
void chunks_take(struct read_ctx *rc, redisReply *r, uint64_t to_ms, size_t *bad)
{
	struct chunk_points *cp = calloc(1, sizeof(*cp));
	uint64_t last = 0, end = to_ms ? to_ms : UINT64_MAX;
	int any = 0;

	if (!cp)
		return;
	cp->cache = rc->cache;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
		redisReply *e = r->element[i], *f;
		struct chunk_holder *hd;
		struct chunk_run *g = NULL;
		int cached;
		char derr[256];

		if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
		    e->element[1]->type != REDIS_REPLY_ARRAY || e->element[1]->elements != 2 ||
		    e->element[1]->element[1]->type != REDIS_REPLY_STRING) {
			entry_bad(rc, e, "not a chunk entry with its field", bad);
			continue;
		}
		if (ARRAY_GROW(cp->holder, cp->capholder, cp->nholder + 1, 8))
			break;
		hd = &cp->holder[cp->nholder];
		memset(hd, 0, sizeof(*hd));
		f = e->element[1]->element[1];
		cached = rc->cache && rc->host && (!rc->series || rc->series_key);
		if (cached ?
		    chunk_cache_get(rc->cache, rc->host, rc->series_key, f->str, f->len,
				    rc->compact, rc->series, rc->arg, (const struct snapshot **)&hd->pts,
				    &hd->n, &hd->ref, derr, sizeof(derr)) :
		    chunk_decode_select(f->str, f->len, rc->compact, rc->deliver_from, end,
					rc->series, rc->arg, &hd->pts, &hd->n, derr, sizeof(derr))) {
			entry_bad(rc, e, derr, bad);
			continue;
		}
		cp->nholder++;
		for (size_t k = 0; k < hd->n; k++) {
			uint64_t ts = hd->pts[k].ts_ms;

			if (ts < rc->deliver_from || ts > end || (any && ts <= last)) {
				g = NULL;	/* out of range or not rising: a run ends */
				continue;
			}
			if (!g && !(g = run_open(cp, (uint32_t)(cp->nholder - 1), k)))
				break;
			g->n = k + 1;
			last = ts;
			any = 1;
		}
	}
	rc->chunks = cp;
}

/*
 * Point pts[k] of run g as the snapshot cb takes it: the run's own, or a
 * copy of a lent one into *copy; filed under rc->host.  NULL: out of memory.
 */
static struct snapshot *point_out(const struct read_ctx *rc, const struct chunk_points *cp,
				  const struct chunk_run *g, size_t k, struct snapshot *copy)
{
	struct snapshot *s = &g->pts[k];

	if (cp->holder[g->holder].ref) {
		if (snapshot_copy(copy, s))
			return NULL;
		s = copy;
	}
	if (rc->host && strcmp(s->host, rc->host)) {
		char *h = strdup(rc->host);

		if (!h) {
			snapshot_free(s);
			return NULL;
		}
		free(s->host);
		s->host = h;
	}
	return s;
}

/*
 * Deliver the chunks' points before ts `before` (0: all that are left),
 * dropping one at ts itself: to rc->run in runs, else one by one to cb.
 * Returns 1 when delivery is to stop (a callback said so, or rc->max
 * reached).
 */
int chunks_deliver(struct read_ctx *rc, uint64_t before, store_snapshot_cb cb,
		   void *arg, int *delivered)
{
	struct chunk_points *cp = rc ? rc->chunks : NULL;

	while (cp && cp->cur < cp->nrun) {
		struct chunk_run *g = &cp->run[cp->cur];
		size_t end = g->at;
		int ret = 0;

		while (end < g->n && (!before || g->pts[end].ts_ms < before))
			end++;
		if (end > g->at && rc->run && !rc->max) {
			*delivered += (int)(end - g->at);
			ret = rc->run(rc->index, g->pts + g->at, end - g->at, rc->arg);
			g->at = end;
			if (ret)
				return rc->stopped = 1;
		}
		for (; g->at < end; g->at++) {
			struct snapshot copy, *s = point_out(rc, cp, g, g->at, &copy);

			if (!s)
				continue;	/* out of memory: this point is lost, not the read */
			(*delivered)++;
			ret = cb(s, arg);
			snapshot_free(s);
			if (ret || (rc->max && (size_t)*delivered >= rc->max)) {
				g->at++;
				return rc->stopped = 1;
			}
		}
		if (g->at < g->n) {
			if (g->pts[g->at].ts_ms != before)
				return 0;	/* the rest follow the entry at `before` */
			g->at++;		/* the entry of that ts is delivered instead */
			continue;
		}
		cp->cur++;
	}
	return 0;
}

int deliver_entries(redisReply *r, int reverse, store_snapshot_cb cb, void *arg,
			   struct read_ctx *rc, size_t *bad, char *err, size_t errlen)
{
	int delivered = 0;

	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "redis: %s", r->str);
		return -EIO;
	}
	if (r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "redis: unexpected reply type %d to XRANGE", r->type);
		return -EIO;
	}
	for (size_t k = 0; k < r->elements; k++) {
		size_t i = reverse ? r->elements - 1 - k : k;
		redisReply *e = r->element[i], *fields;
		struct snapshot s;
		char derr[256];
		int found = 0, ret, early;

		if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
		    e->element[1]->type != REDIS_REPLY_ARRAY) {
			entry_bad(rc, e, "not a stream entry with fields", bad);
			continue;
		}
		fields = e->element[1];
		/*
		 * The chunks' points before this entry go first, before it is
		 * decoded: an entry decoded like the host's newest snapshot
		 * (rc->like) borrows from it, and those points change which one
		 * is newest.  An entry's id is its ts.
		 */
		if (rc && rc->chunks && e->element[0]->type == REDIS_REPLY_STRING &&
		    chunks_deliver(rc, strtoull(e->element[0]->str, NULL, 10), cb, arg, &delivered))
			return delivered;
		for (size_t f = 0; f + 1 < fields->elements; f += 2) {
			redisReply *fk = fields->element[f], *fv = fields->element[f + 1];

			if (fk->type != REDIS_REPLY_STRING || strcmp(fk->str, "d") ||
			    fv->type != REDIS_REPLY_STRING)
				continue;
			found = 1;
			if (rc && rc->chain)
				ret = snapshot_decode_on(fv->str, fv->len, &s, rc->base, rc->compact,
							 derr, sizeof(derr));
			else if (rc && rc->like)
				ret = snapshot_decode_like(fv->str, fv->len, &s,
							   rc->like(rc->index, rc->arg), derr,
							   sizeof(derr));
			else
				ret = (rc && rc->compact ? snapshot_decode_compact : snapshot_decode)(
					fv->str, fv->len, &s, derr, sizeof(derr));
			/* read only as the base of the first entry asked for */
			early = rc && rc->chain &&
				(ret ? e->element[0]->type == REDIS_REPLY_STRING &&
				       strtoull(e->element[0]->str, NULL, 10) < rc->deliver_from :
				       s.ts_ms < rc->deliver_from);
			if (ret) {
				if (rc && rc->chain)
					chain_end(rc);
				if (early)
					log_debug("%s: entry before the range read: %s",
						  rc->host ? rc->host : "?", derr);
				else
					entry_bad(rc, e, derr, bad);
				break;
			}
			if (rc && rc->host && strcmp(s.host, rc->host)) {
				char *h = strdup(rc->host);

				if (!h) {
					snapshot_free(&s);
					entry_bad(rc, e, "out of memory", bad);
					break;
				}
				log_debug("entry of %s names host '%.64s' inside; filed under %s",
					  rc->host, s.host, rc->host);
				free(s.host);
				s.host = h;
			}
			if (early) {
				chain_advance(rc, &s);
				break;
			}
			if (chunks_deliver(rc, s.ts_ms, cb, arg, &delivered)) {
				snapshot_free(&s);
				return delivered;
			}
			delivered++;
			if (rc && rc->chain) {
				/* the next entry's base, whatever cb does with s */
				struct snapshot keep;

				if (snapshot_copy(&keep, &s)) {
					chain_end(rc);
				} else {
					chain_advance(rc, &keep);
				}
			}
			ret = cb(&s, arg);
			snapshot_free(&s);
			if (ret || (rc && rc->max && (size_t)delivered >= rc->max)) {
				if (rc)
					rc->stopped = 1;
				return delivered;
			}
			break;
		}
		if (!found)
			entry_bad(rc, e, "no \"d\" field", bad);
	}
	return delivered;
}

/* Queue XRANGE key from to [COUNT count] (count NULL: all). */
static int append_xrange(struct conn *c, const char *key, const char *from, const char *to,
			 const char *count)
{
	const char *argv[6] = { "XRANGE", key, from, to, "COUNT", count };

	return conn_append(c, key, count ? 6 : 4, argv, NULL);
}

/*
 * Queue the XRANGE of host's chunks of tier from from_ms (a chunked tier
 * only): from the chunk of from_ms's span (a chunk's id is its span's start).
 */
int append_chunks(struct conn *c, const char *host, uint32_t tier, uint64_t from_ms,
			 const char *to)
{
	char key[320], from[32];

	key_chunks(key, sizeof(key), host, tier);
	snprintf(from, sizeof(from), "%" PRIu64, chunk_span_of(from_ms, chunk_span_ms(tier)));
	return append_xrange(c, key, from, to, NULL);
}

/*
 * Whether the chunks of a tier whose entries are not chained (1 s) may
 * hold points of a read from from_ms to to_ms (0: open), given the reply
 * r to the XRANGE of its entries, sent before: when the first entry is in
 * a later span than from_ms (the spans before it, from from_ms's, may have
 * been compacted), or when a closed range has no entry.  An open range
 * with no entry has none in the chunks either: the newest entry is never
 * compacted (store.c), so a span compacted after from_ms leaves a newer
 * entry in r.  An entry of from_ms's own span means that span is entries:
 * a compaction removes all of a span's entries at once.
 */
int chunks_may_hold(uint32_t tier, uint64_t from_ms, uint64_t to_ms, const redisReply *r)
{
	uint64_t span = chunk_span_ms(tier);
	const redisReply *e;

	if (!span || r->type != REDIS_REPLY_ARRAY)
		return 0;
	if (!r->elements)
		return to_ms != 0;
	e = r->element[0];
	if (e->type != REDIS_REPLY_ARRAY || e->elements < 1 ||
	    e->element[0]->type != REDIS_REPLY_STRING)
		return 1;
	return chunk_span_of(strtoull(e->element[0]->str, NULL, 10), span) !=
	       chunk_span_of(from_ms, span);
}

int store_read_range(struct conn *c, const char *host, uint32_t tier, uint64_t from_ms,
		     uint64_t to_ms, size_t max, store_snapshot_cb cb, void *arg,
		     size_t *bad, char *err, size_t errlen)
{
	char key[320], from[32], to[32], count[32];
	int chain = snapshot_delta_span_ms(tier) != 0;
	struct read_ctx rc = { .host = host, .chain = chain, .deliver_from = from_ms, .max = max };
	uint64_t start = chain_start(tier, from_ms), want;
	redisReply *r = NULL, *rch = NULL;
	int ret;

	key_tier(key, sizeof(key), host, tier);
	snprintf(from, sizeof(from), "%" PRIu64, start);
	if (to_ms)
		snprintf(to, sizeof(to), "%" PRIu64, to_ms);
	else
		snprintf(to, sizeof(to), "+");
	/* a chain's entries before from_ms come on top: at most a span's */
	want = (uint64_t)max + (from_ms - start) / ((uint64_t)tier * 1000) + 1;
	snprintf(count, sizeof(count), "%" PRIu64, want);
	/* the entries first, then the chunks (keyspace.h: never a point missed) */
	if (append_xrange(c, key, from, to, max ? count : NULL) ||
	    (chain && append_chunks(c, host, tier, from_ms, to)) || !(r = conn_reply(c)) ||
	    (chain && !(rch = conn_reply(c)))) {
		snprintf(err, errlen, "redis: %s", conn_errstr(c));
		if (r)
			freeReplyObject(r);
		return -EIO;
	}
	/* not chained: the chunks after the entries, when they may hold part of the range */
	if (!chain && chunks_may_hold(tier, from_ms, to_ms, r) &&
	    (append_chunks(c, host, tier, from_ms, to) || !(rch = conn_reply(c)))) {
		snprintf(err, errlen, "redis: %s", conn_errstr(c));
		freeReplyObject(r);
		return -EIO;
	}
	if (rch) {
		if (rch->type == REDIS_REPLY_ARRAY)
			chunks_take(&rc, rch, to_ms, bad);
		freeReplyObject(rch);
	}
	ret = deliver_entries(r, 0, cb, arg, &rc, bad, err, errlen);
	/* what the chunks hold after the last entry, unless COUNT cut the entries short */
	if (ret >= 0 && !rc.stopped &&
	    !(max && r->type == REDIS_REPLY_ARRAY && r->elements >= want))
		chunks_deliver(&rc, 0, cb, arg, &ret);
	chunk_points_release(rc.chunks);
	chain_end(&rc);
	freeReplyObject(r);
	return ret;
}

/*
 * Into rc->chunks, the newest `need` points of host's newest chunk of tier
 * older than the entry `oldest` (NULL: none), read after the entries: a
 * minute compacted between the two is met in both, and its points at or
 * after `oldest` are dropped.  0, or -EIO with the reason in err.
 */
static int newest_chunk(struct conn *c, struct read_ctx *rc, const char *host, uint32_t tier,
			size_t need, const redisReply *oldest, size_t *bad, char *err,
			size_t errlen)
{
	char key[320];
	const char *argv[6] = { "XREVRANGE", key, "+", "-", "COUNT", "1" };
	uint64_t before = UINT64_MAX;
	redisReply *r;

	if (oldest && oldest->type == REDIS_REPLY_ARRAY && oldest->elements >= 1 &&
	    oldest->element[0]->type == REDIS_REPLY_STRING)
		before = strtoull(oldest->element[0]->str, NULL, 10);
	key_chunks(key, sizeof(key), host, tier);
	r = conn_command(c, key, 6, argv, NULL);
	if (!r) {
		snprintf(err, errlen, "redis: %s", conn_errstr(c));
		return -EIO;
	}
	if (r->type == REDIS_REPLY_ARRAY)
		chunks_take(rc, r, 0, bad);
	freeReplyObject(r);
	if (rc->chunks)
		chunk_points_keep(rc->chunks, before, need);
	return 0;
}

int store_read_latest(struct conn *c, const char *host, uint32_t tier, size_t count,
		      store_snapshot_cb cb, void *arg, size_t *bad, char *err, size_t errlen)
{
	char key[320], n[32];
	const char *argv[6] = { "XREVRANGE", key, "+", "-", "COUNT", n };
	redisReply *r;
	int ret;

	key_tier(key, sizeof(key), host, tier);
	snprintf(n, sizeof(n), "%zu", count ? count : 1);
	r = conn_command(c, key, 6, argv, NULL);
	if (!r) {
		snprintf(err, errlen, "redis: %s", conn_errstr(c));
		return -EIO;
	}
	{
		struct read_ctx rc = { .host = host };

		if (r->type == REDIS_REPLY_ARRAY && r->elements < (count ? count : 1) &&
		    chunk_span_ms(tier) && !snapshot_delta_span_ms(tier) &&
		    newest_chunk(c, &rc, host, tier, (count ? count : 1) - r->elements,
				 r->elements ? r->element[r->elements - 1] : NULL, bad, err,
				 errlen)) {
			freeReplyObject(r);
			return -EIO;
		}
		ret = deliver_entries(r, 1, cb, arg, &rc, bad, err, errlen);
		if (ret >= 0 && !rc.stopped && !r->elements)
			chunks_deliver(&rc, 0, cb, arg, &ret);
		chunk_points_release(rc.chunks);
	}
	freeReplyObject(r);
	return ret;
}

int store_read_blobs(struct conn *c, const char *key, uint64_t from_ms, uint64_t to_ms,
		     store_blob_cb cb, void *arg, char *err, size_t errlen)
{
	return store_read_field(c, key, "d", STORE_READ_PAGE, from_ms, to_ms, cb, arg, err,
				errlen);
}

int store_read_field(struct conn *c, const char *key, const char *field, int page,
		     uint64_t from_ms, uint64_t to_ms, store_blob_cb cb, void *arg, char *err,
		     size_t errlen)
{
	char from[48], to[32], count[16];
	const char *argv[6] = { "XRANGE", key, from, to, "COUNT", count };
	int n = 0, ret = 0, more = 1;

	snprintf(from, sizeof(from), "%" PRIu64, from_ms);
	if (to_ms)
		snprintf(to, sizeof(to), "%" PRIu64, to_ms);
	else
		snprintf(to, sizeof(to), "+");
	snprintf(count, sizeof(count), "%d", page);
	/* paged and bounded: what a host wrote cannot make a reader hold more than a page */
	conn_set_reply_limit(c, STORE_READ_PAGE_MAX);
	while (more && !ret) {
		redisReply *r = conn_command(c, key, 6, argv, NULL);

		if (!r) {
			snprintf(err, errlen, "redis: %s", conn_errstr(c));
			ret = -EIO;
			break;
		}
		if (r->type != REDIS_REPLY_ARRAY) {
			snprintf(err, errlen, "redis: %s", r->type == REDIS_REPLY_ERROR ? r->str :
				 "unexpected reply to XRANGE");
			freeReplyObject(r);
			ret = -EIO;
			break;
		}
		more = r->elements == (size_t)page;
		for (size_t i = 0; i < r->elements && !ret; i++) {
			redisReply *e = r->element[i], *f;

			if (e->type != REDIS_REPLY_ARRAY || e->elements != 2)
				continue;
			if (i + 1 == r->elements) {
				if (e->element[0]->type == REDIS_REPLY_STRING &&
				    e->element[0]->len < sizeof(from) - 2)
					snprintf(from, sizeof(from), "(%s", e->element[0]->str);
				else
					more = 0;
			}
			f = e->element[1];
			for (size_t k = 0; f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements;
			     k += 2) {
				if (f->element[k]->type != REDIS_REPLY_STRING ||
				    f->element[k + 1]->type != REDIS_REPLY_STRING ||
				    strcmp(f->element[k]->str, field))
					continue;
				n++;
				if (cb(f->element[k + 1]->str, f->element[k + 1]->len, arg)) {
					ret = 1;
					break;
				}
			}
		}
		freeReplyObject(r);
	}
	conn_set_reply_limit(c, 0);
	return ret < 0 ? ret : n;
}
