/*
 * query_hot.c - the 1 s tier's last --hot window held in memory by a
 * thread of its own (the tail), read once a second from Redis; a query
 * wholly inside it is answered from it under a read lock, one that begins
 * before it reads Redis up to where the tail begins and appends the rest
 * (columns_append).  See query.h (query_hot_start) and query_internal.h.
 */
#include "web/query.h"
#include "web/query_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/array.h"
#include "core/fnv.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "store/store.h"

/*
 * The tail's hosts by label: for a query whose every selector of host
 * series says key="value" of a key every host carries (a switch, a rack,
 * a host), the hosts to look at are that pair's, not all of them (one
 * switch's 16 of 10,000: scanning every host's labels was most of such a
 * query).  Rebuilt, under the write lock, after a read or a listing that
 * changed a host's label set or the hosts; a label set that changes
 * mid-read turns it off until then, so a query never trusts a stale one.
 */
struct label_index {
	struct strmap pair;		/* "key\037value" -> 1 + its newest node */
	struct strmap key;		/* key -> how many indexed hosts carry it */
	struct index_node {
		uint32_t host;
		uint32_t next;		/* 1 + the pair's next node (0: end) */
	} *node;
	size_t n, cap;
	uint64_t *sig;			/* per host: label_sig when indexed */
	size_t capsig;
	size_t nhosts;			/* the tail's hosts when indexed */
	uint32_t indexed;		/* of them, those holding points */
	int ok;				/* built and current (else: every host is scanned) */
};

struct query_hot {
	struct query_opts o;		/* its own: no sample bound, no deadline */
	char url[600];
	uint64_t window_ms;
	pthread_t thread;
	int running;
	volatile int stop;
	pthread_rwlock_t lock;		/* ql: the tail writes, queries read */
	struct qload ql;
	uint64_t from_ms;		/* every host is held from here (its first read) */
	uint64_t read_ms;		/* the last read that completed started then */
	uint64_t listed_ms;		/* the hosts were last listed then */
	int ready;
	struct label_index idx;
};

/* ---- the tail's hosts by label ---------------------------------------- */

/*
 * A host's label set as the reach check sees it (its name, its labels),
 * hashed: what the index was built from, to see it change.
 */
static uint64_t label_sig(const struct columns *c)
{
	const struct snapshot *s = &c->newest;
	uint64_t h;

	if (!columns_len(c))
		return 0;
	h = fnv64_str(FNV64_OFFSET, s->host);
	return snapshot_labels_hash(h, s->labels, s->nlabels);
}

static void index_clear(struct label_index *x)
{
	strmap_free(&x->pair);
	strmap_free(&x->key);
	strmap_init(&x->pair);
	strmap_init(&x->key);
	x->n = 0;
	x->nhosts = 0;
	x->indexed = 0;
	x->ok = 0;
}

static void index_free(struct label_index *x)
{
	strmap_free(&x->pair);
	strmap_free(&x->key);
	free(x->node);
	free(x->sig);
	memset(x, 0, sizeof(*x));
}

/* "key\037value" into buf (size bytes); -1 when it does not fit. */
static int pair_name(char *buf, size_t size, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);

	if (kl + vl + 2 > size)
		return -1;
	memcpy(buf, key, kl);
	buf[kl] = '\037';
	memcpy(buf + kl + 1, value, vl + 1);
	return 0;
}

/* One pair key=value of host i into x: 0 or -ENOMEM. */
static int index_pair(struct label_index *x, uint32_t i, const char *key, const char *value)
{
	char buf[2 * (SNAPSHOT_MAX_STR + 1) + 2];
	uint32_t head = 0, count = 0;

	if (ARRAY_GROW(x->node, x->cap, x->n + 1, 256))
		return -ENOMEM;
	if (pair_name(buf, sizeof(buf), key, value))
		return -ENOMEM;	/* longer than a snapshot holds: not indexable */
	strmap_get(&x->pair, buf, &head);
	x->node[x->n] = (struct index_node){ i, head };
	if (strmap_put(&x->pair, buf, (uint32_t)x->n + 1))
		return -ENOMEM;
	x->n++;
	strmap_get(&x->key, key, &count);
	return strmap_put(&x->key, key, count + 1);
}

/*
 * With the write lock taken, after a read or a listing: rebuild the index
 * when it was let go (a host's label set changed as it arrived, or the
 * hosts were listed); out of memory leaves it off (queries scan every
 * host).
 */
static void index_refresh(struct query_hot *hot)
{
	struct label_index *x = &hot->idx;
	const struct qload *ql = &hot->ql;
	uint64_t *sig;

	/* every snapshot read was checked against it as it arrived (hot_arrived) */
	if (x->ok && x->nhosts == ql->nh)
		return;
	if (ql->nh > x->capsig) {
		sig = realloc(x->sig, ql->nh * sizeof(*sig));
		if (!sig) {
			index_clear(x);
			return;
		}
		x->sig = sig;
		x->capsig = ql->nh;
	}
	index_clear(x);
	for (size_t i = 0; i < ql->nh; i++)
		x->sig[i] = label_sig(&ql->h[i].c);
	for (size_t i = 0; i < ql->nh; i++) {
		const struct snapshot *s = &ql->h[i].c.newest;

		if (!columns_len(&ql->h[i].c))
			continue;
		if (index_pair(x, (uint32_t)i, "host", s->host))
			goto nomem;
		for (uint32_t k = 0; k < s->nlabels; k++)
			if (index_pair(x, (uint32_t)i, s->labels[k].key, s->labels[k].value))
				goto nomem;
		x->indexed++;
	}
	x->nhosts = ql->nh;
	x->ok = 1;
	return;
nomem:
	index_clear(x);
}

/*
 * The hosts selector sel can reach by the index: the chain of its first
 * key="value" matcher on a key every indexed host carries (1 + its first
 * node into *head), or 0 when it has none (every host must be looked at).
 */
static int index_chain(const struct label_index *x, const struct node *sel, uint32_t *head)
{
	char buf[2 * (SNAPSHOT_MAX_STR + 1) + 2];

	for (int i = 0; i < sel->nm; i++) {
		const struct expr_matcher *m = &sel->m[i];
		uint32_t count = 0;

		if (m->op != '=' || !strmap_get(&x->key, m->label, &count) ||
		    count != x->indexed || pair_name(buf, sizeof(buf), m->label, m->value))
			continue;
		*head = 0;
		strmap_get(&x->pair, buf, head);	/* none: no host has it */
		return 1;
	}
	return 0;
}

/*
 * With the read lock taken: mark[i] for the tail's hosts the plan's
 * selectors may reach by the index.  0 when some selector has no chain
 * (or the index is off): then every host is to be looked at.
 */
static int index_candidates(const struct query_hot *hot, const struct reach_plan *p,
			    uint8_t *mark)
{
	const struct label_index *x = &hot->idx;

	if (!x->ok || x->nhosts != hot->ql.nh || !p->n || !p->nsel ||
	    p->nsel > (int)(sizeof(p->sel) / sizeof(p->sel[0])))
		return 0;
	for (int k = 0; k < p->nsel; k++) {
		uint32_t head;

		if (!index_chain(x, p->sel[k], &head))
			return 0;
		for (; head; head = x->node[head - 1].next)
			mark[x->node[head - 1].host] = 1;
	}
	return 1;
}

/* A snapshot the tail read: into its host's columns, under the write lock. */
static int hot_arrived(struct snapshot *s, void *arg)
{
	struct query_hot *hot = arg;
	int ret;

	uint32_t i;
	int known;

	pthread_rwlock_wrlock(&hot->lock);
	known = s->host && strmap_get(&hot->ql.index, s->host, &i);
	ret = qload_arrived(s, &hot->ql);
	/* a label set that changed mid-read: queries scan until the index is rebuilt */
	if (known && hot->idx.ok && (i >= hot->idx.nhosts ||
				     label_sig(&hot->ql.h[i].c) != hot->idx.sig[i]))
		hot->idx.ok = 0;
	pthread_rwlock_unlock(&hot->lock);
	return ret;
}

/* The tail's like callback: only the tail changes its columns, so no lock. */
static const struct snapshot *hot_like(size_t host_index, void *arg)
{
	struct query_hot *hot = arg;

	return qload_like_newest(host_index, &hot->ql);
}

/*
 * With the write lock taken: drop from the tail the hosts the registry no
 * longer lists (found: what it lists now), and let go of the points of
 * those whose newest snapshot is older than the window (a host that went
 * quiet: no query the tail serves reaches them), so a fleet's churn does
 * not grow it.  Returns how many hosts went.
 */
static size_t hot_prune(struct query_hot *hot, const struct qload *found, uint64_t now_ms)
{
	struct qload *ql = &hot->ql;
	size_t kept = 0, gone;
	uint32_t idx;

	for (size_t i = 0; i < ql->nh; i++) {
		struct qhost *h = &ql->h[i];
		size_t len = columns_len(&h->c);

		if (!strmap_get(&found->index, h->name, &idx)) {
			free(h->name);
			columns_free(&h->c);
			continue;
		}
		if (len && columns_ts(&h->c, len - 1) + hot->window_ms + 2000 < now_ms) {
			columns_free(&h->c);
			columns_init(&h->c);
		}
		ql->h[kept++] = *h;
	}
	gone = ql->nh - kept;
	if (gone) {
		ql->nh = kept;
		strmap_free(&ql->index);
		strmap_init(&ql->index);
		for (size_t i = 0; i < ql->nh; i++) {
			if (!strmap_put(&ql->index, ql->h[i].name, (uint32_t)i))
				continue;
			/* no memory: the rest go, and are listed and read again as new */
			for (size_t k = i; k < ql->nh; k++) {
				free(ql->h[k].name);
				columns_free(&ql->h[k].c);
			}
			ql->nh = i;
		}
	}
	return gone;
}

/* The registered hosts into the tail: new ones read from a window ago, departed ones dropped. */
static void hot_list(struct query_hot *hot, struct conn *rc, uint64_t now_ms)
{
	struct qload found = { .o = &hot->o, .relist = 1 };	/* and renew the queries' listing */
	char err[300];
	uint32_t idx;
	size_t gone;

	strmap_init(&found.index);
	if (qload_find_hosts(rc, &found, NULL, err, sizeof(err)) == QUERY_OK) {
		pthread_rwlock_wrlock(&hot->lock);
		gone = hot_prune(hot, &found, now_ms);
		for (size_t i = 0; i < found.nh; i++)
			if (!strmap_get(&hot->ql.index, found.h[i].name, &idx) &&
			    qload_add_host(&hot->ql, found.h[i].name))
				break;
		hot->idx.ok = 0;	/* the hosts moved: indices changed */
		index_refresh(hot);
		pthread_rwlock_unlock(&hot->lock);
		if (gone)
			log_info("faultline-web: %zu host(s) left the registry; dropped from the "
				 "in-memory tail", gone);
	} else {
		log_warn("faultline-web: listing the hosts for the in-memory tail: %s", err);
	}
	qload_free(&found);
}

/* One read of every host's new 1 s snapshots.  Returns 0 or -1 (the connection went). */
static int hot_read(struct query_hot *hot, struct conn *rc, uint64_t now_ms)
{
	struct store_readers rd = { .snapshot = hot_arrived, .like = hot_like, .arg = hot };
	const char **names;
	uint64_t *from;
	char err[300];
	size_t n;
	int got;

	/* the names and where each host's read starts: the tail alone changes them */
	n = hot->ql.nh;
	names = calloc(n + 1, sizeof(*names));
	from = calloc(n + 1, sizeof(*from));
	if (!names || !from) {
		free(names);
		free(from);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct columns *c = &hot->ql.h[i].c;
		size_t len = columns_len(c);

		names[i] = hot->ql.h[i].name;
		from[i] = len ? columns_ts(c, len - 1) + 1 : now_ms - hot->window_ms;
	}
	hot->ql.failed = QUERY_OK;
	got = n ? store_read_ranges(rc, names, from, n, 1, 0, &rd, NULL, err, sizeof(err)) : 0;
	free(names);
	free(from);
	if (got < 0)
		log_warn("faultline-web: the in-memory tail could not read: %s; retrying", err);
	return got < 0 ? -1 : 0;
}

static void *hot_loop(void *arg)
{
	struct query_hot *hot = arg;
	struct conn *rc = NULL;
	char err[300];

	while (!hot->stop) {
		uint64_t t0 = time_wall_ns() / 1000000, mono = time_mono_ns();

		if (!rc && !(rc = conn_open(hot->url, 2 * NSEC_PER_SEC, err, sizeof(err))))
			log_warn("faultline-web: the in-memory tail cannot reach Redis: %s", err);
		if (rc && (!hot->listed_ms || t0 >= hot->listed_ms + 10000)) {
			hot_list(hot, rc, t0);
			hot->listed_ms = t0;
		}
		if (rc && hot_read(hot, rc, t0)) {
			conn_close(rc);
			rc = NULL;
		} else if (rc) {
			pthread_rwlock_wrlock(&hot->lock);
			if (!hot->ready)
				hot->from_ms = t0 - hot->window_ms;
			hot->read_ms = t0;
			hot->ready = 1;
			index_refresh(hot);
			pthread_rwlock_unlock(&hot->lock);
		}
		while (!hot->stop && time_mono_ns() < mono + NSEC_PER_SEC)
			usleep(20000);
	}
	conn_close(rc);
	return NULL;
}

struct query_hot *query_hot_start(const char *url, const struct query_opts *o, uint64_t window_ms)
{
	struct query_hot *hot = calloc(1, sizeof(*hot));

	if (!hot)
		return NULL;
	snprintf(hot->url, sizeof(hot->url), "%s", url);
	hot->o = *o;
	hot->o.max_samples = UINT64_MAX;
	hot->o.hosts = NULL;
	hot->o.hot = NULL;
	hot->window_ms = window_ms;
	hot->ql.o = &hot->o;
	hot->ql.tier = 1;
	hot->ql.keep_ms = window_ms;
	hot->ql.deadline_ns = UINT64_MAX;
	strmap_init(&hot->ql.index);
	strmap_init(&hot->idx.pair);
	strmap_init(&hot->idx.key);
	pthread_rwlock_init(&hot->lock, NULL);
	if (pthread_create(&hot->thread, NULL, hot_loop, hot)) {
		pthread_rwlock_destroy(&hot->lock);
		strmap_free(&hot->ql.index);
		free(hot);
		return NULL;
	}
	hot->running = 1;
	return hot;
}

void query_hot_stop(struct query_hot *hot)
{
	if (!hot)
		return;
	hot->stop = 1;
	if (hot->running)
		pthread_join(hot->thread, NULL);
	qload_free(&hot->ql);
	index_free(&hot->idx);
	pthread_rwlock_destroy(&hot->lock);
	free(hot);
}

size_t query_hot_hosts(struct query_hot *hot, size_t *bytes)
{
	size_t n, b = 0;

	pthread_rwlock_rdlock(&hot->lock);
	n = hot->ql.nh;
	for (size_t i = 0; bytes && i < n; i++)
		b += columns_bytes(&hot->ql.h[i].c);
	pthread_rwlock_unlock(&hot->lock);
	if (bytes)
		*bytes = b;
	return n;
}

/*
 * With the read lock taken: whether the tail holds every host over
 * [from_ms, end_ms] (its newest read at most 2 s behind end_ms: one
 * interval of a probe, at most).  If so, ql gets the hosts n can reach,
 * borrowed, and the caller keeps the lock while it evaluates.
 */
static int serves_locked(struct query_hot *hot, struct qload *ql, const struct node *n,
			 uint64_t from_ms, uint64_t end_ms)
{
	uint64_t now = time_wall_ns() / 1000000;
	struct reach_plan plan;
	uint8_t *mark;

	if (!hot->ready || from_ms < hot->from_ms || from_ms + hot->window_ms < now + 2000 ||
	    end_ms > hot->read_ms + 2000)
		return 0;
	qload_reach_plan(&plan, n);
	mark = calloc(hot->ql.nh + 1, 1);
	if (!mark)
		return 0;
	/* the index names the hosts to look at, or every one is */
	if (!index_candidates(hot, &plan, mark))
		memset(mark, 1, hot->ql.nh);
	for (size_t i = 0; i < hot->ql.nh; i++) {
		const struct qhost *h = &hot->ql.h[i];

		if (!mark[i] || !columns_len(&h->c) ||
		    !qload_host_reached(&plan, &h->c.newest, ql->o))
			continue;
		if (ARRAY_GROW(ql->h, ql->caph, ql->nh + 1, 64)) {
			free(mark);
			return 0;
		}
		ql->h[ql->nh] = *h;
		ql->h[ql->nh++].borrowed = 1;
	}
	free(mark);
	return 1;
}

int query_hot_serves(struct query_hot *hot, struct qload *ql, const struct node *n,
		     uint64_t from_ms, uint64_t end_ms)
{
	pthread_rwlock_rdlock(&hot->lock);
	if (serves_locked(hot, ql, n, from_ms, end_ms))
		return 1;
	pthread_rwlock_unlock(&hot->lock);
	return 0;
}

void query_hot_release(struct query_hot *hot)
{
	pthread_rwlock_unlock(&hot->lock);
}

/*
 * Read ql's hosts over [from_ms, end_ms] from Redis and the tail together
 * (query_hot_serves said no: the range begins before what the tail holds): a
 * host the tail holds a full window of is read from Redis up to where the
 * tail begins for all of them (cut) and takes the tail's points from
 * there, copied column by column; any other host, or every host when the
 * tail is behind end_ms or the range ends before cut, is read from Redis
 * whole.  Sets *memory_from_ms to cut when the tail served a part (else
 * 0).  The read lock is held throughout, so that the tail does not let go
 * of the points after cut while Redis is read.
 */
enum query_error query_hot_read_with_tail(struct conn *rc, struct query_hot *hot, struct qload *ql,
					  uint64_t from_ms, uint64_t end_ms,
					  uint64_t *memory_from_ms, char *err, size_t errlen)
{
	uint64_t now = time_wall_ns() / 1000000, cut = 0, points = 0;
	uint8_t *tailed = calloc(ql->nh + 1, 1), *rest = calloc(ql->nh + 1, 1);
	uint32_t *at = calloc(ql->nh + 1, sizeof(*at));
	enum query_error ret = QUERY_OK;
	size_t ntailed = 0;

	*memory_from_ms = 0;
	if (!tailed || !rest || !at) {
		snprintf(err, errlen, "out of memory");
		ret = QUERY_INTERNAL;
		goto out;
	}
	pthread_rwlock_rdlock(&hot->lock);
	for (size_t i = 0; hot->ready && end_ms <= hot->read_ms + 2000 && i < ql->nh; i++) {
		const struct columns *c;

		if (ql->h[i].alerts || !strmap_get(&hot->ql.index, ql->h[i].name, &at[i]))
			continue;
		c = &hot->ql.h[at[i]].c;
		/* a full window: from the tail's reach on (one interval of slack) */
		if (!columns_len(c) || columns_ts(c, 0) > now - hot->window_ms + 5000)
			continue;
		tailed[i] = 1;
		ntailed++;
		if (columns_ts(c, 0) > cut)
			cut = columns_ts(c, 0);
	}
	if (!ntailed || cut > end_ms || cut <= from_ms) {
		pthread_rwlock_unlock(&hot->lock);
		ret = qload_read_hosts(rc, ql, from_ms, end_ms, err, errlen);
		goto out;
	}
	for (size_t i = 0; i < ql->nh; i++)
		rest[i] = !tailed[i];
	if ((ret = qload_read_hosts_of(rc, ql, tailed, from_ms, cut - 1, err, errlen)) ||
	    (ret = qload_read_hosts_of(rc, ql, rest, from_ms, end_ms, err, errlen))) {
		pthread_rwlock_unlock(&hot->lock);
		goto out;
	}
	for (size_t i = 0; i < ql->nh && !ret; i++) {
		const struct columns *c = &hot->ql.h[at[i]].c;
		long first;

		if (!tailed[i])
			continue;
		first = columns_last_at(c, cut - 1) + 1;
		points += columns_len(c) - (size_t)first;
		/* as Redis counts them: the series the query keeps, at each point */
		for (uint32_t k = 0; k < c->ncol; k++)
			for (size_t p = (size_t)first;
			     p < columns_len(c) && (!ql->pol || qload_keeps_named(&c->col[k].def, ql));
			     p++)
				ql->samples += columns_has(c, k, p);
		if (ql->samples > ql->o->max_samples) {
			snprintf(err, errlen, "query processing would load too many samples into "
				 "memory in query execution (over %" PRIu64 ", --query.max-samples)",
				 ql->o->max_samples);
			ret = QUERY_EXECUTION;
		} else if (columns_append(&ql->h[i].c, c, (size_t)first, ql->keep_ms, ql->pol)) {
			snprintf(err, errlen, "out of memory reading %s from memory", ql->h[i].name);
			ret = QUERY_INTERNAL;
		}
	}
	pthread_rwlock_unlock(&hot->lock);
	if (!ret && points)
		*memory_from_ms = cut;
out:
	free(tailed);
	free(rest);
	free(at);
	return ret;
}
