/*
 * cluster.c - see cluster.h.
 */
#include "tests/cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/helpers.h"

/* 1 if nothing listens on 127.0.0.1:port. */
static int port_free(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* A port whose cluster bus port (+10000) is free too. */
static int cluster_port(const struct test_cluster *c)
{
	for (int tries = 0; tries < 200; tries++) {
		int p = 20000 + rand() % 35000, taken = 0;

		for (int i = 0; i < c->n; i++)
			taken |= c->port[i] == p || c->port[i] + 10000 == p ||
				 c->port[i] == p + 10000;
		if (!taken && port_free(p) && port_free(p + 10000))
			return p;
	}
	return -1;
}

/* redis-cli's options for a TLS cluster ("" for a plain one). */
static const char *tls_args(const struct test_cluster *c)
{
	static char buf[1024];

	if (!c->tls[0])
		return "";
	snprintf(buf, sizeof(buf), "--tls --cacert %s/ca.crt --cert %s/client.crt --key %s/client.key",
		 c->tls, c->tls, c->tls);
	return buf;
}

int test_cluster_cli(const struct test_cluster *c, int i, char *out, size_t len,
		     const char *fmt, ...)
{
	char cmd[2400], args[768];
	va_list ap;
	FILE *f;
	size_t got = 0;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "redis-cli -h 127.0.0.1 -p %d %s %s 2>&1", c->port[i],
		 tls_args(c), args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (out && len) {
		got = fread(out, 1, len - 1, f);
		out[got] = '\0';
	} else {
		char sink[4096];

		while (fread(sink, 1, sizeof(sink), f) > 0)
			;
	}
	return pclose(f) == 0 ? 0 : -1;
}

static int spawn_node(struct test_cluster *c, int i)
{
	char port[16], conf[300];

	snprintf(port, sizeof(port), "%d", c->port[i]);
	snprintf(conf, sizeof(conf), "nodes-%d.conf", c->port[i]);
	c->pid[i] = fork();
	if (c->pid[i] < 0)
		return -1;
	if (c->pid[i] == 0) {
		int null = open("/dev/null", 1);
		char cert[300], key[300], ca[300];

		dup2(null, 1);
		dup2(null, 2);
		snprintf(cert, sizeof(cert), "%s/server.crt", c->tls);
		snprintf(key, sizeof(key), "%s/server.key", c->tls);
		snprintf(ca, sizeof(ca), "%s/ca.crt", c->tls);
		if (c->tls[0])
			execlp("redis-server", "redis-server", "--port", "0", "--tls-port", port,
			       "--bind", "127.0.0.1", "--tls-cert-file", cert, "--tls-key-file", key,
			       "--tls-ca-cert-file", ca, "--tls-cluster", "yes",
			       "--tls-replication", "yes", "--cluster-enabled", "yes",
			       "--cluster-config-file", conf, "--cluster-node-timeout", "2000",
			       "--save", "", "--appendonly", "no", "--dir", c->dir, (char *)NULL);
		execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
		       "--cluster-enabled", "yes", "--cluster-config-file", conf,
		       "--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no",
		       "--dir", c->dir, (char *)NULL);
		_exit(127);
	}
	for (int t = 0; t < 500; t++) {
		char out[64];

		if (test_cluster_cli(c, i, out, sizeof(out), "PING") == 0 && !strncmp(out, "PONG", 4))
			return 0;
		usleep(10000);
	}
	return -1;
}

int test_cluster_wait_ok(const struct test_cluster *c, int asker, int timeout_s)
{
	for (int t = 0; t < timeout_s * 10; t++) {
		char out[2048];

		if (test_cluster_cli(c, asker, out, sizeof(out), "CLUSTER INFO") == 0 &&
		    strstr(out, "cluster_state:ok"))
			return 0;
		usleep(100000);
	}
	return -1;
}

static int cluster_start(struct test_cluster *c, int masters, int replicas, const char *certdir);

int test_cluster_start(struct test_cluster *c, int masters, int replicas)
{
	return cluster_start(c, masters, replicas, "");
}

int test_cluster_start_tls(struct test_cluster *c, int masters, int replicas,
			   const char *certdir)
{
	return cluster_start(c, masters, replicas, certdir);
}

static int cluster_start(struct test_cluster *c, int masters, int replicas, const char *certdir)
{
	char cmd[2048], *p;
	size_t off;

	memset(c, 0, sizeof(*c));
	snprintf(c->tls, sizeof(c->tls), "%s", certdir);
	srand((unsigned)getpid() ^ (unsigned)time(NULL));
	c->n = masters * (1 + replicas);
	if (c->n > TEST_CLUSTER_MAX)
		return -1;
	snprintf(c->dir, sizeof(c->dir), "/tmp/fl-test-cluster.XXXXXX");
	if (!mkdtemp(c->dir))
		return -1;
	for (int i = 0; i < c->n; i++) {
		c->port[i] = cluster_port(c);
		if (c->port[i] < 0 || spawn_node(c, i)) {
			fprintf(stderr, "cluster: node %d (port %d) did not start\n", i, c->port[i]);
			goto fail;
		}
	}
	off = (size_t)snprintf(cmd, sizeof(cmd), "redis-cli %s --cluster create", tls_args(c));
	for (int i = 0; i < c->n; i++)
		off += (size_t)snprintf(cmd + off, sizeof(cmd) - off, " 127.0.0.1:%d", c->port[i]);
	snprintf(cmd + off, sizeof(cmd) - off, " --cluster-replicas %d --cluster-yes >%s/create.log 2>&1",
		 replicas, c->dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "cluster: redis-cli --cluster create failed (%s/create.log)\n", c->dir);
		goto fail;
	}
	for (int i = 0; i < c->n; i++)
		if (test_cluster_wait_ok(c, i, 30)) {
			fprintf(stderr, "cluster: node %d never reported cluster_state:ok\n", i);
			goto fail;
		}
	/*
	 * A replica that never finished its first sync refuses to take over
	 * (its data is "too old"): wait until every replica is in sync.
	 */
	for (int i = 0; i < c->n; i++) {
		int t;

		for (t = 0; t < 300; t++) {
			char out[512];

			if (test_cluster_cli(c, i, out, sizeof(out), "ROLE") == 0 &&
			    (!strncmp(out, "master", 6) || strstr(out, "\nconnected\n")))
				break;
			usleep(100000);
		}
		if (t == 300) {
			fprintf(stderr, "cluster: replica %d never synced with its master\n", i);
			goto fail;
		}
	}
	p = c->url + snprintf(c->url, sizeof(c->url), "%s://", c->tls[0] ? "rediss-cluster" :
			      "redis-cluster");
	for (int i = 0; i < c->n && i < 3; i++)
		p += snprintf(p, sizeof(c->url) - (size_t)(p - c->url), "%s127.0.0.1:%d",
			      i ? "," : "", c->port[i]);
	if (c->tls[0])
		snprintf(p, sizeof(c->url) - (size_t)(p - c->url),
			 "?tls_ca=%s/ca.crt&tls_cert=%s/client.crt&tls_key=%s/client.key", c->tls,
			 c->tls, c->tls);
	return 0;
fail:
	test_cluster_destroy(c);
	return -1;
}

int test_cluster_master_of(const struct test_cluster *c, int slot)
{
	static char out[65536];

	for (int asker = 0; asker < c->n; asker++) {
		char *line;

		if (c->pid[asker] <= 0 ||
		    test_cluster_cli(c, asker, out, sizeof(out), "CLUSTER NODES"))
			continue;
		for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
			char id[64], addr[128], flags[128];
			int port, n = 0;
			const char *slots;

			if (sscanf(line, "%63s %127s %127s", id, addr, flags) != 3 ||
			    !strstr(flags, "master") || strstr(flags, "fail"))
				continue;
			if (sscanf(addr, "127.0.0.1:%d", &port) != 1)
				continue;
			/* fields 9.. are slots "a-b" or "a" */
			slots = line;
			for (int f = 0; f < 8 && slots; f++) {
				slots = strchr(slots, ' ');
				if (slots)
					slots++;
			}
			while (slots && *slots) {
				int a, b;

				if (sscanf(slots, "%d-%d%n", &a, &b, &n) == 2 ||
				    (sscanf(slots, "%d%n", &a, &n) == 1 && (b = a, 1))) {
					if (slot >= a && slot <= b)
						for (int i = 0; i < c->n; i++)
							if (c->port[i] == port)
								return i;
				}
				slots = strchr(slots, ' ');
				if (slots)
					slots++;
			}
		}
		return -1;
	}
	return -1;
}

void test_cluster_kill(struct test_cluster *c, int i)
{
	if (c->pid[i] > 0) {
		kill(c->pid[i], SIGKILL);
		waitpid(c->pid[i], NULL, 0);
		c->pid[i] = 0;
	}
}

void test_cluster_destroy(struct test_cluster *c)
{
	for (int i = 0; i < c->n; i++)
		test_cluster_kill(c, i);
	test_remove_dir(c->dir);
	c->dir[0] = '\0';
}
