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
	if (ndb < BASELINE_MIN_POINTS || nda < BASELINE_MIN_POINTS) {
		log_info("%s: deploy %s %s: too little data around it to judge (%zu before, "
			 "%zu after of %d)", r->name, d->service, d->version, ndb, nda,
			 BASELINE_POINTS);
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
	log_info("%s: deploy %s %s: %+.1f%% vs before (p=%.2g), %+.1f%% vs %s (p=%.2g): %s",
		 r->name, d->service, d->version, self_change * 100, self_p, change * 100,
		 npa ? "undeployed peers" : "before (no undeployed peers)", p,
		 v->fires ? "regression" : "no regression");
	verdict_hosts(v, bp);
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
 * Judge deploy d for profile baseline rule r from the merged partial b:
 * the deployed hosts' profiles of the window before the deploy and of the
 * window after it, and the same for the undeployed peers; the function
 * whose share grew most beyond the peers' growth, if that is at least
 * profile_share points and significant (two-proportion z-test on sample
 * counts), fires.
 */
void baseline_judge_profile(const struct rule *r, const struct deploy *d,
			  const struct fleet_bpart *bp, struct verdict *v)
{
	const struct rule_baseline *b = &r->baseline;
	const struct profile *db = &bp->prof[0], *da = &bp->prof[1], *pb = &bp->prof[2],
			     *pa = &bp->prof[3];
	struct profile_delta *dd = NULL, *pd = NULL;
	size_t ndd = 0, npd = 0;
	double best = 0;

	if (!db->total || !da->total) {
		log_info("%s: deploy %s %s: no CPU profiles of the deployed hosts around it",
			 r->name, d->service, d->version);
		return;
	}
	ndd = profile_diff(db, da, &dd);
	if (pb->total && pa->total)
		npd = profile_diff(pb, pa, &pd);
	for (size_t i = 0; i < ndd; i++) {
		double p1 = dd[i].base, p2 = dd[i].target, n1 = (double)db->total,
		       n2 = (double)da->total, pool = (p1 * n1 + p2 * n2) / (n1 + n2);
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
	verdict_hosts(v, bp);
	free(dd);
	free(pd);
}
