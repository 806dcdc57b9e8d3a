/*
 * main.c - faultline-alerter: consume fl:alerts, group, deliver; see
 * alerter.h for the flow and guarantees, alerter_internal.h for the
 * modules (stream.c, groups.c, delivery.c); here: options, the loop and
 * /metrics.
 *
 * One thread.  Redis is read with XREADGROUP, blocking (at most 200 ms)
 * only when no transfer runs and no group is due, so the loop also ticks
 * the group timers and drives libcurl's multi
 * interface: several receivers' requests are in flight at once, at most
 * max_concurrency per receiver.  A group has at most one notification in
 * flight; its retries reuse the same body and idempotency key while the
 * group's version in Redis stays the same, and send the newest state once
 * it moved.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerter/alerter_internal.h"
#include "alerter/api.h"
#include "core/log.h"
#include "core/notify.h"
#include "core/promtext.h"
#include "core/timeutil.h"
#include "core/metrics_server.h"
#include "store/conn.h"

static volatile sig_atomic_t stopping;

static const char *const format_names[] = {
	[FMT_ALERTMANAGER] = "webhook", [FMT_SLACK] = "slack", [FMT_PAGERDUTY] = "pagerduty",
	[FMT_ALERTMANAGER_API] = "alertmanager",
};

/*
 * The alerter's own metrics, for /metrics, under Alertmanager's names
 * where it has the same thing (alertmanager_notifications_total per
 * integration, _failed_total by reason, alerts received by status), so
 * the alerts and dashboards kept for Alertmanager read them unchanged.
 */
/* {receiver="...",integration="..."[,reason="..."]}, the name escaped (it is the config's) */
static void receiver_labels(struct strbuf *sb, const struct integration *r, const char *reason)
{
	strbuf_adds(sb, "{");
	promtext_label(sb, "receiver", r->name, 1);
	promtext_label(sb, "integration", format_names[r->format], 0);
	if (reason)
		promtext_label(sb, "reason", reason, 0);
	strbuf_adds(sb, "}");
}

static void render_metrics(const struct alerter *al, struct strbuf *sb)
{
	const struct alerter_config *cfg = &al->cfg;
	size_t held = 0;

	for (int i = 0; i < al->ngroups; i++)
		held += (size_t)al->groups[i]->nids;
	strbuf_adds(sb, "# HELP alertmanager_notifications_total Notifications delivered "
		    "(2xx), per receiver and integration.\n"
		    "# TYPE alertmanager_notifications_total counter\n");
	for (int r = 0; r < cfg->nintegrations; r++) {
		strbuf_adds(sb, "alertmanager_notifications_total");
		receiver_labels(sb, &cfg->integrations[r], NULL);
		strbuf_addf(sb, " %llu\n", (unsigned long long)al->sent[r]);
	}
	strbuf_adds(sb, "# HELP alertmanager_notifications_failed_total Notification "
		    "attempts that failed: retried (5xx, timeout, refused connection) or refused "
		    "(4xx, dead-lettered).\n"
		    "# TYPE alertmanager_notifications_failed_total counter\n");
	for (int r = 0; r < cfg->nintegrations; r++) {
		strbuf_adds(sb, "alertmanager_notifications_failed_total");
		receiver_labels(sb, &cfg->integrations[r], "retried");
		strbuf_addf(sb, " %llu\n", (unsigned long long)al->failed[r]);
		strbuf_adds(sb, "alertmanager_notifications_failed_total");
		receiver_labels(sb, &cfg->integrations[r], "refused");
		strbuf_addf(sb, " %llu\n", (unsigned long long)al->refused[r]);
	}
	strbuf_addf(sb, "# HELP alertmanager_alerts_received_total Alert events read from "
		    "fl:alerts, by status.\n# TYPE alertmanager_alerts_received_total counter\n"
		    "alertmanager_alerts_received_total{status=\"firing\"} %llu\n"
		    "alertmanager_alerts_received_total{status=\"resolved\"} %llu\n",
		    (unsigned long long)al->received[1], (unsigned long long)al->received[0]);
	strbuf_addf(sb, "# HELP faultline_alerter_dead_letters_total Entries and notifications "
		    "written to fl:alerts:dead.\n# TYPE faultline_alerter_dead_letters_total counter\n"
		    "faultline_alerter_dead_letters_total %llu\n",
		    (unsigned long long)al->dead_letters);
	strbuf_addf(sb, "# HELP faultline_alerter_gave_up_total Notifications dead-lettered "
		    "after failing for delivery.give_up_after.\n"
		    "# TYPE faultline_alerter_gave_up_total counter\n"
		    "faultline_alerter_gave_up_total %llu\n"
		    "# HELP faultline_alerter_superseded_total Notifications dropped before a retry "
		    "because their group had a newer state (it was sent instead).\n"
		    "# TYPE faultline_alerter_superseded_total counter\n"
		    "faultline_alerter_superseded_total %llu\n"
		    "# HELP faultline_alerter_bad_records_total Alert group records of the wrong "
		    "shape, skipped.\n# TYPE faultline_alerter_bad_records_total counter\n"
		    "faultline_alerter_bad_records_total %llu\n",
		    (unsigned long long)al->gave_up, (unsigned long long)al->superseded,
		    (unsigned long long)al->bad_records);
	strbuf_addf(sb, "# HELP faultline_alerter_trimmed_entries_total Delivered entries "
		    "trimmed from fl:alerts (never one still to deliver).\n"
		    "# TYPE faultline_alerter_trimmed_entries_total counter\n"
		    "faultline_alerter_trimmed_entries_total %llu\n",
		    (unsigned long long)al->trimmed);
	strbuf_addf(sb, "# HELP faultline_alerter_held_entries Stream entries held by groups, "
		    "not yet delivered (the queue).\n# TYPE faultline_alerter_held_entries gauge\n"
		    "faultline_alerter_held_entries %zu\n", held);
	strbuf_addf(sb, "# HELP faultline_alerter_groups Alert groups in memory.\n"
		    "# TYPE faultline_alerter_groups gauge\nfaultline_alerter_groups %d\n",
		    al->ngroups);
	strbuf_addf(sb, "# HELP faultline_alerter_redis_errors_total Redis connections lost and "
		    "commands Redis refused.\n# TYPE faultline_alerter_redis_errors_total counter\n"
		    "faultline_alerter_redis_errors_total %llu\n",
		    (unsigned long long)al->redis_errors);
	strbuf_addf(sb, "# HELP faultline_alerter_redis_up Whether the alerter holds a Redis "
		    "connection.\n# TYPE faultline_alerter_redis_up gauge\n"
		    "faultline_alerter_redis_up %d\n", al->rc != NULL);
}

/* The command line (each option overrides the config's key). */
struct alerter_args {
	const char *config, *redis, *level, *metrics_addr, *web_config;
	int routes_test;
};

static volatile sig_atomic_t reload_asked;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_asked = 1;
	else
		stopping = 1;
}

/* The file the config came from ("": the built-in default), for SIGHUP. */
static char config_path[600];

/*
 * SIGHUP: read the config again.  A file that does not read keeps the
 * running config (said, file:line:col).  A good one replaces it the way a
 * restart would, without losing anything: groups and transfers are
 * dropped unacknowledged and our pending list is read again, so every held
 * entry is routed under the new tree and taken into its groups (already
 * notified versions are recognised, not sent twice).  redis, consumer,
 * metrics_addr and web_config need a restart.
 */
static void reload_config(struct alerter *al, const struct alerter_args *a)
{
	struct alerter_config next;
	char err[1024];
	int ret;

	ret = config_path[0] ? alerter_config_load(&next, config_path, err, sizeof(err))
			     : alerter_config_parse(&next, "<built-in etc/alerter.yaml>",
						    alerter_default_config,
						    strlen(alerter_default_config), err,
						    sizeof(err));
	if (ret) {
		log_error("SIGHUP: %s; keeping the running config", err);
		alerter_config_free(&next);
		return;
	}
	if (a->redis)
		snprintf(next.redis_url, sizeof(next.redis_url), "%s", a->redis);
	if (strcmp(next.redis_url, al->cfg.redis_url) || strcmp(next.consumer, al->cfg.consumer) ||
	    strcmp(next.metrics_addr, al->cfg.metrics_addr) ||
	    strcmp(next.web_config, al->cfg.web_config))
		log_warn("SIGHUP: redis, consumer, metrics_addr and web_config change at the next "
			 "start; the running ones stay");
	snprintf(next.redis_url, sizeof(next.redis_url), "%s", al->cfg.redis_url);
	snprintf(next.consumer, sizeof(next.consumer), "%s", al->cfg.consumer);
	snprintf(next.metrics_addr, sizeof(next.metrics_addr), "%s", al->cfg.metrics_addr);
	snprintf(next.web_config, sizeof(next.web_config), "%s", al->cfg.web_config);
	free_groups(al);
	strmap_free(&al->held);
	strmap_init(&al->held);
	memset(al->inflight, 0, sizeof(al->inflight));
	/* counters are per integration, whose indices may have moved: they start again */
	memset(al->sent, 0, sizeof(al->sent));
	memset(al->failed, 0, sizeof(al->failed));
	memset(al->refused, 0, sizeof(al->refused));
	pthread_rwlock_wrlock(&al->cfg_lock);	/* the API's thread reads it */
	alerter_config_free(&al->cfg);
	al->cfg = next;
	pthread_rwlock_unlock(&al->cfg_lock);
	al->read_pending = 1;
	log_info("SIGHUP: read %s: %d receiver(s) with %d integration(s); held entries are "
		 "routed again", config_path[0] ? config_path : "the built-in config",
		 al->cfg.nreceiver_names, al->cfg.nintegrations);
}

static void usage(FILE *out)
{
	fprintf(out,
"Usage: faultline-alerter [--config FILE] [--redis URL] [--log-level LEVEL]\n"
"\n"
"Consume alert events from the fl:alerts stream (consumer group \"alerter\"),\n"
"group and deduplicate them, and deliver signed webhooks: Alertmanager-\n"
"compatible JSON (version 4) with a \"faultline\" evidence section, Slack, or\n"
"PagerDuty Events v2.  An event is acknowledged only after its receiver\n"
"answered 2xx or it was dead-lettered to fl:alerts:dead (4xx, unparsable, no\n"
"route); 5xx and network errors are retried with backoff (0.5 s x 1.5,\n"
"jittered, up to 60 s).  Unacknowledged events survive restarts and are\n"
"taken over by another alerter after 60 s.  Inhibit rules and mute/active\n"
"time intervals mute notifications as Alertmanager's do.  The built-in\n"
"default config is etc/alerter.yaml (--print-config shows it).\n"
"\n"
"  -c, --config FILE     read FILE instead of the built-in default (default:\n"
"                        /etc/faultline/alerter.yaml or /usr/local/etc/faultline/\n"
"                        alerter.yaml when installed there)\n"
"  -r, --redis URL       override the config's redis\n"
"  -l, --log-level LVL   error, warn, info or debug\n"
"      --log-format FMT  text (default), json or logfmt, for log shippers\n"
"      --web-config FILE TLS and basic auth for /metrics and the API (Prometheus'\n"
"                        exporter-toolkit web config format; default: the\n"
"                        config's web_config)\n"
"  -m, --metrics-addr A  serve the alerter's own metrics (notifications sent and\n"
"                        failed per receiver, dead letters, held entries,\n"
"                        Redis errors) as Prometheus text on http://A/metrics,\n"
"                        and Alertmanager's API v2 on http://A/api/v2/ (what\n"
"                        fires, its groups, silences: amtool, Grafana,\n"
"                        Karma), e.g. 127.0.0.1:9466 (default: the config's\n"
"                        metrics_addr, off when empty)\n"
"      --check-config FILE  read FILE (an alerter.yaml or an Alertmanager\n"
"                        alertmanager.yml), say what it holds or what is\n"
"                        wrong at file:line:col, and exit (0 good, 1 not)\n"
"      --routes-test NAME=VALUE...  print the receivers an alert with these\n"
"                        labels reaches under --config, comma-separated in\n"
"                        the tree's order, as `amtool config routes test`\n"
"                        does, and exit\n"
"      --print-config    print the built-in default config and exit\n"
"      --config-reference  print every config key (type, bounds, default,\n"
"                        description) as a Markdown table and exit\n"
"\n"
"SIGHUP reads the config again: a file with an error keeps the running one\n"
"(said in the log with file:line:col).\n"
"  -h, --help            this text\n"
"  -V, --version         print the version\n");
}

/* The config reference from the schema table, with the built-in defaults. */
static int print_config_reference(void)
{
	struct alerter_config cfg;
	struct strbuf sb = STRBUF_INIT;
	char err[256];

	if (alerter_config_parse(&cfg, "<built-in etc/alerter.yaml>", alerter_default_config,
				 strlen(alerter_default_config), err, sizeof(err))) {
		fprintf(stderr, "faultline-alerter: built-in config: %s\n", err);
		return 1;
	}
	/* the consumer's default is this machine's name: show what it means, not it */
	snprintf(cfg.consumer, sizeof(cfg.consumer), "(hostname)");
	cfg_schema_markdown(alerter_config_schema, alerter_config_nschema, &cfg, &sb);
	fputs(strbuf_str(&sb), stdout);
	strbuf_release(&sb);
	alerter_config_free(&cfg);
	return 0;
}

/* Count the routes under r (r included). */
static int count_routes(const struct route *r)
{
	int n = 1;

	for (int i = 0; i < r->nchild; i++)
		n += count_routes(&r->child[i]);
	return n;
}

/* --check-config FILE: 0 when it reads, 1 (said, file:line:col) when not. */
static int check_config(const char *path)
{
	struct alerter_config cfg;
	char err[1024];

	if (alerter_config_load(&cfg, path, err, sizeof(err))) {
		fprintf(stderr, "faultline-alerter: %s\n", err);
		alerter_config_free(&cfg);
		return 1;
	}
	printf("%s: good: %d receiver(s) with %d integration(s), %d route(s)%s, %d inhibit "
	       "rule(s), %d time interval(s)\n", path, cfg.nreceiver_names, cfg.nintegrations,
	       cfg.has_root ? count_routes(&cfg.root) - (cfg.root.receiver < 0) : 0,
	       cfg.has_root && cfg.root.receiver < 0 ? " (faultline's flat list)" : "",
	       cfg.ninhibit_rules, cfg.ntime_intervals);
	alerter_config_free(&cfg);
	return 0;
}

/* --routes-test: the receivers labels[0..n) (NAME=VALUE) reach under cfg, as amtool prints them. */
static int routes_test(const struct alerter_config *cfg, char **labels, int n)
{
	const struct route *routes[ROUTE_MAX_NODES];
	struct alert a;
	int nr;

	memset(&a, 0, sizeof(a));
	a.labels = calloc((size_t)n + 1, sizeof(*a.labels));
	if (!a.labels)
		return 1;
	for (int i = 0; i < n; i++) {
		char *eq = strchr(labels[i], '=');

		if (!eq || eq == labels[i]) {
			fprintf(stderr, "faultline-alerter: --routes-test: '%s' is not NAME=VALUE\n",
				labels[i]);
			free(a.labels);
			return 2;
		}
		*eq = '\0';
		a.labels[a.nlabels].key = labels[i];
		a.labels[a.nlabels].value = eq + 1;
		a.nlabels++;
	}
	nr = route_match(&cfg->root, &a, routes, ROUTE_MAX_NODES);
	for (int i = 0; i < nr; i++)
		printf("%s%s", i ? "," : "", cfg->receiver_names[routes[i]->receiver].name);
	printf("%s\n", nr ? "" : "(no route: dead-lettered)");
	free(a.labels);
	return 0;
}


/* argv into a: -1 to go on, or the status to exit with. */
static int parse_args(int argc, char **argv, struct alerter_args *a)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "redis", required_argument, NULL, 'r' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "log-format", required_argument, NULL, 'F' },
		{ "web-config", required_argument, NULL, 'W' },
		{ "print-config", no_argument, NULL, 'P' },
		{ "check-config", required_argument, NULL, 'K' },
		{ "routes-test", no_argument, NULL, 'T' },
		{ "config-reference", no_argument, NULL, 'C' },
		{ "metrics-addr", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:r:l:m:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->config = optarg; break;
		case 'r': a->redis = optarg; break;
		case 'l': a->level = optarg; break;
		case 'm': a->metrics_addr = optarg; break;
		case 'P': fputs(alerter_default_config, stdout); return 0;
		case 'K': return check_config(optarg);
		case 'T': a->routes_test = 1; break;
		case 'C': return print_config_reference();
		case 'F':
			if (log_format_option("faultline-alerter", optarg))
				return 2;
			break;
		case 'W': a->web_config = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("faultline-alerter %s\n", FL_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc && !a->routes_test) {
		fprintf(stderr, "faultline-alerter: unexpected '%s' (try --help)\n", argv[optind]);
		return 2;
	}
	return -1;
}

/*
 * al->cfg from --config, the installed alerter.yaml or the built-in
 * default, the command line over it; signals, curl, /metrics (*metrics).
 * 0, or -1 (said).
 */
static int alerter_start(struct alerter *al, const struct alerter_args *a,
			 struct metrics_server **metrics)
{
	const char *config = a->config, *metrics_addr = a->metrics_addr;
	const char *web_config = a->web_config;
	enum log_level lv;
	char err[512];

	if (!config) {
		/* installed: /etc/faultline/alerter.yaml instead of the built-in default */
		static char found[600];

		config = cfg_find("alerter.yaml", 0, found, sizeof(found));
		if (config)
			log_info("reading %s (no --config given)", config);
	}
	if (config ? alerter_config_load(&al->cfg, config, err, sizeof(err))
		   : alerter_config_parse(&al->cfg, "<built-in etc/alerter.yaml>",
					  alerter_default_config, strlen(alerter_default_config),
					  err, sizeof(err))) {
		log_error("%s", err);
		return -1;
	}
	if (a->redis)
		snprintf(al->cfg.redis_url, sizeof(al->cfg.redis_url), "%s", a->redis);
	if (log_parse_level(a->level ? a->level : al->cfg.log_level, &lv) == 0)
		log_set_level(lv);
	if (!al->cfg.nintegrations)
		log_warn("no receivers configured: alerts will be read and held, not delivered "
			 "(add receivers to the config)");
	snprintf(config_path, sizeof(config_path), "%s", config ? config : "");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_rwlock_init(&al->cfg_lock, NULL);
	al->multi = curl_multi_init();
	strmap_init(&al->held);
	backoff_init(&al->redis_backoff, 0, 10 * NSEC_PER_SEC);
	conn_url_redacted(al->cfg.redis_url, al->redis_shown, sizeof(al->redis_shown));
	log_info("consuming %s as %s/%s from %s; %d receiver(s) with %d integration(s)", STREAM,
		 GROUP, al->cfg.consumer, al->redis_shown, al->cfg.nreceiver_names,
		 al->cfg.nintegrations);
	if (!metrics_addr)
		metrics_addr = al->cfg.metrics_addr;
	if (!web_config)
		web_config = al->cfg.web_config;
	if (metrics_addr[0]) {
		*metrics = metrics_server_start(metrics_addr, web_config, err, sizeof(err));
		if (!*metrics) {
			log_error("metrics: %s", err);
			return -1;
		}
		if (api_start(al, *metrics, config_path)) {
			log_error("metrics: the API could not be served");
			return -1;
		}
		log_info("serving the alerter's metrics on http://%s/metrics and Alertmanager's "
			 "API v2 on http://%s/api/v2/", metrics_addr, metrics_addr);
	}
	return 0;
}

/* Move the webhook transfers on and take the finished ones.  Returns how many still run. */
static int run_transfers(struct alerter *al)
{
	int running, left;
	CURLMsg *msg;

	curl_multi_perform(al->multi, &running);
	while ((msg = curl_multi_info_read(al->multi, &left)))
		if (msg->msg == CURLMSG_DONE)
			on_done(al, msg);
	return running;
}

/*
 * How long to wait for new entries: only while there is nothing else to
 * do, not while transfers run (curl_multi_poll waits for those) and not
 * past the next group's due time.
 */
static int read_block_ms(const struct alerter *al, uint64_t now, int transfers)
{
	int block_ms = 200;

	for (int i = 0; i < al->ngroups && block_ms; i++) {
		uint64_t due = group_due_at(al, al->groups[i]);

		if (due <= now)
			block_ms = 0;
		else if (due - now < (uint64_t)block_ms * 1000000)
			block_ms = (int)((due - now) / 1000000) + 1;
	}
	return transfers ? 0 : block_ms;
}

/*
 * One turn of the loop: Redis (silences, own pending entries, orphans,
 * trimming), new entries, due groups, transfers.  transfers: how many ran
 * after the last turn; returns how many run now.
 */
static int alerter_turn(struct alerter *al, int transfers)
{
	uint64_t now = time_mono_ns();
	int block_ms, running;

	notify_watchdog();
	ensure_redis(al);
	if (redis_ready(al) && al->cfg.nintegrations) {
		refresh_silences(al, now);
		if (al->read_pending)
			read_own_pending(al);
		if (al->rc && now >= al->claim_at_ns) {
			claim_orphans(al);
			trim_stream(al);
			prune_groups(al);
			al->claim_at_ns = now + claim_every(&al->cfg);
		}
	}
	block_ms = read_block_ms(al, now, transfers);
	if (redis_ready(al) && al->cfg.nintegrations && !al->read_pending)
		read_entries(al, ">", block_ms, NULL, 0);
	else if (!transfers)
		usleep((useconds_t)block_ms * 1000 + 1000);
	now = time_mono_ns();
	for (int i = 0; i < al->ngroups; i++)
		maybe_send(al, al->groups[i], now);
	running = run_transfers(al);
	if (running)
		curl_multi_poll(al->multi, NULL, 0, 50, NULL);
	return running;
}

int main(int argc, char **argv)
{
	struct alerter_args a = { 0 };
	struct metrics_server *metrics = NULL;
	struct strbuf ms = STRBUF_INIT;
	uint64_t metrics_at = 0;
	struct alerter al = { 0 };
	int ret, transfers = 0;

	log_init("faultline-alerter");
	if ((ret = parse_args(argc, argv, &a)) >= 0)
		return ret;
	if (a.routes_test) {
		char err[1024];

		if (a.config ? alerter_config_load(&al.cfg, a.config, err, sizeof(err))
			     : alerter_config_parse(&al.cfg, "<built-in etc/alerter.yaml>",
						    alerter_default_config,
						    strlen(alerter_default_config), err,
						    sizeof(err))) {
			fprintf(stderr, "faultline-alerter: %s\n", err);
			return 1;
		}
		ret = routes_test(&al.cfg, argv + optind, argc - optind);
		alerter_config_free(&al.cfg);
		return ret;
	}
	if (alerter_start(&al, &a, &metrics))
		return 1;
	notify_ready("consuming fl:alerts");
	while (!stopping) {
		uint64_t now;

		if (reload_asked) {
			reload_asked = 0;
			reload_config(&al, &a);
			transfers = 0;
		}
		transfers = alerter_turn(&al, transfers);
		now = time_mono_ns();
		/* render at most every 500 ms; the server thread answers scrapes from it */
		if (metrics && now >= metrics_at) {
			strbuf_reset(&ms);
			render_metrics(&al, &ms);
			metrics_server_set_body(metrics, strbuf_str(&ms), ms.len);
			metrics_at = now + 500 * NSEC_PER_MSEC;
		}
	}
	notify_stopping();
	/* let notifications already on the wire finish (and be acknowledged) */
	for (uint64_t until = time_mono_ns() + 3 * NSEC_PER_SEC; time_mono_ns() < until;) {
		if (!run_transfers(&al))
			break;
		curl_multi_poll(al.multi, NULL, 0, 50, NULL);
	}
	log_info("stopping; unacknowledged alerts stay pending in %s for the next start", STREAM);
	free_groups(&al);
	curl_multi_cleanup(al.multi);
	curl_global_cleanup();
	if (al.rc)
		conn_close(al.rc);
	/* the API's thread reads the config: it stops first */
	metrics_server_stop(metrics);
	api_stop();
	silence_free_all(al.silences, al.nsilences);
	alert_index_free(&al.ix);
	strmap_free(&al.held);
	alerter_config_free(&al.cfg);
	strbuf_release(&ms);
	return 0;
}
