/*
 * conn_url.c - the Redis URLs every faultline binary takes; see conn.h.
 *
 * Three shapes: redis:// (one server over TCP), unix:// (one server over a
 * socket, options as a query string) and redis-cluster:// (seed nodes of a
 * cluster, comma-separated).  Passwords never leave this file unredacted.
 */
#include "store/conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copy_part(char *dst, size_t dstlen, const char *src, size_t n)
{
	if (n >= dstlen)
		return -1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

int conn_addr_parse(const char *p, size_t n, struct conn_addr *a, int need_port)
{
	const char *colon = NULL;

	for (size_t i = n; i > 0; i--)
		if (p[i - 1] == ':') {
			colon = p + i - 1;
			break;
		}
	a->port = 6379;
	if (!colon) {
		if (need_port)
			return -1;
		return copy_part(a->host, sizeof(a->host), p, n) || !a->host[0] ? -1 : 0;
	}
	if (copy_part(a->host, sizeof(a->host), p, (size_t)(colon - p)) || !a->host[0])
		return -1;
	{
		char num[8], *end;
		long port;

		if (copy_part(num, sizeof(num), colon + 1, n - (size_t)(colon + 1 - p)) || !num[0])
			return -1;
		port = strtol(num, &end, 10);
		if (*end || port <= 0 || port > 65535)
			return -1;
		a->port = (int)port;
	}
	return 0;
}

/* user:password@ or password@ at the start of p (before end); advances *pp. */
static int parse_userinfo(const char **pp, const char *end, struct conn_url *u)
{
	const char *p = *pp, *at = memchr(p, '@', (size_t)(end - p)), *colon;

	if (!at)
		return 0;
	colon = memchr(p, ':', (size_t)(at - p));
	if (colon) {
		if (copy_part(u->user, sizeof(u->user), p, (size_t)(colon - p)) ||
		    copy_part(u->password, sizeof(u->password), colon + 1, (size_t)(at - colon - 1)))
			return -1;
	} else if (copy_part(u->password, sizeof(u->password), p, (size_t)(at - p))) {
		return -1;
	}
	*pp = at + 1;
	return 0;
}

static int parse_unix(const char *p, struct conn_url *u)
{
	const char *q = strchr(p, '?');

	if (copy_part(u->path, sizeof(u->path), p, q ? (size_t)(q - p) : strlen(p)) ||
	    u->path[0] != '/')
		return -1;
	while (q && *q) {
		const char *amp;
		size_t n;

		q++;
		amp = strchr(q, '&');
		n = amp ? (size_t)(amp - q) : strlen(q);
		if (strncmp(q, "db=", 3) == 0) {
			char num[16], *end;

			if (copy_part(num, sizeof(num), q + 3, n - 3) || !num[0])
				return -1;
			u->db = (int)strtol(num, &end, 10);
			if (*end || u->db < 0)
				return -1;
		} else if (strncmp(q, "password=", 9) == 0) {
			if (copy_part(u->password, sizeof(u->password), q + 9, n - 9))
				return -1;
		} else if (strncmp(q, "user=", 5) == 0) {
			if (copy_part(u->user, sizeof(u->user), q + 5, n - 5))
				return -1;
		} else {
			return -1;
		}
		q = amp;
	}
	return 0;
}

static int parse_cluster(const char *p, struct conn_url *u)
{
	const char *end = p + strlen(p);

	if (parse_userinfo(&p, end, u))
		return -1;
	if (memchr(p, '/', (size_t)(end - p)) || memchr(p, '?', (size_t)(end - p)))
		return -1;	/* a cluster has only database 0 */
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);

		if (u->nseeds == CONN_MAX_SEEDS || conn_addr_parse(p, n, &u->seeds[u->nseeds], 1))
			return -1;
		u->nseeds++;
		p += n + (comma ? 1 : 0);
		if (comma && p == end)
			return -1;
	}
	if (!u->nseeds)
		return -1;
	u->cluster = 1;
	memcpy(u->host, u->seeds[0].host, sizeof(u->host));
	u->port = u->seeds[0].port;
	return 0;
}

static int parse_tcp(const char *p, struct conn_url *u)
{
	const char *end = p + strlen(p), *slash = strchr(p, '/');
	struct conn_addr a;

	if (parse_userinfo(&p, slash ? slash : end, u))
		return -1;
	if (conn_addr_parse(p, (size_t)((slash ? slash : end) - p), &a, 0))
		return -1;
	memcpy(u->host, a.host, sizeof(u->host));
	u->port = a.port;
	if (slash && slash[1]) {
		char *e;

		u->db = (int)strtol(slash + 1, &e, 10);
		if (*e || u->db < 0)
			return -1;
	}
	return 0;
}

int conn_url_parse(const char *url, struct conn_url *u, char *err, size_t errlen)
{
	char shown[600];
	int bad;

	memset(u, 0, sizeof(*u));
	u->port = 6379;
	if (strncmp(url, "rediss://", 9) == 0) {
		conn_url_redacted(url, shown, sizeof(shown));
		snprintf(err, errlen, "redis URL '%s': TLS (rediss://) is not supported by this "
			 "build; use a local stunnel or a unix socket", shown);
		return -EINVAL;
	}
	if (strncmp(url, "unix://", 7) == 0)
		bad = parse_unix(url + 7, u);
	else if (strncmp(url, "redis-cluster://", 16) == 0)
		bad = parse_cluster(url + 16, u);
	else if (strncmp(url, "redis://", 8) == 0)
		bad = parse_tcp(url + 8, u);
	else
		bad = -1;
	if (!bad)
		return 0;
	conn_url_redacted(url, shown, sizeof(shown));
	snprintf(err, errlen, "redis URL '%s': expected redis://[[user]:password@]host[:port][/db], "
		 "unix:///path/to/redis.sock[?db=N&password=P] or "
		 "redis-cluster://[[user]:password@]host:port[,host:port...]", shown);
	memset(u, 0, sizeof(*u));
	return -EINVAL;
}

void conn_url_redacted(const char *url, char *out, size_t len)
{
	const char *p, *at, *slash, *colon, *q;

	snprintf(out, len, "%s", url);
	if (!strncmp(url, "redis://", 8) || !strncmp(url, "rediss://", 9) ||
	    !strncmp(url, "redis-cluster://", 16)) {
		p = strstr(url, "://") + 3;
		slash = strchr(p, '/');
		at = memchr(p, '@', slash ? (size_t)(slash - p) : strlen(p));
		if (!at)
			return;
		colon = memchr(p, ':', (size_t)(at - p));
		snprintf(out, len, "%.*s****%s", (int)((colon ? colon + 1 : p) - url), url, at);
		return;
	}
	q = strstr(url, "password=");
	if (q && q > url && (q[-1] == '?' || q[-1] == '&')) {
		const char *amp = strchr(q, '&');

		snprintf(out, len, "%.*s****%s", (int)(q + 9 - url), url, amp ? amp : "");
	}
}

