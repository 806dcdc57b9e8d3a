/*
 * baseline_part.c - this worker's part of a post-deploy verdict; see
 * baseline_part.h.  Deploy trains: a deployed host's windows are cut at
 * every other marker that touched it (host_clip).
 */
#include "rules/engine/baseline_part.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/engine/baseline_judge.h"
#include "core/array.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "model/profile.h"
#include "rules/lang/eval.h"
#include "store/deploy.h"
#include "store/store.h"

/*
 * Which side of deploy d's comparison host is on: 0 deployed, 1 peer, or
 * -1 left out: a peer another marker (another service, or an earlier deploy
 * of this one) touched within d's windows (d->ts_ms - w, d->ts_ms + w],
 * whose values moved for a reason of their own.
 */
static int side_of(const struct engine *e, const struct deploy *d, uint64_t w, const char *host)
{
	if (deploy_covers(d, host))
		return 0;
	for (int i = 0; i < e->ndeploys; i++) {
		const struct deploy *o = &e->deploys[i];

		if (o != d && o->ts_ms + w > d->ts_ms && o->ts_ms <= d->ts_ms + w &&
		    deploy_covers(o, host))
			return -1;
	}
	return 1;
}

/*
 * Deploy trains: the part of deploy d's windows (d - w, d + w] in which
 * nothing else changed on deployed host `host` -- after the newest other
 * marker (any service's deploy or rollback) that touched it inside d's
 * before-window, and before the first one inside its after-window -- into
 * [*from, *to].  So a deploy landing minutes after another on the same
 * hosts is compared with the state the first one left, not charged with
 * its change, and the first is judged on the minutes before the second.
 * Returns 0, or -1 when another marker touched it at d's own instant
 * (nothing tells the two apart).
 */
static int host_clip(const struct engine *e, const struct deploy *d, uint64_t w,
		     const char *host, uint64_t *from, uint64_t *to)
{
	*from = d->ts_ms - w;
	*to = d->ts_ms + w;
	for (int i = 0; i < e->ndeploys; i++) {
		const struct deploy *o = &e->deploys[i];

		if (o == d || o->ts_ms + w <= d->ts_ms || o->ts_ms > d->ts_ms + w ||
		    !deploy_covers(o, host))
			continue;
		if (o->ts_ms == d->ts_ms)
			return -1;
		if (o->ts_ms < d->ts_ms && o->ts_ms > *from)
			*from = o->ts_ms;
		if (o->ts_ms > d->ts_ms && o->ts_ms < *to)
			*to = o->ts_ms;
	}
	return 0;
}

/* Whether deployed host `host`'s data over (start, end] is inside its clip of d's windows. */
static int host_span_clean(const struct engine *e, const struct deploy *d, uint64_t w,
			   const char *host, uint64_t start, uint64_t end)
{
	uint64_t from, to;

	return host_clip(e, d, w, host, &from, &to) == 0 && start >= from && end <= to;
}

/*
 * The other markers that touched d's deployed hosts hosts[0..n) inside its
 * windows, "service version, ..." into out ("" when none): what a train's
 * verdict is confounded by.
 */
void baseline_train_of(const struct engine *e, const struct deploy *d, uint64_t w,
		     char *const *hosts, size_t n, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (int i = 0; i < e->ndeploys && off < len; i++) {
		const struct deploy *o = &e->deploys[i];
		size_t h;

		if (o == d || o->ts_ms + w <= d->ts_ms || o->ts_ms > d->ts_ms + w)
			continue;
		for (h = 0; h < n && !(deploy_covers(d, hosts[h]) && deploy_covers(o, hosts[h])); h++)
			;
		if (h < n)
			off += (size_t)snprintf(out + off, len - off, "%s%s %s", off ? ", " : "",
						o->service, o->version);
	}
}

/* Reading per rule and evaluation: at least one batch, then until this much time passed. */
#define PART_STEP_NS (50 * NSEC_PER_MSEC)
#define PART_BATCH 256		/* hosts read in one exchange */

/* Deployed host `host` reported: it is one of the verdict's hosts (once). */
static void flag_seen(struct baseline_part *p, const char *host)
{
	uint32_t v;

	if (p && !strmap_get(&p->seen, host, &v) && !strmap_put(&p->seen, host, 1))
		fleet_bpart_add_host(&p->b, host);
}

struct side_arg {
	const struct engine *e;
	const struct deploy *d;
	uint64_t w;
	struct baseline_part *seen;	/* NULL: flag nobody */
	uint64_t start, end;		/* the span merged: (start, end] */
};

/* side_of(), flagging the deployed hosts seen. */
static int deploy_side(const char *host, void *arg)
{
	struct side_arg *a = arg;
	int side = side_of(a->e, a->d, a->w, host);

	if (!side && !host_span_clean(a->e, a->d, a->w, host, a->start, a->end))
		return -1;	/* another deploy changed it in this span */
	if (!side)
		flag_seen(a->seen, host);
	return side;
}

/*
 * Value baselines read the 1-minute tier (rules/lang/minute_eval.c): each slot
 * is a whole number of minutes, the before-slots end at the last minute
 * boundary at or before the deploy and the after-slots begin at the first
 * one at or after it, so no slot mixes the two sides of a deploy.
 */
#define MINUTE_MS 60000ULL

struct minute_slots {
	uint64_t step;			/* a slot's length: whole minutes */
	uint64_t before_end;		/* end of the last slot before the deploy */
	uint64_t after_start;		/* start of the first slot after it */
	int nbefore, nafter;		/* slots in each window (<= BASELINE_POINTS) */
};

static void minute_slots(uint64_t d_ts, uint64_t w, struct minute_slots *sl)
{
	uint64_t per = (w + BASELINE_POINTS - 1) / BASELINE_POINTS;
	uint64_t nb, na;

	sl->step = (per + MINUTE_MS - 1) / MINUTE_MS * MINUTE_MS;
	if (!sl->step)
		sl->step = MINUTE_MS;
	sl->before_end = d_ts - d_ts % MINUTE_MS;
	sl->after_start = sl->before_end == d_ts ? d_ts : sl->before_end + MINUTE_MS;
	nb = (sl->before_end - (d_ts - w)) / sl->step;
	na = (d_ts + w - sl->after_start) / sl->step;
	sl->nbefore = (int)(nb < BASELINE_POINTS ? nb : BASELINE_POINTS);
	sl->nafter = (int)(na < BASELINE_POINTS ? na : BASELINE_POINTS);
}

uint64_t baseline_minutes_ready(uint64_t d_ts, uint64_t w, uint64_t delay_ms)
{
	struct minute_slots sl;

	minute_slots(d_ts, w, &sl);
	return sl.after_start + (uint64_t)sl.nafter * sl.step + delay_ms;
}

/*
 * Slot index (0..FLEET_SLOTS) of the slot ending at ts, or -1.  Before
 * slots fill [0, nbefore), after slots [BASELINE_POINTS, + nafter).
 */
static int minute_slot_at(const struct minute_slots *sl, uint64_t ts)
{
	if (ts <= sl->before_end) {
		uint64_t back = sl->before_end - ts;

		if (back % sl->step || back / sl->step >= (uint64_t)sl->nbefore)
			return -1;
		return sl->nbefore - 1 - (int)(back / sl->step);
	}
	if (ts > sl->after_start && !((ts - sl->after_start) % sl->step) &&
	    (ts - sl->after_start) / sl->step <= (uint64_t)sl->nafter)
		return BASELINE_POINTS + (int)((ts - sl->after_start) / sl->step) - 1;
	return -1;
}

/* One host's minutes while they are read: the newest few, and it in columns. */
struct minute_host_state {
	struct columns c;		/* the newest minute alone: what selectors walk */
	struct snapshot *m;		/* minutes within keep_ms of the newest, oldest first */
	size_t n, cap;
};

struct minute_read {
	const struct engine *e;
	const struct rule *r;
	const struct deploy *d;
	struct fleet_bpart *b;
	struct minute_slots sl;
	uint64_t keep_ms;		/* the longer of the expression's range and a slot */
	struct strmap index;		/* host -> state */
	struct minute_host_state *hs;
	struct baseline_part *part;	/* whose b it is */
};

static int keeps_nothing(const struct series *def, void *arg)
{
	(void)def;
	(void)arg;
	return 0;
}

static const struct columns_policy newest_only = { keeps_nothing, NULL, 1 };

/* The rule's value for the host of window w at its newest minute, into slot k. */
static void minute_value(struct minute_read *mr, const struct host_window *w, int k)
{
	struct value v = { 0 };
	uint64_t t = w->minutes[w->nminutes - 1].ts_ms;
	char err[256];

	if (eval(mr->r->expr, w, 1, &v, err, sizeof(err))) {
		/* a slot of a baseline (many per verdict): logged once a minute at most */
		static uint64_t said_ms;

		if (!said_ms || t - said_ms >= 60000 || t < said_ms) {
			log_warn("rule %s: baseline evaluation failed: %s; that slot is left out",
				 mr->r->name, err);
			said_ms = t;
		}
		return;
	}
	for (size_t i = 0; v.is_vector && i < v.n; i++) {
		const char *host = velem_label(&v.e[i], "host");
		int side;

		if (!host || isnan(v.e[i].v))
			continue;
		side = side_of(mr->e, mr->d, mr->r->baseline.window_ns / NSEC_PER_MSEC, host);
		if (side == 0 && !host_span_clean(mr->e, mr->d, mr->r->baseline.window_ns /
						  NSEC_PER_MSEC, host, t - mr->sl.step, t))
			continue;	/* another deploy changed it in this slot */
		if (side == 0) {
			mr->b->dsum[k] += v.e[i].v;
			mr->b->dn[k]++;
			flag_seen(mr->part, host);
		} else if (side > 0) {
			mr->b->psum[k] += v.e[i].v;
			mr->b->pn[k]++;
		}
	}
	value_free(&v);
}

/*
 * A percentile rule's histograms of window w's minutes ending in
 * (to - span, to] merged into the deployed hosts' *dh or the peers' *ph.
 */
static void minute_hists(struct minute_read *mr, const struct host_window *w, uint64_t to,
			 uint64_t span, struct histogram *dh, struct histogram *ph,
			 struct baseline_part *seen)
{
	struct side_arg a = { mr->e, mr->d, mr->r->baseline.window_ns / NSEC_PER_MSEC, seen,
			      to - span, to };
	struct histogram *m = calloc(2, sizeof(*m));

	if (!m)
		return;
	if (eval_merge_quantile_hist(mr->r->expr, w, 1, to, span, deploy_side, &a, m) > 0) {
		hist_merge(dh, &m[0]);
		hist_merge(ph, &m[1]);
	}
	free(m);
}

/* One minute of one host, as the rollup loader delivers it (oldest first per host). */
static int minute_arrived(struct snapshot *s, void *arg)
{
	struct minute_read *mr = arg;
	struct minute_host_state *hs;
	struct host_window w;
	struct snapshot copy;
	uint32_t idx;
	size_t keep = 0;
	int k;

	if (!s->host || !strmap_get(&mr->index, s->host, &idx))
		return 0;
	hs = &mr->hs[idx];
	if (hs->n && s->ts_ms <= hs->m[hs->n - 1].ts_ms)
		return 0;	/* not newer: out of order, a duplicate */
	/* the topology's labels, as the 1 s snapshots get them (history.c) */
	if (topology_apply(mr->e->opts.topology, s))
		return 0;
	/* drop the minutes no range or slot reaches back to any more */
	while (keep < hs->n && hs->m[keep].ts_ms + mr->keep_ms <= s->ts_ms)
		snapshot_free(&hs->m[keep++]);
	if (keep) {
		memmove(hs->m, hs->m + keep, (hs->n - keep) * sizeof(*hs->m));
		hs->n -= keep;
	}
	if (ARRAY_GROW(hs->m, hs->cap, hs->n + 1, 4))
		return 0;
	if (snapshot_copy(&copy, s))
		return 0;
	hs->m[hs->n++] = *s;
	memset(s, 0, sizeof(*s));
	if (columns_push(&hs->c, &copy, 1, &newest_only))
		return 0;
	w = (struct host_window){ hs->m[hs->n - 1].host, &hs->c, columns_len(&hs->c), hs->m,
				  hs->n };
	k = minute_slot_at(&mr->sl, w.minutes[w.nminutes - 1].ts_ms);
	if (mr->b->quantile) {
		uint64_t ts = w.minutes[w.nminutes - 1].ts_ms;
		int after = ts > mr->sl.after_start;

		if (k >= 0)
			minute_hists(mr, &w, ts, mr->sl.step, &mr->b->dh[k], &mr->b->ph[k],
				     mr->part);
		/* the whole windows, a minute at a time */
		if ((ts <= mr->sl.before_end &&
		     ts + (uint64_t)mr->sl.nbefore * mr->sl.step > mr->sl.before_end) ||
		    (after && ts <= mr->sl.after_start + (uint64_t)mr->sl.nafter * mr->sl.step))
			minute_hists(mr, &w, ts, MINUTE_MS, &mr->b->wd[after], &mr->b->wp[after],
				     NULL);
	} else if (k >= 0) {
		minute_value(mr, &w, k);
	}
	return 0;
}

/*
 * Read the minutes of hosts[0..n) over deploy d's windows through the
 * engine's rollup loader and fold them into mr->b.  Returns 0, or < 0 when
 * they could not all be read (what was folded in is then partial).
 */
static int read_minutes(struct minute_read *mr, const char *const *hosts, size_t n)
{
	const struct engine *e = mr->e;
	uint64_t range = expr_max_range(mr->r->expr) / NSEC_PER_MSEC;
	uint64_t first = mr->sl.before_end - (uint64_t)mr->sl.nbefore * mr->sl.step;
	uint64_t from = first + MINUTE_MS - (range > MINUTE_MS ? range : MINUTE_MS);
	uint64_t to = mr->sl.after_start + (uint64_t)mr->sl.nafter * mr->sl.step;
	size_t indexed = 0;
	int got = -ENOMEM;

	mr->hs = calloc(n + 1, sizeof(*mr->hs));
	strmap_init(&mr->index);
	for (; mr->hs && indexed < n; indexed++) {
		columns_init(&mr->hs[indexed].c);
		if (strmap_put(&mr->index, hosts[indexed], (uint32_t)indexed))
			break;
	}
	if (mr->hs && indexed == n) {
		got = e->opts.load_rollups(e->opts.load_rollups_arg, hosts, n, from, to,
					   minute_arrived, mr);
		if (got < 0)
			log_warn("%s: deploy %s %s: the 1-minute rollups of %zu host(s) could not "
				 "be read (%s); read again at the next evaluation", mr->r->name,
				 mr->d->service, mr->d->version, n, strerror(-got));
	}
	for (size_t h = 0; mr->hs && h < n; h++) {
		columns_free(&mr->hs[h].c);
		for (size_t k = 0; k < mr->hs[h].n; k++)
			snapshot_free(&mr->hs[h].m[k]);
		free(mr->hs[h].m);
	}
	free(mr->hs);
	mr->hs = NULL;
	strmap_free(&mr->index);
	return got < 0 ? got : 0;
}


/* Hosts read per exchange (engine_opts.baseline_batch). */
static size_t part_batch(const struct engine *e)
{
	return e->opts.baseline_batch ? e->opts.baseline_batch : PART_BATCH;
}

/* Deployed or peer host `host`'s profiles before and after deploy d into p. */
static void profile_host(const struct engine *e, const struct deploy *d, uint64_t w,
			 const char *host, struct baseline_part *p)
{
	int side = side_of(e, d, w, host), mine = side == 0, nb, na;
	uint64_t from = d->ts_ms - w, to = d->ts_ms + w;

	if (side < 0 || !e->opts.load_profile)
		return;
	/* a deployed host: only while no other deploy changed it (host_clip) */
	if (mine && host_clip(e, d, w, host, &from, &to))
		return;
	nb = from < d->ts_ms ? e->opts.load_profile(e->opts.load_profile_arg, host, from,
						    d->ts_ms - 1, &p->b.prof[mine ? 0 : 2]) : 0;
	na = to > d->ts_ms ? e->opts.load_profile(e->opts.load_profile_arg, host, d->ts_ms, to,
						  &p->b.prof[mine ? 1 : 3]) : 0;
	if (mine && nb > 0 && na > 0)
		flag_seen(p, host);
}

void baseline_part_free(struct baseline_part *p)
{
	if (!p)
		return;
	fleet_bpart_free(&p->b);
	for (size_t i = 0; i < p->nhosts; i++)
		free(p->hosts[i]);
	free(p->hosts);
	strmap_free(&p->seen);
	free(p);
}

/*
 * Begin this engine's part of the verdict on deploy d for baseline rule r
 * (win: its live hosts); NULL on -ENOMEM.
 */
struct baseline_part *baseline_part_begin(const struct engine *e, const struct rule *r,
					const struct deploy *d, const struct host_window *win,
					size_t nwin)
{
	struct baseline_part *p = calloc(1, sizeof(*p));
	uint64_t w = r->baseline.window_ns / NSEC_PER_MSEC;
	double q;

	if (!p)
		return NULL;
	strmap_init(&p->seen);
	p->hosts = calloc(nwin + 1, sizeof(*p->hosts));
	if (!p->hosts ||
	    fleet_bpart_init(&p->b, !r->baseline.profile_share && eval_is_quantile(r->expr, &q))) {
		baseline_part_free(p);
		return NULL;
	}
	p->b.total = (int)nwin;
	for (size_t h = 0; h < nwin; h++) {
		/* hosts another deploy touched say nothing about this one */
		if (side_of(e, d, w, win[h].host) < 0)
			continue;
		if (!(p->hosts[p->nhosts] = strdup(win[h].host))) {
			baseline_part_free(p);
			return NULL;
		}
		p->nhosts++;
	}
	if (r->baseline.profile_share && !e->opts.load_profile)
		log_info("%s: deploy %s %s: no profile source (profile baselines read Redis)",
			 r->name, d->service, d->version);
	if (!r->baseline.profile_share && !e->opts.load_rollups)
		log_info("%s: deploy %s %s: no 1-minute rollups to judge it on (baselines read "
			 "fl:{H}:s60)", r->name, d->service, d->version);
	if (p->nhosts > part_batch(e))
		log_info("%s: deploy %s %s: reading %zu host(s)' %s over the next evaluations, "
			 "%zu at a time", r->name, d->service, d->version, p->nhosts,
			 r->baseline.profile_share ? "profiles" : "1-minute rollups", part_batch(e));
	return p;
}

/*
 * Read on for part p: batches of its hosts (their minutes over both of d's
 * windows, or their profiles) until PART_STEP_NS have passed.  Returns 1
 * when every host has been read (p->b complete), else 0.
 */
int baseline_part_step(const struct engine *e, const struct rule *r, const struct deploy *d,
		     struct baseline_part *p)
{
	uint64_t w = r->baseline.window_ns / NSEC_PER_MSEC, until = time_mono_ns() +
		(e->opts.baseline_step_ns ? e->opts.baseline_step_ns : PART_STEP_NS);
	struct minute_read mr = { .e = e, .r = r, .d = d, .part = p };
	size_t batch = part_batch(e);

	minute_slots(d->ts_ms, w, &mr.sl);
	mr.keep_ms = expr_max_range(r->expr) / NSEC_PER_MSEC;
	if (mr.keep_ms < mr.sl.step)
		mr.keep_ms = mr.sl.step;
	do {
		size_t n = p->nhosts - p->next < batch ? p->nhosts - p->next : batch;

		if (r->baseline.profile_share) {
			for (size_t h = 0; h < n; h++)
				profile_host(e, d, w, p->hosts[p->next + h], p);
		} else if (e->opts.load_rollups && n) {
			/*
			 * A batch is folded in whole or not at all: Redis going away
			 * mid-read leaves it for the next evaluation, rather than
			 * judging without those hosts (or counting some twice).
			 */
			struct fleet_bpart part;
			int ret;

			if (fleet_bpart_init(&part, p->b.quantile))
				return 0;
			mr.b = &part;
			ret = read_minutes(&mr, (const char *const *)p->hosts + p->next, n);
			if (!ret)
				ret = fleet_bpart_add(&p->b, &part);
			fleet_bpart_free(&part);
			if (ret)
				return 0;
		}
		p->next += n;
	} while (p->next < p->nhosts && time_mono_ns() < until);
	p->done = p->next == p->nhosts;
	return p->done;
}

