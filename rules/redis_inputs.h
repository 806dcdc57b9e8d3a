/*
 * redis_inputs.h - what the rules engine's baselines read from Redis
 * besides the 1 s snapshots, through the daemon's connection (the
 * outbox's): profile windows and 1-minute rollups.  Given to the engine
 * as its loaders (engine_set_profile_loader, engine_set_rollup_loader).
 */
#ifndef FL_RULES_REDIS_INPUTS_H
#define FL_RULES_REDIS_INPUTS_H

#include <stddef.h>
#include <stdint.h>

struct profile;
struct snapshot;

/*
 * A probe writes a minute's rollup with its first snapshot of the next
 * minute, sent within its flush interval (1 s) unless Redis is slow.
 */
#define RULES_ROLLUP_DELAY_MS 5000

/* Merge host's 10 s profile windows in [from_ms, to_ms] into into (arg: the outbox). */
int rules_redis_profiles(void *arg, const char *host, uint64_t from_ms, uint64_t to_ms,
			 struct profile *into);

/*
 * The 1-minute rollups (fl:{H}:s60) of hosts[0..n) in [from_ms, to_ms], in
 * pipelined exchanges, to cb; undecodable entries are logged by the reader
 * and left out.  Returns how many, or -EIO.
 */
int rules_redis_rollups(void *arg, const char *const *hosts, size_t n, uint64_t from_ms,
			uint64_t to_ms, int (*cb)(struct snapshot *s, void *cbarg), void *cbarg);

#endif
