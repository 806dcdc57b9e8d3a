/*
 * compaction.c - an ended span of a rollup tier replaced by its chunk; see
 * compaction.h.
 */
#include "store/compaction.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "model/chunk.h"
#include "model/snapshot.h"
#include "store/conn.h"
#include "store/keyspace.h"

/* The entry e's field "d", or NULL. */
static const redisReply *entry_data(const redisReply *e)
{
	const redisReply *f;

	if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
	    e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_ARRAY)
		return NULL;
	f = e->element[1];
	for (size_t k = 0; k + 1 < f->elements; k += 2)
		if (f->element[k]->type == REDIS_REPLY_STRING && !strcmp(f->element[k]->str, "d") &&
		    f->element[k + 1]->type == REDIS_REPLY_STRING)
			return f->element[k + 1];
	return NULL;
}

/* Decode the span's entries along their chain into pts[0..n). Returns 0 or -EINVAL. */
static int decode_span(const redisReply *r, struct snapshot *pts, size_t *n, char *why,
		       size_t whylen)
{
	*n = 0;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *d = entry_data(r->element[i]);
		char derr[200];

		if (!d) {
			snprintf(why, whylen, "entry %s has no \"d\" field",
				 r->element[i]->type == REDIS_REPLY_ARRAY &&
				 r->element[i]->elements ? r->element[i]->element[0]->str : "?");
			return -EINVAL;
		}
		if (snapshot_decode_on(d->str, d->len, &pts[*n], *n ? &pts[*n - 1] : NULL, 0, derr,
				       sizeof(derr))) {
			snprintf(why, whylen, "entry %s: %s", r->element[i]->element[0]->str, derr);
			return -EINVAL;
		}
		(*n)++;
	}
	return 0;
}

/*
 * The swap, atomic: the chunk added, then the entries it holds removed,
 * only when Redis took it (a chunk id must be above the stream's newest;
 * a refused chunk leaves the entries where they are).  Both keys carry the
 * host's hash tag: one slot, so it runs on a cluster too.
 */
static const char swap_script[] =
	"local ok = redis.pcall('XADD', KEYS[2], 'MINID', '~', ARGV[1], ARGV[2], 'c', ARGV[3]) "
	"if type(ok) == 'table' and ok.err then return ok end "
	"return redis.call('XDEL', KEYS[1], unpack(ARGV, 4))";

static int swap_in(struct conn *c, const char *key, const char *ckey, uint64_t span_start,
		   uint64_t minid, const char *blob, size_t len, const redisReply *r, char *err,
		   size_t errlen)
{
	size_t argc = 8 + r->elements;
	const char **argv = malloc(argc * sizeof(*argv));
	size_t *lens = malloc(argc * sizeof(*lens));
	char id[32], mid[32];
	redisReply *x;
	int ret = 0;

	if (!argv || !lens) {
		free(argv);
		free(lens);
		snprintf(err, errlen, "out of memory");
		return -EAGAIN;
	}
	snprintf(id, sizeof(id), "%" PRIu64 "-0", span_start);
	snprintf(mid, sizeof(mid), "%" PRIu64, minid);
	argv[0] = "EVAL";
	argv[1] = swap_script;
	argv[2] = "2";
	argv[3] = key;
	argv[4] = ckey;
	argv[5] = mid;
	argv[6] = id;
	argv[7] = blob;
	for (size_t i = 0; i < r->elements; i++)
		argv[8 + i] = r->element[i]->element[0]->str;
	for (size_t i = 0; i < argc; i++)
		lens[i] = i == 7 ? len : strlen(argv[i]);
	x = conn_command(c, key, (int)argc, argv, lens);
	free(argv);
	free(lens);
	if (!x) {
		snprintf(err, errlen, "redis: %s", conn_errstr(c));
		return -EIO;
	}
	if (x->type == REDIS_REPLY_ERROR && strstr(x->str, "equal or smaller")) {
		log_warn("%s: a chunk at or after span %" PRIu64 " is there already; the span stays "
			 "as %zu entries", ckey, span_start, r->elements);
	} else if (x->type != REDIS_REPLY_INTEGER) {
		snprintf(err, errlen, "redis: compacting %s: %s", key,
			 x->type == REDIS_REPLY_ERROR ? x->str : "unexpected reply");
		ret = -EAGAIN;
	}
	freeReplyObject(x);
	return ret;
}

int store_compact_span(struct conn *c, const char *host, uint32_t tier, uint64_t span_start,
		       uint64_t minid, char *err, size_t errlen)
{
	uint64_t span = snapshot_delta_span_ms(tier);
	char key[320], ckey[320], from[32], to[32], why[256];
	const char *argv[4] = { "XRANGE", key, from, to };
	struct snapshot *pts = NULL;
	size_t n = 0, len;
	redisReply *r;
	char *blob;
	int ret;

	if (!span || key_tier(key, sizeof(key), host, tier) < 0 ||
	    key_chunks(ckey, sizeof(ckey), host, tier) < 0)
		return 0;
	/* the windows that start in the span: ids (window ends) in (start, start + span] */
	snprintf(from, sizeof(from), "%" PRIu64, span_start + 1);
	snprintf(to, sizeof(to), "%" PRIu64, span_start + span);
	r = conn_command(c, key, 4, argv, NULL);
	if (!r) {
		snprintf(err, errlen, "redis: reading %s: %s", key, conn_errstr(c));
		return -EIO;
	}
	if (r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "redis: reading %s: %s", key,
			 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
		freeReplyObject(r);
		return -EAGAIN;
	}
	if (r->elements == 0 || r->elements > CHUNK_MAX_POINTS) {
		freeReplyObject(r);
		return 0;
	}
	pts = calloc(r->elements, sizeof(*pts));
	if (!pts) {
		freeReplyObject(r);
		snprintf(err, errlen, "out of memory");
		return -EAGAIN;
	}
	ret = decode_span(r, pts, &n, why, sizeof(why));
	if (!ret) {
		ret = chunk_encode(pts, n, &blob, &len);
		if (ret == -EINVAL)
			snprintf(why, sizeof(why), "a chunk cannot hold its points exactly");
	}
	for (size_t i = 0; i < n; i++)
		snapshot_free(&pts[i]);
	free(pts);
	if (ret == -ENOMEM) {
		freeReplyObject(r);
		snprintf(err, errlen, "out of memory");
		return -EAGAIN;
	}
	if (ret) {
		log_warn("%s: span %" PRIu64 " stays as %zu entries (%s)", key, span_start,
			 r->elements, why);
		freeReplyObject(r);
		return 0;
	}
	ret = swap_in(c, key, ckey, span_start, minid, blob, len, r, err, errlen);
	if (!ret)
		log_debug("%s: span %" PRIu64 ": %zu entries -> a %zu-byte chunk", key, span_start,
			  r->elements, len);
	free(blob);
	freeReplyObject(r);
	return ret;
}
