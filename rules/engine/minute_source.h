/*
 * minute_source.h - 1-minute rollups made in memory, for engines that have
 * no Redis to read fl:{H}:s60 from (rule unit tests, the engine's tests).
 *
 * Every snapshot given is rolled up per host exactly as the probe does
 * (lib/model/rollup.h: a minute is finished when the first snapshot of the
 * next one arrives), and the finished minutes are served to the engine's
 * value baselines as an engine_rollup_fn.  Memory grows with what is fed:
 * one rollup per host per minute, never dropped.
 */
#ifndef FL_MINUTE_SOURCE_H
#define FL_MINUTE_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "core/strmap.h"
#include "model/rollup.h"
#include "model/snapshot.h"

struct minute_host {
	struct rollup r;		/* the minute in progress */
	struct snapshot *m;		/* finished minutes, oldest first */
	size_t n, cap;
};

struct minute_source {
	struct strmap index;		/* host -> its slot in h */
	struct minute_host *h;
	size_t nh, cap;
};

void minute_source_init(struct minute_source *ms);
void minute_source_free(struct minute_source *ms);

/*
 * Roll s (a 1 s snapshot of s->host, newer than the host's last) into its
 * host's minute.  Returns 0 or -ENOMEM.
 */
int minute_source_add(struct minute_source *ms, const struct snapshot *s);

/*
 * An engine_rollup_fn (rules/engine/engine.h) over ms (arg): copies of the
 * finished minutes of hosts[0..n) with from_ms <= ts <= to_ms.
 */
int minute_source_load(void *arg, const char *const *hosts, size_t n, uint64_t from_ms,
		       uint64_t to_ms, int (*cb)(struct snapshot *s, void *cbarg), void *cbarg);

#endif
