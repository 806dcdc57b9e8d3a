/*
 * rules.c - rule files; see rules.h.
 */
#include "rules/lang/rules.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include <fnmatch.h>
#include "core/timeutil.h"
#include "model/alert.h"
#include "model/catalog.h"

#define RULE_KEYS "alert, expr, for, keep_firing_for, severity, labels, annotations, runbook, " \
		  "rollup, evidence, baseline"

static int copy(const struct cfg *c, const struct cfg_node *m, const char *key, char *dst,
		size_t len, char *err, size_t errlen)
{
	char *v = NULL;
	int ret = cfg_string(c, m, key, &v, err, errlen);

	if (!ret && v)
		snprintf(dst, len, "%s", v);
	free(v);
	return ret;
}

static int read_map(const struct cfg *c, const struct cfg_node *m, const char *key,
		    struct label **out, int *n, char *err, size_t errlen)
{
	const struct cfg_node *map;
	int ret = cfg_map(c, m, key, &map, err, errlen);

	if (ret || !map)
		return ret;
	*out = calloc(map->nchild + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < map->nchild; i++) {
		((struct cfg_node *)&map->child[i])->used = 1;
		if (map->child[i].type != CFG_SCALAR)
			return cfg_error(c, &map->child[i], err, errlen, "%s.%s: expected a string",
					 key, map->child[i].key);
		(*out)[*n].key = strdup(map->child[i].key);
		(*out)[*n].value = strdup(map->child[i].value);
		(*n)++;
	}
	return 0;
}

/*
 * Every annotation's template is one rules_template renders; a refusal
 * points into the template (quoted scalars start a column later).
 */
static int check_templates(const struct cfg *c, const struct cfg_node *map, char *err,
			   size_t errlen)
{
	for (size_t i = 0; map && i < map->nchild; i++) {
		const struct cfg_node *a = &map->child[i];
		char why[300];
		size_t off;
		int line, col;

		if (!a->value || !rules_template_check(a->value, why, sizeof(why), &off))
			continue;
		cfg_value_pos(c, a, off, &line, &col);
		snprintf(err, errlen, "%s:%d:%d: annotations.%s: %s", c->file, line, col, a->key,
			 why);
		return -EINVAL;
	}
	return 0;
}

static int parse_baseline(struct rule_baseline *b, const struct cfg *c, const struct cfg_node *bl,
			  char *err, size_t errlen)
{
	int ret;

	b->min_change = 0.2;
	b->alpha = 0.01;
	if ((ret = copy(c, bl, "service", b->service, sizeof(b->service), err, errlen)) ||
	    (ret = cfg_duration(c, bl, "window", &b->window_ns, err, errlen)) ||
	    (ret = cfg_number(c, bl, "min_change", 0.001, 1000, &b->min_change, err, errlen)) ||
	    (ret = cfg_number(c, bl, "alpha", 1e-9, 0.5, &b->alpha, err, errlen)) ||
	    (ret = cfg_number(c, bl, "profile_share", 0.01, 100, &b->profile_share, err,
			       errlen)) ||
	    (ret = cfg_check_unknown(c, bl, "service, window, min_change, alpha, profile_share",
				     err, errlen)))
		return ret;
	if (b->window_ns < NSEC_PER_SEC)
		return cfg_error(c, bl, err, errlen, "baseline: needs window: (e.g. 15m), at least 1s");
	if (!b->profile_share && b->window_ns < BASELINE_MIN_WINDOW_NS)
		return cfg_error(c, bl, err, errlen, "baseline: window: a value baseline compares "
				 "the whole minutes on each side of a deploy (the 1-minute tier), at "
				 "least %d: %dm or more", BASELINE_MIN_POINTS, BASELINE_MIN_POINTS + 1);
	return 0;
}

/*
 * An error at line eline, column ecol of expression ex, positioned in the
 * file where that character was written (through quotes, a block scalar's
 * indentation, folded lines: cfg_value_pos).  Returns -EINVAL.
 */
static int expr_error(const struct cfg *c, const struct cfg_node *ex, int eline, int ecol,
		      const char *msg, char *err, size_t errlen)
{
	size_t off = 0;
	int line, col;

	for (int l = 1; l < eline && ex->value[off]; off++)
		if (ex->value[off] == '\n')
			l++;
	for (int k = 1; k < ecol && ex->value[off] && ex->value[off] != '\n'; k++)
		off++;
	cfg_value_pos(c, ex, off, &line, &col);

	snprintf(err, errlen, "%s:%d:%d: expr: %s", c->file, line, col, msg);
	return -EINVAL;
}

/* Parse ex (an expr: node) into r, errors positioned in the file. */
static int parse_expr_of(struct rule *r, const struct ruleset *rs, const struct cfg *c,
			 const struct cfg_node *ex, char *err, size_t errlen)
{
	char eerr[256];

	r->expr_text = strdup(ex->value);
	if (expr_parse_names(ex->value, rs->records, rs->nrecords, &r->expr, eerr, sizeof(eerr)))
		return expr_error(c, ex, atoi(eerr), atoi(strchr(eerr, ':') + 1),
				  strchr(strchr(eerr, ':') + 1, ':') + 2, err, errlen);
	return 0;
}

/* A metric name as Prometheus allows one: [a-zA-Z_:][a-zA-Z0-9_:]* */
static int valid_metric_name(const char *s)
{
	if (!*s || !(isalpha((unsigned char)*s) || *s == '_' || *s == ':'))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != ':')
			return 0;
	return 1;
}

/*
 * A recording rule: record (the new metric), expr, labels.  Its output is
 * kept per host (see engine.h), so it is a metric the later rules can
 * select like any other.
 */
static int parse_record(struct rule *r, const struct ruleset *rs, const struct cfg *c,
			const struct cfg_node *n, char *err, size_t errlen)
{
	const struct cfg_node *rec = cfg_get(n, "record"), *ex = cfg_get(n, "expr");
	int part, ret;

	r->record = 1;
	if (rec->type != CFG_SCALAR || !rec->value || !valid_metric_name(rec->value) ||
	    strlen(rec->value) >= sizeof(r->name))
		return cfg_error(c, rec, err, errlen, "record: expected a metric name such as "
				 "host:csum_errors:rate1m");
	if (catalog_find(rec->value) || catalog_find_hist_part(rec->value, &part))
		return cfg_error(c, rec, err, errlen, "record: %s is a metric faultline already "
				 "has; record under a name of its own (level:metric:operations)",
				 rec->value);
	snprintf(r->name, sizeof(r->name), "%s", rec->value);
	if ((ret = read_map(c, n, "labels", &r->labels, &r->nlabels, err, errlen)) ||
	    (ret = cfg_check_unknown(c, n, "record, expr, labels", err, errlen)))
		return ret;
	if (!ex || ex->type != CFG_SCALAR)
		return cfg_error(c, ex ? ex : n, err, errlen, "expr: recording rule %s needs an "
				 "expression", r->name);
	return parse_expr_of(r, rs, c, ex, err, errlen);
}

static int parse_rule(struct rule *r, const struct ruleset *rs, const struct cfg *c,
		      const struct cfg_node *n, char *err, size_t errlen)
{
	const struct cfg_node *ex, *roll, *ev, *bl;
	int ret;

	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "rules: each rule is a map");
	if (cfg_get(n, "record")) {
		if (cfg_get(n, "alert"))
			return cfg_error(c, cfg_get(n, "alert"), err, errlen, "a rule is either "
					 "alert: or record:, not both");
		return parse_record(r, rs, c, n, err, errlen);
	}
	if ((ret = copy(c, n, "alert", r->name, sizeof(r->name), err, errlen)) ||
	    (ret = cfg_duration(c, n, "for", &r->for_ns, err, errlen)) ||
	    (ret = cfg_duration(c, n, "keep_firing_for", &r->keep_firing_for_ns, err, errlen)) ||
	    (ret = copy(c, n, "severity", r->severity, sizeof(r->severity), err, errlen)) ||
	    (ret = copy(c, n, "runbook", r->runbook, sizeof(r->runbook), err, errlen)) ||
	    (ret = read_map(c, n, "labels", &r->labels, &r->nlabels, err, errlen)) ||
	    (ret = read_map(c, n, "annotations", &r->annotations, &r->nannotations, err, errlen)))
		return ret;
	if (!r->name[0])
		return cfg_error(c, n, err, errlen, "alert: every rule needs a name");
	if ((ret = check_templates(c, cfg_get(n, "annotations"), err, errlen)))
		return ret;
	ex = cfg_get(n, "expr");
	bl = cfg_get(n, "baseline");
	if (!ex && bl && bl->type == CFG_MAP && cfg_get(bl, "profile_share"))
		goto no_expr;	/* a profile baseline compares CPU profiles, not a value */
	if (!ex || ex->type != CFG_SCALAR)
		return cfg_error(c, ex ? ex : n, err, errlen, "expr: rule %s needs an expression",
				 r->name);
	if ((ret = parse_expr_of(r, rs, c, ex, err, errlen)))
		return ret;
no_expr:
	if ((ret = cfg_map(c, n, "rollup", &roll, err, errlen)))
		return ret;
	if (roll) {
		const struct cfg_node *by = cfg_get(roll, "by");

		r->rollup_min_hosts = 1;
		r->rollup_alpha = 0.001;
		if (by && by->type == CFG_SCALAR) {
			if (!by->value || !*by->value || strlen(by->value) >= sizeof(r->rollup_by[0]))
				return cfg_error(c, by, err, errlen, "rollup.by: expected a label name "
						 "(at most %zu characters)", sizeof(r->rollup_by[0]) - 1);
			snprintf(r->rollup_by[0], sizeof(r->rollup_by[0]), "%s", by->value);
			r->nrollup = 1;
		} else if (by && by->type == CFG_SEQ) {
			if (by->nchild > RULE_MAX_ROLLUP)
				return cfg_error(c, &by->child[RULE_MAX_ROLLUP], err, errlen,
						 "rollup.by: at most %d domain levels", RULE_MAX_ROLLUP);
			for (size_t i = 0; i < by->nchild; i++) {
				const struct cfg_node *b = &by->child[i];

				if (b->type != CFG_SCALAR || !b->value || !*b->value ||
				    strlen(b->value) >= sizeof(r->rollup_by[0]))
					return cfg_error(c, b, err, errlen, "rollup.by: expected a label "
							 "name (at most %zu characters)",
							 sizeof(r->rollup_by[0]) - 1);
				for (int k = 0; k < r->nrollup; k++)
					if (!strcmp(r->rollup_by[k], b->value))
						return cfg_error(c, b, err, errlen, "rollup.by: %s is "
								 "listed twice", b->value);
				snprintf(r->rollup_by[r->nrollup++], sizeof(r->rollup_by[0]), "%s",
					 b->value);
			}
		} else if (by) {
			return cfg_error(c, by, err, errlen, "rollup.by: expected a label or a list "
					 "of labels, outermost first");
		}
		if ((ret = cfg_uint(c, roll, "min_hosts", 1, 1000000, &r->rollup_min_hosts, err,
				    errlen)))
			return ret;
		if ((ret = cfg_number(c, roll, "min_fraction", 0, 1, &r->rollup_min_fraction, err,
				       errlen)))
			return ret;
		if ((ret = cfg_number(c, roll, "alpha", 0, 0.5, &r->rollup_alpha, err, errlen)))
			return ret;
		if ((ret = cfg_check_unknown(c, roll, "by, min_hosts, min_fraction, alpha", err,
					     errlen)))
			return ret;
		if (!r->nrollup || !r->rollup_by[0][0])
			return cfg_error(c, roll, err, errlen, "rollup: needs by: <label> or "
					 "by: [outer, inner]");
	}
	ev = cfg_get(n, "evidence");
	if (ev) {
		size_t off = 0;

		if (ev->type != CFG_SEQ)
			return cfg_error(c, ev, err, errlen, "evidence: expected a list of "
					 "[" ALERT_EV_NAMES "]");
		for (size_t i = 0; i < ev->nchild; i++) {
			const char *e = ev->child[i].value ? ev->child[i].value : "";

			if (!alert_evidence_bit(e))
				return cfg_error(c, &ev->child[i], err, errlen,
						 "evidence: '%s' is not one of " ALERT_EV_NAMES, e);
			off += (size_t)snprintf(r->evidence + off, sizeof(r->evidence) - off, "%s%s",
						off ? "," : "", e);
		}
	}
	if ((ret = cfg_map(c, n, "baseline", &bl, err, errlen)))
		return ret;
	if (bl && (ret = parse_baseline(&r->baseline, c, bl, err, errlen)))
		return ret;
	if (bl && r->nrollup)
		return cfg_error(c, bl, err, errlen, "baseline: a baseline alert is already one "
				 "alert per deploy; drop rollup");
	if (bl && ex && r->baseline.profile_share)
		return cfg_error(c, ex, err, errlen, "expr: a profile baseline (profile_share) "
				 "compares CPU profiles; drop expr");
	if (bl && r->expr && expr_is_comparison(r->expr))
		return cfg_error(c, ex, err, errlen, "expr: a baseline rule's expression is the "
				 "value to compare (e.g. avg_over_time(faultline_cpu_utilization_ratio[1m])), not a "
				 "condition");
	if (bl && r->expr) {
		const struct node *at = NULL;
		char why[300];

		if (expr_minute_check(r->expr, &at, why, sizeof(why)))
			return expr_error(c, ex, at->line, at->col, why, err, errlen);
	}
	return cfg_check_unknown(c, n, RULE_KEYS, err, errlen);
}

int rules_parse(struct ruleset *rs, const char *name, const char *text, size_t len,
		char *err, size_t errlen)
{
	const struct cfg_node *groups;
	struct cfg c;
	int ret;

	ret = cfg_parse(&c, name, text, len, err, errlen);
	if (ret)
		return ret;
	groups = cfg_get(c.root, "groups");
	if (!groups || groups->type != CFG_SEQ) {
		ret = cfg_error(&c, groups, err, errlen, "groups: expected a list of rule groups");
		goto out;
	}
	/* every recording rule's name first: a rule may select one a later group records */
	for (size_t g = 0; g < groups->nchild; g++) {
		const struct cfg_node *rl = cfg_get(&groups->child[g], "rules");

		for (size_t i = 0; rl && rl->type == CFG_SEQ && i < rl->nchild; i++) {
			const struct cfg_node *rec = cfg_get(&rl->child[i], "record");
			char **nr;

			if (!rec || rec->type != CFG_SCALAR || !rec->value)
				continue;
			for (int k = 0; k < rs->nrecords; k++)
				if (!strcmp(rs->records[k], rec->value)) {
					ret = cfg_error(&c, rec, err, errlen, "record: %s is recorded "
							"by another rule already", rec->value);
					goto out;
				}
			nr = realloc(rs->records, (size_t)(rs->nrecords + 1) * sizeof(*nr));
			if (!nr || !(nr[rs->nrecords] = strdup(rec->value))) {
				if (nr)
					rs->records = nr;
				ret = -ENOMEM;
				goto out;
			}
			rs->records = nr;
			rs->nrecords++;
		}
	}
	for (size_t g = 0; g < groups->nchild; g++) {
		const struct cfg_node *gn = &groups->child[g], *rl;
		struct rule_group *grp, *ng;

		if (gn->type != CFG_MAP) {
			ret = cfg_error(&c, gn, err, errlen, "groups: each group is a map");
			goto out;
		}
		ng = realloc(rs->groups, (size_t)(rs->ngroups + 1) * sizeof(*ng));
		if (!ng) {
			ret = -ENOMEM;
			goto out;
		}
		rs->groups = ng;
		grp = &rs->groups[rs->ngroups++];
		memset(grp, 0, sizeof(*grp));
		grp->interval_ns = NSEC_PER_SEC;
		snprintf(grp->file, sizeof(grp->file), "%s", name);
		if ((ret = copy(&c, gn, "name", grp->name, sizeof(grp->name), err, errlen)) ||
		    (ret = cfg_duration(&c, gn, "interval", &grp->interval_ns, err, errlen)))
			goto out;
		rl = cfg_get(gn, "rules");
		if (!rl || rl->type != CFG_SEQ) {
			ret = cfg_error(&c, rl ? rl : gn, err, errlen, "rules: expected a list of rules");
			goto out;
		}
		grp->rules = calloc(rl->nchild + 1, sizeof(*grp->rules));
		if (!grp->rules) {
			ret = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < rl->nchild; i++) {
			ret = parse_rule(&grp->rules[grp->nrules++], rs, &c, &rl->child[i], err, errlen);
			if (ret)
				goto out;
		}
		if ((ret = cfg_check_unknown(&c, gn, "name, interval, rules", err, errlen)))
			goto out;
	}
	ret = cfg_check_unknown(&c, c.root, "groups", err, errlen);
out:
	cfg_free(&c);
	return ret;
}

int rules_load(struct ruleset *rs, const char *path, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int ret = cfg_read_file(path, &text, &len, err, errlen);

	if (ret)
		return ret;
	ret = rules_parse(rs, path, text, len, err, errlen);
	free(text);
	return ret;
}

static void free_labels(struct label *l, int n)
{
	for (int i = 0; i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

void rules_free(struct ruleset *rs)
{
	for (int g = 0; g < rs->ngroups; g++) {
		for (int i = 0; i < rs->groups[g].nrules; i++) {
			struct rule *r = &rs->groups[g].rules[i];

			free(r->expr_text);
			expr_free(r->expr);
			free_labels(r->labels, r->nlabels);
			free_labels(r->annotations, r->nannotations);
		}
		free(rs->groups[g].rules);
	}
	free(rs->groups);
	for (int i = 0; i < rs->nrecords; i++)
		free(rs->records[i]);
	free(rs->records);
	memset(rs, 0, sizeof(*rs));
}

/* ---- topology ------------------------------------------------------------ */

int topology_parse(struct topology *t, const char *name, const char *text, size_t len,
		   char *err, size_t errlen)
{
	const struct cfg_node *hosts;
	struct cfg c;
	int ret;

	memset(t, 0, sizeof(*t));
	ret = cfg_parse(&c, name, text, len, err, errlen);
	if (ret)
		return ret;
	if ((ret = cfg_map(&c, c.root, "hosts", &hosts, err, errlen)) ||
	    (ret = cfg_check_unknown(&c, c.root, "hosts", err, errlen)))
		goto out;
	t->e = calloc(hosts ? hosts->nchild + 1 : 1, sizeof(*t->e));
	for (size_t i = 0; t->e && hosts && i < hosts->nchild; i++) {
		const struct cfg_node *h = &hosts->child[i];
		struct topology_entry *te = &t->e[t->n++];

		((struct cfg_node *)h)->used = 1;
		te->glob = strdup(h->key);
		if (h->type != CFG_MAP) {
			ret = cfg_error(&c, h, err, errlen, "hosts.%s: expected a map of labels such "
					"as {rack: r1, switch: sw1}", h->key);
			goto out;
		}
		te->labels = calloc(h->nchild + 1, sizeof(*te->labels));
		for (size_t k = 0; te->labels && k < h->nchild; k++) {
			if (h->child[k].type != CFG_SCALAR) {
				ret = cfg_error(&c, &h->child[k], err, errlen, "hosts.%s.%s: expected "
						"a string", h->key, h->child[k].key);
				goto out;
			}
			te->labels[te->nlabels].key = strdup(h->child[k].key);
			te->labels[te->nlabels].value = strdup(h->child[k].value);
			te->nlabels++;
		}
	}
out:
	if (ret)
		topology_free(t);	/* an error leaves nothing half-built (the fuzzer's leak) */
	cfg_free(&c);
	return ret;
}

int topology_load(struct topology *t, const char *path, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int ret = cfg_read_file(path, &text, &len, err, errlen);

	if (ret) {
		memset(t, 0, sizeof(*t));
		return ret;
	}
	ret = topology_parse(t, path, text, len, err, errlen);
	free(text);
	return ret;
}

void topology_free(struct topology *t)
{
	for (int i = 0; i < t->n; i++) {
		free(t->e[i].glob);
		free_labels(t->e[i].labels, t->e[i].nlabels);
	}
	free(t->e);
	memset(t, 0, sizeof(*t));
}

int topology_apply(const struct topology *t, struct snapshot *s)
{
	for (int i = 0; t && i < t->n; i++) {
		if (fnmatch(t->e[i].glob, s->host, 0))
			continue;
		for (int k = 0; k < t->e[i].nlabels; k++)
			if (snapshot_set_label(s, t->e[i].labels[k].key, t->e[i].labels[k].value))
				return -ENOMEM;
	}
	return 0;
}

int rules_runbook_base(struct ruleset *rs, const char *base, char *err, size_t errlen)
{
	size_t bl = base ? strlen(base) : 0;

	while (bl && base[bl - 1] == '/')
		bl--;
	for (int g = 0; bl && g < rs->ngroups; g++)
		for (int i = 0; i < rs->groups[g].nrules; i++) {
			struct rule *r = &rs->groups[g].rules[i];
			char out[sizeof(r->runbook)];

			if (!r->runbook[0] || r->runbook[0] == '/' || strstr(r->runbook, "://"))
				continue;
			if ((size_t)snprintf(out, sizeof(out), "%.*s/%s", (int)bl, base,
					     r->runbook) >= sizeof(out)) {
				snprintf(err, errlen, "rule %s: runbook %s under %.*s is longer than %zu "
					 "characters", r->name, r->runbook, (int)bl, base,
					 sizeof(out) - 1);
				return -EINVAL;
			}
			memcpy(r->runbook, out, sizeof(out));
		}
	return 0;
}
