/*
 * chunk_cache.c - ended chunks kept decoded; see chunk_cache.h.
 *
 * A hash table of chained entries and one list in use order (the head
 * most recent).  An entry is found by a hash of what identifies it, then
 * compared in full: host, pick, compact, length and every byte.  The
 * hash samples the bytes (at most 32 words) rather than reading them all:
 * the full compare that follows is what makes a hit exact, and it is a
 * memcmp, an order cheaper than the zstd and decode a hit saves.
 */
#include "store/chunk_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fnv.h"

struct cc_entry {
	struct cc_entry *chain;		/* the next of its bucket */
	struct cc_entry *newer, *older;	/* use order */
	uint64_t hash;
	char *host, *pick;
	int compact;
	void *bytes;			/* the chunk, to compare */
	size_t len;
	struct snapshot *pts;		/* the whole chunk decoded */
	size_t n;
	size_t cost;			/* what it counts against the bound */
	int users;			/* copying out of it, the mutex not held */
	int gone;			/* out of the table: freed by its last user */
};

struct chunk_cache {
	pthread_mutex_t lock;
	struct cc_entry **bucket;
	size_t nbucket;			/* a power of two */
	struct cc_entry *newest, *oldest;
	struct chunk_cache_stats st;
};

struct chunk_cache *chunk_cache_new(size_t max_bytes)
{
	struct chunk_cache *cc = calloc(1, sizeof(*cc));

	if (!cc)
		return NULL;
	cc->nbucket = 1024;
	cc->bucket = calloc(cc->nbucket, sizeof(*cc->bucket));
	if (!cc->bucket) {
		free(cc);
		return NULL;
	}
	pthread_mutex_init(&cc->lock, NULL);
	cc->st.max_bytes = max_bytes ? max_bytes : 1;
	return cc;
}

static void entry_free(struct cc_entry *e)
{
	chunk_points_free(e->pts, e->n);
	free(e->bytes);
	free(e->host);
	free(e->pick);
	free(e);
}

void chunk_cache_free(struct chunk_cache *cc)
{
	struct cc_entry *e, *older;

	if (!cc)
		return;
	for (e = cc->newest; e; e = older) {
		older = e->older;
		entry_free(e);
	}
	free(cc->bucket);
	pthread_mutex_destroy(&cc->lock);
	free(cc);
}

void chunk_cache_stats(struct chunk_cache *cc, struct chunk_cache_stats *st)
{
	pthread_mutex_lock(&cc->lock);
	*st = cc->st;
	pthread_mutex_unlock(&cc->lock);
}

static uint64_t mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 32);
}

static uint64_t key_hash(const char *host, const char *pick, int compact, const uint8_t *b,
			 size_t len)
{
	uint64_t h = fnv64_str(fnv64_sep(fnv64_str(FNV64_OFFSET, host)), pick);
	size_t step = len / 32 + 1;

	h = mix(h, ((uint64_t)len << 1) | (compact != 0));
	for (size_t at = 0; at + 8 <= len; at += step * 8) {
		uint64_t w;

		memcpy(&w, b + at, 8);
		h = mix(h, w);
	}
	if (len >= 8) {		/* the tail, where sampling at a stride may miss it */
		uint64_t w;

		memcpy(&w, b + len - 8, 8);
		h = mix(h, w);
	}
	return h;
}

static void unlink_use(struct chunk_cache *cc, struct cc_entry *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		cc->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		cc->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void link_newest(struct chunk_cache *cc, struct cc_entry *e)
{
	e->older = cc->newest;
	e->newer = NULL;
	if (cc->newest)
		cc->newest->newer = e;
	else
		cc->oldest = e;
	cc->newest = e;
}

/* Take e out of the table and the use order (cc locked); freed now or by its last user. */
static void evict(struct chunk_cache *cc, struct cc_entry *e)
{
	struct cc_entry **p = &cc->bucket[e->hash & (cc->nbucket - 1)];

	while (*p != e)
		p = &(*p)->chain;
	*p = e->chain;
	unlink_use(cc, e);
	cc->st.entries--;
	cc->st.bytes -= e->cost;
	e->gone = 1;
	if (!e->users)
		entry_free(e);
}

/* Grow the table to keep chains short (cc locked); stays as it is on -ENOMEM. */
static void rehash(struct chunk_cache *cc)
{
	size_t nb = cc->nbucket * 2;
	struct cc_entry **b = calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (struct cc_entry *e = cc->newest; e; e = e->older) {
		e->chain = b[e->hash & (nb - 1)];
		b[e->hash & (nb - 1)] = e;
	}
	free(cc->bucket);
	cc->bucket = b;
	cc->nbucket = nb;
}

/* The entry of this key with a user more (cc locked), or NULL. */
static struct cc_entry *lookup(struct chunk_cache *cc, uint64_t h, const char *host,
			       const char *pick, int compact, const void *buf, size_t len)
{
	for (struct cc_entry *e = cc->bucket[h & (cc->nbucket - 1)]; e; e = e->chain) {
		if (e->hash != h || e->len != len || e->compact != compact ||
		    strcmp(e->host, host) || strcmp(e->pick, pick) || memcmp(e->bytes, buf, len))
			continue;
		unlink_use(cc, e);
		link_newest(cc, e);
		e->users++;
		return e;
	}
	return NULL;
}

static void release(struct chunk_cache *cc, struct cc_entry *e)
{
	pthread_mutex_lock(&cc->lock);
	if (!--e->users && e->gone)
		entry_free(e);
	pthread_mutex_unlock(&cc->lock);
}

/* Copies of the points of e in [from_ms, to_ms] into *out and *n. */
static int copy_out(const struct cc_entry *e, uint64_t from_ms, uint64_t to_ms,
		    struct snapshot **out, size_t *n)
{
	size_t lo = 0, k = 0;
	struct snapshot *pts;

	while (lo < e->n && e->pts[lo].ts_ms < from_ms)
		lo++;
	pts = calloc(e->n - lo + 1, sizeof(*pts));
	if (!pts)
		return -ENOMEM;
	for (size_t i = lo; i < e->n && e->pts[i].ts_ms <= to_ms; i++, k++)
		if (snapshot_copy(&pts[k], &e->pts[i])) {
			chunk_points_free(pts, k);
			return -ENOMEM;
		}
	*out = pts;
	*n = k;
	return 0;
}

/*
 * Keep the decoded pts/n as the entry of this key, with a user (cc
 * locked).  NULL when it is not kept (too large, out of memory, or a
 * thread kept the same chunk meanwhile): the caller keeps pts then.
 */
static struct cc_entry *insert(struct chunk_cache *cc, uint64_t h, const char *host,
			       const char *pick, int compact, const void *buf, size_t len,
			       struct snapshot *pts, size_t n)
{
	struct cc_entry *e, *same = lookup(cc, h, host, pick, compact, buf, len);
	size_t cost = sizeof(*e) + len + strlen(host) + strlen(pick) + 2 + n * sizeof(*pts);

	if (same) {
		same->users--;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		/* kept, not added to: the series array at its size (it grew by 16s) */
		struct series *fit = pts[i].nseries ?
				     realloc(pts[i].series, pts[i].nseries * sizeof(*fit)) : NULL;

		if (fit) {
			pts[i].series = fit;
			pts[i].cap = pts[i].nseries;
		}
		cost += snapshot_bytes(&pts[i]) - sizeof(pts[i]);
	}
	if (cost > cc->st.max_bytes / 8) {
		cc->st.too_large++;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->host = strdup(host);
	e->pick = strdup(pick);
	e->bytes = malloc(len ? len : 1);
	if (!e->host || !e->pick || !e->bytes) {
		free(e->host);
		free(e->pick);
		free(e->bytes);
		free(e);
		return NULL;
	}
	memcpy(e->bytes, buf, len);
	e->hash = h;
	e->len = len;
	e->compact = compact;
	e->pts = pts;
	e->n = n;
	e->cost = cost;
	e->users = 1;
	while (cc->oldest && cc->st.bytes + cost > cc->st.max_bytes) {
		evict(cc, cc->oldest);
		cc->st.evictions++;
	}
	if (cc->st.entries >= cc->nbucket)
		rehash(cc);
	e->chain = cc->bucket[h & (cc->nbucket - 1)];
	cc->bucket[h & (cc->nbucket - 1)] = e;
	link_newest(cc, e);
	cc->st.entries++;
	cc->st.bytes += cost;
	return e;
}

int chunk_cache_get(struct chunk_cache *cc, const char *host, const char *pick_key,
		    const void *buf, size_t len, int compact, chunk_series_cb want, void *arg,
		    const struct snapshot **pts, size_t *n, struct chunk_ref **ref, char *err,
		    size_t errlen)
{
	const char *pick = pick_key ? pick_key : "";
	uint64_t h = key_hash(host, pick, compact, buf, len);
	struct snapshot *all;
	struct cc_entry *e;
	size_t nall;
	int ret;

	pthread_mutex_lock(&cc->lock);
	e = lookup(cc, h, host, pick, compact, buf, len);
	if (e)
		cc->st.hits++;
	else
		cc->st.misses++;
	pthread_mutex_unlock(&cc->lock);
	if (!e) {
		ret = chunk_decode_select(buf, len, compact, 0, UINT64_MAX, want, arg, &all, &nall,
					  err, errlen);
		if (ret)
			return ret;
		pthread_mutex_lock(&cc->lock);
		e = insert(cc, h, host, pick, compact, buf, len, all, nall);
		pthread_mutex_unlock(&cc->lock);
		if (!e) {
			/* not kept: lent as an entry of no table, freed by its put */
			e = calloc(1, sizeof(*e));
			if (!e) {
				chunk_points_free(all, nall);
				snprintf(err, errlen, "chunk: out of memory");
				return -ENOMEM;
			}
			e->pts = all;
			e->n = nall;
			e->users = 1;
			e->gone = 1;
		}
	}
	*pts = e->pts;
	*n = e->n;
	*ref = (struct chunk_ref *)e;
	return 0;
}

void chunk_cache_put(struct chunk_cache *cc, struct chunk_ref *ref)
{
	if (ref)
		release(cc, (struct cc_entry *)ref);
}

int chunk_cache_decode(struct chunk_cache *cc, const char *host, const char *pick_key,
		       const void *buf, size_t len, int compact, uint64_t from_ms,
		       uint64_t to_ms, chunk_series_cb want, void *arg, struct snapshot **pts,
		       size_t *n, char *err, size_t errlen)
{
	const struct snapshot *all;
	struct chunk_ref *ref;
	size_t nall;
	int ret;

	ret = chunk_cache_get(cc, host, pick_key, buf, len, compact, want, arg, &all, &nall,
			      &ref, err, errlen);
	if (ret)
		return ret;
	ret = copy_out((const struct cc_entry *)ref, from_ms, to_ms, pts, n);
	chunk_cache_put(cc, ref);
	if (ret)
		snprintf(err, errlen, "chunk: out of memory");
	return ret;
}
