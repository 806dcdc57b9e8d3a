/*
 * histogram.c - log-linear histograms; see histogram.h for the contract and
 * hist_layout.h for the layout and error bound.
 */
#include "model/histogram.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void hist_reset(struct histogram *h)
{
	memset(h, 0, sizeof(*h));
}

void hist_record_n(struct histogram *h, uint64_t v, uint64_t n)
{
	h->buckets[hist_bucket_index(v)] += n;
	h->count += n;
	h->sum += v * n;
}

uint64_t hist_bucket_lower(uint32_t idx)
{
	uint32_t e, sub;

	if (idx < HIST_SUB)
		return idx;
	e = idx / HIST_SUB + HIST_G - 1;
	sub = idx % HIST_SUB;
	return (1ULL << e) + ((uint64_t)sub << (e - HIST_G));
}

uint64_t hist_bucket_upper(uint32_t idx)
{
	uint32_t e;

	if (idx < HIST_SUB)
		return idx;
	e = idx / HIST_SUB + HIST_G - 1;
	/* width 2^(e-G); the last bucket ends exactly at UINT64_MAX */
	return hist_bucket_lower(idx) + ((1ULL << (e - HIST_G)) - 1);
}

void hist_merge(struct histogram *dst, const struct histogram *src)
{
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	dst->sum += src->sum;
}

int hist_subtract(struct histogram *dst, const struct histogram *newer,
		  const struct histogram *older)
{
	if (newer->count < older->count)
		goto reset;
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		if (newer->buckets[i] < older->buckets[i])
			goto reset;
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] = newer->buckets[i] - older->buckets[i];
	dst->count = newer->count - older->count;
	dst->sum = newer->sum - older->sum;
	return 0;
reset:
	if (dst != newer)
		memcpy(dst, newer, sizeof(*dst));
	return -ERANGE;
}

void hist_coarsen(struct histogram *h)
{
	_Static_assert(HIST_SUB % 4 == 0, "groups of 4 start at 2^HIST_G");
	for (uint32_t i = HIST_SUB; i < HIST_BUCKETS; i += 4) {
		uint64_t n = h->buckets[i] + h->buckets[i + 1] + h->buckets[i + 2] +
			     h->buckets[i + 3];

		h->buckets[i] = h->buckets[i + 2] = h->buckets[i + 3] = 0;
		h->buckets[i + 1] = n;
	}
}

uint64_t hist_quantile(const struct histogram *h, double q)
{
	uint64_t rank, seen = 0;
	double r;

	if (h->count == 0)
		return 0;
	if (q <= 0)
		rank = 1;
	else if (q >= 1)
		rank = h->count;
	else {
		r = q * (double)h->count;
		rank = (uint64_t)r;
		if ((double)rank < r)
			rank++;
		if (rank == 0)
			rank = 1;
	}
	for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			uint64_t lo = hist_bucket_lower(i), hi = hist_bucket_upper(i);

			return lo + (hi - lo) / 2;
		}
	}
	/* count disagrees with the buckets (corrupt input): highest bucket */
	for (uint32_t i = HIST_BUCKETS; i-- > 0;)
		if (h->buckets[i])
			return hist_bucket_lower(i) + (hist_bucket_upper(i) - hist_bucket_lower(i)) / 2;
	return 0;
}

double hist_mean(const struct histogram *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}

size_t hist_nonempty(const struct histogram *h)
{
	size_t n = 0;

	for (size_t i = 0; i < HIST_BUCKETS; i++)
		n += h->buckets[i] != 0;
	return n;
}

size_t hist_to_sparse(const struct histogram *h, struct hist_run *runs, size_t max)
{
	size_t n = 0;

	for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
		if (!h->buckets[i])
			continue;
		if (n < max) {
			runs[n].index = i;
			runs[n].count = h->buckets[i];
		}
		n++;
	}
	return n;
}

int hist_equal(const struct histogram *a, const struct histogram *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

struct hist_sparse *hist_sparse_of(const struct histogram *h)
{
	size_t n = hist_nonempty(h);
	struct hist_sparse *s = malloc(sizeof(*s) + n * sizeof(s->runs[0]));

	if (!s)
		return NULL;
	s->count = h->count;
	s->sum = h->sum;
	s->nruns = (uint32_t)hist_to_sparse(h, s->runs, n);
	return s;
}

void hist_from_sparse(struct histogram *dst, const struct hist_sparse *s)
{
	memset(dst->buckets, 0, sizeof(dst->buckets));
	for (uint32_t i = 0; i < s->nruns; i++)
		dst->buckets[s->runs[i].index] = s->runs[i].count;
	dst->count = s->count;
	dst->sum = s->sum;
}

int hist_subtract_sparse(struct histogram *dst, const struct hist_sparse *newer,
			 const struct hist_sparse *older)
{
	hist_from_sparse(dst, newer);
	if (newer->count < older->count)
		return -ERANGE;
	for (uint32_t i = 0; i < older->nruns; i++) {
		uint64_t *b = &dst->buckets[older->runs[i].index];

		if (*b < older->runs[i].count) {
			hist_from_sparse(dst, newer);
			return -ERANGE;
		}
		*b -= older->runs[i].count;
	}
	dst->count -= older->count;
	dst->sum -= older->sum;
	return 0;
}

void hist_cumulative(const struct histogram *h, double scale, const double *bound, int n,
		     uint64_t *cum)
{
	uint64_t c = 0;
	uint32_t i = 0;

	for (int k = 0; k < n; k++) {
		while (i < HIST_BUCKETS && (double)hist_bucket_lower(i) * scale <= bound[k])
			c += h->buckets[i++];
		cum[k] = c;
	}
}
