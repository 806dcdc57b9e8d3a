/*
 * main.c - faultline-rules: evaluate rule files over the snapshots probes
 * write to Redis and append firing/resolved events to fl:alerts for
 * faultline-alerter (the event format is lib/model/alert.h).
 *
 * Every interval (main's loop): read each host's new 1 s snapshots
 * (read_inputs: the connection, the checkpoint at start, a --shard
 * worker's round, new history, deploy markers, the alert backlog), then
 * evaluate every rule and write its state changes with the checkpoint
 * (evaluate).  SIGHUP reloads the rule files; a reload with an error keeps
 * the running rules and logs why.  The command line is options.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/array.h"
#include "core/backoff.h"
#include "core/config.h"
#include "core/log.h"
#include "core/metrics_server.h"
#include "core/notify.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "rules/daemon_metrics.h"
#include "rules/engine/engine.h"
#include "rules/options.h"
#include "rules/redis_inputs.h"
#include "rules/shard/outbox.h"
#include "rules/shard/worker.h"
#include "store/alert_stream.h"
#include "store/conn.h"
#include "store/deploy.h"
#include "store/wake.h"

static volatile sig_atomic_t stopping, reload;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload = 1;
	else
		stopping = 1;
}

static int load_all(struct ruleset *rs, const struct rules_options *o)
{
	char err[512];

	memset(rs, 0, sizeof(*rs));
	for (int i = 0; i < o->nfiles; i++) {
		if (rules_load(rs, o->files[i], err, sizeof(err))) {
			log_error("%s", err);
			rules_free(rs);
			return -1;
		}
	}
	if (rules_runbook_base(rs, o->runbook_base, err, sizeof(err))) {
		log_error("--runbook-base: %s", err);
		rules_free(rs);
		return -1;
	}
	return 0;
}

/* How many hosts the engine holds history of. */
static size_t engine_hosts(const struct engine *e)
{
	struct engine_counts n;

	engine_counts(e, &n);
	return n.hosts;
}

/* What the daemon itself knows for /metrics (rules/daemon_metrics.h). */
static struct rules_daemon_stats dstats = { .reload_ok = 1 };

/*
 * Redis is away or refusing: wait the next backoff delay (0.5 s x 1.5, up
 * to 5 s, jittered), saying why on the first failure and then once a minute.
 */
static void redis_wait(struct backoff *bo, const char *why)
{
	static uint64_t said_ns;
	uint64_t delay = backoff_next(bo), now = time_mono_ns();

	if (bo->attempts == 1 || !said_ns || now - said_ns >= 60 * NSEC_PER_SEC) {
		log_warn("%s; retrying (next in %.1f s)", why, (double)delay / 1e9);
		said_ns = now;
	}
	usleep((useconds_t)(delay / 1000));
}

#define DEPLOYS_EVERY_NS (10 * NSEC_PER_SEC)
/* the checkpoint is written with every event, and refreshed this often */
#define CHECKPOINT_EVERY_NS (10 * NSEC_PER_SEC)

/* How often the fl:alerts backlog is read (AlertDeliveryBacklog). */
#define BACKLOG_EVERY_NS (5 * NSEC_PER_SEC)

/* Deploy verdicts held while Redis is away (each ~1.5 KB); past it, logged and dropped. */
#define VERDICTS_QUEUED_MAX 10000
/* fl:wake: hosts taken per read, and the least time between two early evaluations */
#define WAKE_BATCH 256
#define WAKE_GAP_NS (100 * NSEC_PER_MSEC)

/*
 * Tell the engine how many fl:alerts entries wait for the alerters; over
 * the bound, say so (once a minute) with what to do.
 */
static void read_backlog(struct engine *e, struct conn *rc, uint64_t *said)
{
	uint64_t n, oldest, now = time_mono_ns();
	char err[256];

	if (alert_stream_backlog(rc, &n, &oldest, err, sizeof(err)) < 0) {
		log_warn("%s; the alert backlog is not known this time", err);
		return;
	}
	engine_set_alert_backlog(e, n, oldest);
	dstats.backlog = n;
	if (alert_stream_dead_since(rc, time_wall_ns() / NSEC_PER_MSEC - 3600 * 1000, &n, &oldest,
				    err, sizeof(err)) < 0)
		log_warn("%s; dead letters are not known this time", err);
	else
		engine_set_dead_letters(e, n);
	if (n > engine_options(e)->alert_backlog_max &&
	    (!*said || now - *said >= 60 * NSEC_PER_SEC)) {
		log_error("%llu alert events wait in fl:alerts for an alerter (oldest %.0f s ago, "
			  "bound %llu): is faultline-alerter running and reaching its receivers? "
			  "Nothing is trimmed before it is delivered; AlertDeliveryBacklog fires",
			  (unsigned long long)n, oldest ? (double)(time_wall_ns() / NSEC_PER_MSEC -
			  oldest) / 1000 : 0.0, (unsigned long long)engine_options(e)->alert_backlog_max);
		*said = now;
	}
}

struct deploy_buf {
	struct deploy *d;
	int n, cap;
};

static int keep_deploy(const struct deploy *d, void *arg)
{
	struct deploy_buf *b = arg;

	if (ARRAY_GROW(b->d, b->cap, b->n + 1, 16))
		return -1;
	b->d[b->n++] = *d;
	return 0;
}

/*
 * Give the engine the deploy markers its baseline rules can still judge at
 * time now (ms): the last day and their windows; nothing to do without
 * baseline rules.
 */
static int load_deploys(struct engine *e, struct conn *rc, uint64_t now, char *err,
			size_t errlen)
{
	uint64_t back = 0;
	struct deploy_buf b = { 0 };
	int n;

	for (int g = 0; g < engine_rules(e)->ngroups; g++)
		for (int i = 0; i < engine_rules(e)->groups[g].nrules; i++)
			if (engine_rules(e)->groups[g].rules[i].baseline.window_ns / NSEC_PER_MSEC > back)
				back = engine_rules(e)->groups[g].rules[i].baseline.window_ns / NSEC_PER_MSEC;
	if (!back)
		return 0;
	back = 2 * back + 24ULL * 3600 * 1000;
	n = deploy_list(rc, now > back ? now - back : 0, NULL, keep_deploy, &b, err, errlen);
	if (n >= 0)
		engine_set_deploys(e, b.d, b.n);
	free(b.d);
	return n;
}

/* A running faultline-rules: what lives across intervals. */
struct daemon {
	const struct rules_options *o;
	struct engine *e;
	struct worker *worker;		/* --shard */
	struct topology topo;
	struct conn *rc;		/* NULL while Redis is away */
	struct outbox ob;
	struct backoff redis_bo;
	struct metrics_server *metrics;
	struct strbuf ms;		/* the /metrics body */
	uint64_t clock_ms, replay_t0;	/* --replay: its clock (ms), its start (mono ns) */
	int restored;			/* the checkpoint was read (or need not be) */
	int said_ready;			/* READY=1 after the first evaluation (systemd) */
	long events_total;
	/* mono ns: */
	uint64_t deploys_read;		/* the last fl:deploys read */
	uint64_t overrun_said;		/* the last overrun warning */
	uint64_t state_written;		/* the last checkpoint written */
	uint64_t backlog_read, backlog_said;
	uint64_t outage_since;		/* Redis went away; 0 while it answers */
	uint64_t gen_written;		/* engine_state_generation at that write */
	struct deploy_verdict *verdicts;	/* judged, not yet in Redis */
	int nverdicts, cap_verdicts;
	/* fl:wake (store/wake.h): hosts to evaluate before the next tick */
	struct wake_cursor wake;
	int wake_ready;			/* the cursor is set (on this connection's Redis) */
	uint64_t wake_off_until;	/* mono ns: waking failed, the tick alone until then */
	uint64_t wake_evaluated;	/* mono ns: the last early evaluation */
	uint64_t wake_busy_said;
	uint64_t eval_ns;		/* how long the last evaluation took */
};

/* engine_opts.verdict_cb: keep it until Redis has it (--once, which prints, keeps none). */
static void queue_verdict(const struct deploy_verdict *v, void *arg)
{
	struct daemon *d = arg;

	if (d->o->once)
		return;
	if (d->nverdicts >= VERDICTS_QUEUED_MAX ||
	    ARRAY_GROW(d->verdicts, d->cap_verdicts, d->nverdicts + 1, 4)) {
		log_error("verdict %s of %s on deploy %s %s (%s) is not kept: %d verdicts wait "
			  "for Redis already", v->verdict, v->rule, v->service, v->version, v->id,
			  d->nverdicts);
		return;
	}
	d->verdicts[d->nverdicts++] = *v;
}

/* Write the queued verdicts (faultline deploy list shows them); what fails waits. */
static void write_verdicts(struct daemon *d)
{
	char err[256];
	int done = 0;

	while (done < d->nverdicts && d->rc) {
		int ret = deploy_verdict_put(d->rc, &d->verdicts[done], err, sizeof(err));

		if (ret == -EIO) {
			log_warn("%s; the verdict is written again next interval", err);
			break;
		}
		if (ret)
			log_error("%s; not kept", err);
		done++;
	}
	memmove(d->verdicts, d->verdicts + done,
		(size_t)(d->nverdicts - done) * sizeof(*d->verdicts));
	d->nverdicts -= done;
}

/* Rules, topology, engine (and worker), signals, /metrics.  0 or the exit status. */
static int daemon_start(struct daemon *d, const struct rules_options *o)
{
	struct engine_opts eopts = o->eopts;
	struct ruleset rs;
	const char *topo_path = o->topo_path;
	char err[512];

	d->o = o;
	if (load_all(&rs, o))
		return 1;
	if (!topo_path) {
		static char found[600];

		topo_path = cfg_find("topology.yaml", 1, found, sizeof(found));
	}
	if (topo_path && topology_load(&d->topo, topo_path, err, sizeof(err))) {
		log_error("%s", err);
		return 1;
	}
	eopts.topology = &d->topo;
	eopts.verdict_cb = queue_verdict;
	eopts.verdict_arg = d;
	if (o->shard) {
		d->worker = worker_new(o->worker_name, o->interval, &rs, &eopts, err, sizeof(err));
		if (!d->worker) {
			log_error("%s", err);
			rules_free(&rs);
			return 1;
		}
	}
	if (engine_init(&d->e, &rs, &eopts))
		return 1;
	dstats.reload_ok_s = (double)time_wall_ns() / 1e9;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if (o->metrics_addr && o->metrics_addr[0]) {
		d->metrics = metrics_server_start(o->metrics_addr, o->web_config, err, sizeof(err));
		if (!d->metrics) {
			log_error("%s", err);
			return 1;
		}
	}
	conn_url_redacted(o->url, err, sizeof(err));
	log_info("evaluating %d rule group(s) every %.1f s against %s",
		 engine_rules(d->e)->ngroups, (double)o->interval / 1e9, err);
	d->ob = (struct outbox){ .once = o->once, .worker = d->worker,
				 .wait_replicas = o->wait_replicas,
				 .wait_timeout_ms = o->interval / 4 / NSEC_PER_MSEC };
	backoff_init(&d->redis_bo, 0, 5 * NSEC_PER_SEC);
	d->clock_ms = o->replay_from;
	return 0;
}

/*
 * A replay evaluates the stored history on its own clock, flat out or
 * --replay-speed times faster than real time (so that an alerter sees the
 * events spaced as they would have been, only closer).  Returns 0, or 1
 * once the clock is past the end.
 */
static int replay_tick(struct daemon *d, uint64_t t0)
{
	const struct rules_options *o = d->o;

	d->clock_ms += o->interval / NSEC_PER_MSEC;
	if (d->clock_ms > o->replay_to)
		return 1;
	if (!d->replay_t0)
		d->replay_t0 = t0;
	if (o->speed > 0) {
		uint64_t due = d->replay_t0 +
			       (uint64_t)((double)(d->clock_ms - o->replay_from) * 1e6 / o->speed);

		if (due > t0)
			usleep((useconds_t)((due - t0) / 1000));
	}
	return 0;
}

static void reload_rules(struct daemon *d)
{
	struct ruleset nrs;

	reload = 0;
	dstats.reload_ok = load_all(&nrs, d->o) == 0 && engine_reload(d->e, &nrs) == 0;
	if (dstats.reload_ok) {
		dstats.reload_ok_s = (double)time_wall_ns() / 1e9;
		log_info("reloaded %d rule file(s)", d->o->nfiles);
	} else {
		log_warn("reload failed (see above); keeping the running rules");
	}
}

/*
 * Redis failed with why: drop the connection and wait the next backoff
 * delay.  outage: the snapshots could not be read, so hosts may look silent
 * once it is back (redis_back).
 */
static void redis_failed(struct daemon *d, uint64_t t0, const char *why, int outage)
{
	if (d->rc)
		conn_close(d->rc);
	d->rc = d->ob.rc = NULL;
	if (outage && !d->outage_since && d->restored)
		d->outage_since = t0;
	redis_wait(&d->redis_bo, why);
}

/*
 * Probes spooled while Redis was away and are draining now: a host is not
 * silent until it had as long as the outage (at most 10 min) plus --stale
 * to catch up.
 */
static void redis_back(struct daemon *d, uint64_t t0, uint64_t now)
{
	uint64_t gap = (t0 - d->outage_since) / NSEC_PER_MSEC;

	gap = gap > 600000 ? 600000 : gap;
	engine_hold_silent(d->e, now + gap + engine_options(d->e)->stale_ms);
	log_info("Redis is back after %.0f s; HostSilent waits %.0f s while probes drain their "
		 "spools", (double)(t0 - d->outage_since) / 1e9,
		 (double)(gap + engine_options(d->e)->stale_ms) / 1000);
}

/*
 * What an evaluation at now reads: the connection, the checkpoint before
 * the first one, a worker's round, new history (*nread snapshots), deploy
 * markers, the backlog.  Returns 0, 1 to try again next interval (Redis
 * failed, said and waited for), or 2 to exit (--once without Redis).
 */
static int read_inputs(struct daemon *d, uint64_t t0, uint64_t now, int *nread)
{
	const struct rules_options *o = d->o;
	char err[512];

	if (!d->rc) {
		d->rc = conn_open(o->url, 2 * NSEC_PER_SEC, err, sizeof(err));
		d->ob.conn_gen++;
		if (!d->rc) {
			if (o->once) {
				log_error("%s", err);
				return 2;
			}
			redis_failed(d, t0, err, 1);
			return 1;
		}
	}
	d->ob.rc = d->rc;
	/*
	 * Before the first evaluation: what fired before this start (the
	 * checkpoint), so that it keeps its startsAt or resolves.  A what-if
	 * run (--once, --replay) neither reads nor writes it.
	 */
	if (!d->restored && !o->once && !o->replay_to && !d->worker &&
	    outbox_restore(&d->ob, d->e, now)) {
		redis_failed(d, t0, "the alert checkpoint cannot be read", 0);
		return 1;
	}
	d->restored = 1;
	if (d->worker && worker_round(d->worker, d->e, d->rc, now, outbox_emit, &d->ob, err,
				      sizeof(err))) {
		redis_failed(d, t0, err, 0);
		return 1;
	}
	*nread = engine_load_redis(d->e, d->rc, o->replay_to ? d->clock_ms : 0, err, sizeof(err));
	if (*nread < 0) {
		redis_failed(d, t0, err, 1);
		return 1;
	}
	backoff_reset(&d->redis_bo);
	if (d->outage_since && !o->replay_to)
		redis_back(d, t0, now);
	d->outage_since = 0;
	/*
	 * A verdict waits a whole baseline window after its deploy, so reading
	 * the markers every DEPLOYS_EVERY_NS rather than every interval loses nothing.
	 */
	if (!d->deploys_read || t0 - d->deploys_read >= DEPLOYS_EVERY_NS) {
		if (load_deploys(d->e, d->rc, o->replay_to ? o->replay_to :
				 time_wall_ns() / NSEC_PER_MSEC, err, sizeof(err)) < 0)
			log_warn("%s; baseline rules judge no new deploy until it works", err);
		else
			d->deploys_read = t0;
	}
	if (!o->once && !o->replay_to &&
	    (!d->backlog_read || t0 - d->backlog_read >= BACKLOG_EVERY_NS)) {
		read_backlog(d->e, d->rc, &d->backlog_said);
		d->backlog_read = t0;
	}
	return 0;
}

/* Whether this interval writes the checkpoint (with its events, or to refresh it). */
static int checkpoint_due(const struct daemon *d, uint64_t t0)
{
	const struct rules_options *o = d->o;

	return !o->once && (!o->replay_to || d->worker) &&
	       (d->ob.n || d->ob.state_dirty || !d->state_written ||
		engine_state_generation(d->e) != d->gen_written || engine_pending_alerts(d->e) ||
		t0 - d->state_written >= CHECKPOINT_EVERY_NS);
}

/* Tell systemd, refresh /metrics and log one interval's work. */
static void report_interval(struct daemon *d, uint64_t t0, uint64_t t_read, uint64_t t_eval,
			    int nread)
{
	int nrules = 0;

	if (!d->said_ready) {
		char status[200];

		snprintf(status, sizeof(status), "evaluating %d rule group(s) over %zu host(s)",
			 engine_rules(d->e)->ngroups, engine_hosts(d->e));
		notify_ready(status);
		d->said_ready = 1;
	}
	notify_watchdog();
	if (d->metrics) {
		dstats.redis_up = d->rc != NULL;
		dstats.events = d->events_total + d->ob.n;
		dstats.eval_s = (double)(t_eval - t_read) / 1e9;
		rules_metrics_render(d->e, d->worker, &d->ob, &dstats, &d->ms);
		metrics_server_set_body(d->metrics, strbuf_str(&d->ms), d->ms.len);
	}
	for (int g = 0; g < engine_rules(d->e)->ngroups; g++)
		nrules += engine_rules(d->e)->groups[g].nrules;
	d->events_total += d->ob.n;
	log_msg(d->o->intervals ? LOG_INFO : LOG_DEBUG,
		"interval: read %d snapshot(s) in %.1f ms, evaluated %d rule(s) over %zu host(s) "
		"in %.1f ms, %d event(s)", nread, (double)(t_read - t0) / 1e6, nrules,
		engine_hosts(d->e), (double)(t_eval - t_read) / 1e6, d->ob.n);
}

/* Evaluate every rule at now and write the events (and the checkpoint when due). */
static void evaluate(struct daemon *d, uint64_t t0, uint64_t now, int nread)
{
	uint64_t t_read = time_mono_ns(), gen;
	int with_state;

	d->ob.rc = d->rc;
	d->ob.n = 0;
	engine_set_profile_loader(d->e, rules_redis_profiles, &d->ob);
	engine_set_rollup_loader(d->e, rules_redis_rollups, &d->ob, RULES_ROLLUP_DELAY_MS);
	engine_eval(d->e, now, outbox_emit, &d->ob);
	d->eval_ns = time_mono_ns() - t_read;
	with_state = checkpoint_due(d, t0);
	gen = engine_state_generation(d->e);
	if (outbox_flush(&d->ob, d->e, with_state)) {
		conn_close(d->rc);
		if (!d->outage_since)
			d->outage_since = t0;
		d->rc = d->ob.rc = NULL;
	} else if (with_state && !d->ob.state_dirty) {
		d->state_written = t0;
		d->gen_written = gen;
	}
	if (d->nverdicts)
		write_verdicts(d);
	report_interval(d, t0, t_read, time_mono_ns(), nread);
}

/* The hosts one fl:wake read named that this engine owns (deduplicated). */
struct woken {
	const struct engine *e;
	char names[WAKE_BATCH][256];
	char *ptr[WAKE_BATCH];
	size_t n;
};

static int want_woken(const char *host, void *arg)
{
	struct woken *w = arg;

	if (!engine_owns_host(w->e, host))
		return 0;
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->names[i], host))
			return 1;
	if (w->n < WAKE_BATCH) {
		snprintf(w->names[w->n], sizeof(w->names[0]), "%s", host);
		w->ptr[w->n] = w->names[w->n];
		w->n++;
	}
	return 1;
}

/*
 * Evaluate now for the woken hosts: read their new snapshots (only
 * theirs: the others' were read at the tick) and evaluate every rule, so
 * that a page a moved counter makes does not wait for the next tick.
 */
static void evaluate_woken(struct daemon *d, struct woken *w)
{
	uint64_t t0 = time_mono_ns();
	char err[512];
	int nread;

	nread = engine_load_hosts(d->e, d->rc, w->ptr, w->n, err, sizeof(err));
	if (nread < 0) {
		log_warn("reading the woken host(s) %s...: %s; they are evaluated at the next tick",
			 w->ptr[0], err);
		return;
	}
	log_debug("woken by %zu host(s) (%s...): evaluating now", w->n, w->ptr[0]);
	d->wake_evaluated = t0;
	dstats.wakes++;
	evaluate(d, t0, time_wall_ns() / NSEC_PER_MSEC, nread);
}

/*
 * Wait for fl:wake until t0 + interval; evaluate whenever a host this
 * engine owns is named, at most every WAKE_GAP_NS (the wakes of a switch's
 * hosts, a few ms apart, make one evaluation), and not while an
 * evaluation takes more than a quarter of the interval (waking would
 * then cost the tick its time).  Returns at the end of the interval.
 */
static void wait_for_wakes(struct daemon *d, uint64_t t0)
{
	uint64_t interval = d->o->interval;
	char err[512];

	while (!stopping && !reload && d->rc) {
		uint64_t now = time_mono_ns(), left;
		struct woken w = { .e = d->e };
		int n;

		if (now - t0 >= interval)
			return;
		left = interval - (now - t0);
		if (d->wake_evaluated && now - d->wake_evaluated < WAKE_GAP_NS) {
			uint64_t gap = WAKE_GAP_NS - (now - d->wake_evaluated);

			usleep((useconds_t)((gap < left ? gap : left) / 1000));
			continue;
		}
		if (!d->wake_ready) {
			if (wake_cursor_init(d->rc, &d->wake, err, sizeof(err)))
				break;
			d->wake_ready = 1;
		}
		n = wake_wait(d->rc, &d->wake, left / NSEC_PER_MSEC > 1000 ? 1000 :
			      (int)(left / NSEC_PER_MSEC) + 1, want_woken, &w, err, sizeof(err));
		if (n < 0)
			break;
		if (!n || !w.n)
			continue;
		if (d->eval_ns > interval / 4) {
			if (!d->wake_busy_said || now - d->wake_busy_said >= 60 * NSEC_PER_SEC) {
				log_warn("an evaluation takes %.0f ms, over a quarter of the interval: "
					 "woken hosts wait for the tick", (double)d->eval_ns / 1e6);
				d->wake_busy_said = now;
			}
			continue;
		}
		evaluate_woken(d, &w);
	}
	if (!stopping && !reload && d->rc) {
		log_warn("fl:wake cannot be read (%s): evaluating on the tick alone for a minute; "
			 "pages wait for the next tick", err);
		d->wake_off_until = time_mono_ns() + 60 * NSEC_PER_SEC;
		d->wake_ready = 0;
	}
}

/*
 * Sleep out the rest of the interval (waiting for wakes, unless --no-wake
 * or waking failed lately), or warn (once a minute) that it overran.
 */
static void pace(struct daemon *d, uint64_t t0)
{
	uint64_t spent = time_mono_ns() - t0, interval = d->o->interval;

	if (spent < interval) {
		if (!d->o->no_wake && d->rc && time_mono_ns() >= d->wake_off_until)
			wait_for_wakes(d, t0);
		spent = time_mono_ns() - t0;
		if (spent < interval)
			usleep((useconds_t)((interval - spent) / 1000));
	} else if (!d->overrun_said || t0 - d->overrun_said >= 60 * NSEC_PER_SEC) {
		log_warn("an evaluation took %.2f s, longer than the %.2f s interval: alerts lag; "
			 "raise --interval or split the rules over two instances",
			 (double)spent / 1e9, (double)interval / 1e9);
		d->overrun_said = t0;
	}
}

/* Say what a replay did, write what is left, leave, free.  Returns the exit status. */
static int daemon_stop(struct daemon *d)
{
	const struct rules_options *o = d->o;

	notify_stopping();
	if (o->replay_to) {
		size_t points, bytes = engine_history_bytes(d->e, &points), nh = engine_hosts(d->e);

		log_info("replayed %.0f s of history (%" PRIu64 " to %" PRIu64 "): %ld event(s) "
			 "to fl:alerts", (double)(o->replay_to - o->replay_from) / 1000,
			 o->replay_from, o->replay_to, d->events_total);
		log_info("history held: %zu point(s) of %zu host(s) in %.1f MB, %.1f KB per host",
			 points, nh, (double)bytes / 1e6, nh ? (double)bytes / 1e3 / (double)nh : 0.0);
	}
	if ((d->ob.nqueue || d->ob.state_dirty) && d->rc)
		outbox_flush(&d->ob, d->e, !o->once && (!o->replay_to || d->worker));
	/*
	 * A live worker leaving hands its partitions over at once.  A replay's
	 * workers end together, a few milliseconds apart: leaving would hand
	 * its partitions (and take its partials away) in the others' last
	 * evaluations, which would then resolve what still holds; its leases
	 * and membership expire on their own instead (3 intervals).
	 */
	if (d->worker && d->rc && !o->replay_to)
		worker_leave(d->worker, d->rc);
	if (d->ob.nqueue)
		log_error("exiting with %d alert event(s) not written to fl:alerts; the next "
			  "start re-evaluates and re-emits what still holds", d->ob.nqueue);
	if (d->nverdicts)
		write_verdicts(d);
	if (d->nverdicts)
		log_error("exiting with %d deploy verdict(s) not written to Redis; `faultline "
			  "deploy list` will not show them (the pages they made are in fl:alerts)",
			  d->nverdicts);
	free(d->verdicts);
	outbox_free(&d->ob);
	if (d->rc)
		conn_close(d->rc);
	metrics_server_stop(d->metrics);
	strbuf_release(&d->ms);
	engine_free(d->e);
	worker_free(d->worker);
	topology_free(&d->topo);
	return 0;
}

int main(int argc, char **argv)
{
	struct rules_options o;
	struct daemon d = { .ms = STRBUF_INIT };
	int ret;

	log_init("faultline-rules");
	if ((ret = rules_options_parse(&o, argc, argv)) >= 0)
		return ret;
	if ((ret = daemon_start(&d, &o)))
		return ret;
	for (long done = 0; !stopping && (!o.intervals || done < o.intervals); done++) {
		uint64_t t0 = time_mono_ns(), now;
		int nread = 0;

		if (o.replay_to && replay_tick(&d, t0))
			break;
		now = o.replay_to ? d.clock_ms : time_wall_ns() / NSEC_PER_MSEC;
		if (reload)
			reload_rules(&d);
		ret = read_inputs(&d, t0, now, &nread);
		if (ret == 2)
			return 1;
		if (ret == 1)
			continue;
		evaluate(&d, t0, now, nread);
		if (o.once)
			break;
		if (!o.replay_to)
			pace(&d, t0);
	}
	return daemon_stop(&d);
}
