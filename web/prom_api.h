/*
 * prom_api.h - Prometheus' HTTP API (v1) over faultline's tiers: what
 * Grafana's Prometheus data source, promtool query and any Prometheus
 * client ask.
 *
 *   GET|POST /api/v1/query              query, time, timeout
 *   GET|POST /api/v1/query_range        query, start, end, step, timeout
 *   GET|POST /api/v1/series             match[] (required), start, end
 *   GET|POST /api/v1/labels             match[], start, end
 *   GET      /api/v1/label/NAME/values  match[], start, end
 *   GET      /api/v1/metadata           metric, limit
 *   GET      /api/v1/status/buildinfo
 *   GET      /-/healthy, /-/ready       (ready: Redis answers)
 *
 * Answers and errors have Prometheus' shapes ({"status":"success","data":
 * ...}, {"status":"error","errorType":"bad_data","error":"..."}) and
 * status codes (400 bad_data, 422 execution, 503 timeout and unavailable).
 * Queries run in web/query.c; each query's answer also says what it read,
 * in a top-level "faultline" object that Prometheus clients pass over:
 * {"tier":"1s","hosts":N,"samples":M,"steps":K}.
 */
#ifndef FL_WEB_PROM_API_H
#define FL_WEB_PROM_API_H

#include "core/metrics_server.h"
#include "web/query.h"

struct prom_api;

/*
 * An API reading Redis at url (a connection of its own, opened when a
 * request first needs it and again after a failure) with the query
 * options o (copied; o->topology is borrowed).  NULL on -ENOMEM.
 */
struct prom_api *prom_api_new(const char *url, const struct query_opts *o);
void prom_api_free(struct prom_api *a);

/* The handler to route "/api/v1/" and "/-/" to (metrics_server_route), arg the API. */
void prom_api_handle(void *arg, const struct http_request *req, struct http_response *resp);

/* What the API answered, for faultline-web's /metrics. */
struct prom_api_stats {
	uint64_t queries[3];		/* instant and range queries, by tier read: 1, 60, 3600 */
	uint64_t failed;		/* requests answered with an error */
	double seconds;			/* spent answering queries */
	uint64_t samples;		/* points read for them */
};
void prom_api_stats(struct prom_api *a, struct prom_api_stats *out);

/*
 * A time as the API takes one: seconds since the epoch (fractions too) or
 * RFC 3339 (2026-12-04T10:00:00.5Z, +01:00).  Returns 0 with ms in *out,
 * or -1.
 */
int prom_parse_time(const char *s, uint64_t *out_ms);

/*
 * A time (ms) as the API writes one: seconds, exactly (1764500000.25, not
 * ...0.2499999), into buf (32 bytes); its length, no NUL.
 */
size_t prom_time_text(uint64_t ms, char *buf);

/* A duration as the API takes one: seconds (a float) or 15s, 1m30s.  0 or -1. */
int prom_parse_duration(const char *s, uint64_t *out_ms);

#endif
