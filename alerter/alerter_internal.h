/*
 * alerter_internal.h - what the alerter's modules share: its state, a
 * group of alerts and its notification, and the functions each module
 * gives the others.
 *
 *   stream.c    fl:alerts through the consumer group: the connection and its
 *               backoff, reading (new, our pending list, others' orphans),
 *               acknowledging, dead letters, records, silences
 *   groups.c    an event into its route's group: dedup, newest state wins
 *   mute.c      what mutes a notification: time intervals, inhibition,
 *               silences
 *   delivery.c  a group's notification: when it is due, the POST (libcurl
 *               multi), retries, what a 2xx or a refusal settles
 *   main.c      options, the loop, /metrics
 *
 * See alerter.h for the flow and the delivery guarantees.
 */
#ifndef FL_ALERTER_INTERNAL_H
#define FL_ALERTER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <curl/curl.h>

#include "alerter/alerter.h"
#include "core/backoff.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "store/alert_index.h"
#include "store/keyspace.h"

#define STREAM KEY_ALERTS		/* for messages; store/keyspace.h owns them */
#define DEAD_STREAM KEY_ALERTS_DEAD
#define GROUP KEY_ALERTS_GROUP
#define PAGE 100			/* entries per XREADGROUP / XAUTOCLAIM page */

/*
 * A group as this alerter knows it: its key and id, the fl:alerts entries
 * it holds for it (acknowledged once a notification of a version that
 * covers them is settled), its timers, and the notification in flight.  Its
 * alerts are not kept here but in Redis (store/alert_group.h), loaded for
 * each notification, so every alerter notifies the same group state.
 */
struct group {
	char *key;			/* INTEGRATION:ROUTE_ID:{labels} (the flat list's: RECEIVER:{labels}) */
	char *pkey;			/* the groupKey payloads carry: Alertmanager's ROUTE_KEY:{labels} */
	char gid[33];			/* alert_group_id(key) */
	int integration;		/* cfg.integrations[] it notifies */
	const struct route *route;	/* its route in cfg.root (time intervals) */
	uint64_t group_wait_ns, group_interval_ns, repeat_interval_ns;	/* its route's */
	struct label *glabels;		/* the group labels (owned) */
	int ngl;
	struct group_alert **alerts;	/* as last loaded (for the payload) */
	int nalerts;
	char (*ids)[32];		/* stream entries held for this group, unacked */
	int nids;
	uint64_t created_ns, last_sent_ns;
	int changed, sent_once;
	int firing;			/* the last notification had a firing alert */
	int page;			/* a firing severity="page" alert came in (page_group_wait) */
	int muted_firing;		/* a firing alert was muted: look again at group_interval */
	uint64_t load_retry_ns;		/* the group could not be loaded: not before */
	uint64_t looked_ns;		/* last load (muted alerts are looked at again) */
	char content[65];		/* what the last notification said (content_key) */
	/* the notification in flight or waiting to be retried */
	CURL *easy;
	struct curl_slist *hdrs;
	struct curl_slist *connect_to;	/* tls_config.server_name */
	char url[600];			/* the URL with server_name as its host */
	struct strbuf body;
	char idem[65];
	uint64_t sent_version;		/* the group version it carries */
	uint64_t mark_version;		/* recorded as notified once settled (0: not all was) */
	char (*done_fps)[33];		/* resolutions it settles (sent or muted) */
	char (*done_ids)[32];
	int ndone;
	size_t done_fps_cap, done_ids_cap;
	int nids_sent;
	int attempts;
	uint64_t first_attempt_ns;
	struct backoff backoff;
	uint64_t retry_at_ns;
	int pending;			/* a notification exists (in flight or waiting) */
	int in_flight;
	char errbuf[CURL_ERROR_SIZE];
	char answer[400];		/* the start of the receiver's answer, for logs */
	size_t answer_len;
};

struct alerter {
	struct alerter_config cfg;	/* swapped on SIGHUP under cfg_lock (written) */
	pthread_rwlock_t cfg_lock;	/* the API's thread reads cfg under it */
	struct conn *rc;
	char redis_shown[512];		/* the URL with its password masked, for logs */
	CURLM *multi;
	struct group **groups;
	int ngroups;
	int inflight[MAX_INTEGRATIONS];
	struct silence *silences;
	int nsilences;
	uint64_t silences_at;
	struct alert_index ix;		/* the fleet's firing alerts, for inhibit_rules */
	int ix_loaded;
	int ix_backfilled;		/* alert_index_backfill ran (once per process) */
	int taken_up;			/* groups_take_up ran (once per process) */
	uint64_t ix_pruned_ns;		/* last prune of its old resolutions (mono) */
	struct strmap held;		/* entry ids some group holds unacked */
	int read_pending;		/* our own pending list must be read (start, reconnect) */
	uint64_t claim_at_ns;		/* next XAUTOCLAIM + refresh of held entries */
	struct backoff redis_backoff;	/* Redis unreachable or answering errors */
	uint64_t redis_retry_at_ns;
	uint64_t redis_error_said_ns;	/* rate limit for repeated Redis errors */
	/* self-monitoring (--metrics-addr), named as Alertmanager names them */
	uint64_t sent[MAX_INTEGRATIONS], failed[MAX_INTEGRATIONS], refused[MAX_INTEGRATIONS];
	uint64_t received[2];		/* events read: [0] resolved, [1] firing */
	uint64_t dead_letters, redis_errors, redis_reconnects;
	uint64_t trimmed;		/* delivered entries trimmed from fl:alerts */
	uint64_t bad_records;		/* group records of the wrong shape, skipped */
	uint64_t superseded;		/* notifications rebuilt before a retry: newer state */
	uint64_t gave_up;		/* notifications dead-lettered after give_up_after */
};

/* ---- stream.c ---- */

/* The connection failed: drop it, back off, reconnect later (ensure_redis). */
void redis_lost(struct alerter *al);

/*
 * What an alert_stream call returned, applied: a dropped connection is
 * dropped here too, a refusal backs off; a stream or group that is gone
 * (Redis restarted empty) reconnects, which creates the group again.
 * Returns ret, or -1 for any failure.
 */
int redis_result(struct alerter *al, int ret, const char *err);

/* 1 when Redis work may run now. */
int redis_ready(struct alerter *al);

/*
 * Connect when there is no connection and the backoff allows (the
 * consumer group created if missing; our pending list to be read back).
 * Returns 0 when connected, -1 when not (yet).
 */
int ensure_redis(struct alerter *al);

/*
 * Acknowledge ids (one XACK) and forget them.  Returns 0, or -1 when the
 * acknowledgement was not confirmed (the entries stay pending in Redis and
 * are read again after the reconnect; what they carry is then a repeat).
 */
int ack(struct alerter *al, char (*ids)[32], int n);

/* ack() of one entry. */
int ack_one(struct alerter *al, const char *id);

/*
 * Put a dead letter on fl:alerts:dead: why, which group and receiver (empty
 * when it never reached one), the stream entries it stands for, and the
 * event or notification body.  One shape for every reason.  Returns 0 once
 * Redis has it; the caller acknowledges the entries only then.
 */
int dead_letter(struct alerter *al, const char *reason, const char *group, const char *receiver,
		const char *ids, const char *body, size_t len);

/* Append a record of what happened to a notification (sent, silenced). */
void record(struct alerter *al, const char *what, const char *group, const char *detail);

/*
 * XREADGROUP from `from`: ">" for new entries (blocking up to block_ms),
 * or an id to page through our own pending list.  Returns the number of
 * entries, 0 when none, -1 on an error (connection dropped or backed off).
 */
int read_entries(struct alerter *al, const char *from, int block_ms, char *last, size_t lastlen);

/*
 * Read our whole pending list back, a page at a time (after a start or a
 * reconnect: what a previous run, or this one before the connection
 * dropped, read but never settled).  Entries a group already holds are
 * skipped by take_event.
 */
void read_own_pending(struct alerter *al);

/*
 * How often orphans are claimed and our held entries refreshed: a quarter
 * of claim_idle (so what we hold never looks idle to others), 1..15 s.
 */
uint64_t claim_every(const struct alerter_config *cfg);

/*
 * Take over entries other alerters left idle (a dead or
 * stuck consumer) for claim_idle, page by page with XAUTOCLAIM's cursor,
 * and process them as our own.  Runs at start and every claim_every().
 */
void claim_orphans(struct alerter *al);

/*
 * Trim fl:alerts of entries every consumer group has acknowledged (kept a
 * while, see KEY_ALERTS_KEEP_MS), never one still to deliver.  Runs with
 * claim_orphans.
 */
void trim_stream(struct alerter *al);

/* Reload the silences from Redis, at most every 5 s. */
void refresh_silences(struct alerter *al, uint64_t now);

/* ---- groups.c ---- */

/* Free an alert a group held (or never took). */
void drop_alert(struct group_alert *ga);

/*
 * Take stream entry id (an event, json) into its group's state in Redis
 * (alert_group_take).  An entry some group already holds is a re-read (our
 * pending list after a reconnect, a claim): it is skipped.  Otherwise it
 * is dead-lettered (unparsable, no route), or held by its group until a
 * notification of a version that covers it is settled — also when it told
 * nothing new but the group has a version not yet notified (a restart: the
 * state is there, its notification is not) — or acknowledged at once when
 * it told nothing new to a group already notified.  A silence plays no part
 * here: it mutes notifications, never state.
 */
void take_event(struct alerter *al, const char *id, const char *json, size_t len);

/*
 * Once an alerter is connected: take up every group in Redis whose newest
 * version no alerter notified and that holds a firing alert (all muted
 * when it was read, whose entries were acknowledged; or an alerter that
 * stopped before it sent), so it is looked at again and sent once nothing
 * mutes it, whatever alerter holds it.  Returns 0 or -1 (Redis; said).
 */
int groups_take_up(struct alerter *al);

/*
 * Release ids[0..n) held by one group: an entry every group holding it has
 * released is acknowledged (one XACK).  Returns ack()'s result.
 */
int release(struct alerter *al, char (*ids)[32], int n);

/* Free groups with nothing held, nothing in flight and nothing firing. */
void prune_groups(struct alerter *al);

/* ---- delivery.c ---- */

/*
 * When g next wants something done (mono ns): a retry, acknowledging what
 * it holds, its first notification after group_wait, a change after
 * group_interval, a repeat; UINT64_MAX when nothing.
 */
uint64_t group_due_at(const struct alerter *al, const struct group *g);

/*
 * Decide whether g should send now; if so load its state from Redis, mute
 * what silences match, and build and start the notification (or settle
 * without one: a version already notified, by us or a peer; nothing left
 * once muted).  A retry re-reads the group's version first and rebuilds
 * from the newest state when it moved.
 */
void maybe_send(struct alerter *al, struct group *g, uint64_t now);

/*
 * A notification's transfer ended (msg from curl_multi_info_read): a 2xx
 * acknowledges every entry it carried, a refusal dead-letters them, anything
 * else is retried after the group's backoff.
 */
void on_done(struct alerter *al, CURLMsg *msg);

/* Free g and cancel its transfer (its entries stay pending in Redis). */
void group_free(struct alerter *al, struct group *g);

/* Free every group and cancel its transfer (the entries stay pending in Redis). */
void free_groups(struct alerter *al);

#endif
