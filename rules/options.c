/*
 * options.c - faultline-rules' command line; see options.h.
 */
#include "rules/options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/log.h"
#include "core/timeutil.h"

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
"      --web-url U       faultline-web's address as on-call reaches it: each\n"
"                        event's generatorURL is its incident page,\n"
"                        U/alert/FINGERPRINT (default http://127.0.0.1:9467,\n"
"                        faultline-web's own default; \"\" for none)\n"
"  -g, --generator-url U instead, a rule file's address: each event's\n"
"                        generatorURL is U#RULE, e.g.\n"
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
"      --no-wake         evaluate on the interval's tick only; by default a\n"
"                        host named in fl:wake (a probe flushed a snapshot at\n"
"                        once because a counter a page hangs on moved) is\n"
"                        evaluated as soon as it is named (docs/rules.md)\n"
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

/* Option c and its argument: -1 to go on, or the status to exit with. */
static int parse_option(struct rules_options *o, int c, const char **live_only, uint64_t *grace)
{
	enum log_level lv;
	char *end;

	switch (c) {
	case 't': o->topo_path = optarg; break;
	case 'R':
		if (o->nfiles == RULES_MAX_FILES) {
			fprintf(stderr, "faultline-rules: more than %d --rules files; merge "
				"some, or put their groups in one file\n", RULES_MAX_FILES);
			return 2;
		}
		o->files[o->nfiles++] = optarg;
		break;
	case 'r': o->url = optarg; break;
	case 'i':
	case 's':
		if (duration_parse(optarg, c == 'i' ? &o->interval : &o->stale) ||
		    (c == 'i' && o->interval < 100 * NSEC_PER_MSEC)) {
			fprintf(stderr, "faultline-rules: --%s '%s': expected a duration\n",
				c == 'i' ? "interval" : "stale", optarg);
			return 2;
		}
		break;
	case 'G':
		*live_only = "--for-grace-period";
		if (duration_parse(optarg, grace) || *grace < NSEC_PER_MSEC) {
			fprintf(stderr, "faultline-rules: --for-grace-period '%s': expected a "
				"duration of at least 1ms, such as 10m\n", optarg);
			return 2;
		}
		break;
	case 'B':
		*live_only = "--alert-backlog-max";
		o->eopts.alert_backlog_max = strtoull(optarg, &end, 10);
		if (*end || !o->eopts.alert_backlog_max || optarg[0] == '-') {
			fprintf(stderr, "faultline-rules: --alert-backlog-max '%s': expected a "
				"positive count\n", optarg);
			return 2;
		}
		break;
	case 'Y':
		o->wait_replicas = (int)strtol(optarg, &end, 10);
		if (*end || o->wait_replicas < 0 || o->wait_replicas > 16 || !optarg[0]) {
			fprintf(stderr, "faultline-rules: --wait-replicas '%s': expected a "
				"count of replicas, 0 to 16\n", optarg);
			return 2;
		}
		break;
	case 'o': o->once = 1; o->intervals = 1; break;
	case 'S':
		o->speed = strtod(optarg, &end);
		if (*end || !(o->speed > 0)) {
			fprintf(stderr, "faultline-rules: --replay-speed '%s': expected a "
				"positive factor such as 60\n", optarg);
			return 2;
		}
		break;
	case 'P':
		if (sscanf(optarg, "%" SCNu64 ",%" SCNu64, &o->replay_from, &o->replay_to) != 2 ||
		    o->replay_to <= o->replay_from) {
			fprintf(stderr, "faultline-rules: --replay '%s': expected FROM,TO in "
				"epoch milliseconds, FROM before TO\n", optarg);
			return 2;
		}
		break;
	case 'n':
		o->intervals = strtol(optarg, &end, 10);
		if (*end || o->intervals <= 0) {
			fprintf(stderr, "faultline-rules: --intervals '%s': expected a "
				"positive count\n", optarg);
			return 2;
		}
		break;
	case 'm': o->metrics_addr = optarg; break;
	case 'g':
		if (strlen(optarg) >= sizeof(o->eopts.generator_url) ||
		    (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8))) {
			fprintf(stderr, "faultline-rules: --generator-url '%s': expected an "
				"http(s) URL under %zu characters\n", optarg,
				sizeof(o->eopts.generator_url));
			return 2;
		}
		snprintf(o->eopts.generator_url, sizeof(o->eopts.generator_url), "%s",
			 optarg);
		break;
	case 'U':
		if (strlen(optarg) >= sizeof(o->eopts.web_url) ||
		    (optarg[0] && strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8))) {
			fprintf(stderr, "faultline-rules: --web-url '%s': expected an http(s) URL "
				"under %zu characters, or \"\"\n", optarg, sizeof(o->eopts.web_url));
			return 2;
		}
		snprintf(o->eopts.web_url, sizeof(o->eopts.web_url), "%s", optarg);
		break;
	case 'd':
		if (parse_domains(optarg, &o->eopts)) {
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
	case 'W': o->web_config = optarg; break;
	case 'H': o->shard = 1; break;
	case 'K': o->no_wake = 1; break;
	case 'w': o->worker_name = optarg; break;
	case 'b': o->runbook_base = optarg; break;
	case 'h': usage(stdout); return 0;
	case 'V': printf("faultline-rules %s\n", FL_VERSION); return 0;
	default: usage(stderr); return 2;
	}
	return -1;
}

/* Options that do not go together, and the default rule file. */
static int check_options(struct rules_options *o, const char *live_only)
{
	/* options that do not go together, before anything is loaded */
	if (o->metrics_addr && o->metrics_addr[0] && (o->once || o->replay_to)) {
		fprintf(stderr, "faultline-rules: --metrics-addr serves a running engine; it does "
			"not go with --once or --replay\n");
		return 2;
	}
	if (o->wait_replicas && o->once) {
		fprintf(stderr, "faultline-rules: --wait-replicas waits for events written to "
			"Redis; --once prints them\n");
		return 2;
	}
	if (live_only && (o->once || o->replay_to)) {
		/* a what-if run restores no checkpoint and watches no backlog */
		fprintf(stderr, "faultline-rules: %s applies to a running engine; it does not go "
			"with --once or --replay\n", live_only);
		return 2;
	}
	if (o->worker_name && !o->shard) {
		fprintf(stderr, "faultline-rules: --worker-id names a --shard worker\n");
		return 2;
	}
	if (o->shard && o->once) {
		fprintf(stderr, "faultline-rules: --shard does not go with --once (a what-if "
			"run sees the whole fleet)\n");
		return 2;
	}
	if (!o->nfiles) {
		/* the source tree's, else the installed ones (/etc/faultline/...) */
		static char found[600];

		if (!cfg_find("rules/faultline.yaml", 1, found, sizeof(found))) {
			log_error("no --rules given and no rules/faultline.yaml in ./etc, "
				  "/etc/faultline or /usr/local/etc/faultline; give --rules FILE");
			return 2;
		}
		o->files[o->nfiles++] = found;
	}
	return -1;
}

int rules_options_parse(struct rules_options *o, int argc, char **argv)
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
		{ "web-url", required_argument, NULL, 'U' },
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
		{ "no-wake", no_argument, NULL, 'K' },
		{ "worker-id", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *live_only = NULL;	/* an option that only a running engine uses */
	uint64_t grace = ENGINE_FOR_GRACE_MS * NSEC_PER_MSEC;
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->url = "unix:///run/faultline/redis.sock";
	o->interval = NSEC_PER_SEC;
	o->stale = 5 * NSEC_PER_SEC;
	o->eopts.alert_backlog_max = ENGINE_ALERT_BACKLOG_MAX;
	snprintf(o->eopts.web_url, sizeof(o->eopts.web_url), "http://127.0.0.1:9467");
	while ((c = getopt_long(argc, argv, "R:t:r:i:s:d:g:n:P:S:l:m:b:hV", opts, NULL)) != -1)
		if ((ret = parse_option(o, c, &live_only, &grace)) >= 0)
			return ret;
	if ((ret = check_options(o, live_only)) >= 0)
		return ret;
	o->eopts.stale_ms = o->stale / NSEC_PER_MSEC;
	o->eopts.for_grace_ms = grace / NSEC_PER_MSEC;
	return -1;
}
