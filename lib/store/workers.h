/*
 * workers.h - how several faultline-rules processes share one fleet
 * through Redis: membership, partition leases, per-partition alert
 * checkpoints and the partial aggregates they exchange.
 *
 * The fleet is cut into WORKERS_PARTS partitions by the outermost failure
 * domain the rules roll up by (rules/shard/shard.h says which), plus one more,
 * WORKERS_FLEET, for alerts about the fleet as a whole (post-deploy
 * verdicts).  A worker evaluates the hosts of the partitions whose lease
 * it holds; it writes its alert events, and the checkpoint of each
 * partition it holds, in one transaction that fails if any of its leases
 * changed hands meanwhile (WATCH), so two workers never page for one
 * partition.
 *
 * Every key lives in fl:alerts' slot (hash tag {fl:alerts}): on a cluster
 * the leases, the checkpoints and fl:alerts are on one node, which is what
 * lets one script cover them (keyspace.h lists them).  Times are
 * Redis' own clock (TIME), so the workers' clocks need not agree.
 */
#ifndef FL_STORE_WORKERS_H
#define FL_STORE_WORKERS_H

#include <stddef.h>
#include <stdint.h>

struct conn;

#define WORKERS_PARTS 64			/* domain partitions */
#define WORKERS_FLEET WORKERS_PARTS		/* the fleet-wide partition */
#define WORKERS_NPART (WORKERS_PARTS + 1)
#define WORKERS_NAME_MAX 128

/*
 * Say that worker `me` lives for ttl_ms more (Redis' clock) and read who
 * else does: *live gets their names (me included; free with
 * workers_names_free), *now_ms Redis' time.  Entries of workers that
 * expired are removed.  Returns 0 or -EIO (err says why).
 */
int workers_heartbeat(struct conn *c, const char *me, uint64_t ttl_ms, char ***live,
		      size_t *nlive, uint64_t *now_ms, char *err, size_t errlen);
void workers_names_free(char **names, size_t n);

/* Leave: drop me from the members and release every lease I hold. */
int workers_leave(struct conn *c, const char *me, char *err, size_t errlen);

/*
 * For each partition p, want[p] 1: take its lease if free, or renew it if
 * mine, for ttl_ms; 0: release it if mine.  epoch[p] holds the epoch me
 * held before (0: none) and is set to the epoch of the lease it holds
 * afterwards, 0 when none.  A take draws a new epoch from the partition's
 * counter ({fl:alerts}:epoch:P, never reset), unless the lease lapsed
 * under me's own epoch and nobody took it since (the counter still reads
 * it): then me gets it back under that epoch, its checkpoint untouched.
 * So a worker whose lease was taken by another meanwhile (it was paused
 * past its ttl) always sees a different epoch than it held: what it
 * remembers of the partition is stale.  One atomic script.  Returns 0,
 * -EINVAL (a name with '|') or -EIO.
 */
int workers_leases(struct conn *c, const char *me, uint64_t ttl_ms, const char *want,
		   uint64_t *epoch, char *err, size_t errlen);

/* One partition's checkpoint to write: fps[i] -> states[i] (JSON). */
struct workers_state {
	int part;
	int n;
	const char *const *fps;
	const char *const *states;
};

/*
 * Append events to fl:alerts and replace the checkpoints of states[0..ns)
 * in one atomic script (a batch of events at a time, the checkpoints with
 * the last), only if me still holds every partition p with epochs[p] != 0
 * under that very epoch: a lease lost and taken back since is a lease lost.
 * refused[i] as store_alerts_commit.  Returns how many events Redis took;
 * -ESTALE when a lease is no longer mine under that epoch (nothing written
 * by that batch; lost[p] set for each); -EIO when the exchange failed.
 */
int workers_commit(struct conn *c, const char *me, const uint64_t *epochs, char *const *events,
		   int nevents, const struct workers_state *states, int ns, char *refused,
		   char *lost, char *err, size_t errlen);

/* Call cb(fp, json, arg) for every entry of partition part's checkpoint. */
int workers_state_read(struct conn *c, int part,
		       void (*cb)(const char *fp, const char *json, void *arg), void *arg,
		       char *err, size_t errlen);

/*
 * Switching between one engine and --shard workers: move one engine's
 * checkpoint ({fl:alerts}:rules) into the partition checkpoints, each
 * record into part_of(its JSON)'s (a negative part: WORKERS_FLEET's), or every
 * partition checkpoint into one engine's; a record the destination already
 * has stays as it is, and the source is deleted, in one transaction under
 * WATCH of the source (so of several workers starting at once one moves
 * it, and no record is left behind to be taken back twice).  Returns the
 * records moved (0: none), -EAGAIN when the source changed meanwhile
 * (nothing moved; try again), or -EIO.
 */
int workers_state_from_single(struct conn *c, int (*part_of)(const char *json, void *arg),
			      void *arg, char *err, size_t errlen);
int workers_state_to_single(struct conn *c, char *err, size_t errlen);

/*
 * Partial aggregates: worker me's part of `topic` (a rule and what it
 * merges, e.g. "baseline/CpuRegression/api@2.1@1700000000000"), kept
 * ttl_ms; workers_partials_read calls cb with every worker's.
 */
int workers_partial_put(struct conn *c, const char *topic, const char *me, const char *blob,
			size_t len, uint64_t ttl_ms, char *err, size_t errlen);
int workers_partials_read(struct conn *c, const char *topic,
			  void (*cb)(const char *worker, const char *blob, size_t len, void *arg),
			  void *arg, char *err, size_t errlen);

#endif
