/*
 * minute_source.c - 1-minute rollups made in memory (minute_source.h).
 */
#include "core/array.h"
#include "rules/engine/minute_source.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void minute_source_init(struct minute_source *ms)
{
	memset(ms, 0, sizeof(*ms));
	strmap_init(&ms->index);
}

void minute_source_free(struct minute_source *ms)
{
	for (size_t i = 0; i < ms->nh; i++) {
		rollup_free(&ms->h[i].r);
		for (size_t k = 0; k < ms->h[i].n; k++)
			snapshot_free(&ms->h[i].m[k]);
		free(ms->h[i].m);
	}
	free(ms->h);
	strmap_free(&ms->index);
	memset(ms, 0, sizeof(*ms));
}

/* The finished minute out of host mh's rollup: kept. */
static void keep_minute(const struct snapshot *out, const struct snapshot *base, void *arg)
{
	struct minute_host *mh = arg;

	(void)base;
	if (ARRAY_GROW(mh->m, mh->cap, mh->n + 1, 32))
		return;	/* out of memory: the minute is missing, as a lost entry would be */
	if (snapshot_copy(&mh->m[mh->n], out) == 0)
		mh->n++;
}

int minute_source_add(struct minute_source *ms, const struct snapshot *s)
{
	uint32_t slot;

	if (!strmap_get(&ms->index, s->host, &slot)) {
		if (ARRAY_GROW(ms->h, ms->cap, ms->nh + 1, 16))
			return -ENOMEM;
		memset(&ms->h[ms->nh], 0, sizeof(ms->h[ms->nh]));
		if (rollup_init(&ms->h[ms->nh].r, s->host, 60))
			return -ENOMEM;
		if (strmap_put(&ms->index, s->host, (uint32_t)ms->nh)) {
			rollup_free(&ms->h[ms->nh].r);
			return -ENOMEM;
		}
		slot = (uint32_t)ms->nh++;
	}
	return rollup_cascade(&ms->h[slot].r, 1, s, keep_minute, &ms->h[slot]);
}

int minute_source_load(void *arg, const char *const *hosts, size_t n, uint64_t from_ms,
		       uint64_t to_ms, int (*cb)(struct snapshot *s, void *cbarg), void *cbarg)
{
	struct minute_source *ms = arg;
	int delivered = 0;

	for (size_t i = 0; i < n; i++) {
		const struct minute_host *mh;
		uint32_t slot;

		if (!strmap_get(&ms->index, hosts[i], &slot))
			continue;
		mh = &ms->h[slot];
		for (size_t k = 0; k < mh->n; k++) {
			struct snapshot s;

			if (mh->m[k].ts_ms < from_ms || mh->m[k].ts_ms > to_ms)
				continue;
			if (snapshot_copy(&s, &mh->m[k]))
				return -ENOMEM;
			delivered++;
			if (cb(&s, cbarg)) {
				snapshot_free(&s);
				return delivered;
			}
			snapshot_free(&s);
		}
	}
	return delivered;
}
