/*
 * domain_rollup.c - host matches rolled up into failure-domain alerts: a
 * search for the smallest domain that explains the hits.
 *
 * A rule's `rollup.by` names nested domain levels, outermost first (site,
 * switch, rack).  The hits are the distinct hosts with a match; N is the
 * number of live hosts the rule ran over and K the number of hits.  A
 * domain D with total(D) live hosts and hits(D) of the hits is
 *
 *   significant  when hits(D) >= min_hosts, and either
 *                hits(D) / total(D) >= min_fraction, or the hits are
 *                concentrated in D: were the K hits spread over the fleet
 *                at random, the chance of hits(D) or more landing in D (the
 *                hypergeometric tail) would be below `alpha`, or that and
 *                their onsets together (Fisher's method) would: hits that
 *                began within seconds of each other (see Onsets below);
 *   spread       when the hits outside its most-hit child domain (the next
 *                level down, grouping D's hits by that label) would on
 *                their own be significant: at least min_hosts of them, or
 *                at least two that are min_fraction of D's hosts outside
 *                that child.  More than one child shares the fault, so the
 *                cause sits above them; a stray host or two beside a hit
 *                child do not move the page up.
 *
 * The search walks top-down.  At each level the hits (of the parent
 * domain) are grouped by domain; a domain pages when it is significant and
 * either spread or at the innermost level; otherwise the search goes down
 * into it, and it pages only if it is significant and none of its children
 * could.  A domain whose hits all sit in one child holding all its live
 * hosts (a rack with its own top-of-rack switch) is that child under
 * another name: the search goes on inside it, and if that child is what
 * pages, the page carries every one of the identical names as labels
 * (switch="sw1", rack="r1"), its domain is the innermost and its event
 * lists the outer ones (faultline.domain.same_as), so whoever reads it does
 * not look for a switch-wide fault.  A paged domain's host matches are
 * inhibited (counted, not sent);
 * hits that no domain explains stay host alerts.  So:
 *
 *   - a full rack under a small switch pages as the rack (its switch is
 *     significant but not spread);
 *   - 12 of 16 hosts over both racks of a switch page as the switch;
 *   - one host per rack across a switch's eight racks (a line card) pages as
 *     the switch when that is unlikely by chance (alpha), although no rack
 *     and not min_fraction of the switch is hit;
 *   - a stray host beside a hit rack stays a host alert.
 *
 * Trade-off: alpha is the false-page rate of the concentration test per
 * domain and evaluation when hits are independent; small fleets need more
 * hits in a domain to pass it (4 of 4 racks hit once each under one switch
 * of a 64-host, 2-switch fleet is chance, not a switch).  A level no live
 * host has a label for is skipped (no topology for it); a host without a
 * label where others have one is in the visible domain "unplaced".
 */
#include "rules/engine/engine_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "rules/engine/fleet.h"
#include "rules/engine/stats.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "model/labels.h"

/* One domain level: each live host's domain there, and the domains' names and sizes. */
struct level {
	const char *label;
	uint32_t *dom;			/* per live host */
	const char **name;		/* per domain */
	uint32_t *total;		/* live hosts per domain */
	uint32_t nd;
};

struct search {
	struct engine *e;
	const struct rule *r;
	struct match *m;
	int nm;
	struct level lv[RULE_MAX_ROLLUP];
	int nlv;
	size_t nlive, nhit;
	uint32_t pop, pop_hits;		/* the concentration test's population: the fleet's */
	int32_t *live_of;		/* e->hosts index -> live index, or -1 */
	int32_t *mlive;			/* per match: its host's live index, or -1 */
	uint8_t *mark;			/* scratch, per live host */
	struct match *out;
	int *nout;
	uint32_t *count;		/* scratch: hits per domain, per level */
	uint64_t *onset;		/* per live host: when its hit began (ms), 0 not known */
	uint64_t onset_window_ms;	/* hits beginning this close began together */
};

/*
 * Onsets.  Hits that begin together are evidence of a common cause that
 * where they are cannot give in a small fleet: one host in each of a
 * switch's 8 racks, 8 of 112 hosts, is 0.3 % likely by placement alone
 * (above alpha), but 8 independent faults of hosts that each had been fine
 * would not begin within the same few seconds.  Under independence a hit's
 * onset is taken as uniform over ONSET_HORIZON_MS (faults of one rule on
 * different hosts an hour apart or more are what independent means here);
 * the chance that c of a domain's k hits with known onsets began within w
 * of each other is then at most k * C(k-1, c-1) * (w / horizon)^(c-1) (a
 * union bound over the cluster's first onset).  It is combined with the
 * placement test by Fisher's method, so a domain that neither test alone
 * would page can page when both point at it.
 *
 * An onset is known only for a hit this engine saw begin: the host was
 * live in the rule's previous evaluation and not hit then.  A hit already
 * there at the engine's first look (a start, a restart, a reload of the
 * rules, a partition taken over) has no known onset and adds nothing, so
 * hits that only seem to begin together because this engine began then
 * never page a domain.
 */
#define ONSET_HORIZON_MS (3600 * 1000ULL)
#define ONSET_WINDOW_MIN_MS 10000ULL

void hit_onsets_free(struct hit_onsets *o)
{
	if (!o)
		return;
	strmap_free(&o->index);
	free(o->ms);
	free(o);
}

/*
 * This evaluation's hits (live indexes hits[0..sr->nhit)) into a new
 * *op, each with its onset: kept from the last evaluation if it was a hit
 * then, now if it was live and not a hit then, else not known; and into
 * sr->onset.  0 or -ENOMEM (*op unchanged).
 */
static int track_onsets(struct search *sr, struct hit_onsets **op, const struct host_state **live,
			const uint32_t *hits, uint64_t now)
{
	struct hit_onsets *old = *op, *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	strmap_init(&o->index);
	o->ms = calloc(sr->nhit + 1, sizeof(*o->ms));
	if (!o->ms) {
		hit_onsets_free(o);
		return -ENOMEM;
	}
	for (size_t k = 0; k < sr->nhit; k++) {
		const struct host_state *h = live[hits[k]];
		uint64_t t = 0;
		uint32_t slot;

		if (old && strmap_get(&old->index, h->name, &slot))
			t = old->ms[slot];	/* still a hit: it began then */
		else if (old && old->prev_eval_ms && h->watched_ms &&
			 h->watched_ms <= old->prev_eval_ms)
			t = now;		/* live then and not a hit: it begins now */
		if (strmap_put(&o->index, h->name, (uint32_t)o->n)) {
			hit_onsets_free(o);
			return -ENOMEM;
		}
		o->ms[o->n++] = t;
		sr->onset[hits[k]] = t;
	}
	o->prev_eval_ms = now;
	hit_onsets_free(old);
	*op = o;
	return 0;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Were the hits hs[0..nh) independent, the chance that as many of them as
 * did began within the onset window of each other (1: no two known
 * onsets do).
 */
static double onset_p(const struct search *sr, const uint32_t *hs, size_t nh)
{
	uint64_t *t = malloc((nh + 1) * sizeof(*t));
	size_t n = 0, c = 1;
	double w = (double)sr->onset_window_ms / (double)ONSET_HORIZON_MS;

	if (!t)
		return 1;
	for (size_t k = 0; k < nh; k++)
		if (sr->onset[hs[k]])
			t[n++] = sr->onset[hs[k]];
	qsort(t, n, sizeof(*t), by_u64);
	for (size_t i = 0, j = 0; j < n; j++) {
		while (t[j] - t[i] > sr->onset_window_ms)
			i++;
		if (j - i + 1 > c)
			c = j - i + 1;
	}
	free(t);
	return stats_cluster_tail(n, c, w);
}

static const char *host_label(const struct host_state *h, const char *key)
{
	const struct snapshot *s;

	if (!columns_len(&h->hist))
		return NULL;	/* nothing readable yet: no labels */
	s = &h->hist.newest;

	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].value;
	return NULL;
}

/* The live index of match i's host, or -1 (not a host match, or not live). */
static int32_t match_live(const struct search *sr, int i)
{
	uint32_t hidx;

	if (!sr->m[i].host || !strmap_get(&sr->e->host_index, sr->m[i].host, &hidx))
		return -1;
	return sr->live_of[hidx];
}

/*
 * The p-value a page shows for hits hs[0..hits) in a domain of total live
 * hosts: the chance that the fleet's hits, spread at random, put this many
 * in it (the hypergeometric tail), or, when the onsets are known and
 * together with them that chance is smaller, Fisher's combination of the
 * two: how unlikely the page is as chance, whichever test it passed.
 */
static double domain_p(const struct search *sr, const uint32_t *hs, uint32_t hits,
		       uint32_t total)
{
	double ph = stats_hypergeom_tail(sr->pop, sr->pop_hits, total, hits);
	double po = sr->onset ? onset_p(sr, hs, hits) : 1;
	double pc = po < 1 ? stats_fisher2(ph, po) : 1;

	return pc < ph ? pc : ph;
}

/*
 * Page domain d of level l for the hits hs[0..nh): one match; their host
 * matches inhibited.  same >= 0: the levels same..l-1 hold exactly these
 * hosts too (a site that is one switch, a switch that is one rack): the
 * page carries every one of those names as labels, its domain is the
 * innermost (d), and dsame lists the outer ones.
 */
static int page(struct search *sr, int l, uint32_t d, int same, const uint32_t *hs, size_t nh)
{
	struct match *dm = &sr->out[*sr->nout];
	const struct level *lv = &sr->lv[l];
	int from = same >= 0 ? same : l;
	double worst = -INFINITY;
	size_t off = 0;

	memset(dm, 0, sizeof(*dm));
	dm->labels = calloc((size_t)(l - from + 1), sizeof(struct label));
	dm->hosts = calloc(nh + 1, sizeof(char *));
	if (!dm->labels || !dm->hosts) {
		free(dm->labels);
		free(dm->hosts);
		return -ENOMEM;
	}
	(*sr->nout)++;
	for (int k = from; k <= l; k++) {
		const struct level *kl = &sr->lv[k];
		const char *name = k == l ? lv->name[d] : kl->name[kl->dom[hs[0]]];

		dm->labels[dm->nlabels].key = (char *)kl->label;
		dm->labels[dm->nlabels++].value = (char *)name;
		if (k < l && off < sizeof(dm->dsame))
			off += (size_t)snprintf(dm->dsame + off, sizeof(dm->dsame) - off, "%s%s=%s",
						off ? "," : "", kl->label, name);
	}
	qsort(dm->labels, (size_t)dm->nlabels, sizeof(*dm->labels), label_key_cmp);
	dm->total = (int)lv->total[d];
	dm->dp = domain_p(sr, hs, (uint32_t)nh, lv->total[d]);
	dm->dlabel = lv->label;
	dm->dvalue = lv->name[d];
	for (size_t k = 0; k < nh; k++)
		sr->mark[hs[k]] = 1;
	for (int i = 0; i < sr->nm; i++) {
		int32_t h = sr->mlive[i];

		if (h < 0 || !sr->mark[h] || !sr->m[i].host)
			continue;
		if (sr->mark[h] == 1) {
			dm->hosts[dm->nhosts++] = (char *)sr->m[i].host;
			sr->mark[h] = 2;
		}
		if (sr->m[i].value > worst)
			worst = sr->m[i].value;
		sr->m[i].host = NULL;	/* inhibited by the domain alert */
		sr->e->inhibited++;
	}
	for (size_t k = 0; k < nh; k++)
		sr->mark[hs[k]] = 0;
	dm->value = worst;
	return 0;
}

/*
 * Whether the hits hs[0..hits) of a domain of total live hosts make it
 * significant: enough of them, and min_fraction of its hosts, or placement
 * (hypergeometric tail) below alpha, or placement and onsets together:
 * Fisher's combination of the two, t (1 - ln t) with t their product,
 * below alpha.
 */
static int significant(const struct search *sr, const uint32_t *hs, uint32_t hits,
		       uint32_t total)
{
	const struct rule *r = sr->r;
	double ph, po;

	if (hits < r->rollup_min_hosts || !total)
		return 0;
	if ((double)hits / total >= r->rollup_min_fraction)
		return 1;
	if (r->rollup_alpha <= 0)
		return 0;
	ph = stats_hypergeom_tail(sr->pop, sr->pop_hits, total, hits);
	if (ph < r->rollup_alpha)
		return 1;
	po = sr->onset ? onset_p(sr, hs, hits) : 1;
	if (po >= 1)
		return 0;
	return stats_fisher2(ph, po) < r->rollup_alpha;
}

/*
 * The hits hs[0..nh) of one parent domain at level l: page what explains
 * them.  al >= 0: the parent is domain ad of level al under another name
 * (the same hosts), so a domain here with those hosts pages as that one.
 * Returns how many domains paged (>= 0) or -ENOMEM.
 */
static int search_level(struct search *sr, int l, const uint32_t *hs, size_t nh, int al,
			uint32_t ad)
{
	const struct level *lv = &sr->lv[l];
	uint32_t *sorted, *count = sr->count + (size_t)l * sr->nlive;
	size_t *start;
	int paged = 0, ret = 0;

	/* group hs by domain, domains in order of their first hit */
	sorted = malloc((nh + 1) * sizeof(*sorted));
	start = malloc((nh + 2) * sizeof(*start));
	if (!sorted || !start) {
		free(sorted);
		free(start);
		return -ENOMEM;
	}
	{
		uint32_t *order = malloc((nh + 1) * sizeof(*order)), nd = 0;
		size_t pos = 0;

		if (!order) {
			free(sorted);
			free(start);
			return -ENOMEM;
		}
		for (size_t k = 0; k < nh; k++)
			if (!count[lv->dom[hs[k]]]++)
				order[nd++] = lv->dom[hs[k]];
		for (uint32_t g = 0; g < nd; g++) {
			start[g] = pos;
			for (size_t k = 0; k < nh; k++)
				if (lv->dom[hs[k]] == order[g])
					sorted[pos++] = hs[k];
		}
		start[nd] = pos;
		for (uint32_t g = 0; g < nd; g++) {
			const uint32_t *gh = sorted + start[g];
			size_t gn = start[g + 1] - start[g];
			uint32_t d = order[g];
			int sig = significant(sr, gh, (uint32_t)gn, lv->total[d]), spread = 0, same = 0;
			int gal = al;

			count[d] = 0;
			if (l + 1 < sr->nlv && sig) {
				/* hits outside the most-hit child */
				const struct level *cl = &sr->lv[l + 1];
				uint32_t *cc = sr->count + (size_t)(l + 1) * sr->nlive, top = 0, tc = 0;
				uint32_t rest, others;

				for (size_t k = 0; k < gn; k++)
					if (++cc[cl->dom[gh[k]]] > top) {
						top = cc[cl->dom[gh[k]]];
						tc = cl->dom[gh[k]];
					}
				for (size_t k = 0; k < gn; k++)
					cc[cl->dom[gh[k]]] = 0;
				rest = (uint32_t)gn - top;
				others = lv->total[d] > cl->total[tc] ? lv->total[d] - cl->total[tc] : 0;
				spread = rest >= sr->r->rollup_min_hosts ||
					 (rest >= 2 && others &&
					  (double)rest / others >= sr->r->rollup_min_fraction);
				/* one child holding all of D's live hosts is D under another name */
				same = top == gn && cl->total[cl->dom[gh[0]]] == lv->total[d];
			}
			if (gal >= 0 && sr->lv[gal].total[ad] != lv->total[d])
				gal = -1;	/* narrower than the named ancestor: its own name */
			if (sig && (l + 1 == sr->nlv || spread)) {
				ret = page(sr, l, d, gal, gh, gn);
				paged += !ret;
			} else if (l + 1 < sr->nlv) {
				/* the same domain one level down keeps the outermost name */
				int below = search_level(sr, l + 1, gh, gn, same ? (gal >= 0 ? gal : l) : -1,
							 same ? (gal >= 0 ? ad : d) : 0);

				if (below < 0) {
					ret = below;
				} else if (below > 0) {
					paged += below;
				} else if (sig) {
					/* significant, and no child explains its hits */
					ret = page(sr, l, d, gal, gh, gn);
					paged += !ret;
				}
			}
			if (ret)
				break;
		}
		for (uint32_t g = 0; g < nd; g++)
			count[order[g]] = 0;
		free(order);
	}
	free(sorted);
	free(start);
	return ret ? ret : paged;
}

/* Level l's domains over the live hosts.  0, 1 (no live host has the label) or -ENOMEM. */
static int level_init(struct level *lv, const char *label, const struct host_state **live,
		      size_t nlive)
{
	struct strmap map;
	int ret = 0, labelled = 0;

	memset(lv, 0, sizeof(*lv));
	lv->label = label;
	lv->dom = calloc(nlive + 1, sizeof(*lv->dom));
	lv->name = calloc(nlive + 1, sizeof(*lv->name));
	lv->total = calloc(nlive + 1, sizeof(*lv->total));
	if (!lv->dom || !lv->name || !lv->total)
		return -ENOMEM;
	strmap_init(&map);
	for (size_t h = 0; h < nlive && !ret; h++) {
		const char *d = host_label(live[h], label);
		uint32_t idx;

		labelled |= d != NULL;
		if (!d)
			d = "unplaced";
		if (!strmap_get(&map, d, &idx)) {
			idx = lv->nd;
			lv->name[lv->nd++] = d;
			if (strmap_put(&map, d, idx))
				ret = -ENOMEM;
		}
		lv->dom[h] = idx;
		lv->total[idx]++;
	}
	strmap_free(&map);
	return ret ? ret : !labelled;
}

/*
 * A level no live host has a label for is skipped; said once (per rule and
 * level, until a reload) where someone wrote it — a rule's rollup.by or
 * --domains — since that is most often a typo.  The built-in default
 * levels (site, agg, switch, rack) are skipped quietly: fleets without a
 * site or agg label are normal.
 */
static void say_level_skipped(struct engine *e, const struct rule *r, const char *label)
{
	char key[256];
	uint32_t v;
	int builtin = r == &e->silent_rule || r == &e->undecodable_rule;

	if (builtin && e->domains_default)
		return;
	snprintf(key, sizeof(key), "%s/%s", r->name, label);
	if (strmap_get(&e->said_levels, key, &v) || strmap_put(&e->said_levels, key, 1))
		return;
	log_info("%s: failure-domain level '%s' is skipped: no host has a '%s' label (a typo in "
		 "%s, or a topology without that level?)", r->name, label, label,
		 builtin ? "--domains" : "rollup.by");
}

static void level_free(struct level *lv)
{
	free(lv->dom);
	free(lv->name);
	free(lv->total);
}

int domain_rollup(struct engine *e, const struct rule *r, struct hit_onsets **onsets,
		  uint64_t now, struct match *m, int nm,
		  const struct host_state **live, size_t nlive, struct match *out)
{
	struct search sr = { .e = e, .r = r, .m = m, .nm = nm, .nlive = nlive, .out = out };
	uint32_t *hits = calloc((size_t)nm + 1, sizeof(*hits));
	uint8_t *is_hit = calloc(nlive + 1, 1);
	int nout = 0, ret = 0;

	sr.nout = &nout;
	sr.live_of = malloc((e->nhosts + 1) * sizeof(*sr.live_of));
	sr.count = calloc((size_t)RULE_MAX_ROLLUP * nlive + 1, sizeof(*sr.count));
	sr.mlive = calloc((size_t)nm + 1, sizeof(*sr.mlive));
	sr.mark = calloc(nlive + 1, 1);
	if (!hits || !is_hit || !sr.live_of || !sr.count || !sr.mlive || !sr.mark) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t h = 0; h < e->nhosts; h++)
		sr.live_of[h] = -1;
	for (size_t h = 0; h < nlive; h++)
		sr.live_of[live[h] - e->hosts] = (int32_t)h;
	for (int l = 0; l < r->nrollup; l++) {
		int got = level_init(&sr.lv[sr.nlv], r->rollup_by[l], live, nlive);

		if (got < 0) {
			level_free(&sr.lv[sr.nlv]);
			ret = got;
			goto out;
		}
		if (got == 1) {
			level_free(&sr.lv[sr.nlv]);	/* no topology for this level */
			if (nlive)
				say_level_skipped(e, r, r->rollup_by[l]);
		} else {
			sr.nlv++;
		}
	}
	for (int i = 0; i < nm; i++) {
		int32_t h = sr.mlive[i] = match_live(&sr, i);

		if (h >= 0 && !is_hit[h]) {
			is_hit[h] = 1;
			hits[sr.nhit++] = (uint32_t)h;
		}
	}
	/*
	 * Sharded, the concentration test draws from the whole fleet: the
	 * other workers' hosts and hits join this worker's (a sum, so no host
	 * moves); the domains themselves are all within this worker.
	 */
	sr.pop = nlive;
	sr.pop_hits = sr.nhit;
	if (e->opts.fleet && r->rollup_alpha > 0) {
		uint64_t n = nlive, k = sr.nhit;

		if (fleet_population(e->opts.fleet, r->name, &n, &k) == 0 && n <= UINT32_MAX) {
			sr.pop = (uint32_t)n;
			sr.pop_hits = (uint32_t)k;
		}
	}
	if (onsets) {
		uint64_t iv = e->cur_group >= 0 ? e->rules.groups[e->cur_group].interval_ns /
						      NSEC_PER_MSEC : 0;

		/* hits one or two evaluations apart began together, at least 10 s */
		sr.onset_window_ms = 2 * iv > ONSET_WINDOW_MIN_MS ? 2 * iv : ONSET_WINDOW_MIN_MS;
		sr.onset = calloc(nlive + 1, sizeof(*sr.onset));
		if (!sr.onset || track_onsets(&sr, onsets, live, hits, now)) {
			ret = -ENOMEM;
			goto out;
		}
	}
	if (sr.nlv && sr.nhit) {
		int got = search_level(&sr, 0, hits, sr.nhit, -1, 0);

		if (got < 0)
			ret = got;
	}
	for (int i = 0; i < nm; i++)
		if (m[i].host)
			out[nout++] = m[i];
out:
	for (int l = 0; l < sr.nlv; l++)
		level_free(&sr.lv[l]);
	free(hits);
	free(is_hit);
	free(sr.live_of);
	free(sr.count);
	free(sr.mlive);
	free(sr.mark);
	free(sr.onset);
	return ret ? ret : nout;
}
