/*
 * baseline_judge.c - a deploy's verdicts from the merged parts; see
 * baseline_judge.h.
 */
#include "rules/engine/baseline_judge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "model/profile.h"
#include "rules/engine/stats.h"
#include "store/deploy.h"

/* Copy the non-NaN values of x[0..n) to out; returns how many. */
static size_t finite_values(const double *x, size_t n, double *out)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(x[i]))
			out[m++] = x[i];
	return m;
}

/* Slot k's value for one side of merged partial b (NAN: nobody reported). */
static double slot_value(const struct fleet_bpart *b, int k, int peers, double q)
{
	if (b->quantile) {
		const struct histogram *h = peers ? &b->ph[k] : &b->dh[k];

		return h->count ? (double)hist_quantile(h, q) : NAN;
	}
	if (peers)
		return b->pn[k] ? b->psum[k] / (double)b->pn[k] : NAN;
	return b->dn[k] ? b->dsum[k] / (double)b->dn[k] : NAN;
}

static void verdict_hosts(struct verdict *v, const struct fleet_bpart *b)
{
	v->total = b->total;
	v->hosts = calloc((size_t)b->nhosts + 1, sizeof(char *));
	for (int h = 0; v->hosts && h < b->nhosts; h++)
		v->hosts[v->nhosts++] = strdup(b->hosts[h]);
}

/*
 * Judge deploy d for baseline rule r from the merged partial b: the
 * deployed hosts' mean (or merged percentile) in BASELINE_POINTS slots
 * before the deploy and as many after, the same for the undeployed peers;
 * fills v.  The comparison with peers uses each side's values relative to
 * its own pre-deploy median, so a load shift that moves everybody cancels
 * out.
 */
void baseline_judge(const struct rule *r, const struct deploy *d, const struct fleet_bpart *bp,
		  struct verdict *v)
{
	const struct rule_baseline *b = &r->baseline;
	double dser[FLEET_SLOTS], pser[FLEET_SLOTS];
	double db[BASELINE_POINTS], da[BASELINE_POINTS], pb[BASELINE_POINTS], pa[BASELINE_POINTS];
	size_t ndb, nda, npb, npa;
	double self_change, self_p, change, p, mdb, mpb, q = 0, qb[2] = { NAN, NAN },
	       qa[2] = { NAN, NAN };

	if (bp->quantile)
		eval_is_quantile(r->expr, &q);
	for (int k = 0; k < FLEET_SLOTS; k++) {
		dser[k] = slot_value(bp, k, 0, q);
		pser[k] = slot_value(bp, k, 1, q);
	}
	ndb = finite_values(dser, BASELINE_POINTS, db);
	nda = finite_values(dser + BASELINE_POINTS, BASELINE_POINTS, da);
	npb = finite_values(pser, BASELINE_POINTS, pb);
	npa = finite_values(pser + BASELINE_POINTS, BASELINE_POINTS, pa);
	/*
	 * In a deploy train each side holds only the minutes no other deploy
	 * touched (baseline.c's host_clip): fewer are enough, down to
	 * BASELINE_MIN_TRAIN_POINTS; below that the verdict is confounded.
	 */
	if (ndb < (v->train[0] ? BASELINE_MIN_TRAIN_POINTS : BASELINE_MIN_POINTS) ||
	    nda < (v->train[0] ? BASELINE_MIN_TRAIN_POINTS : BASELINE_MIN_POINTS)) {
		if (v->train[0])
			log_info("%s: deploy %s %s: confounded by %s on the same hosts: too few "
				 "minutes that no other deploy touched (%zu before, %zu after; at "
				 "least %d each); no verdict", r->name, d->service, d->version,
				 v->train, ndb, nda, BASELINE_MIN_TRAIN_POINTS);
		else
			log_info("%s: deploy %s %s: too little data around it to judge (%zu "
				 "before, %zu after of %d)", r->name, d->service, d->version, ndb,
				 nda, BASELINE_POINTS);
		v->confounded = v->train[0] != 0;
		snprintf(v->status, sizeof(v->status), "%s",
			 v->confounded ? "confounded" : "too little data");
		return;
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
	if (bp->quantile) {
		for (int s = 0; s < 2; s++) {
			qb[s] = (double)hist_quantile(s ? &bp->wp[0] : &bp->wd[0], q);
			qa[s] = (double)hist_quantile(s ? &bp->wp[1] : &bp->wd[1], q);
			if (!(s ? bp->wp[0].count : bp->wd[0].count))
				qb[s] = NAN;
			if (!(s ? bp->wp[1].count : bp->wd[1].count))
				qa[s] = NAN;
		}
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
		if (bp->quantile)
			change = (1 + self_change) / fmax(qa[1] / fmax(qb[1], 1e-12), 1e-12) - 1;
		v->fires = v->fires && change >= b->min_change && p < b->alpha;
	}
	v->value = 1 + change;
	snprintf(v->status, sizeof(v->status), "%s", v->fires ? "regression" : "no regression");
	log_info("%s: deploy %s %s: %+.1f%% vs before (p=%.2g), %+.1f%% vs %s (p=%.2g): %s",
		 r->name, d->service, d->version, self_change * 100, self_p, change * 100,
		 npa ? "undeployed peers" : "before (no undeployed peers)", p,
		 v->fires ? "regression" : "no regression");
	verdict_hosts(v, bp);
}

/* f's row of a diff, or NULL. */
static const struct profile_delta *delta_of(const struct profile_delta *d, size_t n,
					    const char *f)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(d[i].name, f))
			return &d[i];
	return NULL;
}

/*
 * One-sided p-value of a share growing from s1 of n1 samples to s2 of n2
 * (two-proportion z-test); 1 when it cannot be told.
 */
static double share_growth_p(double s1, double n1, double s2, double n2)
{
	double pool = (s1 * n1 + s2 * n2) / (n1 + n2);
	double se = sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2));

	return se > 0 ? 0.5 * erfc(((s2 - s1) / se) / sqrt(2)) : 1;
}

/* How much more than on the peers f's total (self: its self) share grew. */
static double excess(const struct profile_delta *x, const struct profile_delta *pd, size_t npd,
		     int self)
{
	const struct profile_delta *p = npd ? delta_of(pd, npd, x->name) : NULL;
	double grew = self ? x->self_target - x->self_base : x->target - x->base;

	return grew - (!p ? 0 : self ? p->self_target - p->self_base : p->target - p->base);
}

/*
 * Judge deploy d for profile baseline rule r from the merged partial b:
 * the deployed hosts' profiles of the window before the deploy and of the
 * window after it, and the same for the undeployed peers.
 *
 * It fires when some function's total share (the stacks holding it) grew
 * at least profile_share points beyond the peers' growth, significantly
 * (two-proportion z-test on sample counts).  What it names is the frame
 * whose own time grew: a regression in mark under main;gc;mark moves gc's
 * total share as much as mark's, but only mark's self share.  So the
 * function named is the one whose self share grew most beyond the peers'
 * (significantly, and by at least half the biggest total growth); when the
 * growth is spread over many callees and no frame's own time carries it,
 * the deepest of the functions whose total share carries it (within 10 %).
 * v->path is the heaviest call path to it after the deploy.
 */
void baseline_judge_profile(const struct rule *r, const struct deploy *d,
			  const struct fleet_bpart *bp, struct verdict *v)
{
	const struct rule_baseline *b = &r->baseline;
	const struct profile *db = &bp->prof[0], *da = &bp->prof[1], *pb = &bp->prof[2],
			     *pa = &bp->prof[3];
	struct profile_delta *dd = NULL, *pd = NULL;
	const struct profile_delta *named = NULL;
	size_t ndd = 0, npd = 0;
	double best = 0, best_self = 0, n1 = (double)db->total, n2 = (double)da->total;

	if (!db->total || !da->total) {
		log_info("%s: deploy %s %s: no CPU profiles of the deployed hosts around it%s%s",
			 r->name, d->service, d->version, v->train[0] ? " that no other deploy "
			 "touched: confounded by " : "", v->train);
		v->confounded = v->train[0] != 0;
		snprintf(v->status, sizeof(v->status), "%s",
			 v->confounded ? "confounded" : "too little data");
		return;
	}
	ndd = profile_diff(db, da, &dd);
	if (pb->total && pa->total)
		npd = profile_diff(pb, pa, &pd);
	/* the regression: the biggest significant growth of a total share */
	for (size_t i = 0; i < ndd; i++) {
		double x = excess(&dd[i], pd, npd, 0);

		if (x * 100 >= b->profile_share && x > best &&
		    share_growth_p(dd[i].base, n1, dd[i].target, n2) < b->alpha)
			best = x;
	}
	/* where it went: the frame whose own time grew */
	for (size_t i = 0; best > 0 && i < ndd; i++) {
		double x = excess(&dd[i], pd, npd, 1);

		if (x >= best / 2 && x > best_self &&
		    share_growth_p(dd[i].self_base, n1, dd[i].self_target, n2) < b->alpha) {
			best_self = x;
			named = &dd[i];
		}
	}
	/* else the deepest (smallest total share) of the totals that carry it */
	for (size_t i = 0; best > 0 && !named && i < ndd; i++)
		if (excess(&dd[i], pd, npd, 0) >= 0.9 * best &&
		    (!named || dd[i].target < named->target))
			named = &dd[i];
	v->fires = named != NULL;
	v->value = best_self > 0 ? best_self * 100 : best * 100;
	snprintf(v->status, sizeof(v->status), "%s", v->fires ? "regression" : "no regression");
	if (named) {
		snprintf(v->function, sizeof(v->function), "%s", named->name);
		profile_hot_path(da, named->name, v->path, sizeof(v->path));
		log_info("%s: deploy %s %s: %s grew %.1f points more than on undeployed peers "
			 "(%s; its %s time)", r->name, d->service, d->version, v->function,
			 v->value, v->path, best_self > 0 ? "own" : "callees'");
	} else {
		log_info("%s: deploy %s %s: no function's CPU share grew beyond the peers'",
			 r->name, d->service, d->version);
	}
	verdict_hosts(v, bp);
	free(dd);
	free(pd);
}
