/*
 * history.c - the hosts' snapshot history: kept per host as columns
 * (columns.h) for the longest range the rules read, read from Redis
 * (pipelined), with unreadable and future-dated entries accounted for;
 * see engine.h.
 */
#include "rules/engine/engine_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "model/alert.h"
#include "store/deploy.h"
#include "rules/lang/eval.h"
#include "rules/engine/fleet.h"
#include "core/array.h"
#include "core/fnv.h"
#include "core/log.h"
#include "model/profile.h"
#include "rules/engine/stats.h"
#include "store/host_registry.h"
#include "store/store.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "model/labels.h"

/* ---- hosts ------------------------------------------------------------- */

static struct host_state *host_of(struct engine *e, const char *name)
{
	uint32_t i;

	if (strmap_get(&e->host_index, name, &i))
		return &e->hosts[i];
	if (ARRAY_GROW(e->hosts, e->cap, e->nhosts + 1, 64))
		return NULL;
	memset(&e->hosts[e->nhosts], 0, sizeof(e->hosts[0]));
	snprintf(e->hosts[e->nhosts].name, sizeof(e->hosts[0].name), "%s", name);
	if (strmap_put(&e->host_index, e->hosts[e->nhosts].name, (uint32_t)e->nhosts))
		return NULL;
	return &e->hosts[e->nhosts++];
}

static int owned(const struct engine *e, const char *host)
{
	const struct engine_fleet *f = e->opts.fleet;

	return !f || f->owns_host(f->arg, host);
}

int engine_owns_host(const struct engine *e, const char *host)
{
	return owned(e, host);
}

void history_forget_hosts(struct engine *e)
{
	size_t kept = 0;

	for (size_t i = 0; i < e->nhosts; i++) {
		struct host_state *h = &e->hosts[i];

		if (owned(e, h->name)) {
			if (kept != i)
				e->hosts[kept] = *h;
			kept++;
			continue;
		}
		columns_free(&h->hist);
	}
	if (kept == e->nhosts)
		return;
	e->nhosts = kept;
	strmap_free(&e->host_index);
	strmap_init(&e->host_index);
	for (size_t i = 0; i < e->nhosts; i++)
		strmap_put(&e->host_index, e->hosts[i].name, (uint32_t)i);
}

int engine_take_snapshot(struct engine *e, struct snapshot *s)
{
	struct host_state *h = host_of(e, s->host);

	if (!h || topology_apply(e->opts.topology, s)) {
		snapshot_free(s);
		return -ENOMEM;
	}
	e->keep_policy.arg = e;
	return columns_push(&h->hist, s, e->keep_ms, &e->keep_policy);
}

size_t engine_history(const struct engine *e, const char *host)
{
	uint32_t i;

	return strmap_get(&e->host_index, host, &i) ? columns_len(&e->hosts[i].hist) : 0;
}

size_t engine_history_bytes(const struct engine *e, size_t *points)
{
	size_t b = 0, n = 0;

	for (size_t i = 0; i < e->nhosts; i++) {
		b += columns_bytes(&e->hosts[i].hist);
		n += columns_len(&e->hosts[i].hist);
	}
	if (points)
		*points = n;
	return b;
}

int history_record(struct engine *e, struct host_state *h, const struct rule *r,
		   const struct velem *x)
{
	struct snapshot *s = &h->hist.newest;
	struct label l[SNAPSHOT_MAX_LABELS];
	struct series *ser = NULL;
	uint32_t nl = 0;

	for (int i = 0; i < x->nlabels && nl < SNAPSHOT_MAX_LABELS; i++) {
		const struct label *k = &x->labels[i];
		int own = !strcmp(k->key, "host");

		for (uint32_t j = 0; !own && j < s->nlabels; j++)
			own = !strcmp(s->labels[j].key, k->key) && !strcmp(s->labels[j].value, k->value);
		for (int j = 0; !own && j < r->nlabels; j++)
			own = !strcmp(r->labels[j].key, k->key);
		if (!own)
			l[nl++] = *k;
	}
	for (int j = 0; j < r->nlabels && nl < SNAPSHOT_MAX_LABELS; j++)
		l[nl++] = r->labels[j];
	qsort(l, nl, sizeof(*l), label_key_cmp);	/* as the series' own are */
	/* recorded in this snapshot already (no new one came since)? */
	for (uint32_t i = 0; i < s->nseries && !ser; i++) {
		struct series *c = &s->series[i];
		int same = c->kind == SERIES_GAUGE && c->nlabels == nl && !strcmp(c->name, r->name);

		for (uint32_t k = 0; same && k < nl; k++)
			same = !strcmp(c->labels[k].key, l[k].key) &&
			       !strcmp(c->labels[k].value, l[k].value);
		if (same)
			ser = c;
	}
	if (!ser) {
		ser = snapshot_add_labels(s, r->name, SERIES_GAUGE, l, nl);
		if (!ser)
			return -ENOMEM;
	}
	ser->gauge.last = ser->gauge.min = ser->gauge.max = ser->gauge.sum = x->v;
	ser->gauge.n = 1;
	/* range functions over it read its column */
	e->keep_policy.arg = e;
	return columns_set_newest(&h->hist, ser, &e->keep_policy);
}

int engine_add_snapshot(struct engine *e, const struct snapshot *s)
{
	struct snapshot copy;

	if (snapshot_copy(&copy, s))
		return -ENOMEM;
	return engine_take_snapshot(e, &copy);
}

struct load_arg {
	struct engine *e;
	int n;
	uint64_t now;			/* the clock reads are judged by */
	/*
	 * e->hosts indexes, by the index given to the store: not pointers, as
	 * e->hosts moves when a host is added (host_of reallocates it)
	 */
	uint32_t *hosts;
};

/* Warn about host h at most once a minute. */
static int may_say(struct host_state *h, uint64_t now)
{
	if (h->said_ms && now - h->said_ms < 60000)
		return 0;
	h->said_ms = now;
	return 1;
}

static int load_cb(struct snapshot *s, void *arg)
{
	struct load_arg *la = arg;
	struct host_state *h = host_of(la->e, s->host);

	if (h && s->ts_ms > la->now + FUTURE_SLACK_MS) {
		/* kept in Redis and read when its time comes; never freezes the host */
		if (may_say(h, la->now))
			log_warn("host %s: snapshot dated %.0f s in the future (clock ahead?); "
				 "held back until then", h->name,
				 (double)(s->ts_ms - la->now) / 1000);
		return 0;
	}
	if (h && s->ts_ms > h->read_ms)
		h->read_ms = s->ts_ms;
	if (h && columns_len(&h->hist) &&
	    s->ts_ms <= columns_ts(&h->hist, columns_len(&h->hist) - 1))
		return 0;	/* not newer than what we hold */
	engine_take_snapshot(la->e, s);
	la->n++;
	return 0;
}

/* Entries decode like the host's newest snapshot; columns_push adopts the strings. */
static const struct snapshot *like_cb(size_t idx, void *arg)
{
	struct load_arg *la = arg;
	const struct columns *c = &la->e->hosts[la->hosts[idx]].hist;

	return c->newest.host ? &c->newest : NULL;
}

static void bad_cb(size_t idx, uint64_t entry_ms, const char *why, void *arg)
{
	struct load_arg *la = arg;
	struct host_state *h = &la->e->hosts[la->hosts[idx]];
	uint64_t at = entry_ms && entry_ms <= la->now + FUTURE_SLACK_MS ? entry_ms : la->now;

	if (entry_ms && entry_ms <= la->now + FUTURE_SLACK_MS && entry_ms > h->read_ms)
		h->read_ms = entry_ms;	/* read once, counted once */
	h->bad_ms[h->nbad++ % 8] = at;
	la->e->undecodable++;
	if (may_say(h, la->now))
		log_warn("host %s: stream entry %" PRIu64 " cannot be read (%s); %u so far — the "
			 "host is not monitored while its entries are unreadable (HostUndecodable)",
			 h->name, entry_ms, why, h->nbad);
}

static void oversize_cb(size_t idx, void *arg)
{
	struct load_arg *la = arg;
	struct host_state *h = &la->e->hosts[la->hosts[idx]];

	h->quarantine_until_ms = la->now + QUARANTINE_MS;
	la->e->oversize++;
	char after[48] = "";

	if (h->read_ms)
		snprintf(after, sizeof(after), " after %" PRIu64, h->read_ms);
	log_error("host %s: its entries%s are larger than the read bound (%u MiB "
		  "for %d entries), or so large that Redis could not start answering within the "
		  "timeout while it answers anything else; quarantined: not read for %llu min "
		  "and paged as "
		  "HostUndecodable, while every other host is read as usual. A probe does not "
		  "write such entries: look at what wrote them (runbooks/host-undecodable.md)",
		  h->name, after, STORE_READ_PAGE_MAX >> 20, STORE_READ_PAGE,
		  QUARANTINE_MS / 60000);
}

void engine_undecodable(const struct engine *e,
			void (*cb)(const char *host, uint64_t n, void *arg), void *arg)
{
	for (size_t i = 0; i < e->nhosts; i++)
		if (e->hosts[i].nbad)
			cb(e->hosts[i].name, e->hosts[i].nbad, arg);
}

int history_recent_bad(const struct host_state *h, uint64_t now)
{
	int n = 0;

	if (h->quarantine_until_ms > now)
		return BAD_BOUND;	/* unread because unreadable: it stays paged */
	for (uint32_t i = 0; i < 8 && i < h->nbad; i++)
		n += h->bad_ms[i] + BAD_WINDOW_MS >= now;
	return n;
}

/*
 * Read the new 1 s snapshots of hosts all[0..nall) up to until_ms: each
 * from past what its history holds.  known_only: only hosts the engine
 * already follows (a wake may name any).  Returns the number read or < 0.
 */
static int load_hosts(struct engine *e, struct conn *rc, char *const *all, size_t nall,
		      uint64_t until_ms, int known_only, char *err, size_t errlen)
{
	struct load_arg la = { e, 0, until_ms ? until_ms : time_wall_ns() / NSEC_PER_MSEC, NULL };
	struct store_readers readers = { .snapshot = load_cb, .bad = bad_cb, .like = like_cb,
					 .oversize = oversize_cb, .arg = &la };
	const char **names = NULL;
	uint64_t *from = NULL;
	size_t n = 0;
	int ret;

	names = calloc(nall + 1, sizeof(*names));
	from = calloc(nall + 1, sizeof(*from));
	la.hosts = calloc(nall + 1, sizeof(*la.hosts));
	if (!names || !from || !la.hosts) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nall; i++) {
		struct host_state *h;
		uint32_t known;
		uint64_t held;

		if (!store_host_valid(all[i])) {
			if (!e->bad_name_said_ms || la.now - e->bad_name_said_ms >= 60000) {
				log_warn("the registry names '%.80s', which is not a host name "
					 "(letters, digits, . _ - :, under 200 bytes); it is not "
					 "monitored", all[i]);
				e->bad_name_said_ms = la.now;
			}
			continue;
		}
		if (!owned(e, all[i]))
			continue;	/* another worker's (sharded) */
		if (known_only && !strmap_get(&e->host_index, all[i], &known))
			continue;
		h = host_of(e, all[i]);
		if (!h)
			continue;
		if (!h->first_seen_ms)
			h->first_seen_ms = la.now;
		if (h->quarantine_until_ms > la.now)
			continue;	/* its entries are over the read bound (oversize_cb) */
		held = columns_len(&h->hist) ? columns_ts(&h->hist, columns_len(&h->hist) - 1) : 0;
		from[n] = h->read_ms > held ? h->read_ms : held;
		from[n] = from[n] ? from[n] + 1 : 0;
		/* nothing older than the rules look at: a first read is keep_ms, not the stream */
		if (la.now > e->keep_ms && from[n] < la.now - e->keep_ms)
			from[n] = la.now - e->keep_ms;
		la.hosts[n] = (uint32_t)(h - e->hosts);
		names[n++] = all[i];	/* not h->name: a later host_of may move it */
	}
	ret = n ? store_read_ranges(rc, names, from, n, 1, until_ms, &readers, NULL, err, errlen)
		: 0;
out:
	free(names);
	free(from);
	free(la.hosts);
	return ret < 0 ? ret : la.n;
}

int engine_load_redis(struct engine *e, struct conn *rc, uint64_t until_ms, char *err,
		      size_t errlen)
{
	char **all = NULL;
	size_t nall = 0;
	int ret;

	ret = store_host_names(rc, &all, &nall, err, errlen);
	if (ret)
		return ret;
	ret = load_hosts(e, rc, all, nall, until_ms, 0, err, errlen);
	store_host_names_free(all, nall);
	return ret;
}

int engine_load_hosts(struct engine *e, struct conn *rc, char *const *names, size_t n, char *err,
		      size_t errlen)
{
	return load_hosts(e, rc, names, n, 0, 1, err, errlen);
}
