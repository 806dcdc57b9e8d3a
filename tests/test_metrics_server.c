/*
 * test_metrics_server.c - the /metrics server (probes/metrics_server.c,
 * also faultline-rules'): 20 idle connections, more than its 16 slots, do
 * not lock a scraper out; wrong paths and methods are answered, not hung.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "probes/loop.h"
#include "probes/metrics_server.h"
#include "core/timeutil.h"

static struct loop *loop;
static volatile int serving;

static void *serve(void *arg)
{
	(void)arg;
	while (serving)
		loop_run_for(loop, 50 * NSEC_PER_MSEC);
	return NULL;
}

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

Test(metrics_server, idle_connections_do_not_lock_out_a_scrape)
{
	struct metrics_server *m;
	pthread_t t;
	char err[256], addr[32], buf[4096];
	int port = 0, idle[20];

	loop = loop_new();
	cr_assert_not_null(loop);
	for (int p = 20000 + getpid() % 20000, tries = 0; tries < 50 && !port; tries++, p++) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", p);
		m = metrics_server_start(loop, addr, err, sizeof(err));
		if (m)
			port = p;
	}
	cr_assert(port, "%s", err);
	metrics_server_set_body(m, "faultline_up 1\n", 15);
	serving = 1;
	pthread_create(&t, NULL, serve, NULL);
	for (int i = 0; i < 20; i++)
		idle[i] = connect_to(port);	/* connect, say nothing */
	usleep(200000);
	cr_assert_gt(ask(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0,
		     "no answer with 20 idle connections open");
	cr_assert(strstr(buf, "200 OK") && strstr(buf, "faultline_up 1\n"), "%s", buf);
	cr_assert_gt(ask(port, "GET /other HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "404"), "%s", buf);
	cr_assert_gt(ask(port, "POST /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "405"), "%s", buf);
	serving = 0;
	pthread_join(t, NULL);
	for (int i = 0; i < 20; i++)
		if (idle[i] >= 0)
			close(idle[i]);
	metrics_server_stop(m);
	loop_free(loop);
}
