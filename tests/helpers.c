/*
 * helpers.c - see helpers.h.
 */
#include "tests/helpers.h"

#include <criterion/criterion.h>
#include "core/timeutil.h"
#include "model/alert.h"
#include "model/snapshot.h"
#include "store/conn.h"
#include "store/store.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int ping(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[16];
	int fd, ok = 0;

	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return 0;
	if (strlen(sock) >= sizeof(sa.sun_path)) {
		close(fd);
		return 0;
	}
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    write(fd, "PING\r\n", 6) == 6 && read(fd, buf, sizeof(buf)) >= 5)
		ok = !strncmp(buf, "+PONG", 5) || !strncmp(buf, "-NOAUTH", 5);	/* ACLs: up */
	close(fd);
	return ok;
}

static int spawn(struct test_redis *r)
{
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (r->pid == 0) {
		int null = open("/dev/null", 1);
		char *argv[] = { "redis-server", "--port", "0", "--unixsocket", r->sock,
				 "--unixsocketperm", "700", "--save", "", "--appendonly",
				 r->persist ? "yes" : "no", "--appendfsync", "always", "--dir", r->dir,
				 r->opt[0] ? r->opt : NULL, r->optval, NULL };

		dup2(null, 1);
		dup2(null, 2);
		execvp("redis-server", argv);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		if (ping(r->sock))
			return 0;
		usleep(10000);
	}
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	return -1;
}

int test_redis_start_persistent(struct test_redis *r)
{
	int ret = test_redis_start(r);

	if (ret)
		return ret;
	test_redis_stop(r, 1);
	r->persist = 1;
	return spawn(r);
}

int test_redis_start(struct test_redis *r)
{
	return test_redis_start_with(r, "", "");
}

int test_redis_start_with(struct test_redis *r, const char *opt, const char *value)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->opt, sizeof(r->opt), "%s", opt);
	snprintf(r->optval, sizeof(r->optval), "%s", value);
	snprintf(r->dir, sizeof(r->dir), "/tmp/fl-test-redis.XXXXXX");
	if (!mkdtemp(r->dir))
		return -1;
	snprintf(r->sock, sizeof(r->sock), "%s/redis.sock", r->dir);
	snprintf(r->url, sizeof(r->url), "unix://%s", r->sock);
	return spawn(r);
}

void test_redis_stop(struct test_redis *r, int hard)
{
	if (r->pid <= 0)
		return;
	kill(r->pid, hard ? SIGKILL : SIGTERM);
	waitpid(r->pid, NULL, 0);
	r->pid = 0;
	unlink(r->sock);
}

int test_redis_restart(struct test_redis *r)
{
	return spawn(r);
}

void test_remove_dir(const char *dir)
{
	if (!dir[0])
		return;
	if (getenv("FL_KEEP_TEST_DIRS"))
		fprintf(stderr, "FL_KEEP_TEST_DIRS: kept %s\n", dir);
	else
		test_sh("rm -rf '%s'", dir);
}

void test_redis_destroy(struct test_redis *r)
{
	test_redis_stop(r, 1);
	test_remove_dir(r->dir);
}

uint64_t test_rand(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

int test_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int test_is_root(void)
{
	return geteuid() == 0;
}

const char *test_out_dir(void)
{
	const char *o = getenv("FL_OUT");

	return o && *o ? o : "build";
}

/* ---- raw TCP SYNs, good or with a corrupted checksum ---- */

static uint16_t csum16(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)(p[len - 1] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Send n SYNs from 192.0.2.1 to 192.0.2.2:port; corrupt the TCP checksum if bad. */
void test_send_syns(int n, uint16_t port, int bad, int gap_us)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);

	if (fd < 0)
		return;
	inet_pton(AF_INET, "192.0.2.2", &dst.sin_addr);
	for (int i = 0; i < n; i++) {
		uint8_t pkt[sizeof(struct iphdr) + sizeof(struct tcphdr)] = { 0 };
		struct iphdr *ip = (struct iphdr *)pkt;
		struct tcphdr *tcp = (struct tcphdr *)(pkt + sizeof(*ip));
		struct {
			uint32_t src, dst;
			uint8_t zero, proto;
			uint16_t len;
		} __attribute__((packed)) ph;
		uint8_t buf[sizeof(ph) + sizeof(*tcp)];

		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = IPPROTO_TCP;
		ip->tot_len = htons(sizeof(pkt));
		inet_pton(AF_INET, "192.0.2.1", &ip->saddr);
		ip->daddr = dst.sin_addr.s_addr;
		tcp->source = htons((uint16_t)(41000 + i + (bad ? 0 : 500)));
		tcp->dest = htons(port);
		tcp->seq = htonl(0x1000u + (uint32_t)i);
		tcp->doff = 5;
		tcp->syn = 1;
		tcp->window = htons(65535);
		ph.src = ip->saddr;
		ph.dst = ip->daddr;
		ph.zero = 0;
		ph.proto = IPPROTO_TCP;
		ph.len = htons(sizeof(*tcp));
		memcpy(buf, &ph, sizeof(ph));
		memcpy(buf + sizeof(ph), tcp, sizeof(*tcp));
		tcp->check = htons(csum16(buf, sizeof(buf), 0));
		if (bad)
			tcp->check ^= htons(0x5a5a);
		if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&dst, sizeof(dst)) < 0)
			break;
		usleep((useconds_t)gap_us);
	}
	close(fd);
}


int test_netns_pair(const char *a, const char *b, int id)
{
	return test_sh("set -e; ip netns add %s; ip netns add %s;"
		       "ip link add flva%d type veth peer name flvb%d;"
		       "ip link set flva%d netns %s; ip link set flvb%d netns %s;"
		       "ip -n %s addr add 192.0.2.1/24 dev flva%d;"
		       "ip -n %s addr add 192.0.2.2/24 dev flvb%d;"
		       "ip -n %s link set lo up; ip -n %s link set lo up;"
		       "ip -n %s link set flva%d up; ip -n %s link set flvb%d up",
		       a, b, id, id, id, a, id, b, a, id, b, id, a, b, a, id, b, id);
}

void test_events_collect(const char *json, void *arg)
{
	struct test_events *ev = arg;

	if (ev->n < TEST_MAX_EVENTS)
		ev->json[ev->n++] = strdup(json);
}

void test_events_free(struct test_events *ev)
{
	for (int i = 0; i < ev->n; i++)
		free(ev->json[i]);
	ev->n = 0;
}

struct gap_arg {
	long count, missing;
	uint64_t last_seq;
};

static int gap_cb(struct snapshot *s, void *arg)
{
	struct gap_arg *g = arg;

	if (g->count && s->seq > g->last_seq)
		g->missing += (long)(s->seq - g->last_seq - 1);
	g->last_seq = s->seq;
	g->count++;
	return 0;
}

int test_snapshot_gaps(const char *url, const char *host, uint64_t from_ms, uint64_t to_ms,
		       long *count, long *missing)
{
	struct gap_arg g = { 0, 0, 0 };
	char err[256];
	struct conn *c = conn_open(url, NSEC_PER_SEC, err, sizeof(err));
	int n;

	if (!c)
		return -1;
	n = store_read_range(c, host, 1, from_ms, to_ms, 0, gap_cb, &g, NULL, err, sizeof(err));
	conn_close(c);
	*count = g.count;
	*missing = g.missing;
	return n < 0 ? -1 : 0;
}

static int count_cb(struct snapshot *s, void *arg)
{
	(void)s;
	(*(long long *)arg)++;
	return 0;
}

long long test_s1_count(struct conn *c, const char *host, uint64_t from_ms, uint64_t to_ms)
{
	long long n = 0;
	char err[256];

	if (store_read_range(c, host, 1, from_ms, to_ms, 0, count_cb, &n, NULL, err,
			     sizeof(err)) < 0)
		return -1;
	return n;
}

struct conn *test_redis_connect(const struct test_redis *r)
{
	char err[256];
	struct conn *c = conn_open(r->url, NSEC_PER_SEC, err, sizeof(err));

	cr_assert_not_null(c, "%s", err);
	return c;
}

long long test_alerts_pending(struct conn *c, const char *consumer)
{
	redisReply *r;
	long long n;

	if (consumer) {
		r = conn_commandf(c, NULL, "XPENDING fl:alerts alerter - + 100000 %s", consumer);
		n = r && r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : -1;
	} else {
		r = conn_commandf(c, NULL, "XPENDING fl:alerts alerter");
		n = r && r->type == REDIS_REPLY_ARRAY && r->elements ? r->element[0]->integer : -1;
	}
	if (r)
		freeReplyObject(r);
	return n;
}

void test_emit_alert(struct conn *c, const char *fp, const char *status, const char *labels)
{
	char json[2048], t[40];

	snprintf(json, sizeof(json),
		 "{\"status\":\"%s\",\"fingerprint\":\"%s\",\"labels\":{%s},"
		 "\"annotations\":{},\"startsAt\":\"%s\"}", status, fp, labels,
		 alert_format_time(time_wall_ns() / NSEC_PER_MSEC, t, sizeof(t)));
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:alerts * e %s", json));
}

int test_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	getsockname(fd, (struct sockaddr *)&sa, &len);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

pid_t test_prometheus_start(const char *dir, int port, const char *flag)
{
	pid_t pid;

	if (test_sh("command -v prometheus >/dev/null") != 0)
		cr_skip_test("prometheus is not installed (make deps installs Debian's)");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char data[600], listen[64], conf[600], log[600];
		int fd;

		snprintf(data, sizeof(data), "--storage.tsdb.path=%s/data", dir);
		snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d", port);
		snprintf(conf, sizeof(conf), "--config.file=%s/prometheus.yml", dir);
		snprintf(log, sizeof(log), "%s/prometheus.log", dir);
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execlp("prometheus", "prometheus", conf, data, listen, flag, (char *)NULL);
		_exit(127);
	}
	return pid;
}

int test_scrape(int port, char *buf, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 5 };	/* a server that never answers fails, not hangs */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;
	ssize_t n;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	dprintf(fd, "GET /metrics HTTP/1.0\r\n\r\n");
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	return (int)got;
}

void test_doc_holds(const char *rel, const char *text, const char *regenerate)
{
	char path[512], *doc = NULL;
	size_t len = 0;
	FILE *f;

	/* the source tree is the build folder's parent (make test) or the working directory */
	snprintf(path, sizeof(path), "%s/../%s", test_out_dir(), rel);
	f = fopen(path, "r");
	if (!f)
		f = fopen(rel, "r");
	cr_assert_not_null(f, "%s: not found from %s or the working directory", rel,
			   test_out_dir());
	cr_assert_geq(getdelim(&doc, &len, '\0', f), 0);
	fclose(f);
	cr_assert(strstr(doc, text), "%s differs from the source of truth; regenerate it with "
		  "`%s`:\n%s", rel, regenerate, text);
	free(doc);
}

int test_tls_certs(const char *dir)
{
	return test_sh("cd '%s' && { "
		"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		"  -keyout ca.key -out ca.crt -days 2 -subj /CN=faultline-test-ca && "
		"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		"  -keyout other-ca.key -out other-ca.crt -days 2 -subj /CN=some-other-ca && "
		"openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		"  -keyout server.key -out server.csr -subj /CN=localhost && "
		"printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\\n' > server.ext && "
		"openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
		"  -out server.crt -days 2 -extfile server.ext && "
		"openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		"  -keyout client.key -out client.csr -subj /CN=faultline-probe && "
		"openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
		"  -out client.crt -days 2 && chmod 600 *.key; } >openssl.log 2>&1", dir) == 0 ? 0 : -1;
}

const char test_python_service[] =
	"import sys, time\n"
	"def render_page(n):\n"
	"    out = []\n"
	"    for i in range(n): out.append(str(i * 7))\n"
	"    return len(out)\n"
	"def parse_invoice(text, rounds):\n"
	"    total = 0\n"
	"    for r in range(rounds):\n"
	"        for i, ch in enumerate(text): total += (ord(ch) * i) % 7\n"
	"    return total\n"
	"def handle(rounds):\n"
	"    return render_page(6000) + parse_invoice('invoice-line;' * 150, rounds)\n"
	"end = time.time() + float(sys.argv[2]) if float(sys.argv[2]) > 0 else None\n"
	"while end is None or time.time() < end:\n"
	"    handle(int(sys.argv[1]))\n";
