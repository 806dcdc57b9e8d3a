/*
 * worker.c - a sharded faultline-rules worker's rounds and fenced
 * commits; see worker.h.
 */
#include "rules/shard/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "rules/engine/fleet.h"
#include "rules/shard/shard.h"
#include "store/workers.h"

struct worker {
	struct shard *shard;
	struct conn *c;			/* the round's connection, for the fleet hooks */
	struct engine_fleet fleet;
	uint64_t ttl_ms;
	int adopted;			/* a single engine's checkpoint was looked for */
};

/* ---- fleet hooks (engine_fleet) ------------------------------------------------ */

static int owns_host(void *arg, const char *host)
{
	struct worker *w = arg;

	return shard_owns_host(w->shard, host);
}

static int owns_fleet(void *arg)
{
	struct worker *w = arg;

	return shard_owns_fleet(w->shard);
}

static int publish(void *arg, const char *topic, const void *blob, size_t len)
{
	struct worker *w = arg;
	char err[256];

	if (!w->c)
		return -EIO;
	if (workers_partial_put(w->c, topic, shard_me(w->shard), blob, len, w->ttl_ms * 20, err,
				sizeof(err))) {
		log_warn("publishing %s: %s", topic, err);
		return -EIO;
	}
	return 0;
}

struct gather_ctx {
	struct worker *w;
	void (*cb)(const void *blob, size_t len, void *cbarg);
	void *cbarg;
	size_t got;
};

static void gather_one(const char *worker, const char *blob, size_t len, void *arg)
{
	struct gather_ctx *g = arg;
	size_t n;
	char *const *live = shard_workers(g->w->shard, &n);

	if (!strcmp(worker, shard_me(g->w->shard)))
		return;		/* this worker's own part: the caller has it */
	for (size_t i = 0; i < n; i++)
		if (!strcmp(live[i], worker)) {
			g->cb(blob, len, g->cbarg);
			g->got++;
			return;
		}
	/* a worker that left: its hosts are someone else's now */
}

static int gather(void *arg, const char *topic, void (*cb)(const void *blob, size_t len,
							  void *cbarg), void *cbarg)
{
	struct worker *w = arg;
	struct gather_ctx g = { w, cb, cbarg, 0 };
	char err[256];

	if (!w->c)
		return -EIO;
	if (workers_partials_read(w->c, topic, gather_one, &g, err, sizeof(err)) < 0) {
		log_warn("reading %s: %s", topic, err);
		return -EIO;
	}
	return g.got + 1 >= shard_live_workers(w->shard) ? 1 : 0;
}

/* ---- lifecycle ------------------------------------------------------------------ */

struct worker *worker_new(const char *id, uint64_t interval_ns, const struct ruleset *rs,
			  struct engine_opts *opts, char *err, size_t errlen)
{
	struct worker *w;
	uint64_t ttl_ms = 3 * interval_ns / 1000000;

	if (shard_check_rules(rs, opts, err, errlen))
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->ttl_ms = ttl_ms < 3000 ? 3000 : ttl_ms;
	w->shard = shard_new(id, w->ttl_ms, rs, opts);
	if (!w->shard) {
		free(w);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->fleet = (struct engine_fleet){ .arg = w, .owns_host = owns_host,
					  .owns_fleet = owns_fleet, .publish = publish,
					  .gather = gather };
	opts->fleet = &w->fleet;
	return w;
}

void worker_free(struct worker *w)
{
	if (!w)
		return;
	shard_free(w->shard);
	free(w);
}

const char *worker_id(const struct worker *w)
{
	return shard_me(w->shard);
}

size_t worker_partitions(const struct worker *w)
{
	return shard_held_count(w->shard);
}

size_t worker_peers(const struct worker *w)
{
	return shard_live_workers(w->shard);
}

/* ---- rounds ---------------------------------------------------------------------- */

/* An alert stays when its partition is held and did not change hands this round. */
static int keep_alert(const char *json, void *arg)
{
	struct worker *w = arg;
	int p = shard_part_of_alert(w->shard, json);

	return shard_owns(w->shard, p) && !shard_lost(w->shard, p);
}

/* The partition of an alert's checkpoint record (workers_state_from_single). */
static int part_of_alert(const char *json, void *arg)
{
	const struct worker *w = arg;

	return shard_part_of_alert(w->shard, json);
}

int worker_round(struct worker *w, struct engine *e, struct conn *c, uint64_t now,
		 engine_event_cb cb, void *arg, char *err, size_t errlen)
{
	int lost = 0, ret;

	w->c = c;
	ret = shard_tick(w->shard, c, err, errlen);
	if (ret)
		return ret;
	for (int p = 0; p < WORKERS_NPART; p++)
		lost |= shard_lost(w->shard, p);
	if (lost) {
		int n = engine_forget(e, keep_alert, w);

		if (n)
			log_info("worker %s: handed over %d alert(s) with their partitions",
				 worker_id(w), n);
	}
	if (!w->adopted) {
		/*
		 * Switched from one engine to workers: its firing alerts move into
		 * the partitions' checkpoints before any is taken over, so their
		 * owners resolve them or keep their startsAt.
		 */
		ret = workers_state_from_single(c, part_of_alert, w, err, errlen);
		if (ret < 0) {
			for (int q = 0; q < WORKERS_NPART; q++)
				if (shard_gained(w->shard, q))
					shard_untake(w->shard, q);
			return -EIO;
		}
		if (ret)
			log_info("worker %s: moved %d firing alert(s) of a single engine's checkpoint "
				 "into the partitions' (switched to --shard)", worker_id(w), ret);
		w->adopted = 1;
	}
	for (int p = 0; p < WORKERS_NPART; p++) {
		struct engine_import ic = { e, now, cb, arg, 0, 0 };

		if (!shard_gained(w->shard, p))
			continue;
		if (workers_state_read(c, p, engine_import_entry, &ic, err, errlen) < 0) {
			/*
			 * Not taken over yet: this partition and every later one
			 * gained this round count as not held, so the next round
			 * finds them gained again and imports them (imports are
			 * idempotent); meanwhile their hosts are not evaluated.
			 */
			for (int q = p; q < WORKERS_NPART; q++)
				if (shard_gained(w->shard, q))
					shard_untake(w->shard, q);
			return -EIO;
		}
		if (ic.restored || ic.resolved)
			log_info("worker %s: partition %d: took over %d firing alert(s) (%d of "
				 "rules no longer loaded resolved)", worker_id(w), p, ic.restored,
				 ic.resolved);
	}
	return 0;
}

/* ---- commits ---------------------------------------------------------------------- */

struct split {
	struct worker *w;
	char **fps[WORKERS_NPART], **states[WORKERS_NPART];
	int n[WORKERS_NPART], cap[WORKERS_NPART];
	int failed, orphans;
};

static void split_state(const char *fp, const char *json, void *arg)
{
	struct split *s = arg;
	int p = shard_part_of_alert(s->w->shard, json);

	if (!shard_owns(s->w->shard, p)) {
		s->orphans++;	/* its host left the registry: nobody's partition */
		return;
	}
	if (s->n[p] == s->cap[p]) {
		int cap = s->cap[p] ? 2 * s->cap[p] : 16;
		char **f = realloc(s->fps[p], (size_t)cap * sizeof(*f));
		char **j = f ? realloc(s->states[p], (size_t)cap * sizeof(*j)) : NULL;

		if (f)
			s->fps[p] = f;
		if (!j) {
			s->failed = 1;
			return;
		}
		s->states[p] = j;
		s->cap[p] = cap;
	}
	s->fps[p][s->n[p]] = strdup(fp);
	s->states[p][s->n[p]] = strdup(json);
	s->n[p]++;
}

static void split_free(struct split *s)
{
	for (int p = 0; p < WORKERS_NPART; p++) {
		for (int i = 0; i < s->n[p]; i++) {
			free(s->fps[p][i]);
			free(s->states[p][i]);
		}
		free(s->fps[p]);
		free(s->states[p]);
	}
}

int worker_commit(struct worker *w, struct engine *e, struct conn *c, char *const *events,
		  int n, int with_state, char *refused, char *err, size_t errlen)
{
	struct split sp = { .w = w };
	struct workers_state st[WORKERS_NPART];
	char lost[WORKERS_NPART], want[WORKERS_NPART];
	uint64_t before[WORKERS_NPART], ep[WORKERS_NPART], fence[WORKERS_NPART];
	int ns = 0, ret, any = 0;

	/*
	 * Renew the leases first: reading and evaluating may have outlasted
	 * them (a first read of a large fleet's history).  One that expired
	 * and nobody took is this worker's again under the same epoch, its
	 * checkpoint untouched meanwhile; one another worker took meanwhile is
	 * lost, even when it is ours again now (a new epoch).
	 */
	memcpy(before, shard_epochs(w->shard), sizeof(before));
	memcpy(ep, before, sizeof(ep));
	for (int p = 0; p < WORKERS_NPART; p++)
		want[p] = before[p] != 0;
	if (workers_leases(c, worker_id(w), w->ttl_ms, want, ep, err, errlen))
		return -EIO;
	for (int p = 0; p < WORKERS_NPART; p++) {
		lost[p] = before[p] && ep[p] != before[p];
		any |= lost[p] && shard_owns(w->shard, p);
		fence[p] = shard_owns(w->shard, p) ? before[p] : 0;
	}
	if (any)
		goto stale;
	if (with_state) {
		if (engine_state_export(e, split_state, &sp) < 0 || sp.failed) {
			split_free(&sp);
			snprintf(err, errlen, "out of memory writing the checkpoints");
			return -EIO;
		}
		for (int p = 0; p < WORKERS_NPART; p++)
			if (shard_owns(w->shard, p))
				st[ns++] = (struct workers_state){ p, sp.n[p],
					(const char *const *)sp.fps[p],
					(const char *const *)sp.states[p] };
	}
	ret = workers_commit(c, worker_id(w), fence, events, n, st, ns, refused, lost, err,
			     errlen);
	split_free(&sp);
	if (ret != -ESTALE)
		return ret;
	goto dropped;
stale:
	memset(refused, 1, (size_t)n);
dropped:
	shard_drop(w->shard, lost);
	engine_forget(e, keep_alert, w);
	for (int i = 0; i < n; i++) {
		int p = shard_part_of_alert(w->shard, events[i]);

		if (!refused[i])
			continue;	/* taken by an earlier batch */
		/* events of a partition lost are its new owner's to make */
		refused[i] = p >= 0 && p < WORKERS_NPART && lost[p] ? 2 : 1;
	}
	return -ESTALE;
}

void worker_leave(struct worker *w, struct conn *c)
{
	char err[256];

	if (c && workers_leave(c, worker_id(w), err, sizeof(err)))
		log_warn("worker %s: leaving: %s (its leases expire by themselves)", worker_id(w),
			 err);
}
