/*
 * api.h - Alertmanager's API v2 on the alerter (api.c): what fires, its
 * groups, silences, receivers, status, health.
 */
#ifndef FL_ALERTER_API_H
#define FL_ALERTER_API_H

#include "core/metrics_server.h"

struct alerter;

/*
 * Serve the API under /api/v2/ and /-/ on m (the alerter's metrics_addr,
 * behind its web config).  config_path: the file the config came from, or
 * "" for the built-in one (GET /api/v2/status shows it).  Returns 0 or -1.
 */
int api_start(struct alerter *al, struct metrics_server *m, const char *config_path);

/* After the server stopped: close the API's Redis connection. */
void api_stop(void);

#endif
