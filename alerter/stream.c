/*
 * stream.c - the alerter's side of fl:alerts (alerter_internal.h): the connection
 * and its backoff, reading new entries, our own pending list and other
 * alerters' orphans, acknowledging, dead letters, records, silences.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerter/alerter_internal.h"
#include "core/array.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "store/alert_stream.h"
#include "store/conn.h"

/*
 * Every Redis exchange of the alerter is in this section.  A command that
 * fails on the connection drops it (redis_lost); one Redis answers with an
 * error (WRONGTYPE, NOGROUP, OOM...) is logged at most every 10 s and the
 * Redis work backs off, so a misconfigured key is not a busy loop.
 */

void redis_lost(struct alerter *al)
{
	log_warn("lost the redis connection to %s (%s); reconnecting", al->redis_shown,
		 al->rc && conn_errstr(al->rc)[0] ? conn_errstr(al->rc) : "error");
	if (al->rc)
		conn_close(al->rc);
	al->rc = NULL;
	al->redis_errors++;
	al->redis_retry_at_ns = time_mono_ns() + backoff_next(&al->redis_backoff);
}

/* Redis answered an error (msg: "COMMAND KEY: error"): log (rate-limited) and back off. */
static void redis_refused(struct alerter *al, const char *msg)
{
	uint64_t now = time_mono_ns(), delay = backoff_next(&al->redis_backoff);

	al->redis_errors++;

	if (!al->redis_error_said_ns || now - al->redis_error_said_ns >= 10 * NSEC_PER_SEC) {
		if (strstr(msg, "WRONGTYPE"))
			log_error("%s: the key %s is not a stream; rename or delete it "
				  "(redis-cli TYPE %s) — alerts cannot be read until then",
				  msg, STREAM, STREAM);
		else
			log_error("%s; retrying in %.1f s", msg, (double)delay / 1e9);
		al->redis_error_said_ns = now;
	}
	al->redis_retry_at_ns = now + delay;
}

/*
 * What an alert_stream call returned, applied: a dropped connection is
 * dropped here too, a refusal backs off; a stream or group that is gone
 * (Redis restarted empty) reconnects, which creates the group again.
 * Returns ret, or -1 for any failure.
 */
int redis_result(struct alerter *al, int ret, const char *err)
{
	if (ret == ALERT_STREAM_LOST) {
		redis_lost(al);
	} else if (ret == ALERT_STREAM_REFUSED) {
		redis_refused(al, err);
	} else if (ret == ALERT_STREAM_NOGROUP) {
		redis_refused(al, err);
		redis_lost(al);
	}
	return ret < 0 ? -1 : ret;
}

/* 1 when Redis work may run now. */
int redis_ready(struct alerter *al)
{
	return al->rc && time_mono_ns() >= al->redis_retry_at_ns;
}

int ensure_redis(struct alerter *al)
{
	char err[300];

	if (al->rc)
		return 0;
	if (time_mono_ns() < al->redis_retry_at_ns)
		return -1;
	al->rc = conn_open(al->cfg.redis_url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!al->rc) {
		uint64_t delay = backoff_next(&al->redis_backoff);

		log_warn("%s; retrying in %.1f s", err, (double)delay / 1e9);
		al->redis_retry_at_ns = time_mono_ns() + delay;
		return -1;
	}
	if (redis_result(al, alert_stream_create_group(al->rc, err, sizeof(err)), err) < 0 &&
	    !al->rc)
		return -1;
	log_info("connected to %s", al->redis_shown);
	if (!al->ix_backfilled) {
		int groups, taken;

		if (redis_result(al, alert_index_backfill(al->rc, &groups, &taken, err,
							  sizeof(err)), err) < 0)
			return -1;
		al->ix_backfilled = 1;
		if (groups)
			log_info("filled the fleet's alert index (" KEY_ALERTS_ACTIVE ") from %d "
				 "alert group(s): %d record(s), for inhibition and the API", groups,
				 taken);
	}
	if (!al->taken_up) {
		if (groups_take_up(al) < 0)
			return -1;
		al->taken_up = 1;
	}
	backoff_reset(&al->redis_backoff);
	al->read_pending = 1;	/* what we held may be ours again, or gone */
	al->claim_at_ns = 0;
	return 0;
}

/*
 * Acknowledge ids (one XACK) and forget them.  Returns 0, or -1 when the
 * acknowledgement was not confirmed (the entries stay pending in Redis and
 * are read again after the reconnect; what they carry is then a repeat).
 */
int ack(struct alerter *al, char (*ids)[32], int n)
{
	const char **argv;
	char err[300];
	int ret;

	for (int i = 0; i < n; i++)
		strmap_del(&al->held, ids[i]);
	if (!n)
		return 0;
	if (!al->rc)
		return -1;
	argv = malloc((size_t)n * sizeof(*argv));
	if (!argv)
		return -1;
	for (int i = 0; i < n; i++)
		argv[i] = ids[i];
	ret = redis_result(al, alert_stream_ack(al->rc, argv, n, err, sizeof(err)), err);
	free(argv);
	return ret < 0 ? -1 : 0;
}

int ack_one(struct alerter *al, const char *id)
{
	char one[1][32];

	snprintf(one[0], sizeof(one[0]), "%s", id);
	return ack(al, one, 1);
}

/*
 * Put a dead letter on fl:alerts:dead: why, which group and receiver (empty
 * when it never reached one), the stream entries it stands for, and the
 * event or notification body.  One shape for every reason.  Returns 0 once
 * Redis has it; the caller acknowledges the entries only then.
 */
int dead_letter(struct alerter *al, const char *reason, const char *group, const char *receiver,
		const char *ids, const char *body, size_t len)
{
	char err[300];
	int ret;

	if (!al->rc)
		return -1;
	ret = redis_result(al, alert_stream_dead_letter(al->rc, reason, group, receiver, ids, body,
							len, err, sizeof(err)), err);
	al->dead_letters += ret == 0;
	return ret < 0 ? -1 : 0;
}

/* Append a record of what happened to a notification (sent, silenced). */
void record(struct alerter *al, const char *what, const char *group, const char *detail)
{
	char err[300];

	if (al->rc && alert_stream_record(al->rc, what, group, detail, err, sizeof(err)) ==
	    ALERT_STREAM_LOST)
		redis_lost(al);
}

/*
 * Take the entries of one stream reply: an array of [id, [field, value...]]
 * (fields nil for an entry trimmed away while pending: it can never be
 * delivered, so it is dead-lettered).  Copies the last id into last.
 * Returns the number of entries, or -1 if the reply is not of that shape.
 */
static void take_entry(const char *id, const char *event, size_t len, const char *why,
		       void *arg)
{
	struct alerter *al = arg;
	uint32_t dummy;

	if (event) {
		take_event(al, id, event, len);
		return;
	}
	if (strmap_get(&al->held, id, &dummy))
		return;
	log_error("%s entry %s: %s; dead-lettered to %s", STREAM, id, why, DEAD_STREAM);
	if (dead_letter(al, why, "", "", id, "", 0) == 0)
		ack_one(al, id);
}

/*
 * XREADGROUP from `from`: ">" for new entries (blocking up to block_ms),
 * or an id to page through our own pending list.  Returns the number of
 * entries, 0 when none, -1 on an error (connection dropped or backed off).
 */
int read_entries(struct alerter *al, const char *from, int block_ms, char *last, size_t lastlen)
{
	char err[300];
	int n = redis_result(al, alert_stream_read(al->rc, al->cfg.consumer, from, PAGE, block_ms,
						   take_entry, al, last, lastlen, err,
						   sizeof(err)), err);

	if (n > 0)
		backoff_reset(&al->redis_backoff);
	return n;
}

/*
 * Read our whole pending list back, a page at a time (after a start or a
 * reconnect: what a previous run, or this one before the connection
 * dropped, read but never settled).  Entries a group already holds are
 * skipped by take_event.
 */
void read_own_pending(struct alerter *al)
{
	char from[32] = "0";
	int n = -1, total = 0;

	while (al->rc && (n = read_entries(al, from, 0, from, sizeof(from))) > 0)
		total += n;
	if (al->rc && n == 0) {
		al->read_pending = 0;
		if (total)
			log_info("read back %d pending %s entr%s of consumer %s", total, STREAM,
				 total == 1 ? "y" : "ies", al->cfg.consumer);
	}
}

/* An entry another alerter took over from us: it is the other's to deliver. */
static void entry_gone(const char *id, void *arg)
{
	struct alerter *al = arg;
	uint32_t still = 0;
	int dropped = 0;

	for (int gi = 0; gi < al->ngroups; gi++) {
		struct group *g = al->groups[gi];

		for (int i = 0; i < g->nids; i++) {
			if (strcmp(g->ids[i], id))
				continue;
			if (g->pending && i < g->nids_sent) {
				still++;	/* in a notification under way: settled with it */
				break;
			}
			memmove(g->ids + i, g->ids + i + 1, (size_t)(g->nids - i - 1) *
				sizeof(*g->ids));
			g->nids--;
			dropped++;
			break;
		}
	}
	if (still)
		strmap_put(&al->held, id, still);
	else
		strmap_del(&al->held, id);
	if (dropped)
		log_info("%s entry %s was taken over by another alerter; leaving it to that one",
			 STREAM, id);
}

/*
 * Keep what we hold ours: reset the idle time of every held entry still
 * ours, so another alerter's XAUTOCLAIM does not take entries we are still
 * retrying; one another took over meanwhile (we looked dead) is dropped
 * here, never taken back.
 */
static void refresh_held(struct alerter *al)
{
	const char **ids = NULL;
	char (*copy)[32] = NULL;
	char err[300];
	int n = 0, cap = 0;

	struct strmap seen;
	uint32_t one;

	/* an entry several groups hold (continue, several integrations) is sent once */
	strmap_init(&seen);
	for (int gi = 0; gi < al->ngroups; gi++) {
		const struct group *g = al->groups[gi];

		for (int i = 0; i < g->nids; i++) {
			if (strmap_get(&seen, g->ids[i], &one))
				continue;
			if (ARRAY_GROW(ids, cap, n + 1, 64) || strmap_put(&seen, g->ids[i], 1)) {
				strmap_free(&seen);
				free(ids);
				return;
			}
			ids[n++] = g->ids[i];
		}
	}
	strmap_free(&seen);
	/* entry_gone edits the groups' id lists: work on copies */
	if (n)
		copy = malloc((size_t)n * sizeof(*copy));
	for (int i = 0; copy && i < n; i++) {
		snprintf(copy[i], sizeof(copy[i]), "%s", ids[i]);
		ids[i] = copy[i];
	}
	if (n && copy && al->rc)
		redis_result(al, alert_stream_hold(al->rc, al->cfg.consumer, ids, n, entry_gone, al,
						   err, sizeof(err)), err);
	free(copy);
	free(ids);
}

/*
 * How often orphans are claimed and our held entries refreshed: a quarter
 * of claim_idle (so what we hold never looks idle to others), 1..15 s.
 */
uint64_t claim_every(const struct alerter_config *cfg)
{
	uint64_t every = cfg->claim_idle_ns / 4;

	return every < NSEC_PER_SEC ? NSEC_PER_SEC : every > 15 * NSEC_PER_SEC ?
	       15 * NSEC_PER_SEC : every;
}

/*
 * Take over entries other alerters left idle (a dead or
 * stuck consumer) for claim_idle, page by page with XAUTOCLAIM's cursor,
 * and process them as our own.  Runs at start and every claim_every().
 */
void claim_orphans(struct alerter *al)
{
	char cursor[32] = "0-0", err[300];
	int pages = 0, total = 0, n;

	refresh_held(al);
	do {
		if (!al->rc)
			return;
		n = redis_result(al, alert_stream_claim(al->rc, al->cfg.consumer,
							al->cfg.claim_idle_ns / NSEC_PER_MSEC, cursor,
							take_entry, al, err, sizeof(err)), err);
		if (n < 0)
			return;
		total += n;
	} while (strcmp(cursor, "0-0") && ++pages < 10000);
	if (total)
		log_info("took over %d %s entr%s idle for %.0f s or more (another alerter died?)",
			 total, STREAM, total == 1 ? "y" : "ies",
			 (double)al->cfg.claim_idle_ns / 1e9);
}

void trim_stream(struct alerter *al)
{
	char err[300];
	uint64_t trimmed = 0;

	if (!redis_ready(al))
		return;
	if (redis_result(al, alert_stream_trim(al->rc, time_wall_ns() / NSEC_PER_MSEC,
					       KEY_ALERTS_KEEP_MS, KEY_ALERTS_KEEP_MAX, &trimmed,
					       err, sizeof(err)), err) < 0)
		return;
	al->trimmed += trimmed;
	if (trimmed)
		log_debug("trimmed %llu delivered entr%s from %s", (unsigned long long)trimmed,
			  trimmed == 1 ? "y" : "ies", STREAM);
	/* the fleet's alerts: resolutions kept an hour, pruned once a minute */
	if (time_mono_ns() - al->ix_pruned_ns > 60 * NSEC_PER_SEC && redis_ready(al)) {
		int gone = alert_index_prune(al->rc, time_wall_ns() / NSEC_PER_MSEC,
					     3600ULL * 1000, err, sizeof(err));

		al->ix_pruned_ns = time_mono_ns();
		if (redis_result(al, gone < 0 ? gone : 0, err) >= 0 && gone > 0)
			log_debug("pruned %d resolution(s) older than an hour from "
				  KEY_ALERTS_ACTIVE, gone);
	}
	/* consumers gone (stopped, renamed) with nothing pending: an hour, or 10 claim_idles */
	int removed = 0;
	uint64_t idle = al->cfg.claim_idle_ns * 10 / NSEC_PER_MSEC;

	if (idle < 3600 * 1000)
		idle = 3600 * 1000;
	if (redis_ready(al) &&
	    redis_result(al, alert_stream_prune_consumers(al->rc, al->cfg.consumer, idle, &removed,
							  err, sizeof(err)), err) >= 0 && removed)
		log_info("removed %d consumer(s) of %s idle for %.0f s with nothing pending", removed,
			 STREAM, (double)idle / 1000);
}

void refresh_silences(struct alerter *al, uint64_t now)
{
	char err[256];
	struct silence *s;
	int n;

	if (!al->rc || now - al->silences_at < 5 * NSEC_PER_SEC)
		return;
	al->silences_at = now;
	n = silence_load(al->rc, &s, err, sizeof(err));
	if (n < 0)
		return;
	silence_free_all(al->silences, al->nsilences);
	al->silences = s;
	al->nsilences = n;
}
