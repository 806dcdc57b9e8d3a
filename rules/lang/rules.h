/*
 * rules.h - rule files: Prometheus-shaped YAML groups of alerting rules.
 *
 *   groups:
 *     - name: network
 *       interval: 1s
 *       rules:
 *         - alert: TcpChecksumErrors
 *           expr: rate(faultline_tcp_in_csum_errors_total[1m]) > 1
 *           for: 30s
 *           keep_firing_for: 2m
 *           severity: page
 *           labels: {team: network}
 *           annotations:
 *             summary: "{{ $labels.host }} receives {{ $value }} corrupt segments/s"
 *           runbook: runbooks/tcp-checksum-errors.md
 *           evidence: [csum_peers, cpu_stacks]
 *           rollup: {by: [switch, rack], min_hosts: 3, min_fraction: 0.2, alpha: 0.001}
 *
 * `rollup.by` lists nested failure domains, outermost first (at most
 * RULE_MAX_ROLLUP).  The matching hosts page as the smallest domain that
 * explains them, and hosts a domain explains raise no host alert; the
 * decision rule (min_hosts, min_fraction, the concentration test at
 * `alpha`, default 0.001, 0 turns it off) is in domain_rollup.c.
 *
 * Every error names file:line:column; an expression's error points inside
 * the expression.
 */


#ifndef FL_RULES_H
#define FL_RULES_H

#include <stdint.h>

#include "rules/lang/expr.h"
#include "model/snapshot.h"

/*
 * `baseline: {service: api, window: 15m, min_change: 0.2, alpha: 0.01}`:
 * the rule's expression is a per-host value (no comparison); after each
 * deploy marker of service (fl:deploys; none given = every service, each
 * judged on its own) the deployed hosts' values in the window after the
 * deploy are compared with the same hosts in the window before it and,
 * when there are undeployed hosts, with those peers over the same two
 * windows (peers another deploy touched within the windows are left out).  It fires when the
 * increase is at least min_change (0.2 = +20 %) against both and a one-
 * sided Mann–Whitney U test puts it below alpha against both, so a
 * fleet-wide load shift, which moves the peers too, does not fire.
 *
 * With `profile_share: 5` (and no expr) the CPU profiles are compared
 * instead: it fires when a function's share of the deployed hosts' CPU
 * grew by at least 5 points more than on the undeployed peers, and a
 * two-proportion z-test on the sample counts puts the growth below alpha;
 * the alert names the function (label `function`).
 */
struct rule_baseline {
	char service[128];
	uint64_t window_ns;
	double min_change;
	double alpha;
	double profile_share;		/* points; 0 = compare the expression */
};

/*
 * A value baseline compares the minutes of its windows (the 1-minute tier):
 * fewer than this many on a side give no verdict (Mann-Whitney needs ~8),
 * so its window is at least one minute more (a deploy between minutes
 * leaves a partial one on each side).
 */
#define BASELINE_MIN_POINTS 8
#define BASELINE_MIN_WINDOW_NS ((BASELINE_MIN_POINTS + 1) * 60ULL * 1000000000ULL)

#define RULE_MAX_ROLLUP 4		/* domain levels of one rollup */

struct rule {
	char name[128];			/* the alert's, or the recorded metric's */
	int record;			/* a recording rule: name is what it records */
	char *expr_text;
	struct node *expr;
	uint64_t for_ns, keep_firing_for_ns;
	char severity[32];
	struct label *labels;
	int nlabels;
	struct label *annotations;
	int nannotations;
	char runbook[256];
	char evidence[128];		/* comma separated */
	char rollup_by[RULE_MAX_ROLLUP][64];	/* outermost first; none = no rollup */
	int nrollup;
	uint64_t rollup_min_hosts;
	double rollup_min_fraction;
	double rollup_alpha;		/* concentration test; 0: off */
	struct rule_baseline baseline;	/* window_ns 0 = not a baseline rule */
};

struct rule_group {
	char name[128];
	char file[256];			/* the file it came from, as given */
	uint64_t interval_ns;
	struct rule *rules;
	int nrules;
};

struct ruleset {
	struct rule_group *groups;
	int ngroups;
	char **records;			/* every recording rule's name, for the parser */
	int nrecords;
};

/*
 * Parse rule-file text (name for messages) and append its groups to rs.
 * Returns 0 or -EINVAL with "file:line:col: reason" in err.
 */
int rules_parse(struct ruleset *rs, const char *name, const char *text, size_t len,
		char *err, size_t errlen);
int rules_load(struct ruleset *rs, const char *path, char *err, size_t errlen);
void rules_free(struct ruleset *rs);

/*
 * Make every relative runbook (runbooks/slow-writes.md) base/runbook, so a
 * page names where it is: base is a URL (https://wiki/ops) or the installed
 * share directory (file:///usr/share/faultline).  Runbooks with a scheme or
 * an absolute path are left as written; NULL or "" base changes nothing.
 * Returns 0, or -EINVAL (the rule whose runbook would be too long in err).
 */
int rules_runbook_base(struct ruleset *rs, const char *base, char *err, size_t errlen);

/*
 * Annotation templates (template.c says which part of Go's text/template):
 * check one at load — 0, or -EINVAL with the reason in why and the byte
 * offset in *off — and expand one into out.
 */
int rules_template_check(const char *tmpl, char *why, size_t wl, size_t *off);

/* What a template sees beside the alert: $externalURL, $externalLabels.NAME. */
struct rules_template_ctx {
	const char *external_url;
	const struct label *external_labels;
	int nexternal;
};

void rules_template(const char *tmpl, double value, const struct label *labels, int nlabels,
		    const struct rules_template_ctx *ctx, char *out, size_t len);

/* A topology: host name globs -> domain labels (etc/topology.yaml). */
struct topology_entry {
	char *glob;
	struct label *labels;
	int nlabels;
};

struct topology {
	struct topology_entry *e;
	int n;
};

/*
 * Parse a topology file:
 *   hosts:
 *     "db-*": {rack: r12, switch: sw3, row: a, site: fra1}
 * Entries apply in order (a later match overrides an earlier one) and
 * override labels the probe reports.  Returns 0 or -EINVAL (positioned).
 */
int topology_load(struct topology *t, const char *path, char *err, size_t errlen);
int topology_parse(struct topology *t, const char *name, const char *text, size_t len,
		   char *err, size_t errlen);
void topology_free(struct topology *t);
/* Apply t's labels for s->host onto s. Returns 0 or -ENOMEM. */
int topology_apply(const struct topology *t, struct snapshot *s);

#endif
