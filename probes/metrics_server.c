/*
 * metrics_server.c - GET /metrics over HTTP/1.0; see metrics_server.h.
 *
 * Each connection: read until the end of the request head (or 8 KiB), then
 * write the response, then close.  At most MAX_CONNS at once; beyond that
 * new connections are closed straight away.
 */
#include "probes/metrics_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timeutil.h"

#define MAX_CONNS 16
#define REQ_MAX 8192

struct conn {
	int fd;
	char req[REQ_MAX];
	size_t req_len;
	char *resp;
	size_t resp_len, resp_off;
	uint64_t accepted_ns;
	struct metrics_server *srv;
};

struct metrics_server {
	struct loop *loop;
	int lfd;
	char *body;
	size_t body_len;
	struct conn conns[MAX_CONNS];
};

static void conn_close(struct conn *c)
{
	loop_del_fd(c->srv->loop, c->fd);
	close(c->fd);
	free(c->resp);
	c->resp = NULL;
	c->fd = -1;
}

static void build_response(struct conn *c)
{
	struct metrics_server *m = c->srv;
	char head[256];
	const char *status = "200 OK", *ctype = "text/plain; version=0.0.4; charset=utf-8";
	const char *body = m->body ? m->body : "";
	size_t blen = m->body ? m->body_len : 0;
	int n;

	if (strncmp(c->req, "GET ", 4) != 0) {
		status = "405 Method Not Allowed";
		body = "only GET is supported\n";
		blen = strlen(body);
	} else if (strncmp(c->req + 4, "/metrics", 8) != 0 ||
		   (c->req[12] != ' ' && c->req[12] != '?')) {
		status = "404 Not Found";
		body = "faultline-probe serves /metrics\n";
		blen = strlen(body);
	}
	n = snprintf(head, sizeof(head),
		     "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n", status, ctype, blen);
	c->resp = malloc((size_t)n + blen);
	if (!c->resp)
		return;
	memcpy(c->resp, head, (size_t)n);
	memcpy(c->resp + n, body, blen);
	c->resp_len = (size_t)n + blen;
	c->resp_off = 0;
}

static void on_conn(struct loop *l, int fd, uint32_t events, void *arg)
{
	struct conn *c = arg;
	ssize_t n;

	(void)fd;
	if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) {
		conn_close(c);
		return;
	}
	if (!c->resp) {
		n = read(c->fd, c->req + c->req_len, REQ_MAX - 1 - c->req_len);
		if (n <= 0) {
			if (n < 0 && errno == EAGAIN)
				return;
			conn_close(c);
			return;
		}
		c->req_len += (size_t)n;
		c->req[c->req_len] = '\0';
		if (!strstr(c->req, "\r\n\r\n") && !strstr(c->req, "\n\n")) {
			if (c->req_len >= REQ_MAX - 1)
				conn_close(c);
			return;
		}
		build_response(c);
		if (!c->resp) {
			conn_close(c);
			return;
		}
		loop_mod_fd(l, c->fd, EPOLLOUT);
	}
	while (c->resp_off < c->resp_len) {
		n = send(c->fd, c->resp + c->resp_off, c->resp_len - c->resp_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN)
				return;
			break;
		}
		c->resp_off += (size_t)n;
	}
	conn_close(c);
}

static void on_accept(struct loop *l, int fd, uint32_t events, void *arg)
{
	struct metrics_server *m = arg;
	int cfd;

	(void)events;
	while ((cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct conn *c = NULL;

		for (int i = 0; i < MAX_CONNS; i++) {
			if (m->conns[i].fd < 0) {
				c = &m->conns[i];
				break;
			}
		}
		if (!c) {
			/*
			 * Every slot is taken: the newcomer gets the slot of the
			 * oldest connection that has not finished its request (idle or
			 * slow clients), so they can never lock a scraper out.
			 */
			for (int i = 0; i < MAX_CONNS; i++)
				if (!m->conns[i].resp &&
				    (!c || m->conns[i].accepted_ns < c->accepted_ns))
					c = &m->conns[i];
			if (!c) {
				close(cfd);	/* all are answering: they finish soon */
				continue;
			}
			conn_close(c);
		}
		c->fd = cfd;
		c->req_len = 0;
		c->accepted_ns = time_mono_ns();
		c->srv = m;
		if (loop_add_fd(l, cfd, EPOLLIN | EPOLLRDHUP, on_conn, c)) {
			close(cfd);
			c->fd = -1;
		}
	}
}

static int split_addr(const char *addr, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon;

	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');

		if (!end || end[1] != ':')
			return -1;
		snprintf(host, hlen, "%.*s", (int)(end - addr - 1), addr + 1);
		snprintf(port, plen, "%s", end + 2);
		return 0;
	}
	colon = strrchr(addr, ':');
	if (!colon)
		return -1;
	snprintf(host, hlen, "%.*s", (int)(colon - addr), addr);
	snprintf(port, plen, "%s", colon + 1);
	return port[0] ? 0 : -1;
}

struct metrics_server *metrics_server_start(struct loop *l, const char *addr, char *err,
					    size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	struct metrics_server *m;
	char host[256], port[32];
	int fd = -1, one = 1, rc;

	if (split_addr(addr, host, sizeof(host), port, sizeof(port))) {
		snprintf(err, errlen, "metrics_addr '%s': expected HOST:PORT, e.g. 127.0.0.1:9464",
			 addr);
		return NULL;
	}
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "metrics_addr '%s': %s", addr, gai_strerror(rc));
		return NULL;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 16)) {
		snprintf(err, errlen, "metrics_addr '%s': cannot listen: %s%s", addr,
			 strerror(errno),
			 errno == EADDRINUSE ? " (another probe or exporter on that port? "
					       "set metrics_addr or --metrics-addr)" : "");
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return NULL;
	}
	freeaddrinfo(res);
	m = calloc(1, sizeof(*m));
	if (!m) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->loop = l;
	m->lfd = fd;
	for (int i = 0; i < MAX_CONNS; i++)
		m->conns[i].fd = -1;
	if (loop_add_fd(l, fd, EPOLLIN, on_accept, m)) {
		close(fd);
		free(m);
		snprintf(err, errlen, "metrics server: event loop full");
		return NULL;
	}
	return m;
}

void metrics_server_set_body(struct metrics_server *m, const char *body, size_t len)
{
	char *b = malloc(len + 1);

	if (!b)
		return;
	memcpy(b, body, len);
	b[len] = '\0';
	free(m->body);
	m->body = b;
	m->body_len = len;
}

void metrics_server_reap(struct metrics_server *m, uint64_t max_age_ns)
{
	uint64_t now = time_mono_ns();

	for (int i = 0; i < MAX_CONNS; i++)
		if (m->conns[i].fd >= 0 && now - m->conns[i].accepted_ns > max_age_ns)
			conn_close(&m->conns[i]);
}

void metrics_server_stop(struct metrics_server *m)
{
	if (!m)
		return;
	for (int i = 0; i < MAX_CONNS; i++)
		if (m->conns[i].fd >= 0)
			conn_close(&m->conns[i]);
	loop_del_fd(m->loop, m->lfd);
	close(m->lfd);
	free(m->body);
	free(m);
}
