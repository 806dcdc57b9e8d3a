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
 * Whether a scraper has asked for protobuf: until one does, a daemon need
 * not render it (scrapers get text meanwhile, which they all take).
 */
int metrics_server_proto_asked(struct metrics_server *m);

/* Stop serving and free m (NULL is fine). */
void metrics_server_stop(struct metrics_server *m);

#endif
