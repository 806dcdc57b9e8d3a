/*
 * columns_run.c - a run of lent points appended to a history
 * (columns_push_run, columns.h): a query's chunk points, placed in their
 * columns without a snapshot built, pushed and freed per point.
 */
#include "rules/lang/columns.h"
#include "rules/lang/columns_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Scratch of a run (columns_push_run), grown as columns and series come. */
struct run_scratch {
	uint32_t *col_of;		/* by series index: its column in the point before */
	uint32_t ncol_of;
	const struct hist_sparse **hist;	/* by column: its histogram in the point before */
	size_t *hist_at;		/* by column: 1 + the point that set hist */
	uint32_t nhist;
};

static int scratch_fit(struct run_scratch *r, uint32_t nseries, uint32_t ncol)
{
	if (nseries > r->ncol_of) {
		uint32_t *p = realloc(r->col_of, nseries * sizeof(*p));

		if (!p)
			return -ENOMEM;
		memset(p + r->ncol_of, 0xff, (nseries - r->ncol_of) * sizeof(*p));
		r->col_of = p;
		r->ncol_of = nseries;
	}
	if (ncol > r->nhist) {
		uint32_t cap = ncol + 16;
		const struct hist_sparse **h = realloc(r->hist, cap * sizeof(*h));
		size_t *at;

		if (!h)
			return -ENOMEM;
		r->hist = h;
		at = realloc(r->hist_at, cap * sizeof(*at));
		if (!at)
			return -ENOMEM;
		memset(at + r->nhist, 0, (cap - r->nhist) * sizeof(*at));
		r->hist_at = at;
		r->nhist = cap;
	}
	return 0;
}

/*
 * Point j (0-based) of a run: pts[j]'s values placed at a new newest slot.
 * The columns that keep their newest value alone take the last point's
 * (last): what they held is forgotten at the run's first point.
 */
static int run_point(struct columns *c, const struct snapshot *p, size_t j, int last,
		     uint64_t keep_ms, const struct columns_policy *policy,
		     struct run_scratch *r)
{
	struct col_ring *d = &c->ring;
	size_t slot;
	int ret;

	if ((ret = col_make_room(c, p->ts_ms, keep_ms)))
		return ret;
	if (!j)
		col_forget_newest_only(c);
	slot = col_slot_open(c, p->ts_ms);
	/* room for every column this point could add */
	if ((ret = scratch_fit(r, p->nseries, c->ncol + p->nseries)))
		return ret;
	for (uint32_t i = 0; i < p->nseries; i++) {
		const struct series *ser = &p->series[i];
		const struct hist_sparse *older = NULL;
		long k = col_column_for(c, ser, r->col_of[i] == UINT32_MAX ? -1 : (long)r->col_of[i], 0,
				    policy);

		if (k < 0)
			return (int)k;
		r->col_of[i] = (uint32_t)k;
		if (!c->col[k].keep && !last)
			continue;	/* the newest value alone: the last point's */
		if (ser->kind == SERIES_HISTOGRAM) {
			if (!ser->sparse)
				return -EINVAL;		/* a run's histograms are compact */
			if (!c->col[k].keep || bit(c->col[k].present, slot))
				;	/* its newest value only, or the series twice */
			else if (!j)
				older = col_prev_hist(c, &c->col[k], (uint32_t)k,
						  c->newest.host ? &c->newest : NULL, i, slot);
			else if (r->hist_at[k] == j && d->n >= 2 &&
				 bit(c->col[k].present, slot ? slot - 1 : d->cap - 1))
				older = r->hist[k];	/* the point before set it, still held */
		}
		if ((ret = col_put_value(c, (uint32_t)k, ser, ser->sparse, slot, older, 0)))
			return ret;
		if (ser->kind == SERIES_HISTOGRAM && !(r->hist_at[k] == j + 1)) {
			r->hist[k] = ser->sparse;
			r->hist_at[k] = j + 1;
		}
	}
	return 0;
}

int columns_push_run(struct columns *c, const struct snapshot *pts, size_t n,
		     struct snapshot *newest, uint64_t keep_ms,
		     const struct columns_policy *policy)
{
	struct run_scratch r = { 0 };
	int ret = 0;

	if (!n || newest->ts_ms != pts[n - 1].ts_ms || newest->nseries != pts[n - 1].nseries ||
	    (columns_len(c) && pts[0].ts_ms <= columns_ts(c, columns_len(c) - 1)))
		ret = -EINVAL;
	for (size_t j = 1; j < n && !ret; j++)
		if (pts[j].ts_ms <= pts[j - 1].ts_ms)
			ret = -EINVAL;
	if (ret) {
		snapshot_free(newest);
		return ret;
	}
	if (c->policy_gen != (policy ? policy->gen : 0))
		col_follow_policy(c, policy);
	for (size_t j = 0; j < n && !ret; j++)
		ret = run_point(c, &pts[j], j, j + 1 == n, keep_ms, policy, &r);
	/* the last point's series, in order, are newest's: linked to where they went */
	for (uint32_t i = 0; !ret && i < newest->nseries; i++)
		newest->series[i].link = r.col_of[i] + 1;
	free(r.col_of);
	free(r.hist);
	free(r.hist_at);
	if (ret) {
		snapshot_free(newest);
		return ret;
	}
	col_newest_take(c, newest, 1);
	return 0;
}
