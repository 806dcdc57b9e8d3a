/*
 * profile_store.c - profile windows from Redis; see profile_store.h.
 */
#include "store/profile_store.h"

#include <stdio.h>

#include "store/store.h"

struct merge_ctx {
	struct profile *into;
	const char *service;
	size_t bad, windows;
};

static int merge_window(const char *blob, size_t len, void *arg)
{
	struct merge_ctx *m = arg;
	struct profile w;
	char err[128];

	if (profile_decode(blob, len, &w, err, sizeof(err))) {
		m->bad++;
		return 0;
	}
	if (profile_merge(m->into, &w, m->service) == 0)
		m->windows++;
	profile_free(&w);
	return 0;
}

int profile_read_merge(redisContext *rc, const char *host, const char *tier, uint64_t from_ms,
		       uint64_t to_ms, const char *service, struct profile *into, size_t *bad,
		       char *err, size_t errlen)
{
	struct merge_ctx m = { .into = into, .service = service };
	char key[300];
	int n;

	snprintf(key, sizeof(key), "fl:{%s}:%s", host, tier);
	n = store_read_blobs(rc, key, from_ms, to_ms, merge_window, &m, err, errlen);
	if (bad)
		*bad = m.bad;
	return n < 0 ? n : (int)m.windows;
}
