/*
 * test_metrics_server.c - the /metrics server of the probe, the rules
 * engine and the alerter (probes/metrics_server.c, on libmicrohttpd): 64
 * idle connections do not lock a scraper out; wrong paths and methods are
 * answered, not hung; HEAD and gzip as scrapers use them; TLS and basic auth
 * from an exporter-toolkit web config, checked with curl; a bad web config
 * is an error with its position.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>
#include <crypt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/metrics_server.h"
#include "probes/prom.h"
#include "model/histogram.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "tests/helpers.h"

#define BODY "# TYPE faultline_up gauge\nfaultline_up 1\n"

static int connect_to(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct timeval tv = { 2, 0 };

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send req and read the whole answer into buf; bytes read, or -1. */
static int ask(int port, const char *req, char *buf, size_t len)
{
	int fd = connect_to(port);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	if (write(fd, req, strlen(req)) < 0) {
		close(fd);
		return -1;
	}
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	return (int)got;
}

/* Start a server on a free loopback port with web config wc; *port is it. */
static struct metrics_server *start(const char *wc, int *port)
{
	struct metrics_server *m = NULL;
	char err[512] = "", addr[32];

	*port = 0;
	for (int p = 20000 + getpid() % 20000, tries = 0; tries < 50 && !m; tries++, p++) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", p);
		if ((m = metrics_server_start(addr, wc, err, sizeof(err))))
			*port = p;
		else if (!strstr(err, "Address already in use"))
			break;
	}
	cr_assert_not_null(m, "%s", err);
	metrics_server_set_body(m, BODY, strlen(BODY));
	return m;
}

struct later_body {
	struct metrics_server *m;
	useconds_t after;
	const char *body;
};

static void *set_later(void *arg)
{
	struct later_body *l = arg;

	usleep(l->after);
	metrics_server_set_body(l->m, l->body, strlen(l->body));
	return NULL;
}

static void *set_proto_later(void *arg)
{
	struct later_body *l = arg;

	usleep(l->after);
	metrics_server_set_proto(l->m, "new-proto", 9);
	return NULL;
}

/*
 * A lazy server (the probe's): its daemon is not asked to render until a
 * scraper comes; the first scrape after a while waits for the next body
 * rather than take an old one, and takes the old one if none comes; from
 * then on the daemon renders and scrapes are answered at once.  A server
 * that is not lazy always wants its body.
 */
Test(metrics_server, a_lazy_server_renders_while_scraped)
{
	struct metrics_server *m, *eager;
	struct later_body l;
	pthread_t t;
	char buf[4096];
	uint64_t t0;
	int port, eport;

	m = start(NULL, &port);
	eager = start(NULL, &eport);
	cr_assert(metrics_server_wanted(eager));
	metrics_server_lazy(m, 500 * 1000000ULL);
	cr_assert_not(metrics_server_wanted(m), "rendering with nobody scraping");
	usleep(600000);		/* the body is older than its 500 ms */

	l = (struct later_body){ m, 700000, "faultline_up 2\n" };
	cr_assert_eq(pthread_create(&t, NULL, set_later, &l), 0);
	t0 = time_mono_ns();
	cr_assert_gt(ask(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
	pthread_join(t, NULL);
	cr_assert(strstr(buf, "faultline_up 2\n"), "the first scrape took an old body: %s", buf);
	cr_assert_geq(time_mono_ns() - t0, 500 * 1000000ULL, "it did not wait for the next body");
	cr_assert(metrics_server_wanted(m), "scraped, and not rendering");

	metrics_server_set_body(m, "faultline_up 3\n", 15);
	t0 = time_mono_ns();
	cr_assert_gt(ask(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "faultline_up 3\n"), "%s", buf);
	/* waiting would take a second: what is quicker did not wait */
	cr_assert_lt(time_mono_ns() - t0, 900 * 1000000ULL, "a fresh body was waited for");

	/* a daemon that stops rendering: after a second the old body, not a hang */
	usleep(600000);
	t0 = time_mono_ns();
	cr_assert_gt(ask(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, " 200 OK") && strstr(buf, "faultline_up 3\n"), "%s", buf);
	cr_assert_geq(time_mono_ns() - t0, 950 * 1000000ULL);

	/*
	 * protobuf set long ago (a scraper that asked, left and came back):
	 * the first protobuf scrape waits for the next one, not the old one
	 */
	metrics_server_set_proto(m, "old-proto", 9);
	usleep(600000);
	l = (struct later_body){ m, 300000, NULL };
	cr_assert_eq(pthread_create(&t, NULL, set_proto_later, &l), 0);
	t0 = time_mono_ns();
	cr_assert_gt(ask(port, "GET /metrics HTTP/1.0\r\nAccept: application/vnd.google.protobuf;"
			 "proto=io.prometheus.client.MetricFamily;encoding=delimited\r\n\r\n",
			 buf, sizeof(buf)), 0);
	pthread_join(t, NULL);
	cr_assert(strstr(buf, "new-proto") && !strstr(buf, "old-proto"),
		  "the first protobuf scrape took an old body: %s", buf);
	/* answered when the protobuf came, not after waiting out a text body */
	cr_assert_lt(time_mono_ns() - t0, 900 * 1000000ULL);
	metrics_server_stop(m);
	metrics_server_stop(eager);
}

Test(metrics_server, idle_connections_do_not_lock_out_a_scrape)
{
	struct metrics_server *m;
	char buf[4096];
	int port, idle[64];

	m = start(NULL, &port);
	for (int i = 0; i < 64; i++)
		idle[i] = connect_to(port);	/* connect, say nothing */
	usleep(200000);
	cr_assert_gt(ask(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0,
		     "no answer with 64 idle connections open");
	cr_assert(strstr(buf, " 200 OK") && strstr(buf, "faultline_up 1\n"), "%s", buf);
	cr_assert(strstr(buf, "text/plain; version=0.0.4"), "%s", buf);
	cr_assert_gt(ask(port, "GET /other HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, " 404 "), "%s", buf);
	cr_assert_gt(ask(port, "POST /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, " 405 ") && strstr(buf, "GET, HEAD"), "%s", buf);
	for (int i = 0; i < 64; i++)
		if (idle[i] >= 0)
			close(idle[i]);
	metrics_server_stop(m);
}

/*
 * Protobuf is rendered only once a scraper asks for it: until then such a
 * scraper gets text, and the daemon is told; then it gets protobuf.
 */
Test(metrics_server, protobuf_once_a_scraper_asks)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\nAccept: application/vnd.google.protobuf;"
				  "proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,"
				  "text/plain;version=0.0.4;q=0.3\r\n\r\n";
	struct metrics_server *m;
	char buf[4096];
	int port;

	m = start(NULL, &port);
	cr_assert_eq(metrics_server_proto_asked(m), 0);
	cr_assert_gt(ask(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
	cr_assert_eq(metrics_server_proto_asked(m), 0, "a text scrape asked for nothing new");
	cr_assert_gt(ask(port, req, buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "text/plain") && strstr(buf, "faultline_up 1"),
		  "no protobuf yet, so text: %s", buf);
	cr_assert_eq(metrics_server_proto_asked(m), 1);
	metrics_server_set_proto(m, "\x03" "abc", 4);
	cr_assert_gt(ask(port, req, buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "application/vnd.google.protobuf") && strstr(buf, "\x03" "abc"),
		  "%s", buf);
	metrics_server_stop(m);
}

Test(metrics_server, head_and_gzip)
{
	struct metrics_server *m;
	char buf[4096];
	int port;

	m = start(NULL, &port);
	cr_assert_gt(ask(port, "HEAD /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, " 200 OK"), "%s", buf);
	cr_assert_null(strstr(buf, "faultline_up"), "HEAD sent a body: %s", buf);
	cr_assert_gt(ask(port, "GET /metrics HTTP/1.0\r\nAccept-Encoding: gzip\r\n\r\n", buf,
			 sizeof(buf)), 0);
	cr_assert(strstr(buf, "Content-Encoding: gzip"), "%s", buf);
	cr_assert_null(strstr(buf, "faultline_up"), "the gzip'd body is plain text");
	cr_assert_gt(ask(port, "GET /metrics HTTP/1.0\r\nAccept-Encoding: gzip;q=0\r\n\r\n", buf,
			 sizeof(buf)), 0);
	cr_assert(!strstr(buf, "Content-Encoding: gzip") && strstr(buf, "faultline_up 1"),
		  "gzip;q=0 still got gzip: %s", buf);
	/* a real client decompresses it to the body */
	cr_assert_eq(test_sh("test \"$(curl -s --compressed http://127.0.0.1:%d/metrics)\" = "
			     "\"$(printf '%%s' '" BODY "')\"", port), 0);
	metrics_server_stop(m);
}

/* The web config's directory, removed whatever the test's outcome. */
static char dir[32];

static void remove_dir(void)
{
	if (dir[0])
		test_sh("rm -rf %s", dir);
	dir[0] = '\0';
}

/* TLS and basic auth from a web config file, as Prometheus' exporters take it. */
Test(metrics_server, tls_and_basic_auth_from_a_web_config, .fini = remove_dir, .timeout = 60)
{
	char wc[300], *salt;
	struct crypt_data cd = { 0 };
	struct metrics_server *m;
	const char *hash;
	int port;
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/fl-web.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(test_sh("cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout "
			     "server.key -out server.crt -days 1 -subj /CN=localhost "
			     ">/dev/null 2>&1", dir), 0, "openssl could not make a certificate");
	salt = crypt_gensalt_ra("$2b$", 5, NULL, 0);
	cr_assert_not_null(salt);
	hash = crypt_r("s3cret", salt, &cd);
	free(salt);
	cr_assert(hash && !strncmp(hash, "$2b$", 4));
	snprintf(wc, sizeof(wc), "%s/web.yml", dir);
	f = fopen(wc, "w");
	/* the key and certificate relative to the file, as exporter-toolkit reads them */
	fprintf(f, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		   "basic_auth_users:\n  prometheus: '%s'\n", hash);
	fclose(f);
	m = start(wc, &port);
	cr_assert_eq(test_sh("curl -sk -o /dev/null -w '%%{http_code}' "
			     "https://127.0.0.1:%d/metrics | grep -qx 401", port), 0,
		     "no credentials were not refused");
	cr_assert_eq(test_sh("curl -sk -o /dev/null -w '%%{http_code}' -u prometheus:wrong "
			     "https://127.0.0.1:%d/metrics | grep -qx 401", port), 0,
		     "a wrong password was not refused");
	cr_assert_eq(test_sh("curl -sk -u prometheus:s3cret https://127.0.0.1:%d/metrics | "
			     "grep -qx 'faultline_up 1'", port), 0, "the right password got no body");
	cr_assert_neq(test_sh("curl -s -m 5 http://127.0.0.1:%d/metrics 2>/dev/null | "
			      "grep -q faultline_up", port), 0, "plain HTTP served on a TLS port");
	metrics_server_stop(m);
}

Test(metrics_server, a_bad_web_config_is_refused_with_its_position, .fini = remove_dir)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "tls_server_config:\n  cert_file: a.crt\n  client_auth_type: RequireAnyClientCert\n",
		  "web.yml:3:21: client_auth_type: unknown key (valid here: cert_file, key_file)" },
		{ "tls_server_config:\n  cert_file: a.crt\n", "needs both cert_file and key_file" },
		{ "basic_auth_users:\n  alice: plaintext\n", "web.yml:2:10: basic_auth_users.alice: "
		  "expected a bcrypt hash" },
		{ "http_server_config:\n  http2: true\n", "web.yml:2:3: http_server_config: unknown "
		  "key (valid here: tls_server_config, basic_auth_users)" },
	};
	char wc[300], err[512];

	snprintf(dir, sizeof(dir), "/tmp/fl-web.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(wc, sizeof(wc), "%s/web.yml", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = fopen(wc, "w");

		fputs(cases[i].text, f);
		fclose(f);
		err[0] = '\0';
		cr_assert_null(metrics_server_start("127.0.0.1:0", wc, err, sizeof(err)),
			       "case %zu accepted", i);
		cr_expect(strstr(err, cases[i].want), "case %zu: %s", i, err);
	}
}

/* ---- a real Prometheus scraping native histograms ------------------------ */

static pid_t prometheus_pid;

static void stop_prometheus(void)
{
	if (prometheus_pid > 0) {
		kill(prometheus_pid, SIGKILL);
		waitpid(prometheus_pid, NULL, 0);
	}
	prometheus_pid = 0;
	remove_dir();
}

/*
 * Debian's Prometheus, with native histograms on, scrapes the probe's
 * /metrics: it asks for protobuf, gets native histograms, and
 * histogram_quantile over them gives the latency written, within the
 * stated 7.6 % (5 ms for the median, 50 ms for the 99th percentile).
 */
Test(metrics_server, prometheus_scrapes_native_histograms, .fini = stop_prometheus,
     .timeout = 120)
{
	struct metrics_server *m;
	struct snapshot s;
	struct series *h;
	char cfg[300], buf[8192], req[600];
	int port, pport = test_free_port(), found = 0;
	double p50 = 0, p99 = 0;

	snprintf(dir, sizeof(dir), "/tmp/fl-prom.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	m = start(NULL, &port);
	snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", dir);
	cr_assert_eq(test_sh("printf 'global: {scrape_interval: 1s, evaluation_interval: 1s}\\n"
			     "scrape_configs:\\n  - job_name: fl\\n    static_configs:\\n"
			     "      - targets: [\"127.0.0.1:%d\"]\\n' > %s", port, cfg), 0);
	prometheus_pid = test_prometheus_start(dir, pport, "--enable-feature=native-histograms");
	snapshot_init(&s, "h", 1000, 1000, 1, 1);
	h = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "write",
			 NULL);
	/* 100 writes a second: 90 at 5 ms, 10 at 50 ms; poll until Prometheus answers */
	for (int t = 0; t < 90 && !found; t++) {
		struct strbuf text = STRBUF_INIT, pb = STRBUF_INIT;

		hist_record_n(h->hist, 5000000, 45);
		hist_record_n(h->hist, 50000000, 5);
		prom_render(&s, NULL, &text);
		metrics_server_set_body(m, text.buf, text.len);
		cr_assert_eq(prom_render_proto(&s, NULL, &pb), 0);
		metrics_server_set_proto(m, pb.buf, pb.len);
		strbuf_release(&text);
		strbuf_release(&pb);
		usleep(500000);
		if (t < 10 || t % 2)
			continue;
		snprintf(req, sizeof(req), "GET /api/v1/query?query=histogram_quantile(0.5%%2C"
			 "rate(faultline_block_latency_seconds%%5B10s%%5D))%%20or%%20label_replace("
			 "histogram_quantile(0.99%%2Crate(faultline_block_latency_seconds%%5B10s%%5D))"
			 "%%2C%%22q%%22%%2C%%2299%%22%%2C%%22%%22%%2C%%22%%22) HTTP/1.0\r\n\r\n");
		if (ask(pport, req, buf, sizeof(buf)) <= 0)
			continue;
		/* {"metric":{...},"value":[t,"0.005..."]} for each quantile */
		{
			const char *a = strstr(buf, "\"result\":[{"), *q99 = strstr(buf, "\"q\":\"99\"");

			if (!a || !q99)
				continue;
			for (const char *v = a; (v = strstr(v, "\"value\":[")); v++) {
				const char *num = strchr(strchr(v, ',') + 1, '"') + 1;
				const char *metric_end = v;

				/* the element whose labels carry q="99" is the 99th percentile */
				while (metric_end > a && *metric_end != '{')
					metric_end--;
				if (strstr(metric_end, "\"q\":\"99\"") &&
				    strstr(metric_end, "\"q\":\"99\"") < v)
					p99 = strtod(num, NULL);
				else
					p50 = strtod(num, NULL);
			}
			found = p50 > 0 && p99 > 0;
		}
	}
	cr_assert(found, "Prometheus gave no native-histogram quantiles; it answered: %.1500s "
		  "(its log: %s/prometheus.log)", buf, dir);
	cr_log_info("Prometheus over native histograms: p50 %.5f s, p99 %.5f s", p50, p99);
	cr_assert(fabs(p50 - 0.005) / 0.005 < 0.076, "p50 %g, written 5 ms", p50);
	cr_assert(fabs(p99 - 0.05) / 0.05 < 0.076, "p99 %g, written 50 ms", p99);
	snapshot_free(&s);
	metrics_server_stop(m);
}
