/*
 * stats.c - medians and the Mann–Whitney U test; see stats.h.
 */
#include "rules/engine/stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double stats_median(double *x, size_t n)
{
	if (!n)
		return NAN;
	qsort(x, n, sizeof(*x), cmp_double);
	return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

struct ranked {
	double v;
	int from_a;
};

static int cmp_ranked(const void *a, const void *b)
{
	return cmp_double(&((const struct ranked *)a)->v, &((const struct ranked *)b)->v);
}

double stats_mann_whitney_greater(const double *a, size_t na, const double *b, size_t nb)
{
	struct ranked *r = malloc((na + nb + 1) * sizeof(*r));
	double ra = 0, ties = 0, n1 = 0, n2 = 0, n, u, mu, sigma, z;
	size_t m = 0;

	if (!r)
		return NAN;
	for (size_t i = 0; i < na; i++)
		if (!isnan(a[i]))
			r[m++] = (struct ranked){ a[i], 1 };
	for (size_t i = 0; i < nb; i++)
		if (!isnan(b[i]))
			r[m++] = (struct ranked){ b[i], 0 };
	qsort(r, m, sizeof(*r), cmp_ranked);
	/* ranks 1..m, tied values share the mean of their ranks */
	for (size_t i = 0; i < m;) {
		size_t j = i;
		double rank, t;

		while (j + 1 < m && r[j + 1].v == r[i].v)
			j++;
		rank = (double)(i + j + 2) / 2;
		t = (double)(j - i + 1);
		ties += t * t * t - t;
		for (size_t k = i; k <= j; k++)
			if (r[k].from_a) {
				ra += rank;
				n1++;
			} else {
				n2++;
			}
		i = j + 1;
	}
	free(r);
	if (!n1 || !n2)
		return NAN;
	n = n1 + n2;
	u = ra - n1 * (n1 + 1) / 2;	/* pairs (x in a, y in b) with x > y */
	mu = n1 * n2 / 2;
	sigma = sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))));
	if (!(sigma > 0))
		return 1;	/* every value tied: no sign that a is greater */
	z = (u - mu - 0.5) / sigma;
	return 0.5 * erfc(z / sqrt(2));
}

/* log of the binomial coefficient C(a, b) */
static double log_choose(double a, double b)
{
	return lgamma(a + 1) - lgamma(b + 1) - lgamma(a - b + 1);
}

double stats_hypergeom_tail(size_t N, size_t K, size_t n, size_t x)
{
	size_t hi = n < K ? n : K;
	double p = 0, base;

	if (x == 0)
		return 1;
	if (K > N || n > N || x > hi)
		return 0;
	base = log_choose((double)N, (double)n);
	for (size_t k = x; k <= hi; k++) {
		if (n - k > N - K)
			continue;	/* not enough unmarked items to fill the draw */
		p += exp(log_choose((double)K, (double)k) +
			 log_choose((double)(N - K), (double)(n - k)) - base);
	}
	return p > 1 ? 1 : p;
}

double stats_cluster_tail(size_t n, size_t c, double w)
{
	double p;

	if (c < 2 || n < c)
		return 1;
	p = exp(log((double)n) + log_choose((double)(n - 1), (double)(c - 1)) +
		(double)(c - 1) * log(w));
	return p < 1 ? p : 1;
}

double stats_fisher2(double p1, double p2)
{
	double t = p1 * p2;

	return t > 0 ? t * (1 - log(t)) : 0;
}
