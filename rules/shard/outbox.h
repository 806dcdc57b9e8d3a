/*
 * outbox.h - the alert events faultline-rules has evaluated but Redis has
 * not yet taken, and the engine's alert checkpoint written with them.
 *
 * The engine emits into the outbox (outbox_emit, an engine emit callback);
 * once an interval outbox_flush writes the queue to fl:alerts and the
 * checkpoint in one transaction (through the worker's fenced commit under
 * --shard).  An event Redis did not take stays queued, in order, for the
 * next interval, so a Redis outage delays pages rather than losing them.
 * The queue is bounded (OUTBOX_MAX events): past it, events of an alert
 * that a newer event of the same alert supersedes are folded into it (the
 * newest state is what a page needs), and only when every queued event is
 * a different alert's is the oldest dropped — logged and counted
 * (faultline_rules_events_dropped_total), never silently.
 *
 * With wait_replicas > 0 (a replicated Redis), events Redis took are kept
 * until that many replicas have them too (WAIT): a failover before then
 * would forget them, so when the connection changes they are written again
 * (the alerter drops a repeat of a state it already has).
 */
#define OUTBOX_MAX 100000
#ifndef FL_RULES_OUTBOX_H
#define FL_RULES_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

struct conn;
struct engine;
struct worker;

struct outbox {
	struct conn *rc;	/* NULL while Redis is away */
	struct worker *worker;	/* --shard: commits are fenced by its leases */
	int once;		/* --once: events are printed, not queued */
	int n;			/* events emitted this interval (the caller zeroes it) */
	char **queue;		/* events not yet in fl:alerts, oldest first */
	int nqueue;
	int state_dirty;	/* the alert checkpoint must be written */
	uint64_t refused_said_ns;	/* last log of events Redis refused */
	uint64_t dropped;	/* events dropped past OUTBOX_MAX, ever */
	int wait_replicas;	/* 0: do not wait for replicas */
	uint64_t wait_timeout_ms;
	char **unconfirmed;	/* taken by Redis, not yet by wait_replicas replicas */
	int nunconfirmed;
	size_t unconfirmed_cap;
	uint64_t conn_gen;	/* the caller bumps it for every new connection */
	uint64_t unconfirmed_gen;	/* the connection unconfirmed were written on */
	uint64_t wait_said_ns;
};

/* Queue (or with once, print) one event; arg is the struct outbox. */
void outbox_emit(const char *json, void *arg);

/*
 * Write the queued events to fl:alerts and, with_state, the engine's alert
 * checkpoint, in one transaction (store_alerts_commit, or worker_commit
 * under --shard).  Returns 0, or -EIO if the exchange failed: the events
 * stay queued, in order, and the checkpoint is written again with them.
 */
int outbox_flush(struct outbox *ob, struct engine *e, int with_state);

/*
 * Take the alert checkpoint back at start-up over ob->rc (moving --shard
 * workers' checkpoints into the single engine's first): what fired before
 * a restart keeps firing with its startsAt, or resolves at the first
 * evaluation (its events go to the outbox).  Returns 0, or -1 when Redis
 * could not be read (logged; try again).
 */
int outbox_restore(struct outbox *ob, struct engine *e, uint64_t now);

/* Free what is still queued. */
void outbox_free(struct outbox *ob);

#endif
