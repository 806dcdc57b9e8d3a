/*
 * conn_url.c - the Redis URLs every faultline binary takes; see conn.h.
 *
 * Five shapes: redis:// and rediss:// (one server over TCP, in clear or
 * TLS), unix:// (one server over a socket), redis-cluster:// and
 * rediss-cluster:// (seed nodes of a cluster, comma-separated).  Any of
 * them may end in a query string of options (conn.h lists them); an
 * unknown option is an error, never ignored.  The user and password before
 * '@' and every option value are percent-decoded, so a password may hold
 * any byte ("%40" for '@'; a bare '@' also works, the last one ends the
 * user info).  An IPv6 address is written in brackets: [::1]:6379.
 * Passwords never leave this file unredacted.
 */
#include "store/conn.h"

#include <errno.h>
#include <stddef.h>
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

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode n bytes of src into dst; -1 when malformed, too long or it decodes a NUL. */
static int decode_part(char *dst, size_t dstlen, const char *src, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char ch = src[i];

		if (ch == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -1;
			hi = hexval(src[i + 1]);
			lo = hexval(src[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -1;
			ch = (char)(hi << 4 | lo);
			i += 2;
		}
		if (o + 1 >= dstlen)
			return -1;
		dst[o++] = ch;
	}
	dst[o] = '\0';
	return 0;
}

int conn_addr_parse(const char *p, size_t n, struct conn_addr *a, int need_port)
{
	const char *colon = NULL, *host = p;
	size_t hostlen;

	a->port = 6379;
	if (n && p[0] == '[') {
		/* [IPv6]:port */
		const char *close = memchr(p, ']', n);

		if (!close || close == p + 1)
			return -1;
		host = p + 1;
		hostlen = (size_t)(close - host);
		if (close + 1 < p + n) {
			if (close[1] != ':')
				return -1;
			colon = close + 1;
		}
	} else {
		for (size_t i = n; i > 0; i--)
			if (p[i - 1] == ':') {
				colon = p + i - 1;
				break;
			}
		hostlen = colon ? (size_t)(colon - p) : n;
	}
	if (!colon && need_port)
		return -1;
	if (copy_part(a->host, sizeof(a->host), host, hostlen) || !a->host[0])
		return -1;
	if (colon) {
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

/* [user[:password]@] at the start of p (before end); the last '@' ends it. */
static int parse_userinfo(const char **pp, const char *end, struct conn_url *u,
			  const char **why)
{
	const char *p = *pp, *at = NULL, *colon;

	for (const char *q = p; q < end; q++)
		if (*q == '@')
			at = q;
	if (!at)
		return 0;
	colon = memchr(p, ':', (size_t)(at - p));
	if (colon) {
		if (decode_part(u->user, sizeof(u->user), p, (size_t)(colon - p)) ||
		    decode_part(u->password, sizeof(u->password), colon + 1,
				(size_t)(at - colon - 1))) {
			*why = "the user or password is malformed or too long";
			return -1;
		}
	} else if (decode_part(u->password, sizeof(u->password), p, (size_t)(at - p))) {
		*why = "the password is malformed or too long";
		return -1;
	}
	*pp = at + 1;
	return 0;
}

static int parse_db(const char *s, int *db)
{
	char *end;
	long v;

	if (!*s)
		return -1;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 10000)
		return -1;
	*db = (int)v;
	return 0;
}

/* The options after '?': key=value pairs joined by '&'. */
static int parse_query(const char *q, struct conn_url *u, char *why, size_t whylen)
{
	static const struct {
		const char *key;
		size_t off, size;
		int tls_only;
	} opts[] = {
#define OPT(k, f, t) { k, offsetof(struct conn_url, f), sizeof(((struct conn_url *)0)->f), t }
		OPT("user", user, 0),
		OPT("password", password, 0),
		OPT("password_file", password_file, 0),
		OPT("tls_ca", tls_ca, 1),
		OPT("tls_cert", tls_cert, 1),
		OPT("tls_key", tls_key, 1),
		OPT("tls_server_name", tls_server_name, 1),
#undef OPT
	};

	while (*q) {
		const char *amp = strchr(q, '&'), *eq;
		size_t n = amp ? (size_t)(amp - q) : strlen(q), k;
		char val[256];
		size_t i;

		eq = memchr(q, '=', n);
		if (!eq) {
			snprintf(why, whylen, "option '%.*s' has no value", (int)(n > 40 ? 40 : n), q);
			return -1;
		}
		k = (size_t)(eq - q);
		if (decode_part(val, sizeof(val), eq + 1, n - k - 1)) {
			snprintf(why, whylen, "option '%.*s': malformed or longer than %zu bytes",
				 (int)(k > 40 ? 40 : k), q, sizeof(val) - 1);
			return -1;
		}
		if (k == 2 && !strncmp(q, "db", 2)) {
			if (u->cluster || parse_db(val, &u->db)) {
				snprintf(why, whylen, "db: %s", u->cluster ?
					 "a cluster has only database 0" : "expected a number");
				return -1;
			}
		} else {
			for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
				if (strlen(opts[i].key) == k && !strncmp(q, opts[i].key, k))
					break;
			if (i == sizeof(opts) / sizeof(opts[0])) {
				snprintf(why, whylen, "unknown option '%.*s' (known: db, user, password, "
					 "password_file, tls_ca, tls_cert, tls_key, tls_server_name)",
					 (int)(k > 40 ? 40 : k), q);
				return -1;
			}
			if (opts[i].tls_only && !u->tls) {
				snprintf(why, whylen, "%s: only with rediss:// or rediss-cluster://",
					 opts[i].key);
				return -1;
			}
			if (strlen(val) >= opts[i].size) {
				snprintf(why, whylen, "%s: longer than %zu bytes", opts[i].key,
					 opts[i].size - 1);
				return -1;
			}
			memcpy((char *)u + opts[i].off, val, strlen(val) + 1);
		}
		q += n + (amp ? 1 : 0);
		if (amp && !*q) {
			snprintf(why, whylen, "the options end in '&'");
			return -1;
		}
	}
	if (u->password[0] && u->password_file[0]) {
		snprintf(why, whylen, "a password and a password_file: give one");
		return -1;
	}
	return 0;
}

static int parse_cluster(const char *p, const char *end, struct conn_url *u, const char **why)
{
	if (parse_userinfo(&p, end, u, why))
		return -1;
	if (memchr(p, '/', (size_t)(end - p))) {
		*why = "a cluster has only database 0";
		return -1;
	}
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);

		if (u->nseeds == CONN_MAX_SEEDS) {
			*why = "more than 16 seed nodes";
			return -1;
		}
		if (conn_addr_parse(p, n, &u->seeds[u->nseeds], 1)) {
			*why = "every seed is host:port";
			return -1;
		}
		u->nseeds++;
		p += n + (comma ? 1 : 0);
		if (comma && p == end) {
			*why = "every seed is host:port";
			return -1;
		}
	}
	if (!u->nseeds) {
		*why = "no seed node";
		return -1;
	}
	memcpy(u->host, u->seeds[0].host, sizeof(u->host));
	u->port = u->seeds[0].port;
	return 0;
}

static int parse_tcp(const char *p, const char *end, struct conn_url *u, const char **why)
{
	const char *slash = memchr(p, '/', (size_t)(end - p));
	const char *hostend = slash ? slash : end;
	struct conn_addr a;

	if (parse_userinfo(&p, hostend, u, why))
		return -1;
	if (conn_addr_parse(p, (size_t)(hostend - p), &a, 0)) {
		*why = "expected host[:port] (an IPv6 address in brackets: [::1]:6379)";
		return -1;
	}
	memcpy(u->host, a.host, sizeof(u->host));
	u->port = a.port;
	if (slash && slash + 1 < end) {
		char db[16];

		if (copy_part(db, sizeof(db), slash + 1, (size_t)(end - slash - 1)) ||
		    parse_db(db, &u->db)) {
			*why = "the database after '/' is not a number";
			return -1;
		}
	}
	return 0;
}

int conn_url_parse(const char *url, struct conn_url *u, char *err, size_t errlen)
{
	static const struct {
		const char *prefix;
		int cluster, tls, unix_socket;
	} schemes[] = {
		{ "redis://", 0, 0, 0 },
		{ "rediss://", 0, 1, 0 },
		{ "unix://", 0, 0, 1 },
		{ "redis-cluster://", 1, 0, 0 },
		{ "rediss-cluster://", 1, 1, 0 },
	};
	const char *why = NULL, *p = NULL, *q;
	char shown[600], qwhy[200] = "";
	size_t i;
	int bad = -1;

	memset(u, 0, sizeof(*u));
	u->port = 6379;
	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (!strncmp(url, schemes[i].prefix, strlen(schemes[i].prefix))) {
			p = url + strlen(schemes[i].prefix);
			u->cluster = schemes[i].cluster;
			u->tls = schemes[i].tls;
			break;
		}
	if (!p) {
		why = "unknown scheme";
	} else {
		q = strchr(p, '?');
		if (schemes[i].unix_socket) {
			bad = copy_part(u->path, sizeof(u->path), p, q ? (size_t)(q - p) : strlen(p)) ||
			      u->path[0] != '/';
			if (bad)
				why = "expected an absolute socket path";
		} else if (u->cluster) {
			bad = parse_cluster(p, q ? q : p + strlen(p), u, &why);
		} else {
			bad = parse_tcp(p, q ? q : p + strlen(p), u, &why);
		}
		if (!bad && q && parse_query(q + 1, u, qwhy, sizeof(qwhy))) {
			bad = -1;
			why = qwhy;
		}
	}
	if (!bad)
		return 0;
	conn_url_redacted(url, shown, sizeof(shown));
	snprintf(err, errlen, "redis URL '%s': %s; expected "
		 "redis[s]://[[user]:password@]host[:port][/db][?options], "
		 "unix:///path/to/redis.sock[?options] or "
		 "redis[s]-cluster://[[user]:password@]host:port[,host:port...][?options]",
		 shown, why ? why : "malformed");
	memset(u, 0, sizeof(*u));
	return -EINVAL;
}

void conn_url_redacted(const char *url, char *out, size_t len)
{
	const char *p = strstr(url, "://"), *end, *at = NULL, *colon, *q;
	char tmp[1024];

	snprintf(out, len, "%s", url);
	if (!p)
		return;
	p += 3;
	/* user info: password between the first ':' and the last '@' of the authority */
	if (strncmp(url, "unix://", 7)) {
		end = p + strcspn(p, "/?");
		for (const char *c = p; c < end; c++)
			if (*c == '@')
				at = c;
		if (at) {
			colon = memchr(p, ':', (size_t)(at - p));
			snprintf(out, len, "%.*s****%s", (int)((colon ? colon + 1 : p) - url), url, at);
		}
	}
	/* password=... in the options */
	snprintf(tmp, sizeof(tmp), "%s", out);
	q = strchr(tmp, '?');
	while (q && (q = strstr(q, "password=")) != NULL) {
		if (q[-1] == '?' || q[-1] == '&') {
			const char *amp = strchr(q, '&');

			snprintf(out, len, "%.*s****%s", (int)(q + 9 - tmp), tmp, amp ? amp : "");
			return;
		}
		q += 9;
	}
}
