/*
 * rollup.c - condense snapshots into coarser tiers; see rollup.h.
 */
#include "model/rollup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rollup_init(struct rollup *r, const char *host, uint32_t tier)
{
	memset(r, 0, sizeof(*r));
	r->tier = tier;
	strmap_init(&r->acc_index);
	strmap_init(&r->prev_index);
	if (snapshot_init(&r->acc, host, 0, 0, 0, tier))
		return -ENOMEM;
	return 0;
}

void rollup_free(struct rollup *r)
{
	snapshot_free(&r->acc);
	strmap_free(&r->acc_index);
	if (r->have_prev)
		snapshot_free(&r->prev);
	if (r->have_last)
		snapshot_free(&r->last);
	strmap_free(&r->prev_index);
	memset(r, 0, sizeof(*r));
}

uint64_t tier_window_of(uint32_t tier_s, uint64_t ts_ms)
{
	uint64_t w = (uint64_t)(tier_s ? tier_s : 1) * 1000;

	/* A snapshot stamped exactly at :00 ends the previous window. */
	return ts_ms ? (ts_ms - 1) / w * w : 0;
}

uint64_t rollup_window_of(const struct rollup *r, uint64_t ts_ms)
{
	return tier_window_of(r->tier, ts_ms);
}

static int index_snapshot(const struct snapshot *s, struct strmap *m)
{
	char key[2048];

	strmap_free(m);
	strmap_init(m);
	for (uint32_t i = 0; i < s->nseries; i++) {
		series_key(&s->series[i], key, sizeof(key));
		if (strmap_put(m, key, i))
			return -ENOMEM;
	}
	return 0;
}

/* The accumulator's series for key, created empty if new. */
static struct series *acc_series(struct rollup *r, const struct series *in, const char *key)
{
	struct series *ser;
	uint32_t i;

	if (strmap_get(&r->acc_index, key, &i))
		return r->acc.series[i].kind == in->kind ? &r->acc.series[i] : NULL;
	ser = snapshot_add_labels(&r->acc, in->name, in->kind, in->labels, in->nlabels);
	if (!ser || strmap_put(&r->acc_index, key, r->acc.nseries - 1))
		return NULL;
	if (in->kind == SERIES_GAUGE) {
		ser->gauge.min = in->gauge.min;
		ser->gauge.max = in->gauge.max;
	}
	return ser;
}

static void add_gauge(struct gauge_value *acc, const struct gauge_value *in)
{
	if (in->min < acc->min)
		acc->min = in->min;
	if (in->max > acc->max)
		acc->max = in->max;
	acc->last = in->last;
	acc->sum += in->sum;
	acc->n += in->n;
}

/* rollup_add; owned (NULL, or s itself) is kept as r->prev or freed. */
static int add(struct rollup *r, const struct snapshot *s, struct snapshot *owned)
{
	const struct series *old;
	struct histogram delta;
	char key[2048];
	uint32_t pi;

	if (s->tier >= r->tier)
		return -EINVAL;
	if (!r->inputs) {
		r->window_start_ms = rollup_window_of(r, s->ts_ms);
		for (uint32_t i = 0; i < s->nlabels; i++)
			if (snapshot_set_label(&r->acc, s->labels[i].key, s->labels[i].value))
				return -ENOMEM;
	}
	r->acc.ts_ms = s->ts_ms;	/* before s may be taken below */
	r->inputs++;
	/*
	 * A host's collectors add their series in the same order every time,
	 * so series i is looked for at i first (in the accumulator, in the
	 * snapshot before) and by its key only when it is not there.
	 */
	for (uint32_t i = 0; i < s->nseries; i++) {
		const struct series *in = &s->series[i];
		struct series *acc;
		int keyed = 0;

		if (i < r->acc.nseries && snapshot_same_series(&r->acc.series[i], in)) {
			acc = r->acc.series[i].kind == in->kind ? &r->acc.series[i] : NULL;
		} else {
			series_key(in, key, sizeof(key));
			keyed = 1;
			acc = acc_series(r, in, key);
		}
		if (!acc)
			continue;	/* kind changed under the same key: skip */
		old = NULL;
		if (s->tier == 1 && r->have_prev) {
			if (i < r->prev.nseries && snapshot_same_series(&r->prev.series[i], in)) {
				old = &r->prev.series[i];
			} else {
				if (!keyed)
					series_key(in, key, sizeof(key));
				if (!r->prev_indexed) {
					if (index_snapshot(&r->prev, &r->prev_index))
						return -ENOMEM;
					r->prev_indexed = 1;
				}
				if (strmap_get(&r->prev_index, key, &pi))
					old = &r->prev.series[pi];
			}
			if (old && old->kind != in->kind)
				old = NULL;
		}
		switch (in->kind) {
		case SERIES_COUNTER:
			acc->counter.value = in->counter.value;
			if (s->tier > 1)
				acc->counter.increase += in->counter.increase;
			else if (old)
				acc->counter.increase += in->counter.value >= old->counter.value ?
					in->counter.value - old->counter.value : in->counter.value;
			break;
		case SERIES_GAUGE:
			add_gauge(&acc->gauge, &in->gauge);
			break;
		case SERIES_HISTOGRAM:
			if (s->tier > 1) {
				hist_merge(acc->hist, in->hist);
			} else if (old) {
				hist_subtract(&delta, in->hist, old->hist);
				hist_merge(acc->hist, &delta);
			}
			break;
		}
	}
	if (s->tier == 1) {
		if (r->have_prev)
			snapshot_free(&r->prev);
		r->have_prev = 0;
		r->prev_indexed = 0;	/* indexed when a lookup misses */
		if (owned) {
			r->prev = *owned;
			memset(owned, 0, sizeof(*owned));
		} else if (snapshot_copy(&r->prev, s)) {
			return -ENOMEM;
		}
		r->have_prev = 1;
	}
	return 0;
}

int rollup_add(struct rollup *r, const struct snapshot *s)
{
	return add(r, s, NULL);
}

int rollup_finish(struct rollup *r, struct snapshot *out)
{
	uint64_t end;

	if (!r->inputs)
		return -ENODATA;
	end = r->window_start_ms + (uint64_t)r->tier * 1000;
	/* what a minute or an hour of latencies needs: 4 buckets an octave */
	for (uint32_t i = 0; i < r->acc.nseries; i++)
		if (r->acc.series[i].kind == SERIES_HISTOGRAM && r->acc.series[i].hist)
			hist_coarsen(r->acc.series[i].hist);
	*out = r->acc;
	out->ts_ms = end;
	out->interval_ms = (uint64_t)r->tier * 1000;
	out->seq = r->seq++;
	out->tier = r->tier;
	strmap_free(&r->acc_index);
	strmap_init(&r->acc_index);
	r->inputs = 0;
	r->window_start_ms = 0;
	if (snapshot_init(&r->acc, out->host, 0, 0, 0, r->tier))
		return -ENOMEM;
	return 0;
}

/* rollup_cascade; owned: s is the caller's to give (NULL: copied where kept). */
static int cascade(struct rollup *r, int n, const struct snapshot *s, struct snapshot *owned,
		   rollup_emit_fn emit, void *arg)
{
	struct snapshot out;

	if (n <= 0)
		return 0;
	if (rollup_pending(r) && rollup_window_of(r, s->ts_ms) != r->window_start_ms &&
	    rollup_finish(r, &out) == 0) {
		emit(&out, r->have_last ? &r->last : NULL, arg);
		cascade(r + 1, n - 1, &out, NULL, emit, arg);
		/* kept as the next window's base, compact: its histograms are not used */
		if (r->have_last)
			snapshot_free(&r->last);
		r->last = out;
		r->have_last = 1;
		snapshot_compact(&r->last);
	}
	return add(r, s, owned);
}

int rollup_cascade(struct rollup *r, int n, const struct snapshot *s, rollup_emit_fn emit,
		   void *arg)
{
	return cascade(r, n, s, NULL, emit, arg);
}

int rollup_cascade_take(struct rollup *r, int n, struct snapshot *s, rollup_emit_fn emit,
			void *arg)
{
	int ret = cascade(r, n, s, s, emit, arg);

	if (s->series || s->labels || s->host)
		snapshot_free(s);	/* not kept: not a 1 s snapshot, or refused */
	return ret;
}
