/*
 * shard.h - which part of the fleet this faultline-rules worker evaluates.
 *
 * Several workers (`faultline-rules --shard`, on one machine or many) split
 * the hosts among themselves through Redis (store/workers.h), with no
 * assignment to configure:
 *
 *   partitions  A host's partition is CRC16 of the value of the outermost
 *               failure-domain level it carries, among the levels the rules
 *               roll up by (site, agg, switch, rack by default), modulo 64;
 *               a host with none is its own domain.  Levels nest, so every
 *               domain any rule rolls up by lies inside one partition:
 *               rack, switch and site rollups stay within one worker.  A
 *               65th partition holds the fleet-wide alerts (post-deploy
 *               verdicts).
 *   membership  Every interval each worker says it lives for `ttl` more and
 *               reads who else does (Redis' clock).
 *   ownership   Rendezvous hashing over the live workers names the owner of
 *               each partition; a worker takes the lease of each partition
 *               it should own once the lease is free, renews those it
 *               holds, and releases those it should no longer own.  A worker
 *               that dies stops renewing: within `ttl` (3 intervals, at
 *               least 3 s) its leases expire and its members' entry with
 *               them, and the others take its partitions, reading each
 *               partition's checkpoint first (so an alert it had fired
 *               keeps its startsAt and is not paged again, and one whose
 *               fault ended while nobody watched resolves).
 *   fencing     Every take of a lease draws a new epoch (a counter per
 *               partition in Redis).  A worker's events and checkpoints are
 *               written in one script that refuses them if any lease it
 *               counts on is not its own under the epoch it holds; it then
 *               forgets the partitions it lost.  A worker that was paused
 *               past its lease and finds it again under a new epoch (another
 *               took it meanwhile, then gave it back) counts it as lost and
 *               gained: it drops what it knew and reads the checkpoint the
 *               other left.
 *
 * Fleet-wide comparisons merge partial aggregates rather than raw series
 * (the engine's struct engine_fleet): each worker publishes, per rule, its
 * hosts' share — per-group histograms of values for peer_ratio's medians,
 * per-slot sums, counts, histograms and profiles for post-deploy verdicts —
 * and reads the others'.  The cost is latency: a peer median merges the
 * other workers' values of their previous interval, and a deploy verdict
 * waits until every live worker has published its share (at most a few
 * intervals after the window ends; the owner of the fleet partition
 * judges).  Aggregations that would need every host's raw value (sum, avg,
 * topk... not grouped by host or a domain level, absent, scalar) are
 * refused when sharded, at load, with the rule's name.
 *
 * Layer contract.  rules/shard includes lib/, rules/lang, rules/engine and
 * itself only: shard.c (partitions, membership, leases, fences), worker.c
 * (the engine_fleet a worker gives its engine) and outbox.c (events and
 * checkpoints on their way to Redis, fenced).  Redis is reached through
 * lib/store alone.
 */
#ifndef FL_RULES_SHARD_H
#define FL_RULES_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "store/workers.h"

struct conn;
struct ruleset;
struct engine_opts;

struct shard;

/*
 * A worker named me (unique among workers; NULL: hostname-pid) whose
 * leases live ttl_ms, partitioning by the domain levels (outermost first)
 * of opts and every rule's rollup.  NULL on -ENOMEM.
 */
struct shard *shard_new(const char *me, uint64_t ttl_ms, const struct ruleset *rs,
			const struct engine_opts *opts);
void shard_free(struct shard *s);
const char *shard_me(const struct shard *s);

/*
 * Why rule set rs cannot run sharded (an aggregation across workers), in
 * err with the rule's name; 0 if it can.
 */
int shard_check_rules(const struct ruleset *rs, const struct engine_opts *opts, char *err,
		      size_t errlen);

/*
 * One round: heartbeat, read the live workers, refresh the host ->
 * partition map (every 30 s, or at once when `force`), take, renew and
 * release leases.  After it, shard_owns* say what this worker evaluates and
 * shard_gained / shard_lost what changed since the last round.  Returns 0
 * or -EIO (err says why; the previous ownership stands).
 */
int shard_tick(struct shard *s, struct conn *c, char *err, size_t errlen);

/* Whether this worker holds partition p / host's partition / the fleet's. */
int shard_owns(const struct shard *s, int p);
int shard_owns_host(const struct shard *s, const char *host);
int shard_owns_fleet(const struct shard *s);
const char *shard_held(const struct shard *s);	/* WORKERS_NPART flags */
/* The epoch of each lease held (0: none), WORKERS_NPART of them; commits are fenced by them. */
const uint64_t *shard_epochs(const struct shard *s);
int shard_gained(const struct shard *s, int p);
int shard_lost(const struct shard *s, int p);
size_t shard_live_workers(const struct shard *s);
size_t shard_held_count(const struct shard *s);

/* The partition of host (-1: not in the registry yet). */
int shard_part_of_host(const struct shard *s, const char *host);

/*
 * The partition of an alert from its JSON, an event (model/alert.h) or a
 * checkpoint record (engine_state_export): a deploy verdict's is the fleet
 * partition, a host's or a domain's that of its (first) host; -1 when it
 * names no host the map knows.
 */
int shard_part_of_alert(const struct shard *s, const char *json);

/*
 * Count partition p as not held although its lease is: its checkpoint
 * could not be taken over yet, and the next round, renewing the lease,
 * finds it gained again.
 */
void shard_untake(struct shard *s, int p);

/* Forget partitions this worker lost (after a failed fenced commit). */
void shard_drop(struct shard *s, const char *lost);

/* What the live workers are called (valid until the next tick). */
char *const *shard_workers(const struct shard *s, size_t *n);

#endif
