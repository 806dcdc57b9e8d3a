/*
 * baseline.c - post-deploy baselines: the deployed hosts after a deploy
 * against themselves before it and against the undeployed peers, with a
 * significance test; CPU-profile baselines name the function that grew.
 */
#include "rules/engine_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "model/alert.h"
#include "store/deploy.h"
#include "rules/eval.h"
#include "core/fnv.h"
#include "core/log.h"
#include "model/profile.h"
#include "rules/stats.h"
#include "store/store.h"
#include "core/strbuf.h"
#include "core/timeutil.h"

/* ---- post-deploy baselines -------------------------------------------- */

#define BASELINE_POINTS 30		/* values per window compared */
#define BASELINE_MIN_POINTS 8		/* fewer: no verdict (Mann–Whitney needs ~8) */
#define BASELINE_HOLD_MS (24ULL * 3600 * 1000)	/* a verdict stands this long at most */

void baseline_verdict_free(struct verdict *v)
{
	for (int k = 0; k < v->nhosts; k++)
		free(v->hosts[k]);
	free(v->hosts);
	memset(v, 0, sizeof(*v));
}

int engine_set_deploys(struct engine *e, const struct deploy *d, int n)
{
	struct deploy *copy = n ? malloc((size_t)n * sizeof(*copy)) : NULL;

	if (n && !copy)
		return -ENOMEM;
	if (n)
		memcpy(copy, d, (size_t)n * sizeof(*copy));
	free(e->deploys);
	e->deploys = copy;
	e->ndeploys = n;
	return 0;
}

void baseline_verdicts_free(struct rule_inst *ri)
{
	for (int i = 0; i < ri->nverdicts; i++) {
		baseline_verdict_free(ri->verdicts[i]);
		free(ri->verdicts[i]);
	}
	free(ri->verdicts);
	ri->verdicts = NULL;
	ri->nverdicts = 0;
}

/* The newest marker (deploy or rollback) of service at or before now, or NULL. */
static const struct deploy *latest_of(const struct engine *e, const char *service, uint64_t now)
{
	const struct deploy *best = NULL;

	for (int i = 0; i < e->ndeploys; i++) {
		const struct deploy *d = &e->deploys[i];

		if (d->ts_ms <= now && !strcmp(d->service, service) &&
		    (!best || d->ts_ms >= best->ts_ms))
			best = d;
	}
	return best;
}

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

struct side_arg {
	const struct engine *e;
	const struct deploy *d;
	uint64_t w;
	int *seen;
};

/* side_of(), flagging the deployed hosts seen. */
static int deploy_side(const char *host, void *arg)
{
	struct side_arg *a = arg;
	int side = side_of(a->e, a->d, a->w, host);
	uint32_t idx;

	if (!side && a->seen && strmap_get(&a->e->host_index, host, &idx))
		a->seen[idx] = 1;
	return side;
}

/*
 * The q-quantiles of r's histograms merged over (t - span, t], across the
 * deployed hosts into *dv and across the others into *pv (NAN if none).
 */
static void merged_quantiles_at(const struct engine *e, const struct rule *r,
				const struct deploy *d, const struct host_window *win, size_t nwin,
				uint64_t t, uint64_t span, double q, double *dv, double *pv,
				int *seen)
{
	struct histogram *m = calloc(2, sizeof(*m));
	struct side_arg a = { e, d, r->baseline.window_ns / NSEC_PER_MSEC, seen };

	*dv = *pv = NAN;
	if (!m)
		return;
	if (eval_merge_quantile_hist(r->expr, win, nwin, t, span, deploy_side, &a, m) > 0) {
		if (m[0].count)
			*dv = (double)hist_quantile(&m[0], q);
		if (m[1].count)
			*pv = (double)hist_quantile(&m[1], q);
	}
	free(m);
}

/*
 * r's expression over the live hosts as they were at t (their history cut
 * at t), averaged over the deployed hosts into *dv and over the others
 * into *pv (NAN where none reported); for quantile(q, hist[...]), the
 * q-quantile of each side's histograms merged over the slot (t - step, t].
 * Deployed hosts that reported are flagged in seen[] (indexed like
 * e->hosts).
 */
static void value_at(const struct engine *e, const struct rule *r, const struct deploy *d,
		     const struct host_window *win, size_t nwin, struct host_window *cut,
		     uint64_t t, uint64_t step_ms, double *dv, double *pv, int *seen)
{
	double dsum = 0, psum = 0;
	size_t dn = 0, pn = 0, ncut = 0;
	struct value v = { 0 };
	char err[256];
	double q;

	*dv = *pv = NAN;
	for (size_t h = 0; h < nwin; h++) {
		size_t n = win[h].n;

		while (n && win[h].snaps[n - 1].ts_ms > t)
			n--;
		/* a host that was silent around t says nothing about t */
		if (!n || win[h].snaps[n - 1].ts_ms + e->opts.stale_ms + step_ms <= t)
			continue;
		cut[ncut] = win[h];
		cut[ncut++].n = n;
	}
	/* a percentile's baseline merges the slot's histograms, never averages percentiles */
	if (ncut && eval_is_quantile(r->expr, &q)) {
		merged_quantiles_at(e, r, d, cut, ncut, t, step_ms, q, dv, pv, seen);
		return;
	}
	if (!ncut)
		return;
	if (eval(r->expr, cut, ncut, &v, err, sizeof(err))) {
		/* a slot of a baseline (many per verdict): logged once a minute at most */
		static uint64_t said_ms;

		if (!said_ms || t - said_ms >= 60000 || t < said_ms) {
			log_warn("rule %s: baseline evaluation failed: %s; that slot is left out",
				 r->name, err);
			said_ms = t;
		}
		return;
	}
	if (!v.is_vector) {
		value_free(&v);
		return;
	}
	for (size_t i = 0; i < v.n; i++) {
		const char *host = velem_label(&v.e[i], "host");
		int side;

		if (!host || isnan(v.e[i].v))
			continue;
		side = side_of(e, d, r->baseline.window_ns / NSEC_PER_MSEC, host);
		if (side < 0)
			continue;
		if (side == 0) {
			uint32_t idx;

			dsum += v.e[i].v;
			dn++;
			if (strmap_get(&e->host_index, host, &idx))
				seen[idx] = 1;
		} else {
			psum += v.e[i].v;
			pn++;
		}
	}
	if (dn)
		*dv = dsum / (double)dn;
	if (pn)
		*pv = psum / (double)pn;
	value_free(&v);
}

/* Copy the non-NaN values of x[0..n) to out; returns how many. */
static size_t finite_values(const double *x, size_t n, double *out)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(x[i]))
			out[m++] = x[i];
	return m;
}

/* The verdict's hosts: those flagged in seen[] (indexed like e->hosts), of nwin live. */
static void verdict_hosts(const struct engine *e, struct verdict *v, const int *seen, size_t nwin)
{
	v->total = (int)nwin;
	v->hosts = calloc(e->nhosts + 1, sizeof(char *));
	for (size_t h = 0; v->hosts && h < e->nhosts; h++)
		if (seen[h])
			v->hosts[v->nhosts++] = strdup(e->hosts[h].name);
}

/*
 * Judge deploy d for baseline rule r: BASELINE_POINTS values of the
 * deployed hosts' mean before the deploy and as many after, the same for
 * the undeployed peers; fills v.  The comparison with peers uses each
 * side's values relative to its own pre-deploy median, so a load shift
 * that moves everybody cancels out.
 */
static void judge(const struct engine *e, const struct rule *r, const struct deploy *d,
		  const struct host_window *win, size_t nwin, struct verdict *v)
{
	const struct rule_baseline *b = &r->baseline;
	uint64_t w = b->window_ns / NSEC_PER_MSEC, step = w / BASELINE_POINTS;
	double dser[2 * BASELINE_POINTS], pser[2 * BASELINE_POINTS];
	double db[BASELINE_POINTS], da[BASELINE_POINTS], pb[BASELINE_POINTS], pa[BASELINE_POINTS];
	struct host_window *cut = calloc(nwin + 1, sizeof(*cut));
	int *seen = calloc(e->nhosts + 1, sizeof(int));
	size_t ndb, nda, npb, npa;
	double self_change, self_p, change, p, mdb, mpb, q, qb[2], qa[2];

	if (!cut || !seen || !step)
		goto out;
	for (int k = 0; k < 2 * BASELINE_POINTS; k++) {
		/* slot k covers (t - step, t]; the before slots end just before the deploy */
		uint64_t t = d->ts_ms - w + (uint64_t)(k + 1) * step - 1;

		value_at(e, r, d, win, nwin, cut, t, step, &dser[k], &pser[k], seen);
	}
	ndb = finite_values(dser, BASELINE_POINTS, db);
	nda = finite_values(dser + BASELINE_POINTS, BASELINE_POINTS, da);
	npb = finite_values(pser, BASELINE_POINTS, pb);
	npa = finite_values(pser + BASELINE_POINTS, BASELINE_POINTS, pa);
	if (ndb < BASELINE_MIN_POINTS || nda < BASELINE_MIN_POINTS) {
		log_info("%s: deploy %s %s: too little data around it to judge (%zu before, "
			 "%zu after of %d)", r->name, d->service, d->version, ndb, nda,
			 BASELINE_POINTS);
		goto out;
	}
	self_p = stats_mann_whitney_greater(da, nda, db, ndb);
	{
		double tmp_a[BASELINE_POINTS], tmp_b[BASELINE_POINTS];

		memcpy(tmp_a, da, nda * sizeof(double));
		memcpy(tmp_b, db, ndb * sizeof(double));
		mdb = stats_median(tmp_b, ndb);
		self_change = stats_median(tmp_a, nda) / fmax(mdb, 1e-12) - 1;
	}
	/*
	 * Percentiles: the size of the change is read off the whole windows'
	 * merged distributions (the slots only test its significance).
	 */
	int merged = eval_is_quantile(r->expr, &q);

	if (merged) {
		merged_quantiles_at(e, r, d, win, nwin, d->ts_ms - 1, w, q, &qb[0], &qb[1], NULL);
		merged_quantiles_at(e, r, d, win, nwin, d->ts_ms + w - 1, w, q, &qa[0], &qa[1],
				    NULL);
		self_change = qa[0] / fmax(qb[0], 1e-12) - 1;
	}
	change = self_change;
	p = self_p;
	v->fires = self_change >= b->min_change && self_p < b->alpha;
	if (npb >= BASELINE_MIN_POINTS && npa >= BASELINE_MIN_POINTS) {
		double tmp[BASELINE_POINTS], pchange;

		memcpy(tmp, pb, npb * sizeof(double));
		mpb = stats_median(tmp, npb);
		for (size_t i = 0; i < nda; i++)
			da[i] /= fmax(mdb, 1e-12);
		for (size_t i = 0; i < npa; i++)
			pa[i] /= fmax(mpb, 1e-12);
		p = stats_mann_whitney_greater(da, nda, pa, npa);
		memcpy(tmp, pa, npa * sizeof(double));
		pchange = stats_median(tmp, npa);
		memcpy(tmp, da, nda * sizeof(double));
		change = stats_median(tmp, nda) / fmax(pchange, 1e-12) - 1;
		if (merged)
			change = (1 + self_change) / fmax(qa[1] / fmax(qb[1], 1e-12), 1e-12) - 1;
		v->fires = v->fires && change >= b->min_change && p < b->alpha;
	}
	v->value = 1 + change;
	log_info("%s: deploy %s %s: %+.1f%% vs before (p=%.2g), %+.1f%% vs %s (p=%.2g): %s",
		 r->name, d->service, d->version, self_change * 100, self_p, change * 100,
		 npa ? "undeployed peers" : "before (no undeployed peers)", p,
		 v->fires ? "regression" : "no regression");
	verdict_hosts(e, v, seen, nwin);
out:
	free(cut);
	free(seen);
}

/* Share of f's samples in p (total share, stacks containing it), or 0. */
static double share_of(const struct profile_delta *d, size_t n, const char *f, int after)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(d[i].name, f))
			return after ? d[i].target : d[i].base;
	return 0;
}

/*
 * Judge deploy d for profile baseline rule r: merge the deployed hosts'
 * profiles of the window before the deploy and of the window after it,
 * and the same for the undeployed peers; the function whose share grew
 * most beyond the peers' growth, if that is at least profile_share points
 * and significant (two-proportion z-test on sample counts), fires.
 */
static void judge_profile(const struct engine *e, const struct rule *r, const struct deploy *d,
			  const struct host_window *win, size_t nwin, struct verdict *v)
{
	const struct rule_baseline *b = &r->baseline;
	uint64_t w = b->window_ns / NSEC_PER_MSEC;
	struct profile db, da, pb, pa;
	struct profile_delta *dd = NULL, *pd = NULL;
	size_t ndd = 0, npd = 0;
	int *seen = calloc(e->nhosts + 1, sizeof(int));
	double best = 0;

	if (!seen)
		return;
	if (!e->opts.load_profile) {
		log_info("%s: no profile source (profile baselines read Redis)", r->name);
		free(seen);
		return;
	}
	profile_init(&db, "");
	profile_init(&da, "");
	profile_init(&pb, "");
	profile_init(&pa, "");
	for (size_t h = 0; h < nwin; h++) {
		int side = side_of(e, d, w, win[h].host), mine = side == 0, nb, na;
		uint32_t idx;

		if (side < 0)
			continue;
		nb = e->opts.load_profile(e->opts.load_profile_arg, win[h].host, d->ts_ms - w,
					  d->ts_ms - 1, mine ? &db : &pb);
		na = e->opts.load_profile(e->opts.load_profile_arg, win[h].host, d->ts_ms,
					  d->ts_ms + w, mine ? &da : &pa);

		if (mine && nb > 0 && na > 0 && strmap_get(&e->host_index, win[h].host, &idx))
			seen[idx] = 1;
	}
	if (!db.total || !da.total) {
		log_info("%s: deploy %s %s: no CPU profiles of the deployed hosts around it",
			 r->name, d->service, d->version);
		goto out;
	}
	ndd = profile_diff(&db, &da, &dd);
	if (pb.total && pa.total)
		npd = profile_diff(&pb, &pa, &pd);
	for (size_t i = 0; i < ndd; i++) {
		double p1 = dd[i].base, p2 = dd[i].target, n1 = (double)db.total,
		       n2 = (double)da.total, pool = (p1 * n1 + p2 * n2) / (n1 + n2);
		double grew = p2 - p1, peers = npd ? share_of(pd, npd, dd[i].name, 1) -
						     share_of(pd, npd, dd[i].name, 0) : 0;
		double se = sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2)), pval;

		if ((grew - peers) * 100 < b->profile_share || !(se > 0))
			continue;
		pval = 0.5 * erfc((grew / se) / sqrt(2));
		if (pval >= b->alpha || grew - peers <= best)
			continue;
		best = grew - peers;
		snprintf(v->function, sizeof(v->function), "%s", dd[i].name);
	}
	v->fires = best > 0;
	v->value = best * 100;
	if (v->fires)
		log_info("%s: deploy %s %s: %s grew %.1f points more than on undeployed peers",
			 r->name, d->service, d->version, v->function, v->value);
	else
		log_info("%s: deploy %s %s: no function's CPU share grew beyond the peers'",
			 r->name, d->service, d->version);
	verdict_hosts(e, v, seen, nwin);
out:
	free(dd);
	free(pd);
	profile_free(&db);
	profile_free(&da);
	profile_free(&pb);
	profile_free(&pa);
	free(seen);
}

/*
 * ri's verdict for service, created empty if new (each allocated on its
 * own, so pointers into one stay valid as others are added); NULL on
 * -ENOMEM.
 */
static struct verdict *verdict_of(struct rule_inst *ri, const char *service)
{
	struct verdict **vs, *v;

	for (int i = 0; i < ri->nverdicts; i++)
		if (!strcmp(ri->verdicts[i]->service, service))
			return ri->verdicts[i];
	v = calloc(1, sizeof(*v));
	vs = v ? realloc(ri->verdicts, (size_t)(ri->nverdicts + 1) * sizeof(*vs)) : NULL;
	if (!vs) {
		free(v);
		return NULL;
	}
	ri->verdicts = vs;
	ri->verdicts[ri->nverdicts++] = v;
	snprintf(v->service, sizeof(v->service), "%s", service);
	return v;
}

/*
 * A baseline rule: judge each service's newest deploy once its after-window
 * has passed, on its own hosts and windows, and keep that verdict (one
 * alert per service and deploy) until the service's next deploy or
 * rollback mark, or BASELINE_HOLD_MS.  A rule with baseline.service judges
 * that service only.  Deploys of other services, at once or minutes apart,
 * neither trigger nor end a service's verdict.
 */
void baseline_run(struct engine *e, const struct rule *r, struct rule_inst *ri,
		  const struct host_window *win, size_t nwin, uint64_t now, engine_event_cb cb,
		  void *arg)
{
	uint64_t w = r->baseline.window_ns / NSEC_PER_MSEC;
	struct label *l = calloc((size_t)e->ndeploys * 3 + 1, sizeof(*l));
	struct match *m = calloc((size_t)e->ndeploys + 1, sizeof(*m));
	int nm = 0;

	if (!l || !m) {
		free(l);
		free(m);
		alert_state_eval_failed(e, r, ri, now, "out of memory for the deploy verdicts");
		return;
	}
	for (int i = 0; i < e->ndeploys; i++) {
		const struct deploy *d = &e->deploys[i];
		struct verdict *v;
		struct label *ml = &l[3 * nm];
		char key[300];

		/* each service once: at its newest marker, unless that is a rollback */
		if (d->ts_ms > now || latest_of(e, d->service, now) != d ||
		    (r->baseline.service[0] && strcmp(d->service, r->baseline.service)))
			continue;
		if (d->rollback || now < d->ts_ms + w || now >= d->ts_ms + w + BASELINE_HOLD_MS)
			continue;
		v = verdict_of(ri, d->service);
		if (!v) {
			alert_state_eval_failed(e, r, ri, now, "out of memory for a deploy verdict");
			continue;
		}
		snprintf(key, sizeof(key), "%s@%s@%" PRIu64, d->service, d->version, d->ts_ms);
		if (strcmp(v->key, key)) {
			char service[sizeof(v->service)];

			memcpy(service, v->service, sizeof(service));
			baseline_verdict_free(v);
			memcpy(v->service, service, sizeof(service));
			snprintf(v->key, sizeof(v->key), "%s", key);
			if (r->baseline.profile_share)
				judge_profile(e, r, d, win, nwin, v);
			else
				judge(e, r, d, win, nwin, v);
		}
		if (!v->fires)
			continue;
		/* sorted by key, as every alert's labels are */
		m[nm].nlabels = 0;
		if (v->function[0])
			ml[m[nm].nlabels++] = (struct label){ "function", v->function };
		ml[m[nm].nlabels++] = (struct label){ "service", (char *)d->service };
		ml[m[nm].nlabels++] = (struct label){ "version", (char *)d->version };
		m[nm].labels = ml;
		m[nm].value = v->value;
		m[nm].hosts = v->hosts;
		m[nm].nhosts = v->nhosts;
		m[nm].total = v->total;
		m[nm].dlabel = "service";
		m[nm].dvalue = d->service;
		m[nm].deploy = d;
		m[nm].base_ms = d->ts_ms - w;
		nm++;
	}
	alert_state_track(e, r, ri, m, nm, now, cb, arg);
	free(l);
	free(m);
}
