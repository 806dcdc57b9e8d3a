/*
 * outbox.c - the alert events faultline-rules has yet to get into
 * fl:alerts, and its alert checkpoint; see outbox.h.
 */
#include "rules/shard/outbox.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/log.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "rules/engine/engine.h"
#include "rules/shard/worker.h"
#include "store/alert_checkpoint.h"
#include "store/workers.h"

/* The fingerprint of an event (model/alert.h JSON) into fp (17 bytes); "" if none. */
static void event_fp(const char *json, char fp[17])
{
	const char *p = strstr(json, "\"fingerprint\":\"");
	size_t n;

	fp[0] = '\0';
	if (!p)
		return;
	p += strlen("\"fingerprint\":\"");
	n = strcspn(p, "\"");
	if (n == 16) {
		memcpy(fp, p, 16);
		fp[16] = '\0';
	}
}

/*
 * The queue is full: fold every alert's events into its newest (what a
 * page needs is each alert's latest state).  Returns how many went.
 */
static int fold_queue(struct outbox *c)
{
	struct strmap last;
	int kept = 0, n = c->nqueue;
	char fp[17];
	uint32_t at;

	strmap_init(&last);
	for (int i = 0; i < n; i++) {
		event_fp(c->queue[i], fp);
		if (fp[0])
			strmap_put(&last, fp, (uint32_t)i);
	}
	for (int i = 0; i < n; i++) {
		event_fp(c->queue[i], fp);
		if (fp[0] && strmap_get(&last, fp, &at) && at != (uint32_t)i)
			free(c->queue[i]);
		else
			c->queue[kept++] = c->queue[i];
	}
	strmap_free(&last);
	c->nqueue = kept;
	return n - kept;
}

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
	if (c->nqueue >= OUTBOX_MAX) {
		int folded = fold_queue(c);

		if (folded)
			log_warn("%d alert events are waiting for fl:alerts (is Redis up?); folded "
				 "%d superseded by a newer event of the same alert", OUTBOX_MAX,
				 folded);
	}
	if (c->nqueue >= OUTBOX_MAX) {
		c->dropped++;
		log_error("%d alert events of as many alerts are waiting for fl:alerts (is Redis "
			  "up?); dropping the oldest (%llu dropped so far): %.200s", c->nqueue,
			  (unsigned long long)c->dropped, c->queue[0]);
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

/* An event Redis took: done, or kept until replicas have it too. */
static void settle(struct outbox *c, char *ev)
{
	if (!c->wait_replicas) {
		free(ev);
		return;
	}
	if (ARRAY_GROW(c->unconfirmed, c->unconfirmed_cap, (size_t)c->nunconfirmed + 1, 64)) {
		free(ev);	/* it is in fl:alerts; only its replication is unconfirmed */
		return;
	}
	c->unconfirmed[c->nunconfirmed++] = ev;
	c->unconfirmed_gen = c->conn_gen;
}

/*
 * Wait for wait_replicas replicas to have what this connection wrote:
 * then the unconfirmed events are done.  Returns 0 (confirmed, or not yet:
 * they wait for the next interval), or -EIO (the connection failed).
 */
static int wait_confirmed(struct outbox *c)
{
	char err[256];
	int got = store_alerts_wait(c->rc, c->wait_replicas, c->wait_timeout_ms, err,
				    sizeof(err));

	if (got < 0) {
		log_warn("%s; %d alert event(s) wait for their replicas", err, c->nunconfirmed);
		return -EIO;
	}
	if (got < c->wait_replicas) {
		uint64_t now = time_mono_ns();

		if (!c->wait_said_ns || now - c->wait_said_ns >= 60 * NSEC_PER_SEC) {
			log_warn("%d alert event(s) are in fl:alerts but only %d of %d replica(s) "
				 "confirmed them within %llu ms; kept, and written again if the "
				 "connection changes (a failover)", c->nunconfirmed, got,
				 c->wait_replicas, (unsigned long long)c->wait_timeout_ms);
			c->wait_said_ns = now;
		}
		return 0;
	}
	for (int i = 0; i < c->nunconfirmed; i++)
		free(c->unconfirmed[i]);
	c->nunconfirmed = 0;
	return 0;
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

	if (c->nunconfirmed && c->unconfirmed_gen != c->conn_gen) {
		/* written on a connection since lost: a failover may have lost them */
		char **q = realloc(c->queue, (size_t)(c->nqueue + c->nunconfirmed) * sizeof(*q));

		if (q) {
			memmove(q + c->nunconfirmed, q, (size_t)c->nqueue * sizeof(*q));
			memcpy(q, c->unconfirmed, (size_t)c->nunconfirmed * sizeof(*q));
			c->queue = q;
			c->nqueue += c->nunconfirmed;
			log_warn("%d alert event(s) no replica had confirmed when the connection "
				 "changed: writing them again", c->nunconfirmed);
			c->nunconfirmed = 0;
		}
	}
	/* one WAIT an interval covers every write of this connection, old and new */
	if (!c->nqueue && !with_state)
		return c->nunconfirmed && wait_confirmed(c) < 0 ? -EIO : 0;
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
	/* what Redis took leaves the queue (for replicas to confirm); what it refused stays */
	for (int i = 0; i < c->nqueue; i++) {
		if (refused[i])
			c->queue[kept++] = c->queue[i];
		else
			settle(c, c->queue[i]);
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
	if (c->nunconfirmed && wait_confirmed(c) < 0)
		return -EIO;
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
	for (int i = 0; i < ob->nunconfirmed; i++)
		free(ob->unconfirmed[i]);
	free(ob->unconfirmed);
	ob->unconfirmed = NULL;
	ob->nunconfirmed = 0;
	ob->unconfirmed_cap = 0;
	free(ob->queue);
	ob->queue = NULL;
	ob->nqueue = 0;
}
