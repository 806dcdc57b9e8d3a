/*
 * shard.c - partitions, rendezvous ownership and leases of rules workers;
 * see shard.h.
 */
#include "rules/shard/shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "core/fnv.h"
#include "core/log.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "model/host_entry.h"
#include "rules/engine/engine.h"
#include "rules/lang/expr.h"
#include "rules/lang/rules.h"
#include "store/conn.h"
#include "store/host_registry.h"
#include "store/store.h"

#define MAX_LEVELS 16
#define MAP_REFRESH_MS 30000

struct shard {
	char me[WORKERS_NAME_MAX];
	uint64_t ttl_ms;
	char levels[MAX_LEVELS][64];	/* outermost first */
	int nlevels;
	char held[WORKERS_NPART], gained[WORKERS_NPART], lost[WORKERS_NPART];
	uint64_t epoch[WORKERS_NPART];	/* of each lease held (0: none) */
	char **live;
	size_t nlive;
	struct strmap host_part;	/* host -> partition */
	uint64_t map_ms;		/* mono ms of the last registry read */
	int said_alone;
};

/* ---- levels and partitions ----------------------------------------------- */

static int level_index(const struct shard *s, const char *l)
{
	for (int i = 0; i < s->nlevels; i++)
		if (!strcmp(s->levels[i], l))
			return i;
	return -1;
}

/*
 * Merge one outermost-first list into s->levels: a level not known yet goes
 * just before the first known level that follows it in the list.
 */
static void merge_levels(struct shard *s, const char (*list)[64], int n)
{
	for (int i = 0; i < n; i++) {
		int at = s->nlevels;

		if (level_index(s, list[i]) >= 0 || s->nlevels == MAX_LEVELS)
			continue;
		for (int j = i + 1; j < n; j++) {
			int k = level_index(s, list[j]);

			if (k >= 0) {
				at = k;
				break;
			}
		}
		memmove(&s->levels[at + 1], &s->levels[at], (size_t)(s->nlevels - at) * 64);
		snprintf(s->levels[at], sizeof(s->levels[at]), "%s", list[i]);
		s->nlevels++;
	}
}

static void collect_levels(struct shard *s, const struct ruleset *rs,
			   const struct engine_opts *opts)
{
	static const char defaults[4][64] = { "site", "agg", "switch", "rack" };

	if (opts && opts->ndomains)
		merge_levels(s, (const char (*)[64])opts->domains, opts->ndomains);
	else
		merge_levels(s, defaults, 4);
	for (int g = 0; rs && g < rs->ngroups; g++)
		for (int i = 0; i < rs->groups[g].nrules; i++)
			merge_levels(s, (const char (*)[64])rs->groups[g].rules[i].rollup_by,
				     rs->groups[g].rules[i].nrollup);
}

/* CRC16-XMODEM, as Redis Cluster: the partition of a domain value. */
static int part_of_value(const char *v)
{
	return (int)(conn_key_slot(v, strlen(v)) % WORKERS_PARTS);
}

static int part_of_entry(const struct shard *s, const char *host, const struct host_entry *he)
{
	for (int i = 0; i < s->nlevels; i++) {
		const char *v = host_entry_label(he, s->levels[i]);

		if (v && v[0]) {
			char key[200];

			/* the level in the key: rack "a" and switch "a" are different domains */
			snprintf(key, sizeof(key), "%s=%s", s->levels[i], v);
			return part_of_value(key);
		}
	}
	return part_of_value(host);
}

struct map_arg {
	struct shard *s;
	struct strmap *m;
};

static void map_host(const char *host, const struct host_entry *he, void *arg)
{
	struct map_arg *a = arg;

	strmap_put(a->m, host, (uint32_t)part_of_entry(a->s, host, he));
}

static int refresh_map(struct shard *s, struct conn *c, char *err, size_t errlen)
{
	struct strmap m;
	struct map_arg a = { s, &m };
	int n;

	strmap_init(&m);
	n = store_host_entries(c, map_host, &a, err, errlen);
	if (n < 0) {
		strmap_free(&m);
		return n;
	}
	strmap_free(&s->host_part);
	s->host_part = m;
	s->map_ms = time_mono_ns() / NSEC_PER_MSEC;
	return 0;
}

/* ---- ownership ----------------------------------------------------------- */

/* Rendezvous (highest random weight) hashing: the live worker that owns p. */
static const char *owner_of(const struct shard *s, int p)
{
	const char *best = NULL;
	uint64_t best_w = 0;

	for (size_t i = 0; i < s->nlive; i++) {
		char part[16];
		uint64_t w;

		snprintf(part, sizeof(part), "%d", p);
		w = fnv64_str(fnv64_sep(fnv64_str(FNV64_OFFSET, s->live[i])), part);
		/* mix: FNV's high bits move little for keys differing at the end */
		w ^= w >> 33;
		w *= 0xff51afd7ed558ccdULL;
		w ^= w >> 33;
		if (!best || w > best_w || (w == best_w && strcmp(s->live[i], best) < 0)) {
			best = s->live[i];
			best_w = w;
		}
	}
	return best;
}

struct shard *shard_new(const char *me, uint64_t ttl_ms, const struct ruleset *rs,
			const struct engine_opts *opts)
{
	struct shard *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (me && me[0]) {
		snprintf(s->me, sizeof(s->me), "%s", me);
	} else {
		char host[64] = "";

		gethostname(host, sizeof(host) - 1);
		snprintf(s->me, sizeof(s->me), "%s-%d", host, (int)getpid());
	}
	s->ttl_ms = ttl_ms;
	collect_levels(s, rs, opts);
	strmap_init(&s->host_part);
	return s;
}

void shard_free(struct shard *s)
{
	if (!s)
		return;
	workers_names_free(s->live, s->nlive);
	strmap_free(&s->host_part);
	free(s);
}

const char *shard_me(const struct shard *s)
{
	return s->me;
}

/* One log line for the partitions flagged in which: "took partitions 3-7, 12, 64 (fleet)". */
static void say_changes(const struct shard *s, const char *which, const char *verb)
{
	char list[400];
	size_t at = 0;
	int n = 0;

	list[0] = '\0';
	for (int p = 0; p < WORKERS_NPART; p++) {
		int q = p;

		if (!which[p])
			continue;
		while (q + 1 < WORKERS_PARTS && which[q + 1])
			q++;
		if (at < sizeof(list))
			at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%d", n ? ", " : "", p);
		if (q > p && at < sizeof(list))
			at += (size_t)snprintf(list + at, sizeof(list) - at, "-%d", q);
		if (p == WORKERS_FLEET && at < sizeof(list))
			at += (size_t)snprintf(list + at, sizeof(list) - at, " (fleet-wide alerts)");
		n += q - p + 1;
		p = q;
	}
	if (n)
		log_info("worker %s: %s %d partition(s): %s; holds %zu of %d, %zu worker(s) live",
			 s->me, verb, n, list, shard_held_count(s), WORKERS_NPART, s->nlive);
}

int shard_tick(struct shard *s, struct conn *c, char *err, size_t errlen)
{
	char want[WORKERS_NPART], moved[WORKERS_NPART], fresh[WORKERS_NPART];
	char gone[WORKERS_NPART];
	uint64_t ep[WORKERS_NPART];
	char **live;
	size_t nlive;
	uint64_t now_ms, mono_ms = time_mono_ns() / NSEC_PER_MSEC;
	int ret;

	ret = workers_heartbeat(c, s->me, s->ttl_ms, &live, &nlive, &now_ms, err, errlen);
	if (ret)
		return ret;
	workers_names_free(s->live, s->nlive);
	s->live = live;
	s->nlive = nlive;
	if (!s->map_ms || mono_ms - s->map_ms >= MAP_REFRESH_MS) {
		ret = refresh_map(s, c, err, errlen);
		if (ret)
			return ret;
	}
	for (int p = 0; p < WORKERS_NPART; p++) {
		const char *o = owner_of(s, p);

		want[p] = o && !strcmp(o, s->me);
	}
	memcpy(ep, s->epoch, sizeof(ep));
	ret = workers_leases(c, s->me, s->ttl_ms, want, ep, err, errlen);
	if (ret)
		return ret;
	for (int p = 0; p < WORKERS_NPART; p++) {
		/* held under another epoch than before: lost meanwhile, and taken back */
		moved[p] = s->held[p] && ep[p] && ep[p] != s->epoch[p];
		s->gained[p] = ep[p] && (!s->held[p] || moved[p]);
		s->lost[p] = s->held[p] && (!ep[p] || moved[p]);
		s->held[p] = ep[p] != 0;
		s->epoch[p] = ep[p];
		fresh[p] = s->gained[p] && !moved[p];
		gone[p] = s->lost[p] && !moved[p];
	}
	say_changes(s, moved, "took back (another worker held them while this one did not "
		    "renew its leases: a new epoch; what it knew of them is dropped and their "
		    "checkpoints read again)");
	say_changes(s, fresh, "took");
	say_changes(s, gone, "handed over");
	return 0;
}

int shard_owns(const struct shard *s, int p)
{
	return p >= 0 && p < WORKERS_NPART && s->held[p];
}

int shard_part_of_host(const struct shard *s, const char *host)
{
	uint32_t p;

	return strmap_get(&s->host_part, host, &p) ? (int)p : -1;
}

int shard_owns_host(const struct shard *s, const char *host)
{
	return shard_owns(s, shard_part_of_host(s, host));
}

int shard_owns_fleet(const struct shard *s)
{
	return s->held[WORKERS_FLEET];
}

const char *shard_held(const struct shard *s)
{
	return s->held;
}

const uint64_t *shard_epochs(const struct shard *s)
{
	return s->epoch;
}

int shard_gained(const struct shard *s, int p)
{
	return s->gained[p];
}

int shard_lost(const struct shard *s, int p)
{
	return s->lost[p];
}

size_t shard_live_workers(const struct shard *s)
{
	return s->nlive;
}

size_t shard_held_count(const struct shard *s)
{
	size_t n = 0;

	for (int p = 0; p < WORKERS_NPART; p++)
		n += s->held[p] != 0;
	return n;
}

char *const *shard_workers(const struct shard *s, size_t *n)
{
	*n = s->nlive;
	return s->live;
}

void shard_drop(struct shard *s, const char *lost)
{
	for (int p = 0; p < WORKERS_NPART; p++)
		if (lost[p] && s->held[p]) {
			s->held[p] = 0;
			s->epoch[p] = 0;
			s->lost[p] = 1;
			log_warn("worker %s: partition %d is no longer this worker's (its lease "
				 "expired or was taken); forgetting its alerts", s->me, p);
		}
}

void shard_untake(struct shard *s, int p)
{
	s->held[p] = 0;
	s->gained[p] = 0;
	/* the lease stays ours: the next round renews it under the same epoch, gained again */
}

int shard_part_of_alert(const struct shard *s, const char *json)
{
	char host[256];

	switch (engine_alert_subject(json, host, sizeof(host))) {
	case 0:
		return shard_part_of_host(s, host);
	case 1:
		return WORKERS_FLEET;	/* a deploy verdict, or about no host: the fleet's */
	default:
		return -1;
	}
}

/* ---- rules that cannot run sharded ------------------------------------------ */

static int is_level(const struct shard *s, const char *l)
{
	return !strcmp(l, "host") || level_index(s, l) >= 0;
}

/* Whether aggregation n keeps every element within one worker's hosts. */
static int agg_is_local(const struct shard *s, const struct node *n)
{
	if (n->without) {
		for (int b = 0; b < n->nby; b++)
			if (!strcmp(n->by[b], "host"))
				return 0;
		return 1;	/* host kept */
	}
	for (int b = 0; b < n->nby; b++)
		if (is_level(s, n->by[b]))
			return 1;
	return 0;
}

static const char *crossing(const struct shard *s, const struct node *n)
{
	const char *why = NULL;

	if (!n)
		return NULL;
	if (n->t == N_AGG && !agg_is_local(s, n))
		return n->fn;
	if (n->t == N_CALL && (n->fn_id == FN_ABSENT || n->fn_id == FN_SCALAR))
		return n->fn;
	for (int i = 0; !why && i < n->nargs; i++)
		why = crossing(s, n->args[i]);
	if (!why)
		why = crossing(s, n->l);
	if (!why)
		why = crossing(s, n->r);
	return why;
}

int shard_check_rules(const struct ruleset *rs, const struct engine_opts *opts, char *err,
		      size_t errlen)
{
	struct shard *s = shard_new("check", 1000, rs, opts);
	int ret = 0;

	if (!s)
		return -ENOMEM;
	for (int g = 0; g < rs->ngroups && !ret; g++)
		for (int i = 0; i < rs->groups[g].nrules && !ret; i++) {
			const struct rule *r = &rs->groups[g].rules[i];
			const char *fn = r->baseline.window_ns ? NULL : crossing(s, r->expr);

			if (fn) {
				snprintf(err, errlen, "rule %s: %s() compares hosts of several "
					 "workers; sharded workers merge only peer_ratio and "
					 "post-deploy baselines (group it by host or a domain level, "
					 "or run one unsharded engine)", r->name, fn);
				ret = -EINVAL;
			}
		}
	shard_free(s);
	return ret;
}
