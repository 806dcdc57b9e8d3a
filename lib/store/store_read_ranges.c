/*
 * store_read_ranges.c - store_read_ranges: many hosts' reads pipelined,
 * page by page, every host's chunks read with its first page (a rollup
 * tier) or after it (the 1 s tier, take_deferred); see store.h.
 */
#include "store/store.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "model/chunk.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store_read_internal.h"

#define READ_PIPELINE 512	/* XRANGEs in flight per round trip */
/*
 * Entries per XRANGE: a host with more is read again from after its last
 * one in the next round, so a first read of minutes of a whole fleet's
 * history never holds more than READ_PIPELINE x READ_PAGE replies at once
 * (a read of 500 hosts x 30 min in one round was 2 GB of replies, and
 * timed out).  The steady state reads one entry per host: one round.
 */
#define READ_PAGE STORE_READ_PAGE

struct read_page {
	size_t host;			/* index into hosts */
	char from[48];			/* "MS" or "(MS-SEQ" (after that entry) */
};

/*
 * Redis is given this long to finish the answer that timed out before it
 * counts as down: a gigabyte takes it 0.7 s on a quiet machine, over 3 s on
 * a slow one.
 */
#define BUSY_PATIENCE_NS (10 * NSEC_PER_SEC)

/*
 * 1 if Redis answers a PING (on a new connection, as the last one failed)
 * within BUSY_PATIENCE_NS (and at least 5 tries): it may still be busy
 * building the answer that timed out, and is not down for that.
 */
static int redis_answers(struct conn *c)
{
	uint64_t until = time_mono_ns() + BUSY_PATIENCE_NS;

	for (int attempt = 0; attempt < 5 || time_mono_ns() < until; attempt++) {
		redisReply *r = conn_commandf(c, NULL, "PING");
		int ok = r && r->type == REDIS_REPLY_STATUS;

		if (r)
			freeReplyObject(r);
		if (ok)
			return 1;
		if (!conn_reply_timed_out(c))
			usleep(50000);	/* refused at once: give it a moment */
	}
	return 0;
}

/* One store_read_ranges call: what it reads, and where each host is. */
struct ranges_read {
	struct conn *c;
	const char *const *hosts;
	const uint64_t *from_ms;
	uint32_t tier;
	uint64_t to_ms;
	char to[32], count[16];		/* XRANGE's end and COUNT */
	const struct store_readers *rd;
	size_t *bad;
	int chain;			/* a rollup tier: chains, and chunks read with the entries */
	int chunked;			/* the tier has chunks (all do; chunk_span_ms) */
	struct snapshot **bases;	/* chain: each host's entry before its next page */
	struct chunk_points **chunks;	/* chunked: its chunks' points, read with its first page */
	struct read_page *todo;		/* hosts with a page to read */
	/* not chained: first pages held until their chunks are read (take_deferred) */
	struct deferred_page {
		size_t host;
		redisReply *r;
	} *deferred;
	size_t ndeferred;
	int delivered;
};

/* Send the page requests of todo[at..at+batch) (and, first, their chunks).  0 or -EIO. */
static int send_pages(struct ranges_read *rr, size_t at, size_t batch, int first)
{
	for (size_t i = 0; i < batch; i++) {
		size_t h = rr->todo[at + i].host;
		char key[320];
		const char *argv[6] = { "XRANGE", key, rr->todo[at + i].from, rr->to, "COUNT",
					rr->count };

		key_tier(key, sizeof(key), rr->hosts[h], rr->tier);
		/* the entries first, then the chunks (keyspace.h) */
		if (conn_append(rr->c, key, 6, argv, NULL) ||
		    (rr->chain && first &&
		     append_chunks(rr->c, rr->hosts[h], rr->tier, rr->from_ms[h], rr->to)))
			return -EIO;
	}
	return 0;
}

/*
 * Host h's page r (and, with its first, its chunks rch): deliver its
 * entries; a full page puts the host in todo[*more] for the next round;
 * after its last page, what its chunks hold after its entries.
 */
static void take_page(struct ranges_read *rr, size_t h, redisReply *r, redisReply *rch,
		      size_t *more, char *err, size_t errlen)
{
	const struct store_readers *rd = rr->rd;
	struct read_ctx rc = { .host = rr->hosts[h], .index = h, .compact = 1, .bad_cb = rd->bad,
			       .like = rd->like, .run = rd->run, .series = rd->series,
			       .cache = rd->cache,
			       .series_key = rd->series_key, .arg = rd->arg,
			       .chain = rr->chain,
			       .base = rr->chain ? rr->bases[h] : NULL,
			       .deliver_from = rr->from_ms[h],
			       .chunks = rr->chunked ? rr->chunks[h] : NULL };
	int got, last_page = 1;

	if (rch) {
		if (rch->type == REDIS_REPLY_ARRAY)
			chunks_take(&rc, rch, rr->to_ms, rr->bad);
		freeReplyObject(rch);
	}
	got = deliver_entries(r, 0, rd->snapshot, rd->arg, &rc, rr->bad, err, errlen);
	if (rr->chain)
		rr->bases[h] = rc.base;
	if (rr->chunked)
		rr->chunks[h] = rc.chunks;
	if (got < 0) {
		if (rd->bad)
			rd->bad(h, 0, err, rd->arg);
		else
			log_warn("reading %s: %s", rr->hosts[h], err);
		if (rr->bad)
			(*rr->bad)++;
	} else {
		rr->delivered += got;
	}
	/* a full page: read on after its last entry (*more <= this host's place) */
	if (r->type == REDIS_REPLY_ARRAY && r->elements == READ_PAGE) {
		const redisReply *last = r->element[READ_PAGE - 1];

		if (last->type == REDIS_REPLY_ARRAY && last->elements >= 1 &&
		    last->element[0]->type == REDIS_REPLY_STRING && last->element[0]->len < 40) {
			rr->todo[*more].host = h;
			snprintf(rr->todo[*more].from, sizeof(rr->todo[*more].from), "(%s",
				 last->element[0]->str);
			(*more)++;
			last_page = 0;
		}
	}
	/* the host's entries are all read: what its chunks hold after them */
	if (rr->chunked && last_page && got >= 0) {
		int rest = 0;

		rc.chunks = rr->chunks[h];
		chunks_deliver(&rc, 0, rd->snapshot, rd->arg, &rest);
		rr->delivered += rest;
		chunk_points_release(rr->chunks[h]);
		rr->chunks[h] = NULL;
	}
	freeReplyObject(r);
}

/*
 * Read the replies to the batch todo[at..at+batch) sent by send_pages.
 * Returns where the next batch starts (at + batch, or earlier when a reply
 * was abandoned: the hosts from there are asked again), and sets
 * *pipeline for it; -1 when the connection failed (err says why).
 */
static ssize_t take_replies(struct ranges_read *rr, size_t at, size_t batch, int first,
			    size_t *pipeline, size_t *more, char *err, size_t errlen)
{
	struct conn *c = rr->c;

	for (size_t i = 0; i < batch; i++) {
		size_t h = rr->todo[at + i].host;
		redisReply *r = conn_reply(c), *rch = NULL;

		if (r && rr->chain && first && !(rch = conn_reply(c))) {
			freeReplyObject(r);
			r = NULL;
		}
		if (!r && !conn_reply_too_large(c) && conn_reply_timed_out(c) && batch > 1 &&
		    redis_answers(c)) {
			/*
			 * A pipeline timed out, Redis answers: one of its commands
			 * was too big to answer in time, and which one is unknown
			 * (Redis runs a pipeline's commands before it sends their
			 * replies).  Its hosts from this one on are asked one at a
			 * time until it shows.
			 */
			*pipeline = 1;
			return (ssize_t)(at + i);
		}
		if (!r && (conn_reply_too_large(c) ||
			   (conn_reply_timed_out(c) && batch == 1 && redis_answers(c)))) {
			/*
			 * This host's page is over the bound, or, asked alone, so
			 * large that Redis did not even start answering within the
			 * timeout while it answers a PING at once: it is left
			 * unread, and the batch's later hosts are asked again on a
			 * new connection (the reply was abandoned), pipelined again.
			 */
			if (rr->rd->oversize)
				rr->rd->oversize(h, rr->rd->arg);
			else
				log_error("%s: %s; not read", rr->hosts[h], conn_errstr(c));
			if (rr->bad)
				(*rr->bad)++;
			*pipeline = READ_PIPELINE;
			return (ssize_t)(at + i + 1);
		}
		if (!r) {
			snprintf(err, errlen, "redis: %s", conn_errstr(c));
			return -1;
		}
		if (!rr->chain && rr->chunked && first &&
		    chunks_may_hold(rr->tier, rr->from_ms[h], rr->to_ms, r)) {
			rr->deferred[rr->ndeferred].host = h;
			rr->deferred[rr->ndeferred++].r = r;
			continue;
		}
		take_page(rr, h, r, rch, more, err, errlen);
	}
	return (ssize_t)(at + batch);
}

/*
 * The first pages take_replies held (a 1 s tier's entries that show its
 * chunks may hold part of the range): their hosts' chunks, read now that
 * their entries were (keyspace.h: every point once or twice, never not at
 * all), then the pages delivered.  A chunk reply over the bound leaves its
 * host unread (rd->oversize) and the rest are asked again (the connection
 * was dropped).  With `failed` (the batch failed, err set) the pages are
 * only freed.  Returns 0, or -1 when the connection failed (err says why).
 */
static int take_deferred(struct ranges_read *rr, size_t *more, int failed, char *err,
			 size_t errlen)
{
	size_t at = 0, i;
	int broken = 0;

	while (!failed && !broken && at < rr->ndeferred) {
		for (i = at; i < rr->ndeferred && !broken; i++) {
			size_t h = rr->deferred[i].host;

			broken = append_chunks(rr->c, rr->hosts[h], rr->tier, rr->from_ms[h], rr->to);
		}
		for (i = at; i < rr->ndeferred && !broken; i++) {
			size_t h = rr->deferred[i].host;
			redisReply *rch = conn_reply(rr->c);

			if (!rch && conn_reply_too_large(rr->c)) {
				if (rr->rd->oversize)
					rr->rd->oversize(h, rr->rd->arg);
				else
					log_error("%s: %s; not read", rr->hosts[h], conn_errstr(rr->c));
				if (rr->bad)
					(*rr->bad)++;
				freeReplyObject(rr->deferred[i].r);
				rr->deferred[i].r = NULL;
				i++;
				break;
			}
			if (!rch) {
				broken = 1;
				break;
			}
			take_page(rr, h, rr->deferred[i].r, rch, more, err, errlen);
			rr->deferred[i].r = NULL;
		}
		at = i;
	}
	if (broken)
		snprintf(err, errlen, "redis: %s", conn_errstr(rr->c));
	for (i = 0; i < rr->ndeferred; i++)
		if (rr->deferred[i].r)
			freeReplyObject(rr->deferred[i].r);
	rr->ndeferred = 0;
	return broken ? -1 : 0;
}

/* take_replies, then the pages it held (take_deferred). */
static ssize_t take_pages(struct ranges_read *rr, size_t at, size_t batch, int first,
			  size_t *pipeline, size_t *more, char *err, size_t errlen)
{
	ssize_t next = take_replies(rr, at, batch, first, pipeline, more, err, errlen);

	if (take_deferred(rr, more, next < 0, err, errlen))
		return -1;
	return next;
}

int store_read_ranges(struct conn *c, const char *const *hosts, const uint64_t *from_ms,
		      size_t n, uint32_t tier, uint64_t to_ms, const struct store_readers *rd,
		      size_t *bad, char *err, size_t errlen)
{
	struct ranges_read rr = { .c = c, .hosts = hosts, .from_ms = from_ms, .tier = tier,
				  .to_ms = to_ms, .to = "+", .rd = rd, .bad = bad,
				  .chain = snapshot_delta_span_ms(tier) != 0,
				  .chunked = chunk_span_ms(tier) != 0 };
	size_t ntodo = n;
	int first = 1;

	rr.todo = malloc((n + 1) * sizeof(*rr.todo));
	if (rr.chain)
		rr.bases = calloc(n + 1, sizeof(*rr.bases));
	if (rr.chunked) {
		rr.chunks = calloc(n + 1, sizeof(*rr.chunks));
		rr.deferred = calloc(n < READ_PIPELINE ? n + 1 : READ_PIPELINE, sizeof(*rr.deferred));
	}
	if (!rr.todo || (rr.chain && !rr.bases) || (rr.chunked && (!rr.chunks || !rr.deferred))) {
		free(rr.todo);
		free(rr.bases);
		free(rr.chunks);
		free(rr.deferred);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (to_ms)
		snprintf(rr.to, sizeof(rr.to), "%" PRIu64, to_ms);
	snprintf(rr.count, sizeof(rr.count), "%d", READ_PAGE);
	/* a host's page is bounded: one host cannot make every host's read fail */
	conn_set_reply_limit(c, STORE_READ_PAGE_MAX);
	for (size_t i = 0; i < n; i++) {
		rr.todo[i].host = i;
		snprintf(rr.todo[i].from, sizeof(rr.todo[i].from), "%" PRIu64,
			 chain_start(tier, from_ms[i]));
	}
	while (ntodo) {
		size_t more = 0;	/* hosts with another page: todo[0..more) next round */
		size_t pipeline = READ_PIPELINE;

		for (size_t at = 0; at < ntodo;) {
			size_t batch = ntodo - at < pipeline ? ntodo - at : pipeline;
			ssize_t next;

			if (send_pages(&rr, at, batch, first)) {
				snprintf(err, errlen, "redis: %s", conn_errstr(c));
				rr.delivered = -EIO;
				goto out;
			}
			next = take_pages(&rr, at, batch, first, &pipeline, &more, err, errlen);
			if (next < 0) {
				rr.delivered = -EIO;
				goto out;
			}
			at = (size_t)next;
		}
		ntodo = more;
		first = 0;
	}
out:
	conn_set_reply_limit(c, 0);
	for (size_t i = 0; i < n; i++) {
		struct read_ctx rc = { .base = rr.chain ? rr.bases[i] : NULL };

		chain_end(&rc);
		if (rr.chunked)
			chunk_points_release(rr.chunks[i]);
	}
	free(rr.deferred);
	free(rr.chunks);
	free(rr.bases);
	free(rr.todo);
	return rr.delivered;
}
