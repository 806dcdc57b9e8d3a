/*
 * engine.h - the rules engine: fleet windows, evaluation, alert state,
 * failure-domain rollups, stale hosts.
 *
 * Each host's recent 1 s snapshots are kept (as far back as the longest
 * range in the rules, plus slack).  Every evaluation runs each rule over
 * the live hosts and tracks its alert instances by fingerprint (FNV-64 of
 * alertname and sorted labels): an instance is pending until `for` has
 * passed, then firing; it resolves once its condition has been false for
 * `keep_firing_for`.  Events are emitted only on state changes.
 *
 * Rollup (`rollup: {by: [switch, rack], min_hosts: 3, min_fraction: 0.2}`):
 * the rule's matching hosts page as the smallest failure domain that
 * explains them (decision rule in domain_rollup.c): one domain-level alert
 * listing the affected and total hosts; the host-level alerts it explains
 * are inhibited (counted, not sent).
 *
 * A host whose newest snapshot is older than the stale threshold raises
 * HostSilent (rolled up through every domain level, opts.domains, so a dead
 * rack or switch is one alert) and is left out of every other rule,
 * including their domain totals.
 *
 * Layer contract.  rules/engine includes lib/, rules/lang and itself
 * only.  It turns evaluations into alert state over time: history.c keeps
 * each host's window, alert_state.c pending/firing/resolved and the
 * checkpoint record, domain_rollup.c failure domains, baseline.c and
 * baseline_judge.c post-deploy verdicts, fleet.c the partial aggregates
 * that let sharded workers compare across the fleet, stats.c the
 * statistics, minute_source.c 1-minute rollups rolled from snapshots.
 * Snapshots are handed in (engine_add_snapshot, engine_take_snapshot) or,
 * at start, read through lib/store (engine_load_redis); profiles and
 * rollups come through the loaders in engine_opts; events leave through
 * the callback given to engine_eval.  Which hosts it owns and how
 * it reaches the other workers is struct engine_fleet (fleet.h), passed
 * in by rules/shard.
 */
#ifndef FL_ENGINE_H
#define FL_ENGINE_H

#include <stddef.h>
#include <stdint.h>

struct conn;	/* a connection from conn_open (store/conn.h) */

#include "store/deploy.h"
#include "rules/lang/rules.h"
#include "model/snapshot.h"
#include "core/strmap.h"

/* Built-in rules after the loaded ones in engine.state: HostSilent, HostUndecodable. */
#define ENGINE_BUILTINS 4

struct instance;
struct host_state;
struct profile;

/*
 * Merge host's CPU profile windows with from_ms <= ts <= to_ms into *into
 * (initialised); returns the number of windows or < 0.  The daemon reads
 * them from Redis; tests give them directly.
 */
typedef int (*engine_profile_fn)(void *arg, const char *host, uint64_t from_ms, uint64_t to_ms,
				 struct profile *into);

/*
 * Deliver the 1-minute rollups (tier 60, lib/model/rollup.h) of hosts[0..n)
 * with from_ms <= ts <= to_ms to cb, each host's oldest first (hosts may
 * interleave; s->host names the host), for value baselines.  cb may keep
 * *s by moving it out and zeroing it.  Returns the number delivered or
 * < 0.  The daemon reads fl:{H}:s60; tests and rule unit tests roll their
 * own snapshots up (rules/engine/minute_source.h).
 */
typedef int (*engine_rollup_fn)(void *arg, const char *const *hosts, size_t n, uint64_t from_ms,
				uint64_t to_ms, int (*cb)(struct snapshot *s, void *cbarg),
				void *cbarg);

/* Called with each event's JSON (the fl:alerts contract, lib/model/alert.h). */
typedef void (*engine_event_cb)(const char *json, void *arg);

/* Sharded workers: which hosts this engine evaluates (rules/engine/fleet.h). */
struct engine_fleet;

/*
 * What the daemon sets beside the rules.  Kept by the engine as a whole,
 * so a reload (engine_reload) can never drop one.
 */
struct engine_opts {
	uint64_t stale_ms;		/* a host is silent after this; 0: 5 s */
	const struct topology *topology;	/* optional, not owned */
	char generator_url[200];	/* events' generatorURL: this + "#" + the rule's name */
	/*
	 * Else, when set, faultline-web's address: events' generatorURL is
	 * their incident page, this + "/alert/" + the fingerprint.
	 */
	char web_url[200];
	engine_profile_fn load_profile;	/* for profile baselines; NULL: none */
	engine_rollup_fn load_rollups;	/* for value baselines; NULL: none */
	void *load_rollups_arg;
	/*
	 * How long after a minute ends its rollup may still be on its way to
	 * load_rollups (a probe writes it with its next snapshot): a value
	 * baseline is judged that long after its last minute.  0: at once.
	 */
	uint64_t rollups_delay_ms;
	/*
	 * A verdict's hosts are read a batch at a time (0: 256) for at most
	 * step_ns per rule and evaluation beyond the first batch (0: 50 ms),
	 * so judging a big fleet's deploy never stalls the evaluation loop.
	 */
	unsigned baseline_batch;
	uint64_t baseline_step_ns;
	/*
	 * The fleet's failure-domain levels, outermost first, that HostSilent
	 * and HostUndecodable roll up through; ndomains 0: site, agg (an
	 * aggregation switch), switch, rack.  Levels no host has are skipped.
	 */
	char domains[RULE_MAX_ROLLUP][64];
	int ndomains;
	void *load_profile_arg;
	/*
	 * Templates' $externalLabels (not owned: outlive the engine), as
	 * promtool's external_labels; $externalURL is generator_url.
	 */
	const struct label *external_labels;
	int nexternal_labels;
	const struct engine_fleet *fleet;	/* sharded workers; not owned */
	/*
	 * Keep every series' history, not only what the rules read back in
	 * time (rules/lang/columns.h): for ad-hoc queries (rule unit tests'
	 * promql_expr_test) over any series.
	 */
	int keep_all_history;
	/*
	 * Keep at least this much history (ms), whatever the rules' ranges
	 * need: ad-hoc queries reach further back (a rule test's subqueries).
	 */
	uint64_t min_keep_ms;
	/*
	 * A pending alert taken back from a checkpoint (a restart, a hand-over)
	 * does not count the time nobody evaluated it; when its `for` is longer
	 * than this grace and less than the grace is left, it fires no sooner
	 * than this long after the restore (Prometheus' for-grace-period).
	 * 0: ENGINE_FOR_GRACE_MS.
	 */
	uint64_t for_grace_ms;
	/*
	 * AlertDeliveryBacklog fires while more than this many fl:alerts
	 * entries wait to be delivered (engine_set_alert_backlog).  0:
	 * ENGINE_ALERT_BACKLOG_MAX.
	 */
	uint64_t alert_backlog_max;
	/*
	 * Called with each deploy verdict when it is judged (by the judge alone
	 * under --shard): regression, no regression, confounded (naming the
	 * other deploys of its train) or too little data, as
	 * store/deploy.h's struct deploy_verdict.  NULL: not kept.
	 */
	void (*verdict_cb)(const struct deploy_verdict *v, void *arg);
	void *verdict_arg;
};

#define ENGINE_ALERT_BACKLOG_MAX 100000

#define ENGINE_FOR_GRACE_MS (10ULL * 60 * 1000)

struct engine;

/* A group's evaluations, for /metrics (Prometheus' prometheus_rule_group_* names). */
struct engine_group_stats {
	uint64_t evaluations;		/* rule evaluations, ever */
	uint64_t failures;		/* of them, failed */
	double last_duration_s;		/* the group's last evaluation */
};

/* Group g's (of engine_rules(e)->groups) stats into *out. */
void engine_group_stats(const struct engine *e, int g, struct engine_group_stats *out);

/* What the daemon reports about the engine (its /metrics). */
struct engine_counts {
	size_t hosts;			/* hosts with history */
	uint64_t undecodable;		/* entries that could not be read, ever */
	uint64_t oversize;		/* host reads refused over the read bound, ever */
	size_t quarantined;		/* hosts not read now (entries over the bound) */
	uint64_t eval_errors;		/* rule evaluations that failed, ever */
	uint64_t inhibited;		/* host alerts explained by a domain alert */
};

/*
 * A new engine in *e, taking ownership of rs (parsed rules; emptied, also
 * on error); opts (NULL: defaults) is copied and kept whole, and only
 * engine_set_profile_loader, engine_set_rollup_loader and
 * engine_hold_silent change it later.
 * Returns 0 or -ENOMEM (*e NULL).
 */
int engine_init(struct engine **e, struct ruleset *rs, const struct engine_opts *opts);

/* Free e and everything it holds (NULL is fine). */
void engine_free(struct engine *e);

/* The rules, the options (defaults filled in) and the counts. */
const struct ruleset *engine_rules(const struct engine *e);
const struct engine_opts *engine_options(const struct engine *e);
void engine_counts(const struct engine *e, struct engine_counts *out);

/* Load profile windows for profile baselines through fn (NULL: none). */
void engine_set_profile_loader(struct engine *e, engine_profile_fn fn, void *arg);

/*
 * Load 1-minute rollups for value baselines through fn (NULL: none), which
 * holds a minute delay_ms after it ends (engine_opts.rollups_delay_ms).
 */
void engine_set_rollup_loader(struct engine *e, engine_rollup_fn fn, void *arg,
			      uint64_t delay_ms);

/*
 * Raise no new HostSilent before until_ms: the daemon calls it after a gap
 * in its own evaluations (a restart, a stall), while the probes' spools
 * drain into Redis.
 */
void engine_hold_silent(struct engine *e, uint64_t until_ms);

/*
 * Replace the rules, keeping the state of rules that kept their name, the
 * hosts' history, the options and the deploy markers.
 */
int engine_reload(struct engine *e, struct ruleset *rs);

/*
 * Replace the deploy markers baseline rules look at (copied; oldest
 * first, as deploy_list gives them).  Returns 0 or -ENOMEM.
 */
int engine_set_deploys(struct engine *e, const struct deploy *d, int n);

/*
 * How many fl:alerts entries wait for the alerters (alert_stream_backlog)
 * and since when: the built-in AlertDeliveryBacklog fires at the next
 * evaluation while more than opts.alert_backlog_max do (the stream is not
 * trimmed of them: pages wait, they are not lost), and resolves when they
 * drain.  Under --shard, the worker holding the fleet partition raises it.
 */
void engine_set_alert_backlog(struct engine *e, uint64_t undelivered, uint64_t oldest_ms);

/*
 * How many notifications the alerters dead-lettered in the last hour
 * (fl:alerts:dead: refused by a receiver, given up after give_up_after,
 * unparsable, unrouted): the built-in AlertsDeadLettered fires while there
 * are any — a page that did not reach anyone is itself a page — and
 * resolves an hour after the last.  Under --shard, the fleet's owner's.
 */
void engine_set_dead_letters(struct engine *e, uint64_t last_hour);

/*
 * Add a snapshot of host, newer than the host's others; older history is
 * trimmed.  engine_add_snapshot copies s; engine_take_snapshot moves it
 * into the engine and leaves *s empty (also on error).  Returns 0 or
 * -ENOMEM.
 */
int engine_add_snapshot(struct engine *e, const struct snapshot *s);

/* How many snapshots of host the engine holds (0 for an unknown host). */
size_t engine_history(const struct engine *e, const char *host);

/*
 * Bytes the hosts' history holds (columns_bytes summed; walks every kept
 * histogram, so for summaries, not for every interval) and, in *points,
 * the points it holds.
 */
/* Whether this engine evaluates host (not another --shard worker's). */
int engine_owns_host(const struct engine *e, const char *host);

size_t engine_history_bytes(const struct engine *e, size_t *points);
int engine_take_snapshot(struct engine *e, struct snapshot *s);

/*
 * Read new 1 s snapshots of every registered host from Redis (pipelined),
 * up to until_ms (0: the newest; a replay reads up to the time it is
 * evaluating).  engine_load_hosts: the same for names[0..n) alone, of
 * the hosts this engine already follows and owns (a woken host's, wake.h).
 * Returns the number read, or -EIO.
 */
int engine_load_hosts(struct engine *e, struct conn *rc, char *const *names, size_t n, char *err,
		      size_t errlen);
int engine_load_redis(struct engine *e, struct conn *rc, uint64_t until_ms, char *err,
		      size_t errlen);

/*
 * Evaluate expression n over the hosts that are live at now_ms (as rules
 * see them) into *out (the caller frees it with value_free).  For rule
 * tests' promql_expr_test.  Returns 0, or -EINVAL with the reason in err.
 */
struct node;
struct value;
int engine_query(struct engine *e, const struct node *n, uint64_t now_ms, struct value *out,
		 char *err, size_t errlen);

/* Evaluate every rule at now_ms and emit state changes through cb. */
void engine_eval(struct engine *e, uint64_t now_ms, engine_event_cb cb, void *arg);

/*
 * Alert state checkpoint.  What a restarted (or taking-over) engine must
 * know to resolve what ended while it was down, not to fire again with a
 * new startsAt what is still firing, and not to start a `for` timer again
 * from zero: engine_state_export calls cb once per firing or pending
 * instance with its fingerprint and a JSON record of it (rule, labels,
 * pending, since, last true, the evaluation it was written at, hosts,
 * domain, deploy) and returns how many, or -ENOMEM.
 *
 * engine_state_import takes one such record back before the first
 * evaluation.  A firing instance is firing again with its original
 * startsAt, and the first evaluation resolves it if its condition no
 * longer holds (after keep_firing_for, counted from its last checkpointed
 * true).  A pending one is pending again with the time it had already
 * spent pending (the time between the record and now does not count, as in
 * Prometheus; see engine_opts.for_grace_ms); it fires once the rest of its
 * `for` has passed with the condition still true, and is dropped silently
 * at the first evaluation where it is false.  A firing record of a rule no
 * longer in the rule files is resolved at once through cb, a pending one
 * dropped.  Every field is checked before anything is taken (a record is
 * outside input: any writer of the checkpoint's key wrote it): a record
 * of the wrong shape is refused whole.  Returns 0 (restored), 1 (resolved
 * or dropped), -EINVAL (err says why, with the field) or -ENOMEM.
 */
typedef void (*engine_state_cb)(const char *fp, const char *json, void *arg);

/*
 * Sharded workers: drop, without resolving, every alert (firing or pending)
 * whose checkpoint record keep() rejects, and the history of every host
 * opts.fleet->owns_host no longer claims: another worker evaluates them
 * now.  Returns how many alerts were dropped.
 */
int engine_forget(struct engine *e, int (*keep)(const char *json, void *arg), void *arg);

/* Call cb(host, count) for every host with unreadable entries so far. */
void engine_undecodable(const struct engine *e,
			void (*cb)(const char *host, uint64_t n, void *arg), void *arg);
int engine_state_export(const struct engine *e, engine_state_cb cb, void *arg);

/*
 * What an alert is about, from its JSON: a record of engine_state_export,
 * or an event (model/alert.h, whose labels name its host).  Returns 1 for
 * the fleet (a deploy verdict, or an alert about no host), 0 with its host
 * (its host label, else its first host) in host, -1 when json is not an
 * object.  The record's field names are spelled here and in the exporter
 * only.
 */
int engine_alert_subject(const char *json, char *host, size_t hostlen);
/*
 * A checkpoint record (engine_state_export's JSON) as PromQL's ALERTS
 * series names it: alertname, severity and the alert's labels, malloc'd
 * into l[0..max) (unsorted); *since_ms when it went pending, *fired_ms
 * when it fired (0: still pending).  Returns the number of labels, or -1
 * for a record of the wrong shape or with more than max labels (nothing
 * allocated).
 */
struct label;
int engine_alert_series(const char *json, struct label *l, int max, uint64_t *since_ms,
			uint64_t *fired_ms);
int engine_state_import(struct engine *e, const char *fp, const char *json, uint64_t now,
			engine_event_cb cb, void *arg, char *err, size_t errlen);

/*
 * A number that changes whenever an alert starts pending, fires or ends:
 * the checkpoint is worth writing again when it moved.
 */
uint64_t engine_state_generation(const struct engine *e);

/*
 * How many alerts are pending (inside their `for`): while any is, the
 * checkpoint is written every evaluation, so a restart loses at most one
 * interval of their timers.
 */
size_t engine_pending_alerts(const struct engine *e);

/*
 * A checkpoint being read back: engine_import_entry (an engine_state_cb,
 * arg the struct) imports each record as above, logs one it cannot take
 * and counts what was restored and resolved.
 */
struct engine_import {
	struct engine *e;
	uint64_t now;
	engine_event_cb cb;
	void *arg;
	int restored, resolved;
	int refused;		/* records of the wrong shape: logged, skipped */
};
void engine_import_entry(const char *fp, const char *json, void *arg);

/*
 * Call cb for every firing instance of alertname (labels as an event's
 * labels: the alert's own, plus alertname and severity).
 */
typedef void (*engine_firing_cb)(const struct label *labels, int nlabels,
				 const struct label *annotations, int nannotations, void *arg);
void engine_firing(const struct engine *e, const char *alertname, engine_firing_cb cb, void *arg);

#endif
