/*
 * pages.h - what on-call opens from a page: faultline-web's HTML.
 *
 *   /alert/FP  the incident page of a firing alert (the rules engine's
 *              default generatorURL, faultline-rules --web-url): the alert,
 *              its failure domain on a map of the fleet (site, switch,
 *              rack, host; the hit hosts marked, the rollup's counts), the
 *              series behind it around the firing (its rule's expression,
 *              an SVG chart with the threshold), the evidence (the hosts'
 *              top stacks as a flame graph; for a deploy regression the
 *              before/after differential one and the deploy's numbers),
 *              and the runbook
 *   /fleet     what fires, by failure domain, widest first
 *   /wear      the fleet SSD wear report (faultline report wear's page)
 *
 * Plain HTML and inline SVG, no build step (the only script is the flame
 * graph's own zoom), readable on a phone (one column under 700 px).  What fires is the fleet's alert index
 * ({fl:alerts}:active, as the alerters took it); the series come from the
 * tiers through web/query.c with the rules' own expressions.
 */
#ifndef FL_WEB_PAGES_H
#define FL_WEB_PAGES_H

#include "core/metrics_server.h"
#include "web/query.h"

struct ruleset;
struct pages;

/*
 * Pages reading Redis at url (a connection of their own), the query
 * options o (copied; its pointers borrowed) and the rules rs (borrowed:
 * each alert's expression; may be NULL, then no chart).  NULL on -ENOMEM.
 */
struct pages *pages_new(const char *url, const struct query_opts *o, const struct ruleset *rs);
void pages_free(struct pages *p);

/* The handler for "/alert/", "/fleet" and "/wear" (metrics_server_route), arg the pages. */
void pages_handle(void *arg, const struct http_request *req, struct http_response *resp);

#endif
