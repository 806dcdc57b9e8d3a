/*
 * route.h - the routing tree, as Alertmanager's `route:` means it.
 *
 * An alert enters at the root (which matches everything) and walks down:
 * a route matches when all its matchers do; its children are tried in
 * order, and a matching child ends the search among its siblings unless it
 * says `continue: true`; a route none of whose children matched is itself
 * a match.  Every match is a (route, receiver) pair the alert is grouped
 * under: one alert can reach several receivers.  A child inherits what it
 * does not set: receiver, group_by, group_wait, group_interval,
 * repeat_interval.  `group_by: ['...']` groups by every label.
 *
 * faultline's older flat `routes:` list is the same tree: a root without
 * a receiver whose children are the list, first match wins; an alert no
 * route takes is dead-lettered, and groups keep the keys they had.
 */
#ifndef FL_ALERTER_ROUTE_H
#define FL_ALERTER_ROUTE_H

#include <stdint.h>

#include "core/config.h"
#include "model/alert.h"
#include "model/matcher.h"
#include "alerter/time_interval.h"

#define ROUTE_MAX_MATCHERS 16
#define ROUTE_MAX_DEPTH 16
#define ROUTE_MAX_NODES 1024
#define ROUTE_LABEL_MAX 128	/* a group_by label's name */

struct route {
	struct matcher *m;
	int nm;
	int cont;			/* continue: siblings after a match are tried too */
	int receiver;			/* index into alerter_config.receiver_names; -1 none */
	char (*group_by)[ROUTE_LABEL_MAX];
	int ngroup_by;
	int group_by_all;		/* '...' */
	int legacy;			/* a `routes:` list entry: the old group keys */
	uint64_t group_wait_ns, group_interval_ns, repeat_interval_ns;
	int *mute, nmute;		/* mute_time_intervals: alerter_config.time_intervals[] */
	int *active, nactive;		/* active_time_intervals (none: always active) */
	char *key;			/* Alertmanager's Key(): the matchers from the root */
	char *id;			/* Alertmanager's ID(): the key plus the sibling index */
	struct route *child;
	int nchild;
	int line;			/* in the config, for messages */
};

struct alerter_config;

/*
 * The `route:` map node n into ac->root: the tree with its inheritance
 * resolved (receivers must be parsed already).  Every key Alertmanager
 * defines and faultline does not do is refused at file:line:col; so is any
 * unknown key.  Returns 0 or -EINVAL (err).
 */
int route_tree_parse(struct alerter_config *ac, const struct cfg *c, const struct cfg_node *n,
		     char *err, size_t errlen);

/* The older flat `routes:` list n into ac->root (see above). */
int route_list_parse(struct alerter_config *ac, const struct cfg *c, const struct cfg_node *n,
		     char *err, size_t errlen);

/*
 * The matchers of map n into a malloc'd *m (ROUTE_MAX_MATCHERS slots) and
 * *nm: PREFIXmatch (label: value), PREFIXmatch_re (label: regex) and
 * PREFIXmatchers (Alertmanager's matcher strings) together; prefix is ""
 * for a route, "source_" or "target_" for an inhibit rule.  legacy: the
 * flat list's match, where a value starting with ~ is a regex.  On error,
 * *m still needs freeing (its *nm matchers).  Returns 0 or -EINVAL (err).
 */
int route_matchers_parse(const struct cfg *c, const struct cfg_node *n, const char *prefix,
			 int legacy, struct matcher **m, int *nm, char *err, size_t errlen);

/* No routes given: everything to the first receiver, grouped by alertname. */
int route_default(struct alerter_config *ac);

/*
 * The routes alert a reaches, in the tree's order, into out[0..max);
 * routes without a receiver (a flat list's root) are left out.  A route
 * is reached once at most, so max = ROUTE_MAX_NODES never cuts the list.
 * Returns how many (0: none takes it).
 */
int route_match(const struct route *root, const struct alert *a, const struct route **out,
		int max);

/*
 * a's group labels under r into out (keys and values point into r and a):
 * group_by's labels a has (or, for a legacy route, every group_by label,
 * "" when absent), or all of a's labels for '...'.  Returns how many, at
 * most max (a's labels are bounded: MAX_LABELS).
 */
int route_group_labels(const struct route *r, const struct alert *a, struct label *out, int max);

/*
 * Whether r's notifications are muted at time t by its time intervals
 * (ti: the config's): any mute interval holds, or it has active intervals
 * and none holds.  Returns the interval's name that mutes it (for an
 * active one, "outside NAME" is the caller's to say), or NULL.
 */
const char *route_time_muted(const struct route *r, const struct time_interval *ti, time_t t,
			     int *outside_active);

/* Free the tree under r (and r's own parts; r itself is the caller's). */
void route_free(struct route *r);

#endif
