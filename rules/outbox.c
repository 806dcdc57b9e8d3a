/*
 * outbox.c - the alert events faultline-rules has yet to get into
 * fl:alerts, and its alert checkpoint; see outbox.h.
 */
#include "rules/outbox.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "rules/engine.h"
#include "rules/worker.h"
#include "store/alert_checkpoint.h"
#include "store/workers.h"

#define MAX_QUEUED_EVENTS 100000

/*
 * Events are queued here and written by outbox_flush() in one pipelined
 * exchange; an event Redis did not take stays queued for the next
 * interval, so a Redis outage delays alerts rather than losing them.
 */
void outbox_emit(const char *json, void *arg)
{
	struct outbox *c = arg;
	char *copy;

	c->n++;
	if (c->once) {
		puts(json);
		return;
	}
	if (c->nqueue == MAX_QUEUED_EVENTS) {
		log_error("%d alert events are waiting for fl:alerts; dropping the oldest "
			  "(is Redis up?)", c->nqueue);
		free(c->queue[0]);
		memmove(c->queue, c->queue + 1, (size_t)(c->nqueue - 1) * sizeof(*c->queue));
		c->nqueue--;
	}
	copy = strdup(json);
	char **q = copy ? realloc(c->queue, (size_t)(c->nqueue + 1) * sizeof(*q)) : NULL;

	if (!q) {
		log_error("out of memory queueing an alert event; it is lost: %s", json);
		free(copy);
		return;
	}
	c->queue = q;
	c->queue[c->nqueue++] = copy;
}

struct state_buf {
	char **fps, **states;
	int n, cap;
	int failed;
};

static void keep_state(const char *fp, const char *json, void *arg)
{
	struct state_buf *b = arg;

	if (b->n == b->cap) {
		int cap = b->cap ? b->cap * 2 : 32;
		char **f = realloc(b->fps, (size_t)cap * sizeof(*f));
		char **j = f ? realloc(b->states, (size_t)cap * sizeof(*j)) : NULL;

		if (f)
			b->fps = f;
		if (!j) {
			b->failed = 1;
			return;
		}
		b->states = j;
		b->cap = cap;
	}
	b->fps[b->n] = strdup(fp);
	b->states[b->n] = strdup(json);
	if (!b->fps[b->n] || !b->states[b->n]) {
		free(b->fps[b->n]);
		free(b->states[b->n]);
		b->failed = 1;
		return;
	}
	b->n++;
}

static void state_buf_free(struct state_buf *b)
{
	for (int i = 0; i < b->n; i++) {
		free(b->fps[i]);
		free(b->states[i]);
	}
	free(b->fps);
	free(b->states);
	memset(b, 0, sizeof(*b));
}

/*
 * Write the queued events to fl:alerts and, with_state, the engine's alert
 * checkpoint, in one transaction (store_alerts_commit).  Returns 0, or
 * -EIO if the exchange failed: the events stay queued, in order, and the
 * checkpoint is written again with them.
 */
int outbox_flush(struct outbox *c, struct engine *e, int with_state)
{
	struct state_buf sb = { 0 };
	char err[256], *refused;
	int taken, kept = 0;

	if (!c->nqueue && !with_state)
		return 0;
	if (with_state && !c->worker &&
	    (engine_state_export(e, keep_state, &sb) < 0 || sb.failed)) {
		log_error("out of memory writing the alert checkpoint; retrying next interval");
		state_buf_free(&sb);
		with_state = 0;
		c->state_dirty = 1;
	}
	refused = calloc((size_t)c->nqueue + 1, 1);
	if (!refused) {
		state_buf_free(&sb);
		c->state_dirty = 1;
		return 0;	/* nothing sent; all stays queued for the next interval */
	}
	if (c->worker)
		taken = worker_commit(c->worker, e, c->rc, c->queue, c->nqueue, with_state,
				      refused, err, sizeof(err));
	else
		taken = store_alerts_commit(c->rc, c->queue, c->nqueue,
					    (const char *const *)sb.fps,
					    (const char *const *)sb.states, with_state ? sb.n : -1,
					    refused, err, sizeof(err));
	state_buf_free(&sb);
	if (taken == -ESTALE) {
		/* a partition changed hands: its events are its new owner's; the rest wait */
		int kept = 0;

		log_warn("%s; %d alert event(s) wait for the next interval", err, c->nqueue);
		for (int i = 0; i < c->nqueue; i++) {
			if (refused[i] == 1)
				c->queue[kept++] = c->queue[i];
			else
				free(c->queue[i]);
		}
		c->nqueue = kept;
		c->state_dirty = 1;
		free(refused);
		return 0;
	}
	if (taken < 0) {
		log_warn("%d alert event(s) and the alert checkpoint not written (%s); will retry",
			 c->nqueue, err);
		c->state_dirty = 1;
		free(refused);
		return -EIO;
	}
	/* what Redis took leaves the queue; what it refused stays, in order */
	for (int i = 0; i < c->nqueue; i++) {
		if (refused[i])
			c->queue[kept++] = c->queue[i];
		else
			free(c->queue[i]);
	}
	if (kept) {
		uint64_t now = time_mono_ns();

		if (!c->refused_said_ns || now - c->refused_said_ns >= 60 * NSEC_PER_SEC) {
			log_error("%s; %d alert event(s) kept and sent again until it takes them",
				  err, kept);
			c->refused_said_ns = now;
		}
	}
	c->nqueue = kept;
	free(refused);
	if (with_state)
		c->state_dirty = kept > 0;
	return 0;
}

/*
 * Take the alert checkpoint back (start-up): what fired before a restart
 * keeps firing with its startsAt, or resolves at the first evaluation.
 */
int outbox_restore(struct outbox *ob, struct engine *e, uint64_t now)
{
	struct engine_import r = { e, now, outbox_emit, ob, 0, 0 };
	struct conn *rc = ob->rc;
	char err[256];
	int n = workers_state_to_single(rc, err, sizeof(err));

	/* switched from --shard workers: their firing alerts are this engine's now */
	if (n > 0)
		log_info("moved %d firing alert(s) of --shard workers' checkpoints into this "
			 "engine's (switched from --shard)", n);
	if (n >= 0)
		n = store_alerts_state_read(rc, engine_import_entry, &r, err, sizeof(err));
	if (n < 0) {
		log_warn("%s; cannot restore the alert state yet", err);
		return -1;
	}
	if (n)
		log_info("restored %d firing alert(s) from the checkpoint; %d of rules no longer "
			 "loaded resolved", r.restored, r.resolved);
	return 0;
}

void outbox_free(struct outbox *ob)
{
	for (int i = 0; i < ob->nqueue; i++)
		free(ob->queue[i]);
	free(ob->queue);
	ob->queue = NULL;
	ob->nqueue = 0;
}
