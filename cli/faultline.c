/*
 * faultline.c - the faultline command.
 *
 *   faultline top      live per-device latency and TCP error summary of a
 *                      host, read back from Redis (what `make run` shows)
 *   faultline metrics  the metric reference (name, kind, unit, meaning)
 *
 *   faultline drive inspect, report wear, profile, silence, rules
 *   check/test, deploy mark/list, sim (the fleet simulator): see usage().
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "config.h"
#include "drive.h"
#include "profile.h"
#include "rules.h"
#include "ruletest.h"
#include "profile_store.h"
#include "deploy.h"
#include "silence.h"
#include "profile_export.h"
#include "wear_report.h"
#include "log.h"
#include "snapshot.h"
#include "store.h"
#include "timeutil.h"
#include "scenario.h"
#include "sim.h"

static void usage(FILE *out)
{
	fprintf(out,
"Usage: faultline COMMAND [OPTIONS]\n"
"\n"
"Commands:\n"
"  top       live summary of one host from Redis: block I/O rate and latency\n"
"            p50/p99 per device and op, TCP/UDP checksum error rates\n"
"  metrics   list every metric faultline produces, with kind, unit, meaning\n"
"  drive inspect  decode recorded SMART data (smartctl JSON, libatasmart blob,\n"
"            NVMe log page) into the normalized drive record, as JSON\n"
"  report wear    the fleet SSD wear report from Redis (table, CSV, JSON, HTML)\n"
"  profile   CPU profiles from Redis: flame graph SVG, pprof, folded, top, diff;\n"
"            `profile burst` asks a host for a high-rate burst\n"
"  silence   add, list or expire silences (the alerter records, not sends)\n"
"  rules check    validate rule files (positions of every error)\n"
"  rules test     run rule unit tests (which alerts fire when)\n"
"  deploy    mark a deploy (service, version, hosts) or list the markers\n"
"  sim       simulate a fleet's probes into Redis, with a scenario's faults\n"
"\n"
"Run 'faultline COMMAND --help' for a command's options.\n"
"  -h, --help      this text\n"
"  -V, --version   print the version\n");
}

/* ---- top ---------------------------------------------------------------- */

struct pair {
	struct snapshot s[2];
	int n;
};

static int keep_cb(struct snapshot *s, void *arg)
{
	struct pair *p = arg;

	if (p->n < 2) {
		p->s[p->n++] = *s;
		memset(s, 0, sizeof(*s));
	}
	return 0;
}

static const char *fmt_ns(double ns, char *buf, size_t len)
{
	if (ns <= 0)
		snprintf(buf, len, "-");
	else if (ns < 1e3)
		snprintf(buf, len, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.2fms", ns / 1e6);
	else
		snprintf(buf, len, "%.2fs", ns / 1e9);
	return buf;
}

static const struct series *find_like(const struct snapshot *s, const struct series *ser)
{
	char key[1024];

	series_key(ser, key, sizeof(key));
	return snapshot_find(s, key);
}

static uint64_t counter_delta(const struct snapshot *old, const struct snapshot *cur,
			      const char *key)
{
	const struct series *a = snapshot_find(old, key), *b = snapshot_find(cur, key);

	if (!b || b->kind != SERIES_COUNTER)
		return 0;
	if (!a || a->kind != SERIES_COUNTER || b->counter.value < a->counter.value)
		return 0;
	return b->counter.value - a->counter.value;
}

/* p-quantile of the increase of histogram `key` between old and cur. */
static double hist_delta_q(const struct snapshot *old, const struct snapshot *cur,
			   const char *key, double q, uint64_t *count)
{
	const struct series *a = snapshot_find(old, key), *b = snapshot_find(cur, key);
	struct histogram *d;
	double v;

	*count = 0;
	if (!b || b->kind != SERIES_HISTOGRAM)
		return 0;
	d = malloc(sizeof(*d));
	if (!d)
		return 0;
	if (a && a->kind == SERIES_HISTOGRAM)
		hist_subtract(d, b->hist, a->hist);
	else
		*d = *b->hist;
	v = (double)hist_quantile(d, q);
	*count = d->count;
	free(d);
	return v;
}

static void print_cpu(const struct snapshot *old, const struct snapshot *cur, double secs)
{
	char a[16], b[16];
	uint64_t n1, n2;
	double rq = hist_delta_q(old, cur, "sched.runq_latency{}", 0.99, &n1);
	double iw = hist_delta_q(old, cur, "sched.iowait{}", 0.99, &n2);
	int any = 0;

	(void)secs;
	printf("\nCPU  ");
	for (uint32_t i = 0; i < cur->nseries; i++) {
		const struct series *u = &cur->series[i];
		const char *c = series_label(u, "cpu");
		char key[64];

		if (strcmp(u->name, "cpu.utilization") || !c)
			continue;
		snprintf(key, sizeof(key), "cpu.utilization_max{cpu=%s}", c);
		const struct series *m = snapshot_find(cur, key);

		printf("%s%s %3.0f%% (100ms max %3.0f%%)", any ? "   " : "", c, 100 * u->gauge.last,
		       m ? 100 * m->gauge.last : 0);
		any = 1;
	}
	if (!any)
		printf("(no cpu series: BPF off?)");
	printf("\n     run-queue latency p99 %s (%" PRIu64 " waits)   I/O wait p99 %s (%" PRIu64
	       ")\n", fmt_ns(rq, a, sizeof(a)), n1, fmt_ns(iw, b, sizeof(b)), n2);
}

/* The three series of `metric` that grew most, as "label=value rate/s". */
static void print_top_counters(const struct snapshot *old, const struct snapshot *cur,
			       double secs, const char *metric, const char *title,
			       const char *label)
{
	struct {
		const struct series *s;
		uint64_t d;
	} top[3] = { { 0 } };
	char key[512];

	for (uint32_t i = 0; i < cur->nseries; i++) {
		const struct series *ser = &cur->series[i];
		uint64_t d;

		if (ser->kind != SERIES_COUNTER || strcmp(ser->name, metric))
			continue;
		series_key(ser, key, sizeof(key));
		d = counter_delta(old, cur, key);
		for (int k = 0; k < 3; k++) {
			if (d > top[k].d) {
				memmove(&top[k + 1], &top[k], (size_t)(2 - k) * sizeof(top[0]));
				top[k].s = ser;
				top[k].d = d;
				break;
			}
		}
	}
	if (!top[0].s)
		return;
	printf("%s", title);
	for (int k = 0; k < 3 && top[k].s; k++) {
		const char *iface = series_label(top[k].s, "interface");

		printf("  %s%s%s %.1f/s", series_label(top[k].s, label),
		       iface && strcmp(label, "interface") ? " via " : "",
		       iface && strcmp(label, "interface") ? iface : "", (double)top[k].d / secs);
	}
	printf("\n");
}

static void print_drives(const struct snapshot *cur)
{
	char key[512];
	int any = 0;

	for (uint32_t i = 0; i < cur->nseries; i++) {
		const struct series *a = &cur->series[i];
		const char *dev = series_label(a, "device"), *model = series_label(a, "model");
		const struct series *w, *t;

		if (strcmp(a->name, "drive.smart_available") || !dev || !model)
			continue;
		printf("%s%s %s", any ? "   " : "DRIVE ", dev, model);
		any = 1;
		if (a->gauge.last == 0) {
			printf(" (no SMART)");
			continue;
		}
		snprintf(key, sizeof(key), "drive.wear_used_pct{device=%s,model=%s}", dev, model);
		w = snapshot_find(cur, key);
		snprintf(key, sizeof(key), "drive.temperature_c{device=%s,model=%s}", dev, model);
		t = snapshot_find(cur, key);
		if (w)
			printf(" wear %.0f%%", w->gauge.last);
		if (t)
			printf(" %.0fC", t->gauge.last);
	}
	if (any)
		printf("\n");
}

static void print_throttle(const struct snapshot *old, const struct snapshot *cur, double secs)
{
	const struct series *n = snapshot_find(cur, "cgroup.throttled_count{}");
	char key[512];
	int shown = 0;

	printf("PSI  some cpu %.1f%%  io %.1f%%  memory %.1f%%   throttled cgroups %.0f\n",
	       (double)counter_delta(old, cur, "psi.some{resource=cpu}") / secs / 1e4,
	       (double)counter_delta(old, cur, "psi.some{resource=io}") / secs / 1e4,
	       (double)counter_delta(old, cur, "psi.some{resource=memory}") / secs / 1e4,
	       n ? n->gauge.last : 0);
	for (uint32_t i = 0; i < cur->nseries && shown < 3; i++) {
		const struct series *t = &cur->series[i];
		uint64_t d;

		if (strcmp(t->name, "cgroup.throttled_time"))
			continue;
		series_key(t, key, sizeof(key));
		d = counter_delta(old, cur, key);
		if (!d)
			continue;
		printf("     %s throttled %.0f%% of the time\n", series_label(t, "cgroup"),
		       100.0 * (double)d / 1e9 / secs);
		shown++;
	}
}

static void print_top(const struct snapshot *old, const struct snapshot *cur, int tty)
{
	struct histogram *d = malloc(sizeof(*d));
	double secs = (double)(cur->ts_ms - old->ts_ms) / 1000.0;
	char when[40], p50[16], p99[16], mx[16], key[512];
	int rows = 0;

	if (!d)
		return;
	if (secs <= 0)
		secs = 1;
	if (tty)
		fputs("\033[H\033[2J", stdout);
	time_format_rfc3339(cur->ts_ms * NSEC_PER_MSEC, when, sizeof(when));
	printf("faultline top  host %s  %s  (snapshot %" PRIu64 ", %.0f s window)\n\n", cur->host,
	       when, cur->seq, secs);
	printf("%-14s %-8s %9s %9s %10s %10s %10s\n", "DEVICE", "OP", "IOPS", "MiB/s", "p50",
	       "p99", "max");
	for (uint32_t i = 0; i < cur->nseries; i++) {
		const struct series *lat = &cur->series[i], *olat;
		const char *dev, *op;
		uint64_t bytes;

		if (lat->kind != SERIES_HISTOGRAM || strcmp(lat->name, "block.latency"))
			continue;
		olat = find_like(old, lat);
		if (!olat || olat->kind != SERIES_HISTOGRAM)
			continue;
		hist_subtract(d, lat->hist, olat->hist);
		dev = series_label(lat, "device");
		op = series_label(lat, "op");
		snprintf(key, sizeof(key), "block.bytes{device=%s,op=%s}", dev ? dev : "",
			 op ? op : "");
		bytes = counter_delta(old, cur, key);
		snprintf(key, sizeof(key), "block.ios{device=%s,op=%s}", dev ? dev : "",
			 op ? op : "");
		uint64_t ios = counter_delta(old, cur, key);

		if (!ios)
			continue;
		printf("%-14s %-8s %9.0f %9.2f %10s %10s %10s\n", dev ? dev : "?", op ? op : "?",
		       (double)ios / secs, (double)bytes / secs / 1048576.0,
		       fmt_ns((double)hist_quantile(d, 0.5), p50, sizeof(p50)),
		       fmt_ns((double)hist_quantile(d, 0.99), p99, sizeof(p99)),
		       fmt_ns((double)hist_quantile(d, 1.0), mx, sizeof(mx)));
		rows++;
	}
	if (!rows)
		printf("%-14s (no block I/O completed in this window)\n", "-");
	print_cpu(old, cur, secs);
	printf("\nTCP  checksum errors %.1f/s   in errors %.1f/s   retransmits %.1f/s\n",
	       (double)counter_delta(old, cur, "tcp.in_csum_errors{}") / secs,
	       (double)counter_delta(old, cur, "tcp.in_errs{}") / secs,
	       (double)counter_delta(old, cur, "tcp.retrans_segs{}") / secs);
	print_top_counters(old, cur, secs, "tcp.bad_csum", "     bad checksums from", "peer");
	print_top_counters(old, cur, secs, "link.rx_crc_errors", "     link CRC errors on",
			   "interface");
	printf("UDP  checksum errors %.1f/s   receive buffer drops %.1f/s\n",
	       (double)counter_delta(old, cur, "udp.in_csum_errors{}") / secs,
	       (double)counter_delta(old, cur, "udp.rcvbuf_errors{}") / secs);
	print_throttle(old, cur, secs);
	print_drives(cur);
	{
		const struct series *sp = snapshot_find(cur, "probe.store_spooled{}");
		const struct series *dr = snapshot_find(cur, "probe.store_dropped{}");
		const struct series *cd = snapshot_find(cur, "probe.collect_duration{}");
		char cds[16];

		printf("probe  collect %s   spooled %.0f   dropped %" PRIu64 "\n",
		       fmt_ns(cd ? cd->gauge.last : 0, cds, sizeof(cds)),
		       sp ? sp->gauge.last : 0, dr ? dr->counter.value : 0);
	}
	if (!tty)
		puts("");
	fflush(stdout);
	free(d);
}

static volatile sig_atomic_t top_stop;

static void top_on_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

/* 1 if -h or --help is among the arguments (a subcommand's help, anywhere). */
static int help_asked(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

#define TOP_WAIT_ROUNDS 10

/* 1 if fl:hosts registers host (or Redis cannot say). */
static int host_known(redisContext *rc, const char *host)
{
	char **names, err[256];
	size_t n;
	int known = 0;

	if (store_host_names(rc, &names, &n, err, sizeof(err)))
		return 1;
	for (size_t i = 0; i < n && !known; i++)
		known = !strcmp(names[i], host);
	store_host_names_free(names, n);
	return known;
}

/* Say that host is unknown, and which hosts are (the first 20). */
static void top_unknown_host(redisContext *rc, const char *host)
{
	char **names, err[256];
	size_t n;

	fprintf(stderr, "faultline top: no probe has registered host '%s'", host);
	if (store_host_names(rc, &names, &n, err, sizeof(err)) == 0) {
		fprintf(stderr, n ? "; known hosts (%zu):" : " (no host is registered: is a probe "
			"writing to this Redis?)", n);
		for (size_t i = 0; i < n && i < 20; i++)
			fprintf(stderr, " %s", names[i]);
		if (n > 20)
			fprintf(stderr, " ...");
		store_host_names_free(names, n);
	}
	fprintf(stderr, "\n");
}

static int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "host", required_argument, NULL, 'H' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *url = "unix:///run/faultline/redis.sock";
	char host[256] = "", err[256];
	uint64_t interval = NSEC_PER_SEC, last_seq = UINT64_MAX;
	long count = -1;
	int c, tty = isatty(STDOUT_FILENO), waited = 0;
	redisContext *rc = NULL;

	while ((c = getopt_long(argc, argv, "r:H:i:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': url = optarg; break;
		case 'H': snprintf(host, sizeof(host), "%s", optarg); break;
		case 'i':
			if (duration_parse(optarg, &interval) || interval < 100 * NSEC_PER_MSEC) {
				fprintf(stderr, "faultline top: --interval '%s': expected a duration "
					"of at least 100ms\n", optarg);
				return 2;
			}
			break;
		case 'n': count = atol(optarg); break;
		case 'h':
			printf("Usage: faultline top [--redis URL] [--host NAME] [--interval DUR] "
			       "[--count N]\n\n"
			       "Every interval, read the two newest 1 s snapshots of NAME (default:\n"
			       "this host's name) and show block I/O rate and latency percentiles per\n"
			       "device and op, and TCP/UDP error rates, until Ctrl-C or N screens.\n"
			       "Default Redis: unix:///run/faultline/redis.sock.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (!host[0])
		gethostname(host, sizeof(host) - 1);
	signal(SIGINT, top_on_signal);
	signal(SIGTERM, top_on_signal);
	while (!top_stop && count != 0) {
		struct pair p = { 0 };
		int n;

		if (!rc) {
			rc = store_connect(url, NSEC_PER_SEC, err, sizeof(err));
			if (!rc) {
				fprintf(stderr, "faultline top: %s (retrying)\n", err);
				usleep((useconds_t)(interval / 1000));
				continue;
			}
		}
		n = store_read_latest(rc, host, 1, 2, keep_cb, &p, NULL, err, sizeof(err));
		if (n < 0) {
			fprintf(stderr, "faultline top: %s (retrying)\n", err);
			redisFree(rc);
			rc = NULL;
		} else if (p.n < 2) {
			if (!waited++)
				fprintf(stderr, "faultline top: waiting for snapshots of host '%s'...\n",
					host);
			/* a probe just starting registers within seconds; a typo never does */
			if (waited == TOP_WAIT_ROUNDS && !host_known(rc, host)) {
				top_unknown_host(rc, host);
				redisFree(rc);
				return 1;
			}
		} else if (p.s[1].seq != last_seq) {
			print_top(&p.s[0], &p.s[1], tty);
			last_seq = p.s[1].seq;
			if (count > 0)
				count--;
		}
		for (int i = 0; i < p.n; i++)
			snapshot_free(&p.s[i]);
		if (count != 0 && !top_stop)
			usleep((useconds_t)(interval / 1000));
	}
	if (rc)
		redisFree(rc);
	return 0;
}

/* ---- drive inspect ------------------------------------------------------ */

static int cmd_drive(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "smartctl-json", required_argument, NULL, 's' },
		{ "atasmart-blob", required_argument, NULL, 'a' },
		{ "nvme-log", required_argument, NULL, 'n' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *file = NULL, *device = NULL;
	struct strbuf out = STRBUF_INIT;
	struct drive_record r;
	char err[512], *text;
	size_t len;
	int c, kind = 0, ret;

	if (argc < 2 || strcmp(argv[1], "inspect")) {
		int help = help_asked(argc, argv);

		fprintf(help ? stdout : stderr, "Usage: faultline drive inspect (--smartctl-json "
			"FILE | --atasmart-blob FILE | --nvme-log FILE) [--device NAME]\n");
		return help ? 0 : 2;
	}
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "s:a:n:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': case 'a': case 'n': kind = c; file = optarg; break;
		case 'd': device = optarg; break;
		case 'h':
			printf("Usage: faultline drive inspect (--smartctl-json FILE | --atasmart-blob "
			       "FILE | --nvme-log FILE) [--device NAME]\n\n"
			       "Decode a recorded SMART source into faultline's normalized drive record\n"
			       "and print it as JSON (with, under \"source\", where each value came "
			       "from).\n  --smartctl-json  output of `smartctl --json -a DEVICE`\n"
			       "  --atasmart-blob  a libatasmart blob (`skdump --save`)\n"
			       "  --nvme-log       the 512-byte NVMe SMART / Health log page (0x02)\n");
			return 0;
		default:
			return 2;
		}
	}
	if (!file) {
		fprintf(stderr, "faultline drive inspect: give one of --smartctl-json, "
			"--atasmart-blob, --nvme-log (try --help)\n");
		return 2;
	}
	if (cfg_read_file(file, &text, &len, err, sizeof(err))) {
		fprintf(stderr, "faultline drive inspect: %s\n", err);
		return 1;
	}
	drive_init(&r, device);
	ret = kind == 's' ? drive_from_smartctl_json(&r, text, len)
	    : kind == 'a' ? drive_from_atasmart_blob(&r, text, len)
			  : drive_from_nvme_log(&r, text, len);
	free(text);
	if (ret) {
		fprintf(stderr, "faultline drive inspect: %s: %s\n", file, r.error);
		return 1;
	}
	drive_to_json(&r, &out);
	puts(strbuf_str(&out));
	strbuf_release(&out);
	return 0;
}

/* ---- report wear -------------------------------------------------------- */

static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "html", required_argument, NULL, 'H' },
		{ "rack", required_argument, NULL, 'R' },
		{ "model", required_argument, NULL, 'M' },
		{ "verdict", required_argument, NULL, 'v' },
		{ "today", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *url = "unix:///run/faultline/redis.sock", *html = NULL;
	const char *rack = NULL, *model = NULL, *verdict = NULL;
	int64_t today = (int64_t)(time_wall_ns() / NSEC_PER_SEC / 86400);
	struct wear_row *rows;
	size_t n, kept = 0;
	int c, format = 't';
	redisContext *rc;
	char err[512];

	if (argc < 2 || strcmp(argv[1], "wear")) {
		int help = help_asked(argc, argv);

		fprintf(help ? stdout : stderr, "Usage: faultline report wear [OPTIONS] "
			"(faultline report wear --help)\n");
		return help ? 0 : 2;
	}
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "r:cjH:R:M:v:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': url = optarg; break;
		case 'c': case 'j': format = c; break;
		case 'H': html = optarg; break;
		case 'R': rack = optarg; break;
		case 'M': model = optarg; break;
		case 'v': verdict = optarg; break;
		case 't':
			today = wear_parse_day(optarg);
			if (today < 0) {
				fprintf(stderr, "faultline report wear: --today '%s': expected "
					"YYYY-MM-DD\n", optarg);
				return 2;
			}
			break;
		case 'h':
			printf("Usage: faultline report wear [--redis URL] [--csv | --json] [--html FILE]\n"
			       "                             [--rack R] [--model SUBSTR] [--verdict V]\n"
			       "                             [--today YYYY-MM-DD]\n\n"
			       "One row per drive of every host in Redis: wear, spare, errors, bytes\n"
			       "written, power-on hours, wear rate (%% per 30 days from the daily history),\n"
			       "projected date of 100%% used, and a verdict (failing, replace, watch, ok,\n"
			       "unknown) with its reason, most urgent first.  --html writes a page with\n"
			       "the table and a plot of wear against age per model.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (verdict && strcmp(verdict, "failing") && strcmp(verdict, "replace") &&
	    strcmp(verdict, "watch") && strcmp(verdict, "ok") && strcmp(verdict, "unknown")) {
		fprintf(stderr, "faultline report wear: --verdict '%s': expected failing, replace, "
			"watch, ok or unknown\n", verdict);
		return 2;
	}
	rc = store_connect(url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline report wear: %s\n", err);
		return 1;
	}
	if (wear_load(rc, &rows, &n, err, sizeof(err))) {
		fprintf(stderr, "faultline report wear: %s\n", err);
		redisFree(rc);
		return 1;
	}
	redisFree(rc);
	for (size_t i = 0; i < n; i++) {
		wear_assess(&rows[i], today);
		if ((rack && strcmp(rows[i].rack, rack)) ||
		    (model && !strstr(rows[i].rec.model, model)) ||
		    (verdict && strcmp(rows[i].verdict, verdict))) {
			free(rows[i].points);
			continue;
		}
		rows[kept++] = rows[i];
	}
	wear_sort(rows, kept);
	if (format == 'c')
		wear_print_csv(stdout, rows, kept);
	else if (format == 'j')
		wear_print_json(stdout, rows, kept);
	else
		wear_print_table(stdout, rows, kept, today);
	if (html) {
		FILE *f = fopen(html, "w");

		if (!f) {
			fprintf(stderr, "faultline report wear: cannot write %s: %s\n", html,
				strerror(errno));
			wear_free(rows, kept);
			return 1;
		}
		wear_print_html(f, rows, kept, today);
		fclose(f);
		fprintf(stderr, "faultline report wear: wrote %s\n", html);
	}
	wear_free(rows, kept);
	return 0;
}

/* ---- profile ------------------------------------------------------------ */

/*
 * A point in time: "now", a duration ago ("10m"), milliseconds since the
 * epoch, or RFC 3339 UTC ("2026-11-30T14:00:00Z").  Returns ms, or 0.
 */
static uint64_t parse_when(const char *s)
{
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC, d;
	struct tm tm = { 0 };
	char *end;

	if (!strcmp(s, "now"))
		return now;
	if (duration_parse(s, &d) == 0)
		return now - d / NSEC_PER_MSEC;
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end && (*end == 'Z' || !*end))
		return (uint64_t)timegm(&tm) * 1000;
	d = strtoull(s, &end, 10);
	return *end ? 0 : d;
}

static int load_range(redisContext *rc, const char *host, int hourly, uint64_t from, uint64_t to,
		      const char *service, struct profile *out)
{
	char err[256];
	size_t bad = 0;
	int n;

	profile_init(out, host);
	n = profile_read_merge(rc, host, hourly ? "p3600" : "p10", from, to, service, out, &bad,
			       err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "faultline profile: %s\n", err);
		return -1;
	}
	if (bad)
		fprintf(stderr, "faultline profile: skipped %zu undecodable windows\n", bad);
	fprintf(stderr, "faultline profile: fl:{%s}:%s: %d windows, %llu samples\n", host,
		hourly ? "p3600" : "p10", n, (unsigned long long)out->total);
	return 0;
}

static void print_top_functions(const struct profile *p, size_t n)
{
	struct profile_func *f;
	size_t nf = profile_functions(p, &f);

	printf("%8s %8s  %s\n", "SELF%", "TOTAL%", "FUNCTION");
	for (size_t i = 0; i < nf && i < n; i++)
		printf("%7.2f%% %7.2f%%  %s\n", 100 * f[i].self, 100 * f[i].total, f[i].name);
	free(f);
}

static int cmd_profile_burst(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "host", required_argument, NULL, 'H' },
		{ "rate", required_argument, NULL, 'R' },
		{ "for", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *url = "unix:///run/faultline/redis.sock";
	unsigned long hz = 199;
	uint64_t dur = 10 * NSEC_PER_SEC;
	redisContext *rc;
	redisReply *r;
	char err[256], key[300], val[16], host[256] = "", *end;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "r:H:R:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': url = optarg; break;
		case 'H': snprintf(host, sizeof(host), "%s", optarg); break;
		case 'R':
			hz = strtoul(optarg, &end, 10);
			if (*end || hz < 1 || hz > 999) {
				fprintf(stderr, "faultline profile burst: --rate '%s': expected 1..999 "
					"samples per second per CPU\n", optarg);
				return 2;
			}
			break;
		case 'f':
			if (duration_parse(optarg, &dur) || dur < NSEC_PER_SEC) {
				fprintf(stderr, "faultline profile burst: --for '%s': expected a "
					"duration of at least 1s\n", optarg);
				return 2;
			}
			break;
		case 'h':
			printf("Usage: faultline profile burst [--redis URL] [--host NAME] "
			       "[--rate HZ] [--for DUR]\n\n"
			       "Ask the probe of NAME (default: this host) to sample at HZ (default\n"
			       "199, 1..999) for DUR (default 10s), for richer evidence now.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "faultline profile burst: unexpected argument '%s' (try --help)\n",
			argv[optind]);
		return 2;
	}
	if (!host[0])
		gethostname(host, sizeof(host) - 1);
	rc = store_connect(url, NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline profile burst: %s\n", err);
		return 1;
	}
	snprintf(key, sizeof(key), "fl:{%s}:profile:burst", host);
	snprintf(val, sizeof(val), "%lu", hz);
	r = redisCommand(rc, "SET %s %s PX %llu", key, val,
			 (unsigned long long)(dur / NSEC_PER_MSEC));
	if (r)
		freeReplyObject(r);
	redisFree(rc);
	fprintf(stderr, "faultline profile burst: %s samples at %lu Hz for %.0f s (within a second)\n",
		host, hz, (double)dur / 1e9);
	return 0;
}

static int cmd_profile(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "host", required_argument, NULL, 'H' },
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "around", required_argument, NULL, 'a' },
		{ "window", required_argument, NULL, 'w' },
		{ "service", required_argument, NULL, 'S' },
		{ "output", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 't' },
		{ "diff", required_argument, NULL, 'd' },
		{ "hourly", no_argument, NULL, 'y' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *url = "unix:///run/faultline/redis.sock", *service = NULL, *outpath = NULL;
	const char *diff = NULL;
	char host[256] = "", err[256];
	uint64_t from = 0, to = 0, around = 0, window = 10 * 60 * NSEC_PER_SEC;
	long top = 0;
	int c, hourly = 0, ret = 0;
	struct profile p, base;
	redisContext *rc;

	if (argc > 1 && !strcmp(argv[1], "burst"))
		return cmd_profile_burst(argc - 1, argv + 1);
	while ((c = getopt_long(argc, argv, "r:H:s:u:a:w:S:o:t:d:yh", opts, NULL)) != -1) {
		switch (c) {
		case 'r': url = optarg; break;
		case 'H': snprintf(host, sizeof(host), "%s", optarg); break;
		case 's': from = parse_when(optarg); break;
		case 'u': to = parse_when(optarg); break;
		case 'a': around = parse_when(optarg); break;
		case 'w':
			if (duration_parse(optarg, &window)) {
				fprintf(stderr, "faultline profile: --window: expected a duration\n");
				return 2;
			}
			break;
		case 'S': service = optarg; break;
		case 'o': outpath = optarg; break;
		case 't': top = atol(optarg); break;
		case 'd': diff = optarg; break;
		case 'y': hourly = 1; break;
		case 'h':
			printf("Usage: faultline profile [--host H] [--redis URL]\n"
			       "         [--since WHEN] [--until WHEN] | [--around WHEN [--window 10m]]\n"
			       "         [--service S] [--hourly] [-o FILE] [--top N] [--diff SINCE..UNTIL]\n"
			       "       faultline profile burst [--host H] [--rate 199] [--for 10s]\n\n"
			       "Merge a host's 10 s profile windows (or hourly profiles) from Redis and\n"
			       "write FILE: .svg an interactive flame graph, .folded folded stacks,\n"
			       "anything else gzip'd pprof (`go tool pprof`); -o - prints folded stacks.\n"
			       "--top N prints the N functions with the most CPU (self and total share).\n"
			       "--diff compares against a base range: the table lists the functions whose\n"
			       "CPU share grew or shrank most, and an .svg output is a differential flame\n"
			       "graph (red grew, blue shrank).  WHEN: now, a duration ago (15m), epoch\n"
			       "milliseconds, or 2026-11-30T14:00:00Z.  Default range: the last 10 min.\n"
			       "burst: sample the host at a high rate for a while (alert evidence).\n");
			return 0;
		default:
			return 2;
		}
	}
	if (!host[0])
		gethostname(host, sizeof(host) - 1);
	if (around) {
		from = around - window / NSEC_PER_MSEC / 2;
		to = around + window / NSEC_PER_MSEC / 2;
	} else if (!from) {
		from = time_wall_ns() / NSEC_PER_MSEC - window / NSEC_PER_MSEC;
	}
	if (!outpath && !top && !diff)
		top = 20;
	rc = store_connect(url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline profile: %s\n", err);
		return 1;
	}
	if (load_range(rc, host, hourly, from, to, service, &p)) {
		redisFree(rc);
		return 1;
	}
	if (diff) {
		char copy[128], *dots;

		snprintf(copy, sizeof(copy), "%s", diff);
		dots = strstr(copy, "..");
		if (!dots) {
			fprintf(stderr, "faultline profile: --diff: expected SINCE..UNTIL, e.g. 2h..1h\n");
			ret = 2;
			goto out;
		}
		*dots = '\0';
		if (load_range(rc, host, hourly, parse_when(copy), parse_when(dots + 2), service,
			       &base)) {
			ret = 1;
			goto out;
		}
	}
	if (!p.total)
		fprintf(stderr, "faultline profile: no samples for %s in that range (is the probe "
			"running with profile.enabled?)\n", host);
	if (top)
		print_top_functions(&p, (size_t)top);
	if (diff) {
		struct profile_delta *d;
		size_t nd = profile_diff(&base, &p, &d);

		printf("%8s %8s %8s  %s\n", "BASE%", "NOW%", "CHANGE", "FUNCTION");
		for (size_t i = 0; i < nd && i < (size_t)(top ? top : 20); i++)
			printf("%7.2f%% %7.2f%% %+7.2f  %s\n", 100 * d[i].base, 100 * d[i].target,
			       100 * (d[i].target - d[i].base), d[i].name);
		free(d);
	}
	if (outpath) {
		char title[400];

		snprintf(title, sizeof(title), "%s CPU%s%s%s", host, service ? " (" : "",
			 service ? service : "", service ? ")" : "");
		ret = profile_export(&p, diff ? &base : NULL, outpath, title);
		if (ret)
			fprintf(stderr, "faultline profile: cannot write %s: %s\n", outpath,
				strerror(-ret));
		else if (strcmp(outpath, "-"))
			fprintf(stderr, "faultline profile: wrote %s\n", outpath);
		ret = ret ? 1 : 0;
	}
	if (diff)
		profile_free(&base);
out:
	profile_free(&p);
	redisFree(rc);
	return ret;
}

/* ---- silence ------------------------------------------------------------ */

static int cmd_silence(int argc, char **argv)
{
	const char *url = "unix:///run/faultline/redis.sock", *sub = argc > 1 ? argv[1] : "";
	struct silence s = { 0 };
	uint64_t dur = 2 * 3600 * NSEC_PER_SEC, now = time_wall_ns() / NSEC_PER_MSEC;
	const char *id = NULL;
	redisContext *rc;
	char err[512];
	int ret = 0;

	int help = help_asked(argc, argv);

	if (help || (strcmp(sub, "add") && strcmp(sub, "list") && strcmp(sub, "expire"))) {
		if (!help && sub[0])
			fprintf(stderr, "faultline silence: unknown subcommand '%s'\n", sub);
		printf("Usage: faultline silence add --match NAME=VALUE [--match ...] [--for 2h]\n"
		       "                             [--comment TEXT] [--redis URL]\n"
		       "       faultline silence list [--redis URL]\n"
		       "       faultline silence expire ID [--redis URL]\n\n"
		       "A silenced alert is recorded (fl:notifications), not sent.  Matchers:\n"
		       "name=value, name!=value, name=~regex; all must match.\n");
		return help ? 0 : 2;
	}
	snprintf(s.created_by, sizeof(s.created_by), "%s", getenv("USER") ? getenv("USER") : "");
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--redis") && i + 1 < argc) {
			url = argv[++i];
		} else if (!strcmp(argv[i], "--match") && i + 1 < argc) {
			if (s.nm == SILENCE_MAX_MATCHERS ||
			    matcher_parse(&s.m[s.nm], argv[++i], err, sizeof(err))) {
				fprintf(stderr, "faultline silence: %s\n", err);
				return 2;
			}
			s.nm++;
		} else if (!strcmp(argv[i], "--for") && i + 1 < argc) {
			if (duration_parse(argv[++i], &dur)) {
				fprintf(stderr, "faultline silence: --for: expected a duration\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--comment") && i + 1 < argc) {
			snprintf(s.comment, sizeof(s.comment), "%s", argv[++i]);
		} else if (argv[i][0] != '-' && !id) {
			id = argv[i];
		} else {
			fprintf(stderr, "faultline silence: unexpected '%s' (try --help)\n", argv[i]);
			return 2;
		}
	}
	rc = store_connect(url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline silence: %s\n", err);
		return 1;
	}
	if (!strcmp(sub, "add")) {
		if (!s.nm) {
			fprintf(stderr, "faultline silence add: give at least one --match\n");
			ret = 2;
		} else {
			s.starts_ms = now;
			s.ends_ms = now + dur / NSEC_PER_MSEC;
			ret = silence_add(rc, &s, err, sizeof(err)) ? 1 : 0;
			if (ret)
				fprintf(stderr, "faultline silence: %s\n", err);
			else
				printf("%s\n", s.id);
		}
	} else if (!strcmp(sub, "list")) {
		struct silence *all;
		int n = silence_load(rc, &all, err, sizeof(err));
		char t1[40], t2[40];

		if (n < 0) {
			fprintf(stderr, "faultline silence: %s\n", err);
			ret = 1;
		}
		for (int i = 0; i < n; i++) {
			printf("%-20s %-8s %s .. %s  ", all[i].id,
			       now < all[i].ends_ms ? "active" : "expired",
			       alert_format_time(all[i].starts_ms, t1, sizeof(t1)),
			       alert_format_time(all[i].ends_ms, t2, sizeof(t2)));
			for (int k = 0; k < all[i].nm; k++)
				printf("%s%s%s%s", k ? "," : "", all[i].m[k].name,
				       all[i].m[k].op == '=' ? "=" : all[i].m[k].op == '!' ? "!=" : "=~",
				       all[i].m[k].value);
			printf("  %s\n", all[i].comment);
		}
		if (n >= 0)
			silence_free_all(all, n);
	} else if (!strcmp(sub, "expire") && id) {
		ret = silence_expire(rc, id, err, sizeof(err)) ? 1 : 0;
		if (ret)
			fprintf(stderr, "faultline silence: %s\n", err);
	} else {
		fprintf(stderr, "faultline silence: unknown subcommand (try --help)\n");
		ret = 2;
	}
	for (int i = 0; i < s.nm; i++)
		matcher_free(&s.m[i]);
	redisFree(rc);
	return ret;
}

/* ---- deploy ------------------------------------------------------------- */

static int print_deploy(const struct deploy *d, void *arg)
{
	char t[40];

	(void)arg;
	printf("%-18s %s  %-20s %-16s hosts=%s  by=%s\n", d->id,
	       alert_format_time(d->ts_ms, t, sizeof(t)), d->service, d->version, d->hosts,
	       d->by[0] ? d->by : "-");
	return 0;
}

static int cmd_deploy(int argc, char **argv)
{
	const char *url = "unix:///run/faultline/redis.sock", *sub = argc > 1 ? argv[1] : "";
	const char *service = NULL;
	struct deploy d = { 0 };
	uint64_t since = 7ULL * 24 * 3600 * NSEC_PER_SEC;
	redisContext *rc;
	char err[512];
	int ret = 0, all = 0;

	int help = help_asked(argc, argv);

	if (help || (strcmp(sub, "mark") && strcmp(sub, "list"))) {
		if (!help && sub[0])
			fprintf(stderr, "faultline deploy: unknown subcommand '%s'\n", sub);
		printf("Usage: faultline deploy mark --service S --version V [--hosts GLOB | --all]\n"
		       "                             [--by WHO] [--redis URL]\n"
		       "       faultline deploy list [--service S] [--since 7d] [--redis URL]\n\n"
		       "mark: record that service S went to version V on the hosts whose names\n"
		       "match GLOB (fnmatch; --all = \"*\"), now.  Post-deploy comparisons take\n"
		       "their before/after split and their deployed/undeployed peers from these\n"
		       "markers (stream fl:deploys, kept 90 days).  Prints the marker's id.\n"
		       "list: the markers of the last --since (default 7d), oldest first.\n");
		return help ? 0 : 2;
	}
	snprintf(d.by, sizeof(d.by), "%s", getenv("USER") ? getenv("USER") : "");
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--redis") && i + 1 < argc)
			url = argv[++i];
		else if (!strcmp(argv[i], "--service") && i + 1 < argc)
			service = argv[++i];
		else if (!strcmp(argv[i], "--version") && i + 1 < argc)
			snprintf(d.version, sizeof(d.version), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--hosts") && i + 1 < argc)
			snprintf(d.hosts, sizeof(d.hosts), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--all"))
			all = 1;
		else if (!strcmp(argv[i], "--by") && i + 1 < argc)
			snprintf(d.by, sizeof(d.by), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--since") && i + 1 < argc) {
			if (duration_parse(argv[++i], &since)) {
				fprintf(stderr, "faultline deploy: --since: expected a duration "
					"(e.g. 7d), got '%s'\n", argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "faultline deploy: unexpected '%s' (try --help)\n", argv[i]);
			return 2;
		}
	}
	if (!strcmp(sub, "mark")) {
		if (all && d.hosts[0]) {
			fprintf(stderr, "faultline deploy mark: give --hosts or --all, not both\n");
			return 2;
		}
		if (!d.hosts[0] && !all) {
			fprintf(stderr, "faultline deploy mark: say which hosts: --hosts GLOB or --all\n");
			return 2;
		}
		snprintf(d.service, sizeof(d.service), "%s", service ? service : "");
		if (deploy_validate(&d, err, sizeof(err))) {
			fprintf(stderr, "faultline deploy mark: %s (--service, --version)\n", err);
			return 2;
		}
	} else if (strcmp(sub, "list")) {
		fprintf(stderr, "faultline deploy: unknown subcommand '%s' (try --help)\n", sub);
		return 2;
	}
	rc = store_connect(url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline deploy: %s\n", err);
		return 1;
	}
	if (!strcmp(sub, "mark")) {
		ret = deploy_mark(rc, &d, err, sizeof(err)) ? 1 : 0;
		if (ret)
			fprintf(stderr, "faultline deploy mark: %s\n", err);
		else
			printf("%s\n", d.id);
	} else {
		uint64_t now = time_wall_ns();
		int n = deploy_list(rc, now > since ? (now - since) / NSEC_PER_MSEC : 0, service,
				    print_deploy, NULL, err, sizeof(err));

		if (n < 0) {
			fprintf(stderr, "faultline deploy list: %s\n", err);
			ret = 1;
		} else {
			fprintf(stderr, "%d deploy marker(s)\n", n);
		}
	}
	redisFree(rc);
	return ret;
}

/* ---- rules check --------------------------------------------------------- */

static int cmd_rules(int argc, char **argv)
{
	int bad = 0, help = help_asked(argc, argv);

	if (!help && argc >= 3 && !strcmp(argv[1], "test")) {
		log_set_level(LOG_WARN);	/* the engine's verdict notes would drown results */
		for (int i = 2; i < argc; i++) {
			int r = ruletest_run(argv[i], stdout);

			if (r)
				bad = 1;
		}
		return bad;
	}
	if (help || argc < 3 || strcmp(argv[1], "check")) {
		fprintf(help ? stdout : stderr, "Usage: faultline rules check FILE...\n"
			"       faultline rules test FILE...\n\n"
			"check: validate rule files (YAML groups of alerting rules): syntax, keys,\n"
			"durations, and every expression (grammar, known metrics, functions).\n"
			"test: run rule unit tests (input series over time -> which alerts fire\n"
			"when), like promtool test rules; see rules/ruletest.h for the format.\n"
			"Errors name file:line:column.  Exit status 1 if anything fails.\n");
		return help ? 0 : 2;
	}
	for (int i = 2; i < argc; i++) {
		struct ruleset rs = { 0 };
		char err[512];
		int nrules = 0;

		if (rules_load(&rs, argv[i], err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			bad = 1;
		} else {
			for (int g = 0; g < rs.ngroups; g++)
				nrules += rs.groups[g].nrules;
			printf("%s: %d group(s), %d rule(s): OK\n", argv[i], rs.ngroups, nrules);
		}
		rules_free(&rs);
	}
	return bad;
}

/* ---- metrics ------------------------------------------------------------ */

static int cmd_metrics(int argc, char **argv)
{
	static const char *const kinds[] = { "counter", "gauge", "histogram" };
	static const char *const units[] = { "", "ns", "bytes", "us", "ratio" };

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: faultline metrics [--markdown]\n\nList every metric faultline "
		       "produces.\n");
		return 0;
	}
	int md = argc > 1 && !strcmp(argv[1], "--markdown");

	if (md)
		printf("| metric | kind | unit | labels | meaning |\n|---|---|---|---|---|\n");
	for (const struct metric_info *m = catalog; m->name; m++) {
		if (md)
			printf("| `%s` | %s | %s | %s | %s |\n", m->name, kinds[m->kind],
			       units[m->unit], m->labels, m->help);
		else
			printf("%-26s %-10s %-6s %-14s %s\n", m->name, kinds[m->kind],
			       units[m->unit], m->labels, m->help);
	}
	return 0;
}

/* ---- sim ---------------------------------------------------------------- */

static volatile int sim_stop;

static void on_sim_signal(int sig)
{
	(void)sig;
	sim_stop = 1;
}

static void sim_usage(FILE *out)
{
	fprintf(out,
"Usage: faultline sim [--scenario FILE] [--hosts N] [--duration D]\n"
"                     [--start -30m | --ends-now] [--no-wait] [--timeline FILE]\n"
"                     [--redis URL] [--seed N] [--no-profiles]\n"
"\n"
"Write what a fleet's probes would write (1 s snapshots and rollups, 10 s CPU\n"
"profiles, drive records with a month of wear history, deploy markers) into\n"
"Redis through the probe's own store, for hosts named after where they sit\n"
"(sw003-r0012-h05: switch, rack, host) and reporting rack/switch/site labels.\n"
"A scenario (scenarios/*.yaml) injects faults on chosen domains over time and\n"
"says which pages each should cause; --timeline writes what was injected, where\n"
"and when, as JSON, so a test can score what the alerter delivered.\n"
"\n"
"Without a scenario the fleet is healthy (64 hosts, 10 min).  The scenario\n"
"starts at --start (default now; -30m: 30 min ago, written at once, then the\n"
"rest follows the clock).  --ends-now starts it one duration ago and writes it\n"
"all at once (what replaying tests want).  --no-wait never follows the clock.\n"
"\n"
"  -s, --scenario FILE   the scenario (YAML; see scenarios/README.md)\n"
"  -n, --hosts N         fleet size (overrides the scenario's)\n"
"      --hosts-per-rack N, --racks-per-switch N, --switches-per-site N\n"
"  -d, --duration D      how long (overrides the scenario's)\n"
"      --start T         -DURATION (before now), or epoch milliseconds\n"
"      --ends-now        start one duration ago, write everything at once\n"
"      --no-wait         do not follow the wall clock\n"
"  -t, --timeline FILE   write the injected timeline here (JSON)\n"
"      --no-profiles     skip the 10 s CPU profile windows\n"
"      --seed N          per-host randomness (default 1)\n"
"  -r, --redis URL       default unix:///run/faultline/redis.sock\n"
"  -h, --help            this text\n");
}

static int cmd_sim(int argc, char **argv)
{
	enum { O_HPR = 256, O_RPS, O_SPS, O_START, O_ENDS, O_NOWAIT, O_NOPROF, O_SEED };
	static const struct option opts[] = {
		{ "scenario", required_argument, NULL, 's' },
		{ "hosts", required_argument, NULL, 'n' },
		{ "hosts-per-rack", required_argument, NULL, O_HPR },
		{ "racks-per-switch", required_argument, NULL, O_RPS },
		{ "switches-per-site", required_argument, NULL, O_SPS },
		{ "duration", required_argument, NULL, 'd' },
		{ "start", required_argument, NULL, O_START },
		{ "ends-now", no_argument, NULL, O_ENDS },
		{ "no-wait", no_argument, NULL, O_NOWAIT },
		{ "timeline", required_argument, NULL, 't' },
		{ "no-profiles", no_argument, NULL, O_NOPROF },
		{ "seed", required_argument, NULL, O_SEED },
		{ "redis", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sim_opts o = { .url = "unix:///run/faultline/redis.sock", .pace = 1, .seed = 1,
			      .profiles = 1, .stop = &sim_stop };
	const char *path = NULL, *start = NULL;
	struct scenario sc;
	struct sim_stats st;
	uint64_t dur = 0, now = time_wall_ns() / NSEC_PER_MSEC;
	int c, ends_now = 0, ret;
	char err[512], *end;

	while ((c = getopt_long(argc, argv, "s:n:d:t:r:h", opts, NULL)) != -1) {
		unsigned long v = 0;

		if (c == 'n' || c == O_HPR || c == O_RPS || c == O_SPS || c == O_SEED) {
			v = strtoul(optarg, &end, 10);
			if (*end || !*optarg || (c != O_SEED && (v == 0 || v > 1000000))) {
				fprintf(stderr, "faultline sim: --%s '%s': expected a positive count\n",
					opts[c == 'n' ? 1 : c == O_HPR ? 2 : c == O_RPS ? 3 :
					     c == O_SPS ? 4 : 11].name, optarg);
				return 2;
			}
		}
		switch (c) {
		case 's': path = optarg; break;
		case 'n': o.shape.hosts = (uint32_t)v; break;
		case O_HPR: o.shape.hosts_per_rack = (uint32_t)v; break;
		case O_RPS: o.shape.racks_per_switch = (uint32_t)v; break;
		case O_SPS: o.shape.switches_per_site = (uint32_t)v; break;
		case O_SEED: o.seed = (unsigned)v; break;
		case 'd':
			if (duration_parse(optarg, &dur) || dur < NSEC_PER_SEC) {
				fprintf(stderr, "faultline sim: --duration '%s': expected a duration "
					"of at least 1s\n", optarg);
				return 2;
			}
			break;
		case O_START: start = optarg; break;
		case O_ENDS: ends_now = 1; break;
		case O_NOWAIT: o.pace = 0; break;
		case O_NOPROF: o.profiles = 0; break;
		case 't': o.timeline = optarg; break;
		case 'r': o.url = optarg; break;
		case 'h': sim_usage(stdout); return 0;
		default: sim_usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "faultline sim: unexpected '%s' (try --help)\n", argv[optind]);
		return 2;
	}
	if (path) {
		if (scenario_load(&sc, path, err, sizeof(err))) {
			fprintf(stderr, "faultline sim: %s\n", err);
			return 1;
		}
	} else {
		memset(&sc, 0, sizeof(sc));
		snprintf(sc.name, sizeof(sc.name), "healthy");
		sc.fleet = (struct sim_shape){ 64, 8, 2, 2 };
		sc.duration_ms = 10 * 60 * 1000;
	}
	o.duration_ms = dur / NSEC_PER_MSEC;
	uint64_t length = o.duration_ms ? o.duration_ms : sc.duration_ms;

	o.start_ms = now;
	if (ends_now) {
		o.start_ms = now - length;
		o.pace = 0;
	} else if (start) {
		uint64_t back;

		if (start[0] == '-' && !duration_parse(start + 1, &back)) {
			o.start_ms = now - back / NSEC_PER_MSEC;
		} else {
			o.start_ms = strtoull(start, &end, 10);
			if (*end || !o.start_ms) {
				fprintf(stderr, "faultline sim: --start '%s': expected -DURATION "
					"(e.g. -30m) or epoch milliseconds\n", start);
				scenario_free(&sc);
				return 2;
			}
		}
	}
	signal(SIGINT, on_sim_signal);
	signal(SIGTERM, on_sim_signal);
	ret = sim_run(&sc, &o, &st, err, sizeof(err));
	if (ret)
		fprintf(stderr, "faultline sim: %s\n", err);
	else
		printf("simulated %llu hosts for %llu s in %.1f s: %llu snapshots, %llu rollups, "
		       "%llu profile windows, %llu drive records, %llu deploy markers%s%s\n",
		       (unsigned long long)st.hosts, (unsigned long long)(length / 1000),
		       st.wall_s, (unsigned long long)st.snapshots, (unsigned long long)st.rollups,
		       (unsigned long long)st.profiles, (unsigned long long)st.drive_records,
		       (unsigned long long)st.deploys, o.timeline ? "; timeline in " : "",
		       o.timeline ? o.timeline : "");
	scenario_free(&sc);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	log_init("faultline");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("faultline %s\n", FL_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "top"))
		return cmd_top(argc - 1, argv + 1);
	if (!strcmp(argv[1], "metrics"))
		return cmd_metrics(argc - 1, argv + 1);
	if (!strcmp(argv[1], "drive"))
		return cmd_drive(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "profile"))
		return cmd_profile(argc - 1, argv + 1);
	if (!strcmp(argv[1], "silence"))
		return cmd_silence(argc - 1, argv + 1);
	if (!strcmp(argv[1], "rules"))
		return cmd_rules(argc - 1, argv + 1);
	if (!strcmp(argv[1], "deploy"))
		return cmd_deploy(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sim"))
		return cmd_sim(argc - 1, argv + 1);
	fprintf(stderr, "faultline: unknown command '%s' (try --help)\n", argv[1]);
	return 2;
}
