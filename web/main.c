/*
 * main.c - faultline-web: Prometheus' HTTP API over the fleet's Redis
 * tiers (web/prom_api.c, web/query.c), for Grafana, promtool query and
 * anything else that speaks it.
 *
 * It keeps no state of its own: every query reads what it needs from
 * Redis and is answered with the rules engine's own evaluator, so any
 * number of faultline-web can run behind a load balancer and answer
 * alike.  Its own figures are on /metrics beside the API.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "core/metrics_server.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "rules/lang/rules.h"
#include "store/chunk_cache.h"
#include "store/conn.h"
#include "web/pages.h"
#include "web/prom_api.h"

#define DEFAULT_LISTEN "127.0.0.1:9467"
#define DEFAULT_REDIS "unix:///run/faultline/redis.sock"

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
"Usage: faultline-web [--redis URL] [--listen ADDR] [--web.config.file FILE]\n"
"                     [--topology FILE] [--rules FILE...]\n"
"                     [--retention s1=15m,s60=1d,s3600=7d]\n"
"                     [--query.timeout 2m] [--query.max-samples N] [--hot 5m]\n"
"                     [--query.chunk-cache-mb 256]\n"
"                     [--log-level L]\n"
"\n"
"Serve Prometheus' HTTP API (/api/v1/query, query_range, series, labels,\n"
"label/NAME/values, metadata, status/buildinfo) over the snapshots faultline's\n"
"probes write to Redis, evaluated by the rules engine's PromQL: point Grafana's\n"
"Prometheus data source or `promtool query` at it.  A query reads the 1 s tier\n"
"when its range is within that tier's retention and its step under a minute,\n"
"else the 1-minute tier (step under an hour), else the 1-hour tier.  Keeps no\n"
"state: run as many as you like.  It also serves what on-call opens from a\n"
"page: /alert/FINGERPRINT (each alert's incident page, faultline-rules'\n"
"default generatorURL), /fleet (what fires, by failure domain) and /wear (the\n"
"SSD wear report).\n"
"\n"
"  -r, --redis URL       default " DEFAULT_REDIS "; also\n"
"                        redis://..., redis-cluster://h1:port,h2:port, rediss://\n"
"                        (options password_file=, tls_ca=, tls_cert=, tls_key=)\n"
"  -l, --listen ADDR     where to serve the API and /metrics (default\n"
"                        " DEFAULT_LISTEN "; :9467 for every address)\n"
"      --web.config.file FILE  TLS and basic auth, Prometheus exporter-toolkit's\n"
"                        format (docs/security.md)\n"
"  -t, --topology FILE   host globs -> rack/switch/... labels, as the rules\n"
"                        engine's (default topology.yaml from ./etc,\n"
"                        /etc/faultline or /usr/local/etc/faultline, when present)\n"
"  -R, --rules FILE      a rule file, for the incident pages' charts of each\n"
"                        alert's expression (repeatable; default\n"
"                        rules/faultline.yaml from the same places)\n"
"      --retention LIST  how long the probes keep each tier (their config's\n"
"                        retention:), which decides the tier a query reads\n"
"                        (default s1=15m,s60=1d,s3600=7d)\n"
"  -s, --stale DUR       on the 1 s tier, a host whose newest snapshot is older\n"
"                        than this at a step is left out of it, as the rules\n"
"                        engine leaves it out (default 5s)\n"
"      --query.timeout DUR      the longest a query may take (default 2m; a\n"
"                        request's timeout= may only shorten it)\n"
"      --query.max-samples N    the most points one query may read into memory\n"
"                        (default 50000000, as Prometheus')\n"
"      --hot DUR         keep the last DUR of every host's 1 s snapshots in\n"
"                        memory, tailed from Redis, and answer queries within it\n"
"                        from there (each snapshot decoded once, not per query;\n"
"                        ~18 KiB a minute per simulated host of 30 series, more\n"
"                        for a real one: faultline_web_hot_bytes on /metrics\n"
"                        says); 0 reads Redis for\n"
"                        every query (default 5m)\n"
"      --query.chunk-cache-mb N  keep up to N MiB of ended chunks decoded, so\n"
"                        that a range asked again (a dashboard's refresh) is\n"
"                        not decompressed and decoded again; answers are the\n"
"                        same with or without it (default 256; 0: none;\n"
"                        faultline_web_chunk_cache_* on /metrics)\n"
"      --log-level L     error, warn, info (default) or debug\n"
"      --log-format F    text (default), json or logfmt\n"
"  -h, --help            this help\n"
"  -V, --version         print the version\n");
}

struct web_options {
	const char *redis, *listen, *web_config, *topology;
	const char *rules[16];
	int nrules;
	uint64_t hot_ms;
	uint64_t cache_mb;		/* --query.chunk-cache-mb */
	struct query_opts q;
};

/* "s1=15m,s60=1d,s3600=7d" (any of them) into o->q.retention_ms.  0 or -1. */
static int parse_retention(struct web_options *o, const char *arg)
{
	static const char *const names[STORE_TIERS] = { "s1", "s60", "s3600" };
	uint64_t ns[STORE_TIERS];
	char err[256];

	for (int k = 0; k < STORE_TIERS; k++)
		ns[k] = o->q.retention_ms[k] * 1000000;
	if (duration_list_parse(arg, names, STORE_TIERS, ns, err, sizeof(err))) {
		fprintf(stderr, "faultline-web: --retention %s\n", err);
		return -1;
	}
	for (int k = 0; k < STORE_TIERS; k++)
		o->q.retention_ms[k] = ns[k] / 1000000;
	return 0;
}

/* Returns -1 to go on, else the exit status. */
static int parse_options(struct web_options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "listen", required_argument, NULL, 'l' },
		{ "web.config.file", required_argument, NULL, 'W' },
		{ "topology", required_argument, NULL, 't' },
		{ "retention", required_argument, NULL, 'E' },
		{ "rules", required_argument, NULL, 'R' },
		{ "stale", required_argument, NULL, 's' },
		{ "query.timeout", required_argument, NULL, 'T' },
		{ "query.max-samples", required_argument, NULL, 'M' },
		{ "hot", required_argument, NULL, 'H' },
		{ "query.chunk-cache-mb", required_argument, NULL, 'C' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "log-format", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	uint64_t ns;
	enum log_level lv;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->redis = DEFAULT_REDIS;
	o->listen = DEFAULT_LISTEN;
	o->q.retention_ms[0] = 15 * 60 * 1000ULL;
	o->q.retention_ms[1] = 86400 * 1000ULL;
	o->q.retention_ms[2] = 90 * 86400 * 1000ULL;
	o->q.stale_ms = 5000;
	o->q.timeout_ms = 120000;
	o->q.max_samples = 50000000;
	o->hot_ms = 5 * 60 * 1000;
	o->cache_mb = 256;
	while ((c = getopt_long(argc, argv, "r:l:t:R:s:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': o->redis = optarg; break;
		case 'l': o->listen = optarg; break;
		case 'W': o->web_config = optarg; break;
		case 't': o->topology = optarg; break;
		case 'E':
			if (parse_retention(o, optarg))
				return 2;
			break;
		case 'R':
			if (o->nrules == (int)(sizeof(o->rules) / sizeof(o->rules[0]))) {
				fprintf(stderr, "faultline-web: --rules: at most %zu files\n",
					sizeof(o->rules) / sizeof(o->rules[0]));
				return 2;
			}
			o->rules[o->nrules++] = optarg;
			break;
		case 's':
		case 'T':
			if (duration_parse(optarg, &ns) || !ns) {
				fprintf(stderr, "faultline-web: --%s: expected a duration such as "
					"5s or 2m, found '%s'\n", c == 's' ? "stale" : "query.timeout",
					optarg);
				return 2;
			}
			*(c == 's' ? &o->q.stale_ms : &o->q.timeout_ms) = ns / 1000000;
			break;
		case 'H':
			if (duration_parse(optarg, &ns)) {
				fprintf(stderr, "faultline-web: --hot: expected a duration such as 5m "
					"(0: none), found '%s'\n", optarg);
				return 2;
			}
			o->hot_ms = ns / 1000000;
			break;
		case 'M':
			errno = 0;
			o->q.max_samples = strtoull(optarg, &end, 10);
			if (errno || *end || !o->q.max_samples) {
				fprintf(stderr, "faultline-web: --query.max-samples: expected a "
					"positive number, found '%s'\n", optarg);
				return 2;
			}
			break;
		case 'C':
			errno = 0;
			o->cache_mb = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || o->cache_mb > (SIZE_MAX >> 20)) {
				fprintf(stderr, "faultline-web: --query.chunk-cache-mb: expected "
					"a number of MiB (0: none), found '%s'\n", optarg);
				return 2;
			}
			break;
		case 'L':
			if (log_parse_level(optarg, &lv)) {
				fprintf(stderr, "faultline-web: --log-level: expected error, warn, "
					"info or debug, found '%s'\n", optarg);
				return 2;
			}
			log_set_level(lv);
			break;
		case 'F':
			if (log_format_option("faultline-web", optarg))
				return 2;
			break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("faultline-web %s\n", FL_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "faultline-web: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return -1;
}

/* faultline-web's own /metrics. */
static void render_metrics(struct prom_api *api, struct query_hot *hot,
			   struct chunk_cache *cache, struct strbuf *sb)
{
	static const char *const tiers[] = { "1s", "1m", "1h" };
	struct prom_api_stats st;

	prom_api_stats(api, &st);
	strbuf_reset(sb);
	strbuf_adds(sb, "# HELP faultline_web_queries_total Queries answered, by the tier they "
		    "read.\n# TYPE faultline_web_queries_total counter\n");
	for (int i = 0; i < 3; i++)
		strbuf_addf(sb, "faultline_web_queries_total{tier=\"%s\"} %" PRIu64 "\n", tiers[i],
			    st.queries[i]);
	strbuf_addf(sb, "# HELP faultline_web_requests_failed_total API requests answered with "
		    "an error.\n# TYPE faultline_web_requests_failed_total counter\n"
		    "faultline_web_requests_failed_total %" PRIu64 "\n", st.failed);
	strbuf_addf(sb, "# HELP faultline_web_query_seconds_total Time spent answering queries.\n"
		    "# TYPE faultline_web_query_seconds_total counter\n"
		    "faultline_web_query_seconds_total %.6f\n", st.seconds);
	strbuf_addf(sb, "# HELP faultline_web_query_samples_total Points read from Redis for "
		    "queries.\n# TYPE faultline_web_query_samples_total counter\n"
		    "faultline_web_query_samples_total %" PRIu64 "\n", st.samples);
	if (hot) {
		/* the bytes walk every column: every 5 s, not every render */
		static size_t bytes;
		static unsigned renders;
		size_t n = query_hot_hosts(hot, renders++ % 5 && bytes ? NULL : &bytes);

		strbuf_addf(sb, "# HELP faultline_web_hot_hosts Hosts whose 1 s snapshots the "
			    "in-memory tail holds.\n# TYPE faultline_web_hot_hosts gauge\n"
			    "faultline_web_hot_hosts %zu\n# HELP faultline_web_hot_bytes Memory the "
			    "tail's columns hold.\n# TYPE faultline_web_hot_bytes gauge\n"
			    "faultline_web_hot_bytes %zu\n", n, bytes);
	}
	if (cache) {
		struct chunk_cache_stats cs;

		chunk_cache_stats(cache, &cs);
		strbuf_addf(sb, "# HELP faultline_web_chunk_cache_hits_total Ended chunks a query "
			    "took decoded from the cache.\n"
			    "# TYPE faultline_web_chunk_cache_hits_total counter\n"
			    "faultline_web_chunk_cache_hits_total %" PRIu64 "\n"
			    "# HELP faultline_web_chunk_cache_misses_total Ended chunks a query "
			    "decoded itself.\n# TYPE faultline_web_chunk_cache_misses_total counter\n"
			    "faultline_web_chunk_cache_misses_total %" PRIu64 "\n"
			    "# HELP faultline_web_chunk_cache_evictions_total Chunks let go to stay "
			    "within --query.chunk-cache-mb.\n"
			    "# TYPE faultline_web_chunk_cache_evictions_total counter\n"
			    "faultline_web_chunk_cache_evictions_total %" PRIu64 "\n"
			    "# HELP faultline_web_chunk_cache_too_large_total Chunks decoded but not "
			    "kept: alone over an eighth of --query.chunk-cache-mb.\n"
			    "# TYPE faultline_web_chunk_cache_too_large_total counter\n"
			    "faultline_web_chunk_cache_too_large_total %" PRIu64 "\n"
			    "# HELP faultline_web_chunk_cache_bytes Memory the decoded chunks hold.\n"
			    "# TYPE faultline_web_chunk_cache_bytes gauge\n"
			    "faultline_web_chunk_cache_bytes %zu\n"
			    "# HELP faultline_web_chunk_cache_max_bytes --query.chunk-cache-mb.\n"
			    "# TYPE faultline_web_chunk_cache_max_bytes gauge\n"
			    "faultline_web_chunk_cache_max_bytes %zu\n",
			    cs.hits, cs.misses, cs.evictions, cs.too_large, cs.bytes, cs.max_bytes);
	}
}

int main(int argc, char **argv)
{
	struct web_options o;
	struct topology topo = { 0 };
	struct metrics_server *ms;
	struct prom_api *api;
	struct pages *pages;
	struct ruleset rs = { 0 };
	struct strbuf sb = STRBUF_INIT;
	const char *topo_path;
	char err[512], found[600], rfound[600], shown[600];
	int ret;

	log_init("faultline-web");
	if ((ret = parse_options(&o, argc, argv)) >= 0)
		return ret;
	topo_path = o.topology ? o.topology : cfg_find("topology.yaml", 1, found, sizeof(found));
	if (topo_path && topology_load(&topo, topo_path, err, sizeof(err))) {
		log_error("%s", err);
		return 1;
	}
	o.q.topology = &topo;
	if (!o.nrules && (o.rules[0] = cfg_find("rules/faultline.yaml", 1, rfound,
						 sizeof(rfound))))
		o.nrules = 1;
	for (int i = 0; i < o.nrules; i++)
		if (rules_load(&rs, o.rules[i], err, sizeof(err))) {
			log_error("%s", err);
			return 1;
		}
	if ((o.cache_mb && !(o.q.cache = chunk_cache_new((size_t)o.cache_mb << 20))) ||
	    !(o.q.registry = host_list_new(HOST_LIST_MAX_AGE_MS))) {
		log_error("out of memory");
		return 1;
	}
	if (o.hot_ms && !(o.q.hot = query_hot_start(o.redis, &o.q, o.hot_ms))) {
		log_error("the in-memory tail could not start (out of memory)");
		return 1;
	}
	if (!(api = prom_api_new(o.redis, &o.q)) || !(pages = pages_new(o.redis, &o.q, &rs))) {
		log_error("out of memory");
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	ms = metrics_server_start(o.listen, o.web_config, err, sizeof(err));
	if (!ms) {
		log_error("%s", err);
		return 1;
	}
	if (metrics_server_route(ms, "/api/v1/", prom_api_handle, api) ||
	    metrics_server_route(ms, "/-/", prom_api_handle, api) ||
	    metrics_server_route(ms, "/alert/", pages_handle, pages) ||
	    metrics_server_route(ms, "/fleet", pages_handle, pages) ||
	    metrics_server_route(ms, "/wear", pages_handle, pages)) {
		log_error("the API could not be routed");
		return 1;
	}
	conn_url_redacted(o.redis, shown, sizeof(shown));
	log_info("serving Prometheus' API on http://%s/api/v1/ and incident pages on "
		 "http://%s/fleet over %s%s%s; %d rule file(s)", o.listen, o.listen, shown,
		 topo_path ? " with the topology of " : "", topo_path ? topo_path : "", o.nrules);
	while (!stopping) {
		render_metrics(api, o.q.hot, o.q.cache, &sb);
		metrics_server_set_body(ms, strbuf_str(&sb), sb.len);
		sleep(1);
	}
	log_info("stopping");
	metrics_server_stop(ms);
	prom_api_free(api);
	pages_free(pages);
	query_hot_stop(o.q.hot);
	chunk_cache_free(o.q.cache);
	host_list_free(o.q.registry);
	rules_free(&rs);
	topology_free(&topo);
	strbuf_release(&sb);
	return 0;
}
