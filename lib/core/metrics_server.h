/*
 * metrics_server.h - the /metrics endpoint of the probe, the rules engine
 * and the alerter, on libmicrohttpd.
 *
 * Scrapes are served from the last body the daemon rendered
 * (metrics_server_set_body), so a scrape costs a copy, never a collection,
 * and the server's own thread never touches the sampling loop.
 * libmicrohttpd gives what a scraper expects: many concurrent connections
 * (idle or slow clients time out and never lock a scraper out), HEAD, and
 * keep-alive; on top of it the body is sent gzip'd to clients that accept
 * it (compressed once per body, not per scrape).
 *
 * An optional web config file, in the format of Prometheus' exporter-toolkit
 * (--web.config.file), adds TLS and basic auth:
 *
 *   tls_server_config:
 *     cert_file: /etc/faultline/tls/server.crt   # relative: to the file
 *     key_file: /etc/faultline/tls/server.key
 *   basic_auth_users:
 *     prometheus: $2y$10$...                     # bcrypt, as htpasswd -B
 *
 * Any other key is an error with its file:line:col, never ignored.
 */
#ifndef FL_METRICS_SERVER_H
#define FL_METRICS_SERVER_H

#include <stddef.h>
#include <stdint.h>

struct metrics_server;

/*
 * Listen on addr ("127.0.0.1:9464", "[::1]:9464", ":9464" for all
 * addresses) with the web config file web_config (NULL or "": plain HTTP,
 * no auth) and serve from the server's own thread.  Returns NULL with a
 * reason in err.
 */
struct metrics_server *metrics_server_start(const char *addr, const char *web_config, char *err,
					    size_t errlen);

/* Replace the body served for /metrics (copied; any thread). */
void metrics_server_set_body(struct metrics_server *m, const char *body, size_t len);

/*
 * Also serve data (Prometheus' protobuf exposition, prom_render_proto) to
 * scrapers whose Accept asks for it; copied, any thread.
 */
void metrics_server_set_proto(struct metrics_server *m, const void *data, size_t len);

/*
 * Render on demand: a daemon that renders its body every max_age_ns (a
 * probe's interval) need not while nobody scrapes.  After this,
 * metrics_server_wanted says whether a scrape came within the last
 * METRICS_IDLE_NS, and a scrape that finds the body older than max_age_ns
 * (the first in a while) waits for the next one, up to twice max_age_ns
 * (a second at least), then takes what there is.
 */
#define METRICS_IDLE_NS (600ULL * 1000000000ULL)
void metrics_server_lazy(struct metrics_server *m, uint64_t max_age_ns);

/* Whether to render the body now: always, unless lazy and nobody scrapes. */
int metrics_server_wanted(struct metrics_server *m);

/*
 * Whether a scraper has asked for protobuf: until one does, a daemon need
 * not render it (scrapers get text meanwhile, which they all take).
 */
int metrics_server_proto_asked(struct metrics_server *m);

/*
 * More than /metrics: a handler for every path under a prefix (an API),
 * behind the same TLS and basic auth.  A request reaches it whole (its
 * body read up to HTTP_BODY_MAX; a larger one is answered 413) on the
 * server's thread, one at a time: a handler may block briefly (a Redis
 * call) but holds up scrapes meanwhile.
 */
#define HTTP_BODY_MAX (1 << 20)

struct http_request {
	const char *method;	/* "GET", "POST", "DELETE", ... */
	const char *path;	/* "/api/v2/alerts", no query */
	const char *body;	/* NUL-terminated */
	size_t len;
	void *conn;		/* for http_args */
	const struct http_form *form;	/* a POSTed form's fields (decoded), or NULL */
};

/* A form body's fields, decoded: kv[2 i] = kv[2 i + 1]. */
struct http_form {
	char **kv;
	size_t n;
};

/*
 * A form body (application/x-www-form-urlencoded: a=1&b=x+y%21) into f,
 * percent-decoded ('+' a space; a malformed escape is kept as it is).
 * Outside input: any bytes are taken.  Returns 0, or -1 on -ENOMEM (f
 * empty).  The server parses POSTed forms itself; http_form_free frees.
 */
int http_form_parse(struct http_form *f, const char *body, size_t len);
void http_form_free(struct http_form *f);

/*
 * Call fn with each value of query argument name, in order (a name may be
 * given several times: ?filter=a&filter=b), then the same field's of a
 * POSTed form (application/x-www-form-urlencoded, as Prometheus' clients
 * send queries).  Returns how many there were.
 */
int http_args(const struct http_request *r, const char *name,
	      void (*fn)(const char *value, void *arg), void *arg);

/* The first value of query argument (or form field) name, or NULL. */
const char *http_arg(const struct http_request *r, const char *name);

/*
 * What a handler answers: a status, a content type (static storage) and a
 * body it fills (malloc'd; the server frees it).
 */
struct http_response {
	unsigned int status;
	const char *content_type;
	char *body;
	size_t len;
};

typedef void (*http_handler)(void *arg, const struct http_request *req,
			     struct http_response *resp);

/*
 * Serve every path starting with prefix ("/api/v2/", "/-/") with fn(arg,
 * ...), every method.  At most 8 prefixes; call before requests arrive
 * (right after metrics_server_start).  Returns 0 or -1.
 */
int metrics_server_route(struct metrics_server *m, const char *prefix, http_handler fn, void *arg);

/* Stop serving and free m (NULL is fine). */
void metrics_server_stop(struct metrics_server *m);

#endif
