/*
 * metrics_server.h - a small HTTP/1.0 server for GET /metrics on the
 * probe's event loop.
 *
 * Scrapes are served from the last snapshot already rendered by the
 * sampling loop, so a scrape costs a socket write, not a collection.  All
 * sockets are non-blocking and the sampling loop reaps connections that
 * linger (metrics_server_reap), so a slow or stuck client never delays
 * sampling.
 */
#ifndef FL_METRICS_SERVER_H
#define FL_METRICS_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "probes/loop.h"

struct metrics_server;

/*
 * Listen on addr ("127.0.0.1:9464", "[::1]:9464", ":9464" for all
 * addresses) and serve on loop l.  Returns NULL with a reason in err.
 */
struct metrics_server *metrics_server_start(struct loop *l, const char *addr, char *err,
					    size_t errlen);

/* Replace the body served for /metrics (copied). */
void metrics_server_set_body(struct metrics_server *m, const char *body, size_t len);

/* Close connections open longer than max_age_ns (slow or stuck clients). */
void metrics_server_reap(struct metrics_server *m, uint64_t max_age_ns);

void metrics_server_stop(struct metrics_server *m);

#endif
