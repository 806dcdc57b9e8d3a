/*
 * columns_append.c - another host history's points appended to a history
 * (columns_append, columns.h): the query daemon's tail copied into a
 * query's hosts.  Values are copied as they are held (a histogram's packed
 * delta too, while the chain it stands on was copied with it), never
 * rebuilt through a snapshot.
 */
#include "rules/lang/columns.h"
#include "rules/lang/columns_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rules/lang/hist_pack.h"

/*
 * Source column sc's histogram at its slot ss packed for dst's column dc,
 * whose previous point is a copy of sc's previous one when `follows`:
 * then a delta is copied as it is (within the chain's bound), else the
 * point is rebuilt in full (h: scratch).  NULL: out of memory.
 */
static uint8_t *hist_copy(const struct columns *src, const struct column *sc, size_t ss,
			  struct column *dc, int follows, struct histogram *h)
{
	const uint8_t *b = sc->keep ? packed(sc)[ss] : sc->last.h;
	uint8_t *out;
	size_t len;

	if (b[0] == HPACK_DELTA && (!follows || dc->chain >= COLUMNS_HIST_CHAIN)) {
		col_hist_at(src, sc, ss, h);
		dc->chain = 0;
		return hpack_full_dense(h);
	}
	dc->chain = b[0] == HPACK_DELTA ? dc->chain + 1 : 0;
	len = hpack_len(b);
	out = malloc(len);
	if (out)
		memcpy(out, b, len);
	return out;
}

/* Source column k's value at point i (slot ss) into dst's column dc at dst's newest point. */
static int value_copy(struct columns *dst, struct column *dc, const struct columns *src,
		      uint32_t k, size_t ss, int follows, struct histogram **h)
{
	const struct column *sc = &src->col[k];
	size_t ds = wrap(&dst->ring, dst->ring.n - 1);
	uint64_t raw = 0;

	if (sc->def.kind == SERIES_HISTOGRAM) {
		uint8_t *b;

		if (!*h && !(*h = malloc(sizeof(**h))))
			return -ENOMEM;
		b = hist_copy(src, sc, ss, dc, follows && dc->keep, *h);
		if (!b)
			return -ENOMEM;
		if (dc->keep)
			packed(dc)[ds] = b;
		else
			dc->last.h = b;
	} else {
		raw = sc->keep ? ((const uint64_t *)sc->v)[ss] : sc->last.u;
		if (dc->keep)
			((uint64_t *)dc->v)[ds] = raw;	/* a counter's u64 or a gauge's double */
		else
			dc->last.u = raw;
	}
	if (dc->keep)
		set_bit(dc->present, ds);
	else
		dc->now = 1;
	dc->live++;
	return 0;
}

int columns_append(struct columns *dst, const struct columns *src, size_t i0, uint64_t keep_ms,
		   const struct columns_policy *policy)
{
	size_t len = columns_len(src);
	long *map = NULL;		/* per source column: dst's, or -1 until needed */
	uint8_t *follows = NULL;	/* per source column: dst's point before copies src's */
	struct histogram *h = NULL;
	struct snapshot newest;
	int ret = -ENOMEM;

	if (i0 >= len)
		return 0;
	if (columns_len(dst) && columns_ts(src, i0) <= columns_ts(dst, columns_len(dst) - 1))
		return -EINVAL;
	map = malloc((src->ncol + 1) * sizeof(*map));
	follows = calloc(src->ncol + 1, 1);
	if (!map || !follows)
		goto out;
	for (uint32_t k = 0; k < src->ncol; k++)
		map[k] = -1;
	if (dst->policy_gen != (policy ? policy->gen : 0))
		col_follow_policy(dst, policy);
	col_forget_newest_only(dst);
	for (size_t i = i0; i < len; i++) {
		uint64_t ts = columns_ts(src, i);
		size_t ss = columns_slot(src, i);

		if (col_make_room(dst, ts, keep_ms))
			goto out;
		col_slot_open(dst, ts);	/* value_copy writes at the newest */
		for (uint32_t k = 0; k < src->ncol; k++) {
			struct column *dc;

			if (!columns_has(src, k, i)) {
				follows[k] = 0;
				continue;
			}
			if (map[k] < 0 && (map[k] = col_find(dst, &src->col[k].def)) < 0 &&
			    (map[k] = col_add(dst, &src->col[k].def, policy)) < 0)
				goto out;
			dc = &dst->col[map[k]];
			/* a column without history keeps the newest point's value alone */
			if (!dc->keep && i + 1 < len) {
				follows[k] = 0;
				continue;
			}
			if (value_copy(dst, dc, src, k, ss, follows[k], &h))
				goto out;
			follows[k] = 1;
		}
	}
	if (snapshot_copy(&newest, &src->newest))
		goto out;
	for (uint32_t j = 0; j < newest.nseries; j++) {
		uint32_t link = src->newest.series[j].link;

		newest.series[j].link = link && link != SERIES_LINK_NONE && link <= src->ncol &&
					map[link - 1] >= 0 ? (uint32_t)map[link - 1] + 1 : 0;
	}
	col_newest_take(dst, &newest, 1);
	ret = 0;
out:
	free(h);
	free(map);
	free(follows);
	return ret;
}
