/*
 * redis_inputs.c - the baselines' Redis inputs; see redis_inputs.h.
 */
#include "rules/redis_inputs.h"

#include <errno.h>
#include <stdlib.h>

#include "core/log.h"
#include "model/profile.h"
#include "rules/shard/outbox.h"
#include "store/profile_store.h"
#include "store/store.h"

/* Profile baselines read the hosts' 10 s profile windows from Redis. */
int rules_redis_profiles(void *arg, const char *host, uint64_t from_ms, uint64_t to_ms,
			  struct profile *into)
{
	struct outbox *c = arg;
	char err[256];
	int n;

	if (!c->rc)
		return -1;
	n = profile_read_merge(c->rc, host, 0, from_ms, to_ms, NULL, into, NULL, err,
			       sizeof(err));
	if (n < 0)
		log_warn("profile baseline: %s", err);
	return n;
}

/*
 * Value baselines read the hosts' 1-minute rollups (fl:{H}:s60) from Redis,
 * in pipelined exchanges; entries that do not decode are logged by the
 * reader and left out.
 */
int rules_redis_rollups(void *arg, const char *const *hosts, size_t n, uint64_t from_ms,
			 uint64_t to_ms, int (*cb)(struct snapshot *s, void *cbarg), void *cbarg)
{
	struct outbox *c = arg;
	struct store_readers rd = { .snapshot = cb, .arg = cbarg };
	uint64_t *from = calloc(n + 1, sizeof(*from));
	char err[256];
	int got;

	if (!c->rc || !from) {
		free(from);
		return -EIO;
	}
	for (size_t i = 0; i < n; i++)
		from[i] = from_ms;
	got = store_read_ranges(c->rc, hosts, from, n, 60, to_ms, &rd, NULL, err, sizeof(err));
	if (got < 0)
		log_warn("baseline: reading the 1-minute tier: %s", err);
	free(from);
	return got;
}
