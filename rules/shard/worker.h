/*
 * worker.h - faultline-rules as one of several workers sharing the fleet
 * (`--shard`): each round takes and hands over partitions (rules/shard/shard.h),
 * forgets what it handed over, takes over the checkpoints of what it was
 * handed, and commits its events fenced by its leases.
 */
#ifndef FL_RULES_WORKER_H
#define FL_RULES_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "rules/engine/engine.h"

struct conn;
struct worker;

/*
 * A worker named id (NULL: hostname-pid) evaluating every interval_ns,
 * for rule set rs: checks that rs can run sharded and sets opts->fleet (the
 * worker must outlive the engine made with opts).  NULL with the reason in
 * err.
 */
struct worker *worker_new(const char *id, uint64_t interval_ns, const struct ruleset *rs,
			  struct engine_opts *opts, char *err, size_t errlen);
void worker_free(struct worker *w);

/*
 * Before an evaluation: heartbeat and leases through c; alerts and host
 * history of partitions handed over are forgotten, checkpoints of
 * partitions taken over are imported into e (what ended meanwhile resolves
 * through cb at the next evaluation; a rule no longer loaded at once).
 * Returns 0, or -EIO (err; ownership unchanged).
 */
int worker_round(struct worker *w, struct engine *e, struct conn *c, uint64_t now,
		 engine_event_cb cb, void *arg, char *err, size_t errlen);

/*
 * Write events[0..n) and, with_state, the checkpoint of every partition
 * held, in one transaction fenced by the leases.  refused[i]: 0 taken, 1
 * refused by Redis (keep and resend), 2 dropped (its partition was lost:
 * its new owner decides).  Returns how many Redis took, -ESTALE when a
 * lease was lost (nothing written; the lost partitions are forgotten and
 * refused[] says what to keep), or -EIO.
 */
int worker_commit(struct worker *w, struct engine *e, struct conn *c, char *const *events,
		  int n, int with_state, char *refused, char *err, size_t errlen);

/* Leave the membership and release every lease (a clean stop). */
void worker_leave(struct worker *w, struct conn *c);

/* For /metrics and logs. */
const char *worker_id(const struct worker *w);
size_t worker_partitions(const struct worker *w);
size_t worker_peers(const struct worker *w);

#endif
