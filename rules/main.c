/*
 * main.c - faultline-rules: evaluate rule files over the snapshots probes
 * write to Redis and append firing/resolved events to fl:alerts for
 * faultline-alerter (the event format is lib/model/alert.h).
 *
 * Every interval: read each host's new 1 s snapshots (rules/engine/engine.c),
 * evaluate every rule, emit state changes.  SIGHUP reloads the rule files;
 * a reload with an error keeps the running rules and logs why.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>

#include "core/array.h"
#include "core/config.h"
#include "rules/daemon_metrics.h"
#include "rules/engine/engine.h"
#include "rules/shard/outbox.h"
#include "rules/redis_inputs.h"
#include "rules/shard/worker.h"
#include "core/backoff.h"
#include "core/log.h"
#include "core/metrics_server.h"
#include "core/notify.h"
#include "store/conn.h"
#include "store/profile_store.h"
#include "store/alert_checkpoint.h"
#include "store/alert_stream.h"
#include "store/store.h"
#include "store/workers.h"
#include "core/promtext.h"
#include "core/strbuf.h"
#include "core/timeutil.h"

#define MAX_FILES 32

static volatile sig_atomic_t stopping, reload;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload = 1;
	else
		stopping = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
"Usage: faultline-rules --rules FILE [--rules FILE...] [--redis URL]\n"
"                       [--interval 1s] [--stale 5s] [--domains site,agg,switch,rack]\n"
"                       [--once | --intervals N |\n"
"                       --replay FROM,TO]\n"
"                       [--shard [--worker-id NAME]] [--log-level L]\n"
"\n"
"Evaluate faultline rules (etc/rules/*.yaml; `faultline rules check` validates\n"
"them) against the snapshots probes write to Redis, roll host matches up by\n"
"failure domain, and append firing/resolved events to the fl:alerts stream\n"
"for faultline-alerter.  A host silent for longer than --stale raises\n"
"HostSilent.  SIGHUP reloads the rule files; a bad reload keeps the old rules.\n"
"Each interval's read and evaluation times are logged at debug level (info\n"
"with --once or --intervals); an interval that overruns is a warning.\n"
"\n"
"  -R, --rules FILE      a rule file (repeatable; default rules/faultline.yaml\n"
"                        from ./etc, /etc/faultline or /usr/local/etc/faultline)\n"
"  -t, --topology FILE   host globs -> rack/switch/... labels (default\n"
"                        topology.yaml from the same places, when present)\n"
"  -r, --redis URL       default unix:///run/faultline/redis.sock; also redis://...\n"
"                        and redis-cluster://h1:port,h2:port (a Redis Cluster);\n"
"                        rediss:// and rediss-cluster:// over TLS, options\n"
"                        password_file=, tls_ca=, tls_cert=, tls_key=\n"
"  -i, --interval DUR    evaluation interval (default 1s)\n"
"  -s, --stale DUR       a host is silent after this (default 5s)\n"
"      --for-grace-period DUR  an alert pending inside its `for` when this\n"
"                        engine stopped (or its worker handed it over) keeps\n"
"                        the time it had spent pending; the time nobody\n"
"                        evaluated it does not count, and an alert whose `for`\n"
"                        exceeds DUR fires no sooner than DUR after the\n"
"                        restore (Prometheus' --rules.alert.for-grace-period;\n"
"                        default 10m)\n"
"      --wait-replicas N keep each alert event until N replicas of the Redis\n"
"                        node holding fl:alerts have it (WAIT, up to a quarter\n"
"                        interval each evaluation), and write it again if the\n"
"                        connection changes first, so a failover cannot forget\n"
"                        a page (default 0: a single server; 1 with replicas)\n"
"      --alert-backlog-max N  raise the built-in AlertDeliveryBacklog while more\n"
"                        than N fl:alerts entries wait for the alerters (none\n"
"                        runs, or they cannot keep up); entries are never\n"
"                        trimmed before they are delivered (default 100000)\n"
"  -g, --generator-url U where an alert comes from, for Alertmanager and\n"
"                        receivers: each event's generatorURL is U#RULE, e.g.\n"
"                        https://git.example/ops/rules/blob/main/faultline.yaml\n"
"  -d, --domains LIST    the fleet's failure-domain labels, outermost first,\n"
"                        that HostSilent rolls up through (default\n"
"                        site,agg,switch,rack; at most 4; levels no host\n"
"                        has a label for are skipped)\n"
"      --once            evaluate once, print the events to stdout, exit\n"
"      --replay FROM,TO  evaluate the history stored between two times (epoch\n"
"                        ms) every --interval on that clock, as fast as it\n"
"                        goes, then exit: what the rules would have paged\n"
"                        (faultline sim --ends-now writes such history)\n"
"      --replay-speed X  replay X times faster than real time (default: flat out)\n"
"      --shard           one of several workers sharing the fleet: the hosts are\n"
"                        split among the live workers by failure domain through\n"
"                        Redis leases, a dead worker's share is taken over within\n"
"                        3 intervals (at least 3 s), fleet-wide comparisons merge\n"
"                        every worker's partial aggregates (docs/rules.md)\n"
"      --worker-id NAME  this worker's name among them (default hostname-pid)\n"
"  -n, --intervals N     evaluate N intervals, then exit (events go to\n"
"                        fl:alerts as usual; each interval's timing is logged)\n"
"  -m, --metrics-addr A  serve the engine's own metrics (hosts, unreadable\n"
"                        entries per host, events, evaluation time) as\n"
"                        Prometheus text on http://A/metrics, e.g.\n"
"                        127.0.0.1:9465 (default: off)\n"
"  -l, --log-level LVL   error, warn, info or debug\n"
"      --log-format FMT  text (default), json or logfmt, for log shippers\n"
"      --web-config FILE TLS and basic auth for /metrics (Prometheus'\n"
"                        exporter-toolkit web config format)\n"
"  -b, --runbook-base B  prefix relative runbooks (runbooks/x.md) with B, a\n"
"                        URL (https://wiki/ops) or file:///usr/share/faultline,\n"
"                        so pages link where they are (default: as written)\n"
"  -h, --help            this text\n"
"  -V, --version         print the version\n");
}

/* --runbook-base: where relative runbooks live (a URL, or the installed share dir) */
static const char *runbook_base;

static int load_all(struct ruleset *rs, char **files, int nfiles)
{
	char err[512];

	memset(rs, 0, sizeof(*rs));
	for (int i = 0; i < nfiles; i++) {
		if (rules_load(rs, files[i], err, sizeof(err))) {
			log_error("%s", err);
			rules_free(rs);
			return -1;
		}
	}
	if (rules_runbook_base(rs, runbook_base, err, sizeof(err))) {
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
 * Give the engine the deploy markers its baseline rules can still judge
 * (the last day and their windows); nothing to do without baseline rules.
 */
/* The deploy markers baseline rules may judge at time now (ms). */
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

/* "site,switch,rack" into o->domains.  0 or -EINVAL. */
static int parse_domains(const char *list, struct engine_opts *o)
{
	const char *p = list;

	o->ndomains = 0;
	while (*p) {
		size_t n = strcspn(p, ",");

		if (!n || n >= sizeof(o->domains[0]) || o->ndomains == RULE_MAX_ROLLUP)
			return -EINVAL;
		for (size_t i = 0; i < n; i++)
			if (!(isalnum((unsigned char)p[i]) || p[i] == '_' || p[i] == '-'))
				return -EINVAL;
		memcpy(o->domains[o->ndomains], p, n);
		o->domains[o->ndomains++][n] = 0;
		p += n + (p[n] == ',');
	}
	return o->ndomains ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rules", required_argument, NULL, 'R' },
		{ "topology", required_argument, NULL, 't' },
		{ "redis", required_argument, NULL, 'r' },
		{ "interval", required_argument, NULL, 'i' },
		{ "stale", required_argument, NULL, 's' },
		{ "for-grace-period", required_argument, NULL, 'G' },
		{ "alert-backlog-max", required_argument, NULL, 'B' },
		{ "wait-replicas", required_argument, NULL, 'Y' },
		{ "domains", required_argument, NULL, 'd' },
		{ "generator-url", required_argument, NULL, 'g' },
		{ "once", no_argument, NULL, 'o' },
		{ "intervals", required_argument, NULL, 'n' },
		{ "replay", required_argument, NULL, 'P' },
		{ "replay-speed", required_argument, NULL, 'S' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "log-format", required_argument, NULL, 'F' },
		{ "web-config", required_argument, NULL, 'W' },
		{ "runbook-base", required_argument, NULL, 'b' },
		{ "metrics-addr", required_argument, NULL, 'm' },
		{ "shard", no_argument, NULL, 'H' },
		{ "worker-id", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	char *files[MAX_FILES];
	int nfiles = 0, c, once = 0;
	long intervals = 0;	/* 0: until stopped */
	uint64_t replay_from = 0, replay_to = 0, clock_ms = 0, replay_t0 = 0;
	double speed = 0;	/* replay: simulated seconds per second; 0: flat out */
	const char *url = "unix:///run/faultline/redis.sock", *topo_path = NULL;
	const char *metrics_addr = NULL, *web_config = NULL;
	struct metrics_server *metrics = NULL;
	struct strbuf ms = STRBUF_INIT;
	struct topology topo = { 0 };
	uint64_t interval = NSEC_PER_SEC, stale = 5 * NSEC_PER_SEC;
	uint64_t for_grace = ENGINE_FOR_GRACE_MS * NSEC_PER_MSEC;
	uint64_t backlog_max = ENGINE_ALERT_BACKLOG_MAX;
	int wait_replicas = 0;
	const char *live_only = NULL;	/* an option that only a running engine uses */
	struct ruleset rs;
	struct engine *e = NULL;
	struct engine_opts domain_opts = { 0 };
	struct conn *rc = NULL;
	struct worker *worker = NULL;
	int shard = 0;
	const char *worker_name = NULL;
	enum log_level lv;
	char err[512], *end;

	log_init("faultline-rules");
	while ((c = getopt_long(argc, argv, "R:t:r:i:s:d:g:n:P:S:l:m:b:hV", opts, NULL)) != -1) {
		switch (c) {
		case 't': topo_path = optarg; break;
		case 'R':
			if (nfiles == MAX_FILES) {
				fprintf(stderr, "faultline-rules: more than %d --rules files; merge "
					"some, or put their groups in one file\n", MAX_FILES);
				return 2;
			}
			files[nfiles++] = optarg;
			break;
		case 'r': url = optarg; break;
		case 'i':
		case 's':
			if (duration_parse(optarg, c == 'i' ? &interval : &stale) ||
			    (c == 'i' && interval < 100 * NSEC_PER_MSEC)) {
				fprintf(stderr, "faultline-rules: --%s '%s': expected a duration\n",
					c == 'i' ? "interval" : "stale", optarg);
				return 2;
			}
			break;
		case 'G':
			live_only = "--for-grace-period";
			if (duration_parse(optarg, &for_grace) || for_grace < NSEC_PER_MSEC) {
				fprintf(stderr, "faultline-rules: --for-grace-period '%s': expected a "
					"duration of at least 1ms, such as 10m\n", optarg);
				return 2;
			}
			break;
		case 'B':
			live_only = "--alert-backlog-max";
			backlog_max = strtoull(optarg, &end, 10);
			if (*end || !backlog_max || optarg[0] == '-') {
				fprintf(stderr, "faultline-rules: --alert-backlog-max '%s': expected a "
					"positive count\n", optarg);
				return 2;
			}
			break;
		case 'Y':
			wait_replicas = (int)strtol(optarg, &end, 10);
			if (*end || wait_replicas < 0 || wait_replicas > 16 || !optarg[0]) {
				fprintf(stderr, "faultline-rules: --wait-replicas '%s': expected a "
					"count of replicas, 0 to 16\n", optarg);
				return 2;
			}
			break;
		case 'o': once = 1; intervals = 1; break;
		case 'S':
			speed = strtod(optarg, &end);
			if (*end || !(speed > 0)) {
				fprintf(stderr, "faultline-rules: --replay-speed '%s': expected a "
					"positive factor such as 60\n", optarg);
				return 2;
			}
			break;
		case 'P':
			if (sscanf(optarg, "%" SCNu64 ",%" SCNu64, &replay_from, &replay_to) != 2 ||
			    replay_to <= replay_from) {
				fprintf(stderr, "faultline-rules: --replay '%s': expected FROM,TO in "
					"epoch milliseconds, FROM before TO\n", optarg);
				return 2;
			}
			break;
		case 'n':
			intervals = strtol(optarg, &end, 10);
			if (*end || intervals <= 0) {
				fprintf(stderr, "faultline-rules: --intervals '%s': expected a "
					"positive count\n", optarg);
				return 2;
			}
			break;
		case 'm': metrics_addr = optarg; break;
		case 'g':
			if (strlen(optarg) >= sizeof(domain_opts.generator_url) ||
			    (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8))) {
				fprintf(stderr, "faultline-rules: --generator-url '%s': expected an "
					"http(s) URL under %zu characters\n", optarg,
					sizeof(domain_opts.generator_url));
				return 2;
			}
			snprintf(domain_opts.generator_url, sizeof(domain_opts.generator_url), "%s",
				 optarg);
			break;
		case 'd':
			if (parse_domains(optarg, &domain_opts)) {
				fprintf(stderr, "faultline-rules: --domains '%s': expected at most %d "
					"label names, outermost first, such as site,switch,rack\n",
					optarg, RULE_MAX_ROLLUP);
				return 2;
			}
			break;
		case 'l':
			if (log_parse_level(optarg, &lv)) {
				fprintf(stderr, "faultline-rules: --log-level: error, warn, info or debug\n");
				return 2;
			}
			log_set_level(lv);
			break;
		case 'F':
			if (log_format_option("faultline-rules", optarg))
				return 2;
			break;
		case 'W': web_config = optarg; break;
		case 'H': shard = 1; break;
		case 'w': worker_name = optarg; break;
		case 'b': runbook_base = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("faultline-rules %s\n", FL_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	/* options that do not go together, before anything is loaded */
	if (metrics_addr && metrics_addr[0] && (once || replay_to)) {
		fprintf(stderr, "faultline-rules: --metrics-addr serves a running engine; it does "
			"not go with --once or --replay\n");
		return 2;
	}
	if (wait_replicas && once) {
		fprintf(stderr, "faultline-rules: --wait-replicas waits for events written to "
			"Redis; --once prints them\n");
		return 2;
	}
	if (live_only && (once || replay_to)) {
		/* a what-if run restores no checkpoint and watches no backlog */
		fprintf(stderr, "faultline-rules: %s applies to a running engine; it does not go "
			"with --once or --replay\n", live_only);
		return 2;
	}
	if (worker_name && !shard) {
		fprintf(stderr, "faultline-rules: --worker-id names a --shard worker\n");
		return 2;
	}
	if (shard && once) {
		fprintf(stderr, "faultline-rules: --shard does not go with --once (a what-if "
			"run sees the whole fleet)\n");
		return 2;
	}
	if (!nfiles) {
		/* the source tree's, else the installed ones (/etc/faultline/...) */
		static char found[600];

		if (!cfg_find("rules/faultline.yaml", 1, found, sizeof(found))) {
			log_error("no --rules given and no rules/faultline.yaml in ./etc, "
				  "/etc/faultline or /usr/local/etc/faultline; give --rules FILE");
			return 2;
		}
		files[nfiles++] = found;
	}
	if (load_all(&rs, files, nfiles))
		return 1;
	if (!topo_path) {
		static char found[600];

		topo_path = cfg_find("topology.yaml", 1, found, sizeof(found));
	}
	if (topo_path && topology_load(&topo, topo_path, err, sizeof(err))) {
		log_error("%s", err);
		return 1;
	}
	{
		struct engine_opts eopts = { .stale_ms = stale / NSEC_PER_MSEC, .topology = &topo,
					     .for_grace_ms = for_grace / NSEC_PER_MSEC,
					     .alert_backlog_max = backlog_max };

		memcpy(eopts.domains, domain_opts.domains, sizeof(eopts.domains));
		memcpy(eopts.generator_url, domain_opts.generator_url, sizeof(eopts.generator_url));
		eopts.ndomains = domain_opts.ndomains;

		if (shard) {
			worker = worker_new(worker_name, interval, &rs, &eopts, err, sizeof(err));
			if (!worker) {
				log_error("%s", err);
				rules_free(&rs);
				return 1;
			}
		}
		if (engine_init(&e, &rs, &eopts))
			return 1;
		dstats.reload_ok_s = (double)time_wall_ns() / 1e9;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if (metrics_addr && metrics_addr[0]) {
		metrics = metrics_server_start(metrics_addr, web_config, err, sizeof(err));
		if (!metrics) {
			log_error("%s", err);
			return 1;
		}
	}
	conn_url_redacted(url, err, sizeof(err));
	log_info("evaluating %d rule group(s) every %.1f s against %s", engine_rules(e)->ngroups,
		 (double)interval / 1e9, err);
	uint64_t deploys_read = 0;	/* mono ns of the last fl:deploys read */
	uint64_t overrun_said = 0;	/* mono ns of the last overrun warning */
	struct outbox ctx = { .once = once, .worker = worker, .wait_replicas = wait_replicas,
			      .wait_timeout_ms = interval / 4 / NSEC_PER_MSEC };
	long events_total = 0;
	int restored = 0, with_state;
	uint64_t state_written = 0;	/* mono ns of the last checkpoint written */
	uint64_t gen = 0, gen_written = 0;	/* engine_state_generation: now, at that write */
	uint64_t backlog_read = 0, backlog_said = 0;	/* mono ns */
	uint64_t outage_since = 0;	/* mono ns Redis went away, 0 while it answers */
	int said_ready = 0;		/* READY=1 after the first evaluation (systemd) */
	struct backoff redis_bo;

	backoff_init(&redis_bo, 0, 5 * NSEC_PER_SEC);

	clock_ms = replay_from;
	for (long done = 0; !stopping && (!intervals || done < intervals); done++) {
		uint64_t t0 = time_mono_ns(), t_read, t_eval, now;
		int nread;

		/*
		 * A replay evaluates the stored history on its own clock, flat out
		 * or --replay-speed times faster than real time (so that an alerter
		 * sees the events spaced as they would have been, only closer).
		 */
		if (replay_to) {
			clock_ms += interval / NSEC_PER_MSEC;
			if (clock_ms > replay_to)
				break;
			if (!replay_t0)
				replay_t0 = t0;
			if (speed > 0) {
				uint64_t due = replay_t0 + (uint64_t)((double)(clock_ms - replay_from) *
								      1e6 / speed);

				if (due > t0)
					usleep((useconds_t)((due - t0) / 1000));
			}
		}
		now = replay_to ? clock_ms : time_wall_ns() / NSEC_PER_MSEC;

		if (reload) {
			struct ruleset nrs;

			reload = 0;
			dstats.reload_ok = load_all(&nrs, files, nfiles) == 0 && engine_reload(e, &nrs) == 0;
			if (dstats.reload_ok) {
				dstats.reload_ok_s = (double)time_wall_ns() / 1e9;
				log_info("reloaded %d rule file(s)", nfiles);
			} else {
				log_warn("reload failed (see above); keeping the running rules");
			}
		}
		if (!rc) {
			rc = conn_open(url, 2 * NSEC_PER_SEC, err, sizeof(err));
			ctx.conn_gen++;
			if (!rc) {
				if (!outage_since && restored)
					outage_since = t0;
				if (once) {
					log_error("%s", err);
					return 1;
				}
				redis_wait(&redis_bo, err);
				continue;
			}
		}
		/*
		 * Before the first evaluation: what fired before this start (the
		 * checkpoint), so that it keeps its startsAt or resolves.  A what-if
		 * run (--once, --replay) neither reads nor writes it.
		 */
		if (!restored && !once && !replay_to && !worker) {
			ctx.rc = rc;
			if (outbox_restore(&ctx, e, now)) {
				conn_close(rc);
				rc = NULL;
				redis_wait(&redis_bo, "the alert checkpoint cannot be read");
				continue;
			}
		}
		restored = 1;
		if (worker) {
			ctx.rc = rc;
			if (worker_round(worker, e, rc, now, outbox_emit, &ctx, err, sizeof(err))) {
				conn_close(rc);
				rc = ctx.rc = NULL;
				redis_wait(&redis_bo, err);
				continue;
			}
		}
		nread = engine_load_redis(e, rc, replay_to ? clock_ms : 0, err, sizeof(err));
		if (nread < 0) {
			conn_close(rc);
			rc = NULL;
			if (!outage_since)
				outage_since = t0;
			redis_wait(&redis_bo, err);
			continue;
		}
		backoff_reset(&redis_bo);
		if (outage_since && !replay_to) {
			/*
			 * Probes spooled while Redis was away and are draining now: a host
			 * is not silent until it had as long as the outage (at most 10 min)
			 * plus --stale to catch up.
			 */
			uint64_t gap = (t0 - outage_since) / NSEC_PER_MSEC;

			gap = gap > 600000 ? 600000 : gap;
			engine_hold_silent(e, now + gap + engine_options(e)->stale_ms);
			log_info("Redis is back after %.0f s; HostSilent waits %.0f s while probes "
				 "drain their spools", (double)(t0 - outage_since) / 1e9,
				 (double)(gap + engine_options(e)->stale_ms) / 1000);
		}
		outage_since = 0;
		/*
		 * A verdict waits a whole baseline window after its deploy, so reading
		 * the markers every DEPLOYS_EVERY_NS rather than every interval loses nothing.
		 */
		if (!deploys_read || t0 - deploys_read >= DEPLOYS_EVERY_NS) {
			if (load_deploys(e, rc, replay_to ? replay_to : time_wall_ns() / NSEC_PER_MSEC,
					 err, sizeof(err)) < 0)
				log_warn("%s; baseline rules judge no new deploy until it works",
					 err);
			else
				deploys_read = t0;
		}
		if (!once && !replay_to && (!backlog_read || t0 - backlog_read >= BACKLOG_EVERY_NS)) {
			read_backlog(e, rc, &backlog_said);
			backlog_read = t0;
		}
		ctx.rc = rc;
		ctx.n = 0;
		engine_set_profile_loader(e, rules_redis_profiles, &ctx);
		engine_set_rollup_loader(e, rules_redis_rollups, &ctx, RULES_ROLLUP_DELAY_MS);
		t_read = time_mono_ns();
		engine_eval(e, now, outbox_emit, &ctx);
		with_state = !once && (!replay_to || worker) &&
			     (ctx.n || ctx.state_dirty || !state_written ||
			      engine_state_generation(e) != gen_written ||
			      engine_pending_alerts(e) ||
			      t0 - state_written >= CHECKPOINT_EVERY_NS);
		gen = engine_state_generation(e);
		if (outbox_flush(&ctx, e, with_state)) {
			conn_close(rc);
			if (!outage_since)
				outage_since = t0;
			rc = ctx.rc = NULL;
		} else if (with_state && !ctx.state_dirty) {
			state_written = t0;
			gen_written = gen;
		}
		t_eval = time_mono_ns();
		if (!said_ready) {
			char status[200];

			snprintf(status, sizeof(status), "evaluating %d rule group(s) over %zu host(s)",
				 engine_rules(e)->ngroups, engine_hosts(e));
			notify_ready(status);
			said_ready = 1;
		}
		notify_watchdog();
		if (metrics) {
			dstats.redis_up = rc != NULL;
			dstats.events = events_total + ctx.n;
			dstats.eval_s = (double)(t_eval - t_read) / 1e9;
			rules_metrics_render(e, worker, &ctx, &dstats, &ms);
			metrics_server_set_body(metrics, strbuf_str(&ms), ms.len);
		}
		int nrules = 0;

		for (int g = 0; g < engine_rules(e)->ngroups; g++)
			nrules += engine_rules(e)->groups[g].nrules;
		events_total += ctx.n;
		log_msg(intervals ? LOG_INFO : LOG_DEBUG,
		       "interval: read %d snapshot(s) in %.1f ms, evaluated %d rule(s) over %zu "
		       "host(s) in %.1f ms, %d event(s)", nread, (double)(t_read - t0) / 1e6,
		       nrules, engine_hosts(e), (double)(t_eval - t_read) / 1e6, ctx.n);
		if (once)
			break;
		uint64_t spent = time_mono_ns() - t0;

		if (replay_to) {
			continue;
		} else if (spent < interval) {
			usleep((useconds_t)((interval - spent) / 1000));
		} else if (!overrun_said || t0 - overrun_said >= 60 * NSEC_PER_SEC) {
			log_warn("an evaluation took %.2f s, longer than the %.2f s interval: alerts "
				 "lag; raise --interval or split the rules over two instances",
				 (double)spent / 1e9, (double)interval / 1e9);
			overrun_said = t0;
		}
	}
	notify_stopping();
	if (replay_to) {
		size_t points, bytes = engine_history_bytes(e, &points);

		log_info("replayed %.0f s of history (%" PRIu64 " to %" PRIu64 "): %ld event(s) "
			 "to fl:alerts", (double)(replay_to - replay_from) / 1000, replay_from,
			 replay_to, events_total);
		log_info("history held: %zu point(s) of %zu host(s) in %.1f MB, %.1f KB per host",
			 points, engine_hosts(e), (double)bytes / 1e6,
			 engine_hosts(e) ? (double)bytes / 1e3 / (double)engine_hosts(e) : 0.0);
	}
	if ((ctx.nqueue || ctx.state_dirty) && rc)
		outbox_flush(&ctx, e, !once && (!replay_to || worker));
	/*
	 * A live worker leaving hands its partitions over at once.  A replay's
	 * workers end together, a few milliseconds apart: leaving would hand
	 * its partitions (and take its partials away) in the others' last
	 * evaluations, which would then resolve what still holds; its leases
	 * and membership expire on their own instead (3 intervals).
	 */
	if (worker && rc && !replay_to)
		worker_leave(worker, rc);
	if (ctx.nqueue)
		log_error("exiting with %d alert event(s) not written to fl:alerts; the next "
			  "start re-evaluates and re-emits what still holds", ctx.nqueue);
	outbox_free(&ctx);
	if (rc)
		conn_close(rc);
	metrics_server_stop(metrics);
	strbuf_release(&ms);
	engine_free(e);
	worker_free(worker);
	topology_free(&topo);
	return 0;
}
