/*
 * top.c - `faultline top`: a live summary of one host, read back from Redis
 * (what `make run` shows): block I/O rate and latency per device and op,
 * per-CPU use, TCP/UDP errors, pressure, throttling, drives.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/conn.h"
#include "store/host_registry.h"
#include "store/store.h"
#include "core/timeutil.h"
#include "cli/cli.h"

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
	{
		const struct series *hu = snapshot_find(cur, "cpu.host_utilization{}");
		const struct series *hm = snapshot_find(cur, "cpu.host_utilization_max{}");

		if (hu)
			printf("   all %3.0f%% (100ms max %3.0f%%)", 100 * hu->gauge.last,
			       hm ? 100 * hm->gauge.last : 0);
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

#define TOP_WAIT_ROUNDS 10

/* 1 if host is registered (or Redis cannot say). */
static int host_known(struct conn *rc, const char *host)
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
static void top_unknown_host(struct conn *rc, const char *host)
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

int cmd_top(int argc, char **argv)
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
	struct conn *rc = NULL;

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
			rc = conn_open(url, NSEC_PER_SEC, err, sizeof(err));
			if (!rc) {
				fprintf(stderr, "faultline top: %s (retrying)\n", err);
				usleep((useconds_t)(interval / 1000));
				continue;
			}
		}
		n = store_read_latest(rc, host, 1, 2, keep_cb, &p, NULL, err, sizeof(err));
		if (n < 0) {
			fprintf(stderr, "faultline top: %s (retrying)\n", err);
			conn_close(rc);
			rc = NULL;
		} else if (p.n < 2) {
			if (!waited++)
				fprintf(stderr, "faultline top: waiting for snapshots of host '%s'...\n",
					host);
			/* a probe just starting registers within seconds; a typo never does */
			if (waited == TOP_WAIT_ROUNDS && !host_known(rc, host)) {
				top_unknown_host(rc, host);
				conn_close(rc);
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
		conn_close(rc);
	return 0;
}
