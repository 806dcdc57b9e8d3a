/*
 * metrics_server.c - /metrics on libmicrohttpd; see metrics_server.h.
 *
 * The listening socket is ours (so a port in use is said plainly, with what
 * to do) until libmicrohttpd takes it over, serves it from one epoll thread
 * with a connection limit and an idle timeout, and closes it when stopped.
 * The body lives behind a mutex: the daemon's thread replaces it, the
 * server's thread copies it into each response.  Its
 * gzip'd form is made on the first scrape that asks for it and kept until
 * the body changes.
 */
#include "core/metrics_server.h"

#include <crypt.h>
#include <errno.h>
#include <libgen.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "core/config.h"
#include "core/config_schema.h"
#include "core/timeutil.h"

#define CONNECTION_LIMIT 256
#define IDLE_TIMEOUT_S 10
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define PROTO_CONTENT_TYPE "application/vnd.google.protobuf; " \
	"proto=io.prometheus.client.MetricFamily; encoding=delimited"

struct web_user {
	char *name;
	char *hash;	/* bcrypt */
};

/* The web config file (exporter-toolkit's format, the part faultline serves). */
struct web_config {
	char *cert_file;
	char *key_file;
	struct web_user *users;
	size_t nusers;
};

struct metrics_server {
	struct MHD_Daemon *d;
	int lfd;
	pthread_mutex_t lock;
	char *body;
	size_t len;
	char *gz;		/* body gzip'd, or NULL until a client asks */
	size_t gzlen;
	char *proto;		/* the protobuf exposition, or NULL if the daemon has none */
	size_t plen;
	char *pgz;		/* proto gzip'd, or NULL until a client asks */
	size_t pgzlen;
	int proto_asked;	/* a scraper asked for protobuf: the daemon renders it */
	/*
	 * Lazy (metrics_server_lazy): the daemon renders only while scrapers
	 * come (one within METRICS_IDLE_NS), and a scrape that finds the body
	 * older than max_age waits for the next one (body_set).
	 */
	uint64_t max_age_ns;	/* 0: not lazy */
	uint64_t asked_ns;	/* the last scrape of /metrics (monotonic) */
	uint64_t set_ns;	/* when the body was last set */
	uint64_t pset_ns;	/* when the protobuf form was */
	pthread_cond_t body_set;
	char *cert, *key;	/* PEM text, for libmicrohttpd */
	struct web_config web;
	struct {
		char prefix[64];
		http_handler fn;
		void *arg;
	} routes[8];
	int nroutes;
};

/* A request body being read (con_cls), freed when the request completes. */
struct upload {
	char *buf;
	size_t len, cap;
	int too_large;
};

/* ---- the web config file ------------------------------------------------ */

static void web_config_free(struct web_config *w)
{
	free(w->cert_file);
	free(w->key_file);
	for (size_t i = 0; i < w->nusers; i++) {
		free(w->users[i].name);
		free(w->users[i].hash);
	}
	free(w->users);
	memset(w, 0, sizeof(*w));
}

static int parse_users(const struct cfg *c, const struct cfg_node *map, const char *key,
		       void *base, char *err, size_t errlen)
{
	struct web_config *w = base;
	const struct cfg_node *u;
	int ret = cfg_map(c, map, key, &u, err, errlen);

	if (ret || !u)
		return ret;
	w->users = calloc(u->nchild + 1, sizeof(*w->users));
	if (!w->users)
		return -ENOMEM;
	for (size_t i = 0; i < u->nchild; i++) {
		const struct cfg_node *e = &u->child[i];

		((struct cfg_node *)e)->used = 1;
		if (e->type != CFG_SCALAR || strncmp(e->value, "$2", 2))
			return cfg_error(c, e, err, errlen, "%s.%s: expected a bcrypt hash "
					 "($2y$..., as `htpasswd -nBC 10 USER` makes)", key, e->key);
		w->users[w->nusers].name = strdup(e->key);
		w->users[w->nusers].hash = strdup(e->value);
		if (!w->users[w->nusers].name || !w->users[w->nusers].hash)
			return -ENOMEM;
		w->nusers++;
	}
	return 0;
}

#define WC struct web_config
static const struct cfg_field web_schema[] = {
	CFG_STRING("tls_server_config.cert_file", WC, cert_file, "the server's certificate (PEM)"),
	CFG_STRING("tls_server_config.key_file", WC, key_file, "its private key (PEM)"),
	CFG_CUSTOM("basic_auth_users", parse_users, "map of bcrypt hashes",
		   "user -> bcrypt hash of the password"),
};
#undef WC

/* path, or dir/path when path is relative (exporter-toolkit's rule). */
static char *relative_to(const char *file, const char *path)
{
	char *copy, *dir, *out;

	if (path[0] == '/')
		return strdup(path);
	copy = strdup(file);
	if (!copy)
		return NULL;
	dir = dirname(copy);
	out = malloc(strlen(dir) + strlen(path) + 2);
	if (out)
		sprintf(out, "%s/%s", dir, path);
	free(copy);
	return out;
}

static int load_pem(const char *cfgfile, const char *path, char **out, char *err, size_t errlen)
{
	char *full = relative_to(cfgfile, path);
	size_t len;
	int ret;

	if (!full)
		return -ENOMEM;
	ret = cfg_read_file(full, out, &len, err, errlen);
	free(full);
	return ret;
}

static int web_config_load(struct metrics_server *m, const char *path, char *err, size_t errlen)
{
	struct cfg c;
	int ret = cfg_load_file(&c, path, err, errlen);

	if (ret)
		return ret;
	ret = cfg_apply(&c, web_schema, sizeof(web_schema) / sizeof(web_schema[0]), &m->web, err,
			errlen);
	if (!ret && !m->web.cert_file != !m->web.key_file)
		ret = cfg_error(&c, cfg_get(c.root, "tls_server_config"), err, errlen,
				"tls_server_config: needs both cert_file and key_file");
	cfg_free(&c);
	if (!ret && m->web.cert_file &&
	    ((ret = load_pem(path, m->web.cert_file, &m->cert, err, errlen)) ||
	     (ret = load_pem(path, m->web.key_file, &m->key, err, errlen))))
		return ret;
	return ret;
}

/* ---- serving ------------------------------------------------------------- */

/* gzip body into *out (malloc'd).  Returns 0 or -ENOMEM. */
static int gzip_body(const char *body, size_t len, char **out, size_t *outlen)
{
	z_stream zs = { 0 };
	uLong cap = compressBound((uLong)len) + 32;
	char *buf = malloc(cap);

	if (!buf || deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)body;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)buf;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&zs);
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	*outlen = zs.total_out;
	deflateEnd(&zs);
	return 0;
}

/*
 * 1 if the Accept header asks for Prometheus' protobuf exposition (as a
 * scraper with native histograms enabled does, before text).
 */
static int wants_proto(struct MHD_Connection *c)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);

	return a && strstr(a, "application/vnd.google.protobuf") &&
	       strstr(a, "io.prometheus.client.MetricFamily");
}

/* 1 if Accept-Encoding lists gzip (or *) with a q above 0. */
static int accepts_gzip(struct MHD_Connection *c)
{
	const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_ACCEPT_ENCODING);

	while (ae && *ae) {
		size_t n = strcspn(ae, ","), k = 0;
		char tok[64], *q;

		for (size_t i = 0; i < n && k + 1 < sizeof(tok); i++)
			if (ae[i] != ' ' && ae[i] != '\t')
				tok[k++] = ae[i];	/* "gzip; q=0.5" -> "gzip;q=0.5" */
		tok[k] = '\0';
		q = strstr(tok, ";q=");
		if (q)
			*q = '\0';
		if ((!strcasecmp(tok, "gzip") || !strcmp(tok, "*")) && (!q || strtod(q + 3, NULL) > 0))
			return 1;
		ae += n + (ae[n] == ',');
	}
	return 0;
}

/* 1 if the request carries a user and password of the web config. */
static int authorized(const struct metrics_server *m, struct MHD_Connection *c)
{
	char *pass = NULL, *user;
	int ok = 0;

	if (!m->web.nusers)
		return 1;
	user = MHD_basic_auth_get_username_password(c, &pass);
	for (size_t i = 0; user && pass && i < m->web.nusers && !ok; i++)
		if (!strcmp(user, m->web.users[i].name)) {
			struct crypt_data cd = { 0 };
			const char *h = crypt_r(pass, m->web.users[i].hash, &cd);

			ok = h && !strcmp(h, m->web.users[i].hash);
		}
	MHD_free(user);
	MHD_free(pass);
	return ok;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned int status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

struct args_walk {
	const char *name;
	void (*fn)(const char *value, void *arg);
	void *arg;
	int n;
};

static enum MHD_Result arg_each(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	struct args_walk *w = cls;

	(void)kind;
	if (key && !strcmp(key, w->name)) {
		if (w->fn)
			w->fn(value ? value : "", w->arg);
		w->n++;
	}
	return MHD_YES;
}

int http_args(const struct http_request *r, const char *name,
	      void (*fn)(const char *value, void *arg), void *arg)
{
	struct args_walk w = { name, fn, arg, 0 };
	const struct http_form *f = r->form;

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, arg_each, &w);
	for (size_t i = 0; f && i < f->n; i++)
		arg_each(&w, MHD_POSTDATA_KIND, f->kv[2 * i], f->kv[2 * i + 1]);
	return w.n;
}

const char *http_arg(const struct http_request *r, const char *name)
{
	const char *v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
	const struct http_form *f = r->form;

	for (size_t i = 0; !v && f && i < f->n; i++)
		if (!strcmp(f->kv[2 * i], name))
			v = f->kv[2 * i + 1];
	return v;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decode s[0..len) ('+' is a space), a new string, or NULL. */
static char *form_decode(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;

	for (size_t i = 0; out && i < len; i++) {
		if (s[i] == '+') {
			*o++ = ' ';
		} else if (s[i] == '%' && i + 2 < len && hexval(s[i + 1]) >= 0 &&
			   hexval(s[i + 2]) >= 0) {
			*o++ = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	if (out)
		*o = '\0';
	return out;
}

void http_form_free(struct http_form *f)
{
	for (size_t i = 0; i < 2 * f->n; i++)
		free(f->kv[i]);
	free(f->kv);
	memset(f, 0, sizeof(*f));
}

int http_form_parse(struct http_form *f, const char *body, size_t len)
{
	const char *p = body, *end = body + len;

	memset(f, 0, sizeof(*f));
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p)), *eq;
		char **kv;

		if (!amp)
			amp = end;
		eq = memchr(p, '=', (size_t)(amp - p));
		if (amp > p) {
			if (!(kv = realloc(f->kv, (f->n + 1) * 2 * sizeof(*kv))))
				goto fail;
			f->kv = kv;
			kv[2 * f->n] = form_decode(p, (size_t)((eq ? eq : amp) - p));
			kv[2 * f->n + 1] = eq ? form_decode(eq + 1, (size_t)(amp - eq - 1))
					      : strdup("");
			f->n++;
			if (!kv[2 * f->n - 2] || !kv[2 * f->n - 1])
				goto fail;
		}
		p = amp + 1;
	}
	return 0;
fail:
	http_form_free(f);
	return -1;
}

/* The request to a routed prefix, read whole, then its handler's answer. */
static enum MHD_Result handle_routed(struct metrics_server *m, int k, struct MHD_Connection *c,
				     const char *url, const char *method, const char *upload,
				     size_t *upload_len, void **con_cls)
{
	struct upload *u = *con_cls;
	struct http_response resp = { 500, "text/plain; charset=utf-8", NULL, 0 };
	struct http_request req;
	struct http_form form;
	struct MHD_Response *r;
	const char *ctype;
	enum MHD_Result ret;

	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return MHD_NO;
		*con_cls = u;
		return MHD_YES;	/* the headers; the body (if any) comes next */
	}
	if (*upload_len) {
		if (u->len + *upload_len > HTTP_BODY_MAX) {
			u->too_large = 1;
		} else if (!u->too_large) {
			if (u->len + *upload_len + 1 > u->cap) {
				size_t cap = (u->len + *upload_len + 1) * 2;
				char *b = realloc(u->buf, cap);

				if (!b)
					return MHD_NO;
				u->buf = b;
				u->cap = cap;
			}
			memcpy(u->buf + u->len, upload, *upload_len);
			u->len += *upload_len;
			u->buf[u->len] = '\0';
		}
		*upload_len = 0;
		return MHD_YES;
	}
	if (u->too_large)
		return answer(c, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large\n");
	req = (struct http_request){ method, url, u->buf ? u->buf : "", u->len, c, NULL };
	ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!strcmp(method, "POST") && ctype &&
	    !strncasecmp(ctype, "application/x-www-form-urlencoded", 33)) {
		if (http_form_parse(&form, req.body, req.len))
			return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		req.form = &form;
	}
	m->routes[k].fn(m->routes[k].arg, &req, &resp);
	if (req.form)
		http_form_free(&form);
	r = MHD_create_response_from_buffer(resp.len, resp.body ? resp.body : (char *)"",
					    resp.body ? MHD_RESPMEM_MUST_FREE
						      : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(resp.body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp.content_type);
	ret = MHD_queue_response(c, resp.status, r);
	MHD_destroy_response(r);
	return ret;
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct upload *u = *con_cls;

	(void)cls;
	(void)c;
	(void)why;
	if (u) {
		free(u->buf);
		free(u);
		*con_cls = NULL;
	}
}

int metrics_server_route(struct metrics_server *m, const char *prefix, http_handler fn, void *arg)
{
	if (m->nroutes >= 8 || strlen(prefix) >= sizeof(m->routes[0].prefix))
		return -1;
	snprintf(m->routes[m->nroutes].prefix, sizeof(m->routes[0].prefix), "%s", prefix);
	m->routes[m->nroutes].fn = fn;
	m->routes[m->nroutes].arg = arg;
	m->nroutes++;
	return 0;
}

/*
 * A lazy server's scrape (m->lock held): noted, and when the form it wants
 * was set (*set_ns) longer than max_age ago (the first scrape in a while,
 * or the first to ask for protobuf), waited for until the daemon's next
 * tick sets it, twice max_age (a second at least) at most.
 */
static void wait_fresh(struct metrics_server *m, const uint64_t *set_ns)
{
	uint64_t wait = 2 * m->max_age_ns > 1000000000ULL ? 2 * m->max_age_ns : 1000000000ULL;
	uint64_t now = time_mono_ns(), ns;
	struct timespec until;

	m->asked_ns = now;
	clock_gettime(CLOCK_MONOTONIC, &until);
	ns = (uint64_t)until.tv_nsec + wait;
	until.tv_sec += (time_t)(ns / 1000000000ULL);
	until.tv_nsec = (long)(ns % 1000000000ULL);
	while (now - *set_ns > m->max_age_ns &&
	       pthread_cond_timedwait(&m->body_set, &m->lock, &until) == 0)
		now = time_mono_ns();
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **con_cls)
{
	struct metrics_server *m = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	int gz, proto;

	(void)version;
	for (int k = 0; k < m->nroutes; k++)
		if (!strncmp(url, m->routes[k].prefix, strlen(m->routes[k].prefix))) {
			/* authorized once, on the headers, before any body is read */
			if (*con_cls || authorized(m, c))
				return handle_routed(m, k, c, url, method, upload, upload_len,
						     con_cls);
			goto unauthorized;
		}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (!authorized(m, c)) {
unauthorized:;
		static const char no[] = "Unauthorized\n";

		r = MHD_create_response_from_buffer(sizeof(no) - 1, (void *)no,
						    MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		ret = MHD_queue_basic_auth_fail_response(c, "faultline", r);
		MHD_destroy_response(r);
		return ret;
	}
	if (!strcmp(url, "/"))
		return answer(c, MHD_HTTP_OK, "faultline: metrics at /metrics\n");
	if (strcmp(url, "/metrics"))
		return answer(c, MHD_HTTP_NOT_FOUND, "not found; metrics are at /metrics\n");
	gz = accepts_gzip(c);
	pthread_mutex_lock(&m->lock);
	/* Prometheus asks for protobuf (native histograms) first when it wants it */
	proto = wants_proto(c);
	if (proto)
		m->proto_asked = 1;
	if (m->max_age_ns)
		wait_fresh(m, proto ? &m->pset_ns : &m->set_ns);
	proto = proto && m->proto;	/* text until the daemon renders protobuf too */
	{
		const char *body = proto ? m->proto : m->body ? m->body : "";
		size_t len = proto ? m->plen : m->len;
		char **zip = proto ? &m->pgz : &m->gz;
		size_t *ziplen = proto ? &m->pgzlen : &m->gzlen;

		if (gz && !*zip && gzip_body(body, len, zip, ziplen))
			gz = 0;
		r = gz ? MHD_create_response_from_buffer(*ziplen, *zip, MHD_RESPMEM_MUST_COPY)
		       : MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	}
	pthread_mutex_unlock(&m->lock);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				proto ? PROTO_CONTENT_TYPE : CONTENT_TYPE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
	if (gz)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* ---- starting and stopping ---------------------------------------------- */

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

/* A listening socket for addr, or -1 with the reason (and what to do) in err. */
static int listen_on(const char *addr, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char host[256], port[32];
	int fd, one = 1, rc;

	if (split_addr(addr, host, sizeof(host), port, sizeof(port))) {
		snprintf(err, errlen, "metrics_addr '%s': expected HOST:PORT, e.g. 127.0.0.1:9464",
			 addr);
		return -1;
	}
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "metrics_addr '%s': %s", addr, gai_strerror(rc));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 128)) {
		snprintf(err, errlen, "metrics_addr '%s': cannot listen: %s%s", addr,
			 strerror(errno),
			 errno == EADDRINUSE ? " (another probe or exporter on that port? "
					       "set metrics_addr or --metrics-addr)" : "");
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

struct metrics_server *metrics_server_start(const char *addr, const char *web_config, char *err,
					    size_t errlen)
{
	struct metrics_server *m = calloc(1, sizeof(*m));
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;

	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&m->body_set, &ca);
		pthread_condattr_destroy(&ca);
	}
	m->lfd = -1;
	if (web_config && web_config[0] && web_config_load(m, web_config, err, errlen))
		goto fail;
	if ((m->lfd = listen_on(addr, err, errlen)) < 0)
		goto fail;
	if (m->cert)
		flags |= MHD_USE_TLS;
	m->d = m->cert ?
		MHD_start_daemon(flags, 0, NULL, NULL, handle, m,
				 MHD_OPTION_LISTEN_SOCKET, m->lfd,
				 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONNECTION_LIMIT,
				 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_TIMEOUT_S,
				 MHD_OPTION_HTTPS_MEM_CERT, m->cert,
				 MHD_OPTION_HTTPS_MEM_KEY, m->key,
				 MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL, MHD_OPTION_END) :
		MHD_start_daemon(flags, 0, NULL, NULL, handle, m,
				 MHD_OPTION_LISTEN_SOCKET, m->lfd,
				 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONNECTION_LIMIT,
				 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_TIMEOUT_S,
				 MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL, MHD_OPTION_END);
	if (!m->d) {
		snprintf(err, errlen, "metrics_addr '%s': libmicrohttpd would not start%s", addr,
			 m->cert ? " (is the TLS certificate and key a matching PEM pair?)" : "");
		goto fail;
	}
	return m;
fail:
	if (m->lfd >= 0)
		close(m->lfd);
	web_config_free(&m->web);
	free(m->cert);
	free(m->key);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->body_set);
	free(m);
	return NULL;
}

/* Replace one served body (copied, NUL-terminated) and drop its gzip'd form. */
static void set_served(struct metrics_server *m, char **body, size_t *len, char **gz,
		       size_t *gzlen, const void *data, size_t n)
{
	char *b = malloc(n + 1);

	if (!b)
		return;
	memcpy(b, data, n);
	b[n] = '\0';
	pthread_mutex_lock(&m->lock);
	free(*body);
	free(*gz);
	*body = b;
	*len = n;
	*gz = NULL;
	*gzlen = 0;
	if (body == &m->body || body == &m->proto) {
		*(body == &m->body ? &m->set_ns : &m->pset_ns) = time_mono_ns();
		pthread_cond_broadcast(&m->body_set);
	}
	pthread_mutex_unlock(&m->lock);
}

void metrics_server_lazy(struct metrics_server *m, uint64_t max_age_ns)
{
	pthread_mutex_lock(&m->lock);
	m->max_age_ns = max_age_ns;
	pthread_mutex_unlock(&m->lock);
}

int metrics_server_wanted(struct metrics_server *m)
{
	int wanted;

	pthread_mutex_lock(&m->lock);
	wanted = !m->max_age_ns || (m->asked_ns && time_mono_ns() - m->asked_ns < METRICS_IDLE_NS);
	pthread_mutex_unlock(&m->lock);
	return wanted;
}

void metrics_server_set_body(struct metrics_server *m, const char *body, size_t len)
{
	set_served(m, &m->body, &m->len, &m->gz, &m->gzlen, body, len);
}

void metrics_server_set_proto(struct metrics_server *m, const void *data, size_t len)
{
	set_served(m, &m->proto, &m->plen, &m->pgz, &m->pgzlen, data, len);
}

int metrics_server_proto_asked(struct metrics_server *m)
{
	int asked;

	pthread_mutex_lock(&m->lock);
	asked = m->proto_asked;
	pthread_mutex_unlock(&m->lock);
	return asked;
}

void metrics_server_stop(struct metrics_server *m)
{
	if (!m)
		return;
	MHD_stop_daemon(m->d);	/* closes the listening socket it was given, too */
	web_config_free(&m->web);
	free(m->cert);
	free(m->key);
	free(m->body);
	free(m->gz);
	free(m->proto);
	free(m->pgz);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->body_set);
	free(m);
}
