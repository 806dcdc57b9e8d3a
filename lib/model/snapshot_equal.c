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

int snapshot_equal(const struct snapshot *a, const struct snapshot *b)
{
	struct histogram *ha, *hb;
	int eq = 1;

	if (strcmp(a->host, b->host) || a->ts_ms != b->ts_ms || a->interval_ms != b->interval_ms ||
	    a->seq != b->seq || a->tier != b->tier || a->nseries != b->nseries ||
	    !labels_equal(a->labels, a->nlabels, b->labels, b->nlabels))
		return 0;
	ha = malloc(2 * sizeof(*ha));
	if (!ha)
		return 0;
	hb = ha + 1;
	for (uint32_t i = 0; i < a->nseries && eq; i++) {
		const struct series *x = &a->series[i], *y = &b->series[i];

		if (x->kind != y->kind || strcmp(x->name, y->name) ||
		    !labels_equal(x->labels, x->nlabels, y->labels, y->nlabels))
			eq = 0;
		else if (x->kind == SERIES_COUNTER)
			eq = x->counter.value == y->counter.value &&
			     x->counter.increase == y->counter.increase;
		else if (x->kind == SERIES_GAUGE)
			eq = x->gauge.n == y->gauge.n && same_bits(x->gauge.last, y->gauge.last) &&
			     same_bits(x->gauge.min, y->gauge.min) &&
			     same_bits(x->gauge.max, y->gauge.max) &&
			     same_bits(x->gauge.sum, y->gauge.sum);
		else
			eq = hist_equal(series_hist(x, ha), series_hist(y, hb));
	}
	free(ha);
	return eq;
}
