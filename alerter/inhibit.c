/*
 * inhibit.c - inhibit rules; see inhibit.h.
 *
 * A check walks every firing alert per rule whose target matches: the
 * sources are few (what fires, fleet-wide, after the rules engine rolled
 * hosts up into domains) and a check runs once per alert per flush.
 */
#include "alerter/inhibit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerter/route.h"
#include "core/array.h"

static int parse_equal(const struct cfg *c, const struct cfg_node *e, struct inhibit_rule *r,
		       char *err, size_t errlen)
{
	const struct cfg_node *l = cfg_get(e, "equal");

	if (!l)
		return 0;
	if (l->type != CFG_SEQ)
		return cfg_error(c, l, err, errlen, "equal: expected a list of label names");
	for (size_t i = 0; i < l->nchild; i++) {
		const struct cfg_node *v = &l->child[i];
		const char *s = v->value ? v->value : "";

		if (v->type != CFG_SCALAR || !*s || strlen(s) >= INHIBIT_LABEL_MAX ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
		    strlen(s) || (s[0] >= '0' && s[0] <= '9'))
			return cfg_error(c, v, err, errlen, "equal: '%s' is not a label name "
					 "([a-zA-Z_][a-zA-Z0-9_]*, under %d bytes)", s,
					 INHIBIT_LABEL_MAX);
		if (r->nequal >= INHIBIT_MAX_EQUAL)
			return cfg_error(c, v, err, errlen, "equal: at most %d labels",
					 INHIBIT_MAX_EQUAL);
		snprintf(r->equal[r->nequal++], INHIBIT_LABEL_MAX, "%s", s);
	}
	return 0;
}

int inhibit_rules_parse(const struct cfg *c, const struct cfg_node *n,
			struct inhibit_rule **rules, int *nrules, char *err, size_t errlen)
{
	size_t cap = 0;
	int ret;

	if (n->type == CFG_SCALAR && !n->value)
		return 0;	/* an empty section */
	if (n->type != CFG_SEQ)
		return cfg_error(c, n, err, errlen, "inhibit_rules: expected a list of rules");
	for (size_t i = 0; i < n->nchild; i++) {
		const struct cfg_node *e = &n->child[i];
		struct inhibit_rule *r;

		if (e->type != CFG_MAP)
			return cfg_error(c, e, err, errlen, "inhibit_rules: each rule is a map "
					 "(source_matchers, target_matchers, equal)");
		if (ARRAY_GROW(*rules, cap, *nrules + 1, 4))
			return -ENOMEM;
		r = &(*rules)[(*nrules)++];
		memset(r, 0, sizeof(*r));
		r->line = e->line;
		if ((ret = route_matchers_parse(c, e, "source_", 0, &r->src, &r->nsrc, err,
						errlen)) ||
		    (ret = route_matchers_parse(c, e, "target_", 0, &r->tgt, &r->ntgt, err,
						errlen)) ||
		    (ret = parse_equal(c, e, r, err, errlen)) ||
		    (ret = cfg_check_unknown(c, e, "source_matchers, target_matchers, "
					     "source_match, source_match_re, target_match, "
					     "target_match_re, equal", err, errlen)))
			return ret;
		if (!r->ntgt)
			return cfg_error(c, e, err, errlen, "an inhibit rule needs target_matchers "
					 "(the alerts it mutes); without them it would mute "
					 "nothing");
		if (!r->nsrc)
			return cfg_error(c, e, err, errlen, "an inhibit rule needs source_matchers "
					 "(the alerts that mute); without them any firing alert "
					 "would mute every target");
	}
	return 0;
}

void inhibit_rules_free(struct inhibit_rule *rules, int n)
{
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < rules[i].nsrc; k++)
			matcher_free(&rules[i].src[k]);
		for (int k = 0; k < rules[i].ntgt; k++)
			matcher_free(&rules[i].tgt[k]);
		free(rules[i].src);
		free(rules[i].tgt);
	}
	free(rules);
}

static const char *label_or_empty(const struct alert *a, const char *name)
{
	const char *v = alert_label(a, name);

	return v ? v : "";
}

static int all_match(const struct matcher *m, int n, const struct alert *a)
{
	for (int i = 0; i < n; i++)
		if (!matcher_match(&m[i], a))
			return 0;
	return 1;
}

int inhibit_may_target(const struct inhibit_rule *rules, int n, const struct alert *a)
{
	for (int i = 0; i < n; i++)
		if (all_match(rules[i].tgt, rules[i].ntgt, a))
			return 1;
	return 0;
}

int inhibit_source(const struct inhibit_rule *rules, int n, const struct alert_group_member *src,
		   int nsrc, const struct alert *a, int *rule)
{
	for (int i = 0; i < n; i++) {
		const struct inhibit_rule *r = &rules[i];
		int both;

		if (!all_match(r->tgt, r->ntgt, a))
			continue;
		/* a target that is a source too is not muted by alerts that are both */
		both = all_match(r->src, r->nsrc, a);
		for (int k = 0; k < nsrc; k++) {
			const struct alert *s = &src[k].a;
			int eq = 1;

			if (!s->firing || !strcmp(s->fingerprint, a->fingerprint) ||
			    !all_match(r->src, r->nsrc, s))
				continue;
			for (int q = 0; q < r->nequal && eq; q++)
				eq = !strcmp(label_or_empty(s, r->equal[q]),
					    label_or_empty(a, r->equal[q]));
			if (!eq)
				continue;
			if (both && all_match(r->tgt, r->ntgt, s))
				continue;
			*rule = i;
			return k;
		}
	}
	return -1;
}
