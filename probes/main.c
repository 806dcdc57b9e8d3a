/*
 * main.c - faultline-probe: sample every collector each interval, hand the
 * snapshot to the store writer, keep the minute and hour rollups, serve
 * /metrics.
 *
 * Flow per tick (probes/loop.c timerfd, aligned to the wall clock):
 *
 *   collectors -> snapshot (tier 1) -> store spool -> Redis fl:{H}:s1
 *                                   -> minute rollup -> fl:{H}:s60
 *                                                    -> hour rollup -> s3600
 *                                   -> Prometheus text for /metrics
 *
 * Everything runs on one thread except the store's writer, so a slow or
 * absent Redis never delays a sample.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "probes/caps.h"
#include "core/config.h"
#include "core/log.h"
#include "core/notify.h"
#include "probes/loop.h"
#include "core/metrics_server.h"
#include "model/profile_export.h"
#include "probes/probe.h"
#include "probes/profile_cmd.h"
#include "model/profile.h"
#include "probes/prom.h"
#include "model/rollup.h"
#include "store/conn.h"
#include "store/host_usage.h"
#include "store/store.h"
#include "core/strbuf.h"
#include "core/timeutil.h"

static const struct collector *const all_collectors[] = {
	&tcp_collector,
	&throttle_collector,
	&drive_collector,
	&block_collector,
	&cpu_collector,
	&profile_collector,
	&deploy_watch_collector,
};
#define N_COLLECTORS (sizeof(all_collectors) / sizeof(all_collectors[0]))

struct probe {
	struct probe_config cfg;
	struct loop *loop;
	struct store *store;
	struct metrics_server *metrics;
	struct remote_write *rw;	/* remote_write.url set: the tier out to a TSDB */
	const struct collector *coll[N_COLLECTORS];
	void *priv[N_COLLECTORS];
	size_t ncoll;
	struct rollup tiers[2];		/* minute, hour */
	uint64_t seq;
	uint64_t last_collect_ns;
	uint64_t missed_ticks;
	struct strbuf prom;
	/* between ticks (page_watch): the counters pages hang on */
	uint64_t watch_ns;		/* the timer's period: page_watch, or the interval */
	uint64_t slot;			/* wall clock / interval of the last snapshot on the tick */
	int quiet;			/* none of them moved in the interval before this one */
	int moved;			/* one moved in this interval */
	uint64_t early_flushes;
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: faultline-probe [OPTIONS]\n"
"       faultline-probe profile [--duration 30s] [-o cpu.pb.gz] [--rate 99]\n"
"                               [--pid PID | --cgroup PATH]\n"
"\n"
"Measure this host every interval (block I/O latency from BPF, TCP/UDP\n"
"errors from /proc) and write snapshots and their 1 min / 1 h rollups to\n"
"Redis; serve the latest snapshot as Prometheus text on /metrics.\n"
"\n"
"Options (each overrides the config file):\n"
"  -c, --config FILE        read FILE on top of the built-in defaults (default:\n"
"                           /etc/faultline/probe.yaml or /usr/local/etc/faultline/\n"
"                           probe.yaml when installed there)\n"
"                           (the built-in defaults are etc/probe.yaml)\n"
"  -r, --redis URL          redis://[[user]:pass@]host[:port][/db][?options],\n"
"                           unix:///path/redis.sock or, for a Redis Cluster,\n"
"                           redis-cluster://[[user]:pass@]h1:port,h2:port;\n"
"                           rediss:// and rediss-cluster:// over TLS; options\n"
"                           password_file=, tls_ca=, tls_cert=, tls_key=\n"
"                           (docs/security.md)\n"
"  -H, --host NAME          host name in keys and alerts (default: hostname)\n"
"  -i, --interval DUR       sampling interval (default 1s)\n"
"  -m, --metrics-addr ADDR  /metrics listen address, HOST:PORT; \"\" disables\n"
"      --web-config FILE    TLS and basic auth for /metrics (Prometheus'\n"
"                           exporter-toolkit web config format)\n"
"      --no-bpf             run the /proc-based collectors only\n"
"      --once               collect one snapshot, print it as Prometheus text\n"
"                           to stdout and exit (no Redis)\n"
"      --print-config       print the built-in default config and exit\n"
"      --config-reference   print every config key (type, bounds, default,\n"
"                           description) as a Markdown table and exit\n"
"  -l, --log-level LEVEL    error, warn, info or debug\n"
"      --log-format FMT     text (default), json or logfmt, for log shippers\n"
"  -h, --help               this text\n"
"  -V, --version            print the version\n"
"\n"
"Exit status: 0 after SIGINT/SIGTERM, 1 on a start-up error (the message\n"
"names what is missing), 2 on a usage error.\n");
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[8192], *line, *save;
	/* verifier logs come as warnings but are only useful when debugging */
	enum log_level lv = level == LIBBPF_WARN ? LOG_WARN : LOG_DEBUG;

	if (lv > log_get_level())
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		log_msg(lv, "%s%s", strncmp(line, "libbpf: ", 8) ? "libbpf: " : "", line);
	return 0;
}

static int collect(struct probe *p, struct snapshot *s)
{
	uint64_t t0 = time_mono_ns(), ts = time_wall_ns() / NSEC_PER_MSEC;
	struct store_stats st = { 0 };
	int ret;

	ret = snapshot_init(s, p->cfg.host, ts, p->cfg.interval_ns / NSEC_PER_MSEC, p->seq++, 1);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < p->cfg.nlabels; i++)
		snapshot_set_label(s, p->cfg.labels[i].key, p->cfg.labels[i].value);
	for (size_t i = 0; i < p->ncoll; i++) {
		ret = p->coll[i]->collect(p->priv[i], s);
		if (ret)
			log_warn("collector %s: %s", p->coll[i]->name, strerror(-ret));
	}
	if (p->store)
		store_get_stats(p->store, &st);
	snapshot_add_gauge(s, "probe.collect_duration", (double)p->last_collect_ns, NULL);
	snapshot_add_counter(s, "probe.early_flushes", p->early_flushes, NULL);
	snapshot_add_counter(s, "probe.store_written", st.written, NULL);
	snapshot_add_counter(s, "probe.store_dropped", st.dropped, NULL);
	snapshot_add_counter(s, "probe.store_errors", st.errors, NULL);
	snapshot_add_gauge(s, "probe.store_spooled", (double)st.spooled, NULL);
	snapshot_add_gauge(s, "probe.store_connected", st.connected, NULL);
	if (p->rw) {
		struct remote_write_stats rs;

		remote_write_get_stats(p->rw, &rs);
		snapshot_add_counter(s, "probe.remote_write_samples", rs.sent, "outcome", "sent",
				     NULL);
		snapshot_add_counter(s, "probe.remote_write_samples", rs.failed, "outcome",
				     "failed", NULL);
		snapshot_add_counter(s, "probe.remote_write_samples", rs.dropped, "outcome",
				     "dropped", NULL);
		snapshot_add_counter(s, "probe.remote_write_retries", rs.retries, NULL);
		snapshot_add_gauge(s, "probe.remote_write_pending", (double)rs.pending, NULL);
		snapshot_add_gauge(s, "probe.remote_write_last_sent", (double)rs.last_sent_ms, NULL);
	}
	p->last_collect_ns = time_mono_ns() - t0;
	return 0;
}

/* A finished rollup window goes to Redis like any snapshot. */
static void put_rollup(const struct snapshot *out, const struct snapshot *base, void *arg)
{
	struct probe *p = arg;

	store_put_rollup(p->store, out, base);
}

/* Whether a counter a page hangs on moved since the last snapshot (collector.moved). */
static int page_counters_moved(struct probe *p)
{
	for (size_t i = 0; i < p->ncoll; i++)
		if (p->coll[i]->moved && p->coll[i]->moved(p->priv[i]))
			return 1;
	return 0;
}

/*
 * A snapshot between ticks: a counter a page hangs on moved after a quiet
 * interval.  To Redis at once, with a wake for the rules (store/wake.h);
 * not to the rollups (the tiers are cumulative: the next tick's snapshot
 * carries what this one saw) nor /metrics.  At most one per interval, and
 * none while the counters keep moving: a host that is already sad is on
 * the tick, so its Redis writes double for one interval at most.
 */
static void flush_early(struct probe *p)
{
	struct snapshot s;

	p->early_flushes++;
	if (collect(p, &s)) {
		log_error("out of memory building a snapshot; skipping it");
		return;
	}
	if (store_put_snapshot(p->store, &s) || store_put_wake(p->store, p->cfg.host))
		log_warn("could not queue an early snapshot for Redis (out of memory)");
	log_debug("a counter a page hangs on moved: snapshot %llu flushed early",
		  (unsigned long long)s.seq);
	snapshot_free(&s);
}

static void take_snapshot(struct probe *p, uint64_t missed);

static void on_tick(struct loop *l, uint64_t expirations, void *arg)
{
	struct probe *p = arg;
	uint64_t slot;

	(void)l;
	if (p->watch_ns == p->cfg.interval_ns) {
		take_snapshot(p, expirations - 1);
		return;
	}
	/* within half a watch period of a multiple of the interval: the tick */
	slot = (time_wall_ns() + p->watch_ns / 2) / p->cfg.interval_ns;
	if (slot != p->slot) {
		uint64_t missed = p->slot && slot > p->slot + 1 ? slot - p->slot - 1 : 0;

		/* quiet: nothing moved in the interval that ends (none is watched before the first) */
		p->quiet = !p->moved;
		p->moved = 0;
		p->slot = slot;
		take_snapshot(p, missed);
		return;
	}
	/* before the first snapshot the collectors have nothing to compare with */
	if (!p->slot || p->moved || !page_counters_moved(p))
		return;
	p->moved = 1;
	if (p->quiet)
		flush_early(p);
}

/* The snapshot of the tick, to Redis, the rollups and /metrics. */
static void take_snapshot(struct probe *p, uint64_t missed)
{
	struct snapshot s;

	notify_watchdog();	/* the loop ticks: systemd's watchdog is fed */
	if (missed) {
		p->missed_ticks += missed;
		log_warn("sampling fell behind by %llu interval(s) (system overloaded?)",
			 (unsigned long long)missed);
	}
	if (collect(p, &s)) {
		log_error("out of memory building a snapshot; skipping this interval");
		return;
	}
	if (store_put_snapshot(p->store, &s))
		log_warn("could not queue the snapshot for Redis (out of memory)");
	for (size_t i = 0; i < p->ncoll; i++)
		if (p->coll[i]->publish)
			p->coll[i]->publish(p->priv[i], p->store, p->cfg.host);
	if (p->rw && remote_write_offer(p->rw, &s) < 0)
		log_warn("remote write: out of memory; this tier's samples are not sent");
	if (p->metrics && metrics_server_wanted(p->metrics)) {
		strbuf_reset(&p->prom);
		prom_render(&s, &p->cfg.buckets, &p->prom);
		metrics_server_set_body(p->metrics, strbuf_str(&p->prom), p->prom.len);
		/* the protobuf form (native histograms) once a scraper has asked for it */
		strbuf_reset(&p->prom);
		if (metrics_server_proto_asked(p->metrics) &&
		    prom_render_proto(&s, &p->cfg.buckets, &p->prom) == 0)
			metrics_server_set_proto(p->metrics, p->prom.buf, p->prom.len);
	}
	/* last: the minute's rollup keeps s (to difference the next second's counters with) */
	if (rollup_cascade_take(p->tiers, 2, &s, put_rollup, p))
		log_warn("rollups: out of memory");
}

/* The Redis writer and compactor threads (store.h) need no capability at all. */
/* The store writer's and remote write's threads: they hold no capability. */
static void thread_drop_caps(void)
{
	char err[256];

	if (caps_keep(caps_none, err, sizeof(err)))
		log_warn("a network thread keeps every capability: %s", err);
}

static void on_signal(struct loop *l, int signo, void *arg)
{
	(void)arg;
	log_info("received %s, stopping", strsignal(signo));
	notify_stopping();
	loop_stop(l);
}

struct metrics_start {
	const struct probe_config *cfg;
	struct metrics_server *m;
	char err[512];
};

static void *metrics_start_thread(void *arg)
{
	struct metrics_start *ms = arg;
	char err[256];

	if (caps_keep(caps_none, err, sizeof(err)))
		log_warn("/metrics server keeps every capability: %s", err);
	ms->m = metrics_server_start(ms->cfg->metrics_addr, ms->cfg->web_config, ms->err,
				     sizeof(ms->err));
	return NULL;
}

/*
 * Start /metrics from a thread that first gives up every capability: the
 * server's own thread inherits its creator's, and the one thread that talks
 * to the network should hold none of root's powers.  NULL with err on failure.
 */
static struct metrics_server *start_metrics_unprivileged(const struct probe_config *cfg,
							 char *err, size_t errlen)
{
	struct metrics_start ms = { .cfg = cfg };
	pthread_t t;

	if (pthread_create(&t, NULL, metrics_start_thread, &ms)) {
		snprintf(err, errlen, "/metrics: cannot start a thread");
		return NULL;
	}
	pthread_join(t, NULL);
	if (!ms.m)
		snprintf(err, errlen, "%s", ms.err);
	return ms.m;
}

enum { OPT_NO_BPF = 256, OPT_ONCE, OPT_PRINT_CONFIG, OPT_CONFIG_REFERENCE, OPT_LOG_FORMAT,
       OPT_WEB_CONFIG };

/*
 * A command-line option over the config's *field: replaced by a copy of
 * value, left alone when value is NULL (not given).  Returns 0 or -ENOMEM
 * (*field then keeps its old value).
 */
static int override(char **field, const char *value)
{
	char *copy;

	if (!value)
		return 0;
	copy = strdup(value);
	if (!copy)
		return -ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

/* The config reference from the schema table, with the built-in defaults. */
static int print_config_reference(void)
{
	struct probe_config cfg;
	struct strbuf sb = STRBUF_INIT;
	char err[256];

	if (probe_config_defaults(&cfg, err, sizeof(err))) {
		fprintf(stderr, "faultline-probe: built-in config: %s\n", err);
		return 1;
	}
	cfg_schema_markdown(probe_config_schema, probe_config_nschema, &cfg, &sb);
	fputs(strbuf_str(&sb), stdout);
	strbuf_release(&sb);
	probe_config_free(&cfg);
	return 0;
}

/* The command line (each option overrides the config's key). */
struct probe_args {
	const char *config, *redis, *host, *interval, *metrics, *level, *web_config;
	int no_bpf, once;
};

/* argv into a: -1 to go on, or the status to exit with. */
static int parse_args(int argc, char **argv, struct probe_args *a)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "redis", required_argument, NULL, 'r' },
		{ "host", required_argument, NULL, 'H' },
		{ "interval", required_argument, NULL, 'i' },
		{ "metrics-addr", required_argument, NULL, 'm' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "no-bpf", no_argument, NULL, OPT_NO_BPF },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "print-config", no_argument, NULL, OPT_PRINT_CONFIG },
		{ "config-reference", no_argument, NULL, OPT_CONFIG_REFERENCE },
		{ "log-format", required_argument, NULL, OPT_LOG_FORMAT },
		{ "web-config", required_argument, NULL, OPT_WEB_CONFIG },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:r:H:i:m:l:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->config = optarg; break;
		case 'r': a->redis = optarg; break;
		case 'H': a->host = optarg; break;
		case 'i': a->interval = optarg; break;
		case 'm': a->metrics = optarg; break;
		case 'l': a->level = optarg; break;
		case OPT_NO_BPF: a->no_bpf = 1; break;
		case OPT_ONCE: a->once = 1; break;
		case OPT_PRINT_CONFIG: fputs(probe_default_config, stdout); return 0;
		case OPT_CONFIG_REFERENCE: return print_config_reference();
		case OPT_LOG_FORMAT:
			if (log_format_option("faultline-probe", optarg))
				return 2;
			break;
		case OPT_WEB_CONFIG: a->web_config = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("faultline-probe %s\n", FL_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "faultline-probe: unexpected argument '%s' (try --help)\n",
			argv[optind]);
		return 2;
	}
	return -1;
}

/*
 * p->cfg: the built-in default, the config file (--config, or the
 * installed one), the command line over it; the log level; the host name.
 * Returns -1 to go on, or the status to exit with (said).
 */
static int configure(struct probe *p, const struct probe_args *a)
{
	const char *config = a->config;
	enum log_level lv;
	char err[512];

	if (probe_config_defaults(&p->cfg, err, sizeof(err))) {
		log_error("built-in config: %s", err);
		return 1;
	}
	if (!config && !a->once) {
		/* installed: /etc/faultline/probe.yaml on top of the built-in default */
		static char found[600];

		config = cfg_find("probe.yaml", 0, found, sizeof(found));
		if (config)
			log_info("reading %s (no --config given)", config);
	}
	if (config && probe_config_load(&p->cfg, config, err, sizeof(err))) {
		log_error("%s", err);
		return 1;
	}
	if (override(&p->cfg.redis_url, a->redis) || override(&p->cfg.host, a->host) ||
	    override(&p->cfg.web_config, a->web_config) ||
	    override(&p->cfg.metrics_addr, a->metrics) || override(&p->cfg.log_level, a->level)) {
		log_error("out of memory reading the command line");
		return 1;
	}
	if (a->interval && (duration_parse(a->interval, &p->cfg.interval_ns) ||
			    p->cfg.interval_ns < 10 * NSEC_PER_MSEC)) {
		log_error("--interval '%s': expected a duration of at least 10ms, e.g. 1s",
			  a->interval);
		return 2;
	}
	if (a->no_bpf)
		p->cfg.bpf = 0;
	if (log_parse_level(p->cfg.log_level, &lv)) {
		log_error("--log-level '%s': expected error, warn, info or debug", p->cfg.log_level);
		return 2;
	}
	log_set_level(lv);
	if (!p->cfg.host[0]) {
		char hn[256] = "";

		gethostname(hn, sizeof(hn) - 1);
		if (override(&p->cfg.host, hn)) {
			log_error("out of memory reading the host name");
			return 1;
		}
	}
	if (!store_host_valid(p->cfg.host)) {
		log_error("host name '%s' has characters other than letters, digits, . _ - :; "
			  "set --host or host: in the config", p->cfg.host);
		return 1;
	}
	return -1;
}

/* Open every collector the config turns on.  0, or -1 (said). */
static int open_collectors(struct probe *p, int once)
{
	char err[512];

	for (size_t i = 0; i < N_COLLECTORS; i++) {
		const struct collector *col = all_collectors[i];
		const char *why = "";

		if (col->enabled && !col->enabled(&p->cfg, once, &why)) {
			log_debug("collector %s: off (%s)", col->name, why);
			continue;
		}
		if (col->needs_bpf && !p->cfg.bpf) {
			log_info("collector %s: disabled (--no-bpf / bpf: false)", col->name);
			continue;
		}
		if (col->open(&p->priv[p->ncoll], &p->cfg, err, sizeof(err))) {
			log_error("%s", err);
			return -1;
		}
		p->coll[p->ncoll++] = col;
	}
	return 0;
}

/* --once: one snapshot as Prometheus text on stdout.  Returns the exit status. */
static int probe_once(struct probe *p)
{
	struct snapshot s;

	/* counters need a moment to mean something for BPF collectors */
	if (p->cfg.bpf)
		usleep((useconds_t)(p->cfg.interval_ns / 1000));
	if (collect(p, &s))
		return 1;
	prom_render(&s, &p->cfg.buckets, &p->prom);
	fputs(strbuf_str(&p->prom), stdout);
	snapshot_free(&s);
	return 0;
}

/*
 * Say, at start-up, which of the host's streams hold history older than
 * their retention: the probe trims it as it writes, so a retention made
 * shorter (by hand, or a default that changed on upgrade: retention.s3600
 * was 90d) would otherwise drop days of history without a word.  A stream
 * is named when it holds more than its retention plus two of its spans (or
 * a quarter of the retention): trimming by age is by whole spans.  Redis
 * away, or slower than RETENTION_CHECK_NS to connect or answer: not
 * checked (said at debug level); the sampling loop, which never waits on
 * Redis, starts after this one look, bounded by it rather than by
 * redis_timeout.
 */
#define RETENTION_CHECK_NS (500 * NSEC_PER_MSEC)

static void retention_notice(const struct probe_config *cfg)
{
	/* in the order of usage_retention_keys */
	const uint64_t keep_of_key[USAGE_RETENTION_KEYS] = {
		cfg->retention_ns[0], cfg->retention_ns[1], cfg->retention_ns[2],
		cfg->retention_p10_ns, cfg->retention_p3600_ns
	};
	uint64_t oldest[USAGE_STREAMS], now = time_wall_ns();
	char err[256];
	struct conn *c = conn_open(cfg->redis_url, cfg->redis_timeout_ns < RETENTION_CHECK_NS ?
				   cfg->redis_timeout_ns : RETENTION_CHECK_NS, err, sizeof(err));

	if (!c || host_history_oldest(c, cfg->host, oldest, err, sizeof(err))) {
		log_debug("retention: history not checked: %s", err);
		if (c)
			conn_close(c);
		return;
	}
	conn_close(c);
	for (int k = 0; k < USAGE_STREAMS; k++) {
		const char *key = usage_retention_keys[usage_stream_retention_key(k)];
		uint64_t keep = keep_of_key[usage_stream_retention_key(k)];
		uint64_t span = usage_stream_span_ms(k) * NSEC_PER_MSEC, held, slack;
		char since[40], h[32], r[32], cut[40];

		if (!oldest[k] || oldest[k] * NSEC_PER_MSEC >= now)
			continue;
		held = now - oldest[k] * NSEC_PER_MSEC;
		slack = 2 * span > keep / 4 ? 2 * span : keep / 4;
		if (held <= keep + slack)
			continue;
		log_warn("retention: %s's %s holds %s of history (since %s) and retention.%s "
			 "is %s: what is older than %s goes as the probe writes; to keep it, "
			 "raise retention.%s in the probe's config%s",
			 cfg->host, usage_stream_name(k),
			 duration_format(held - held % (span ? span : 1), h, sizeof(h)),
			 time_format_rfc3339(oldest[k] * NSEC_PER_MSEC, since, sizeof(since)),
			 key, duration_format(keep, r, sizeof(r)),
			 time_format_rfc3339(now - keep, cut, sizeof(cut)), key,
			 k == USAGE_S3600 ? " (its default was 90d in earlier releases and is "
			 "7d now; remote_write: keeps longer history)" : "");
	}
}

/*
 * The running probe: the store, the rollup tiers, the event loop with its
 * timer and signals, /metrics; then only the capabilities the loop needs.
 * 0, or -1 (said).
 */
static int probe_start(struct probe *p, const int *sigs)
{
	struct store_opts so = {
		.url = p->cfg.redis_url,
		.timeout_ns = p->cfg.redis_timeout_ns,
		.spool_max_entries = p->cfg.spool_max_snapshots,
		.spool_max_bytes = p->cfg.spool_max_bytes,
		.spool_path = p->cfg.spool_path,
		.thread_start = thread_drop_caps,
	};
	char err[512], iv[32], names[256] = "", shown[600], status[300];

	for (int i = 0; i < STORE_TIERS; i++)
		so.retention_ms[i] = p->cfg.retention_ns[i] / NSEC_PER_MSEC;
	/* the watch only between ticks that are further apart, on a grid they fall on */
	p->watch_ns = p->cfg.interval_ns;
	if (p->cfg.page_watch_ns && p->cfg.page_watch_ns < p->cfg.interval_ns &&
	    p->cfg.interval_ns % p->cfg.page_watch_ns == 0)
		p->watch_ns = p->cfg.page_watch_ns;
	else if (p->cfg.page_watch_ns && p->cfg.page_watch_ns < p->cfg.interval_ns)
		log_warn("page_watch %llu ms does not divide the interval: it is off",
			 (unsigned long long)(p->cfg.page_watch_ns / NSEC_PER_MSEC));
	p->store = store_open(&so, err, sizeof(err));
	if (!p->store) {
		log_error("%s", err);
		return -1;
	}
	retention_notice(&p->cfg);
	if (p->cfg.remote_write.url[0]) {
		char tier[32];

		p->cfg.remote_write.thread_start = thread_drop_caps;
		p->rw = remote_write_open(&p->cfg.remote_write, p->cfg.host, p->cfg.labels,
					  p->cfg.nlabels, &p->cfg.buckets, err, sizeof(err));
		if (!p->rw) {
			log_error("%s", err);
			return -1;
		}
		log_info("remote write: every series each %s to %s",
			 duration_format(p->cfg.remote_write.tier_ns, tier, sizeof(tier)),
			 p->cfg.remote_write.url);
	}
	if (rollup_init(&p->tiers[0], p->cfg.host, 60) ||
	    rollup_init(&p->tiers[1], p->cfg.host, 3600)) {
		log_error("out of memory");
		return -1;
	}
	p->loop = loop_new();
	if (!p->loop) {
		log_error("cannot create the event loop: %s", strerror(errno));
		return -1;
	}
	if (p->cfg.metrics_addr[0]) {
		p->metrics = start_metrics_unprivileged(&p->cfg, err, sizeof(err));
		if (!p->metrics) {
			log_error("%s", err);
			return -1;
		}
		/* rendered while scraped: a tenth of an idle probe's CPU otherwise */
		metrics_server_lazy(p->metrics, p->cfg.interval_ns);
	}
	if (loop_watch_signals(p->loop, sigs, on_signal, p) ||
	    loop_set_timer(p->loop, p->watch_ns, on_tick, p)) {
		log_error("cannot set up timers/signals: %s", strerror(errno));
		return -1;
	}
	/* everything is loaded and bound: keep only what the main loop needs */
	if (caps_keep(caps_main, err, sizeof(err)))
		log_warn("keeping every capability: %s", err);
	/* the collectors that opened, not the ones that exist */
	for (size_t i = 0; i < p->ncoll; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), " %s",
			 p->coll[i]->name);
	conn_url_redacted(p->cfg.redis_url, shown, sizeof(shown));
	log_info("probing host %s every %s; snapshots to %s; /metrics on %s; collectors:%s",
		 p->cfg.host, duration_format(p->cfg.interval_ns, iv, sizeof(iv)), shown,
		 p->cfg.metrics_addr[0] ? p->cfg.metrics_addr : "(off)", names);
	snprintf(status, sizeof(status), "probing %s, %zu collector(s)", p->cfg.host, p->ncoll);
	notify_ready(status);
	return 0;
}

static void probe_free(struct probe *p)
{
	metrics_server_stop(p->metrics);
	remote_write_close(p->rw, 0);
	loop_free(p->loop);
	if (p->store)
		store_close(p->store);
	for (int i = 0; i < 2; i++)
		if (p->tiers[i].acc.host)
			rollup_free(&p->tiers[i]);
	for (size_t i = 0; i < p->ncoll; i++)
		p->coll[i]->close(p->priv[i]);
	strbuf_release(&p->prom);
	probe_config_free(&p->cfg);
}

int main(int argc, char **argv)
{
	static const int sigs[] = { SIGINT, SIGTERM, 0 };
	struct probe_args a = { 0 };
	struct probe p = { 0 };
	int rc;

	log_init("faultline-probe");
	/*
	 * A fixed threshold: glibc otherwise raises it to the size of each
	 * large block freed (a binary's symbols, an unwind table being built,
	 * libbpf's copy of the kernel's BTF), and blocks that size then come
	 * from the heap, which keeps their pages once they are freed: the
	 * probe's RSS stayed at its start-up peak.
	 */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	libbpf_set_print(libbpf_log);
	if (argc > 1 && !strcmp(argv[1], "profile"))
		return profile_cmd(argc - 1, argv + 1);
	if ((rc = parse_args(argc, argv, &a)) >= 0)
		return rc;
	/*
	 * Block the stop signals before any thread exists (the drive, profile
	 * and store threads inherit the mask): they reach the main loop's
	 * signalfd, which stops cleanly and flushes, instead of killing the
	 * process from whichever thread the kernel picks.
	 */
	if (!a.once) {
		sigset_t set;

		sigemptyset(&set);
		for (const int *sg = sigs; *sg; sg++)
			sigaddset(&set, *sg);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	if ((rc = configure(&p, &a)) >= 0)
		goto out;
	rc = 1;
	if (open_collectors(&p, a.once))
		goto out;
	if (a.once) {
		rc = probe_once(&p);
		goto out;
	}
	if (probe_start(&p, sigs))
		goto out;
	rc = loop_run(p.loop) ? 1 : 0;
	if (store_flush(p.store, 3 * NSEC_PER_SEC)) {
		struct store_stats st;

		store_get_stats(p.store, &st);
		log_warn("exiting with %llu snapshot(s) not yet in Redis (it is unreachable)",
			 (unsigned long long)st.spooled);
	}
	remote_write_close(p.rw, 3 * NSEC_PER_SEC);
	p.rw = NULL;
out:
	probe_free(&p);
	return rc;
}
