/*
 * snapshot_equal.c - whether two snapshots hold the same points, bit for
 * bit: what the chunk and delta round-trip tests and fuzzers check.
 */
#include "model/chunk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/labels.h"

static int same_bits(double a, double b)
{
	return !memcmp(&a, &b, sizeof(a));
}

/* Whether x and y are the same series with the same values; ha, hb scratch. */
static int same_series(const struct series *x, const struct series *y, struct histogram *ha,
		       struct histogram *hb)
{
	if (x->kind != y->kind || strcmp(x->name, y->name) ||
	    !labels_equal(x->labels, x->nlabels, y->labels, y->nlabels))
		return 0;
	if (x->kind == SERIES_COUNTER)
		return x->counter.value == y->counter.value &&
		       x->counter.increase == y->counter.increase;
	if (x->kind == SERIES_GAUGE)
		return x->gauge.n == y->gauge.n && same_bits(x->gauge.last, y->gauge.last) &&
		       same_bits(x->gauge.min, y->gauge.min) &&
		       same_bits(x->gauge.max, y->gauge.max) &&
		       same_bits(x->gauge.sum, y->gauge.sum);
	return hist_equal(series_hist(x, ha), series_hist(y, hb));
}

int series_equal(const struct series *x, const struct series *y)
{
	struct histogram *h = malloc(2 * sizeof(*h));
	int eq = h && same_series(x, y, h, h + 1);

	free(h);
	return eq;
}

int snapshot_equal(const struct snapshot *a, const struct snapshot *b)
{
	struct histogram *ha;
	int eq = 1;

	if (strcmp(a->host, b->host) || a->ts_ms != b->ts_ms || a->interval_ms != b->interval_ms ||
	    a->seq != b->seq || a->tier != b->tier || a->nseries != b->nseries ||
	    !labels_equal(a->labels, a->nlabels, b->labels, b->nlabels))
		return 0;
	ha = malloc(2 * sizeof(*ha));
	if (!ha)
		return 0;
	for (uint32_t i = 0; i < a->nseries && eq; i++)
		eq = same_series(&a->series[i], &b->series[i], ha, ha + 1);
	free(ha);
	return eq;
}
