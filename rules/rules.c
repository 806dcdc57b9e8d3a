/*
 * rules.c - rule files; see rules.h.
 */
#include "rules.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include <fnmatch.h>
#include "timeutil.h"

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
		line = a->line;
		col = a->col + (a->quoted ? 1 : 0);
		for (size_t k = 0; k < off && a->value[k]; k++) {
			if (a->value[k] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
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
	return 0;
}

static int parse_rule(struct rule *r, const struct cfg *c, const struct cfg_node *n, char *err,
		      size_t errlen)
{
	const struct cfg_node *ex, *roll, *ev, *bl;
	char eerr[256];
	int ret;

	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "rules: each rule is a map");
	if (cfg_get(n, "record"))
		return cfg_error(c, cfg_get(n, "record"), err, errlen, "record: recording rules "
				 "are not supported: faultline evaluates alerting rules over its "
				 "own history (write the expression into the alert's expr)");
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
	r->expr_text = strdup(ex->value);
	if (expr_parse(ex->value, &r->expr, eerr, sizeof(eerr))) {
		int eline = atoi(eerr), ecol = atoi(strchr(eerr, ':') + 1);
		const char *msg = strchr(strchr(eerr, ':') + 1, ':') + 2;
		/* positions inside the expression, mapped onto the file (quoted scalars
		 * start one column later) */
		int line = ex->line + eline - 1;
		int col = eline == 1 ? ex->col + ecol - 1 + (ex->quoted ? 1 : 0) : ecol;

		snprintf(err, errlen, "%s:%d:%d: expr: %s", c->file, line, col, msg);
		return -EINVAL;
	}
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
			return cfg_error(c, ev, err, errlen, "evidence: expected a list such as "
					 "[cpu_stacks, drive, csum_peers]");
		for (size_t i = 0; i < ev->nchild; i++) {
			const char *e = ev->child[i].value ? ev->child[i].value : "";

			if (strcmp(e, "cpu_stacks") && strcmp(e, "drive") && strcmp(e, "csum_peers"))
				return cfg_error(c, &ev->child[i], err, errlen,
						 "evidence: '%s' is not one of cpu_stacks, drive, "
						 "csum_peers", e);
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
				 "value to compare (e.g. avg_over_time(cpu.utilization[10s])), not a "
				 "condition");
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
			ret = parse_rule(&grp->rules[grp->nrules++], &c, &rl->child[i], err, errlen);
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
	memset(rs, 0, sizeof(*rs));
}

/* ---- annotation templates ---------------------------------------------- */

/*
 * Templates: the part of Go's text/template that Prometheus' alerting
 * rules use, checked when the rule file is read.  An action is
 *
 *   {{ ARG }}  {{ ARG | FN }}  {{ FN ARG }}  {{ printf "FORMAT" ARG }}
 *   {{ ARG | printf "FORMAT" }}
 *
 * with ARG $value, $labels.NAME or .Value / .Labels.NAME, FN one of
 * humanize, humanize1024, humanizeDuration, humanizePercentage, title,
 * toUpper, toLower, and FORMAT holding one conversion (%f %e %g %d %s %v,
 * flags, width, precision).  Anything else (if, range, with, define,
 * variables, other functions) is refused at `rules check` with its
 * position, never rendered empty.
 */
enum tmpl_arg { ARG_VALUE, ARG_LABEL };
enum tmpl_fn { TF_NONE, TF_HUMANIZE, TF_HUMANIZE1024, TF_DURATION, TF_PERCENT, TF_TITLE,
	       TF_UPPER, TF_LOWER, TF_PRINTF };

struct tmpl_action {
	enum tmpl_arg arg;
	char label[128];
	enum tmpl_fn fn;
	char format[32];		/* printf's, with its conversion */
};

static const struct {
	const char *name;
	enum tmpl_fn fn;
} tmpl_fns[] = {
	{ "humanize", TF_HUMANIZE }, { "humanize1024", TF_HUMANIZE1024 },
	{ "humanizeDuration", TF_DURATION }, { "humanizePercentage", TF_PERCENT },
	{ "title", TF_TITLE }, { "toUpper", TF_UPPER }, { "toLower", TF_LOWER },
	{ "printf", TF_PRINTF },
};

/* Next word of s (after spaces) into w; a quoted string keeps its quotes.  Returns past it. */
static const char *tmpl_word(const char *s, const char *end, char *w, size_t wl)
{
	size_t n = 0;

	while (s < end && *s == ' ')
		s++;
	if (s < end && *s == '"') {
		w[n++] = *s++;
		while (s < end && *s != '"' && n + 2 < wl) {
			if (*s == '\\' && s + 1 < end)
				w[n++] = *s++;
			w[n++] = *s++;
		}
		if (s < end && *s == '"' && n + 1 < wl)
			w[n++] = *s++;
	} else {
		while (s < end && *s != ' ' && *s != '|' && n + 1 < wl)
			w[n++] = *s++;
	}
	w[n] = 0;
	return s;
}

static int tmpl_arg_of(const char *w, struct tmpl_action *a)
{
	if (!strcmp(w, "$value") || !strcmp(w, ".Value")) {
		a->arg = ARG_VALUE;
		return 0;
	}
	if ((!strncmp(w, "$labels.", 8) && w[8]) || (!strncmp(w, ".Labels.", 8) && w[8])) {
		a->arg = ARG_LABEL;
		snprintf(a->label, sizeof(a->label), "%s", w + 8);
		return 0;
	}
	return -1;
}

/* printf's format: one conversion.  0 or -1. */
static int tmpl_format(const char *w, struct tmpl_action *a)
{
	size_t n = strlen(w);
	int conv = 0;

	if (n < 2 || w[0] != '"' || w[n - 1] != '"' || n - 2 >= sizeof(a->format))
		return -1;
	snprintf(a->format, sizeof(a->format), "%.*s", (int)(n - 2), w + 1);
	for (const char *p = a->format; *p; p++) {
		if (*p != '%')
			continue;
		if (p[1] == '%') {
			p++;
			continue;
		}
		p++;
		while (*p && strchr("-+ #0", *p))
			p++;
		while (*p && (isdigit((unsigned char)*p) || *p == '.'))
			p++;
		if (!*p || !strchr("fegdsv", *p) || conv++)
			return -1;
	}
	return conv == 1 ? 0 : -1;
}

/*
 * Parse one action's text [s, end) into a.  0, or -1 with the reason in
 * why and *at the offset (from s) it concerns.
 */
static int tmpl_parse_action(const char *s, const char *end, struct tmpl_action *a,
			     char *why, size_t wl, size_t *at)
{
	char w1[160], w2[160], w3[160];
	const char *p, *q;

	const char *s0 = s;

	memset(a, 0, sizeof(*a));
	while (s < end && *s == ' ')
		s++;
	*at = (size_t)(s - s0);
	p = tmpl_word(s, end, w1, sizeof(w1));
	if (!w1[0]) {
		snprintf(why, wl, "empty action");
		return -1;
	}
	if (!tmpl_arg_of(w1, a)) {
		/* ARG [| FN ["FORMAT"]] */
		while (p < end && *p == ' ')
			p++;
		if (p == end)
			return 0;
		if (*p != '|') {
			*at = (size_t)(p - s0);
			snprintf(why, wl, "expected '|' or '}}' after %s", w1);
			return -1;
		}
		q = tmpl_word(p + 1, end, w2, sizeof(w2));
		for (size_t i = 0; i < sizeof(tmpl_fns) / sizeof(tmpl_fns[0]); i++)
			if (!strcmp(w2, tmpl_fns[i].name))
				a->fn = tmpl_fns[i].fn;
		if (!a->fn) {
			*at = (size_t)(p + 1 + strspn(p + 1, " ") - s0);
			snprintf(why, wl, "template function '%s' is not supported (humanize, "
				 "humanize1024, humanizeDuration, humanizePercentage, printf, title, "
				 "toUpper, toLower)", w2);
			return -1;
		}
		if (a->fn == TF_PRINTF) {
			q = tmpl_word(q, end, w3, sizeof(w3));
			if (tmpl_format(w3, a)) {
				*at = (size_t)(p + 1 + strspn(p + 1, " ") - s0);
				snprintf(why, wl, "printf needs a quoted format with one conversion "
					 "such as \"%%.2f\"");
				return -1;
			}
		}
		while (q < end && *q == ' ')
			q++;
		if (q != end) {
			*at = (size_t)(q - s0);
			snprintf(why, wl, "one function per action: unexpected '%.*s'", (int)(end - q),
				 q);
			return -1;
		}
		return 0;
	}
	/* FN ARG, printf "FORMAT" ARG */
	for (size_t i = 0; i < sizeof(tmpl_fns) / sizeof(tmpl_fns[0]); i++)
		if (!strcmp(w1, tmpl_fns[i].name))
			a->fn = tmpl_fns[i].fn;
	if (!a->fn) {
		snprintf(why, wl, "'%s' is not supported in templates (supported: $value, "
			 "$labels.NAME, .Value, .Labels.NAME, humanize*, printf, title, toUpper, "
			 "toLower)", w1);
		return -1;
	}
	if (a->fn == TF_PRINTF) {
		p = tmpl_word(p, end, w3, sizeof(w3));
		if (tmpl_format(w3, a)) {
			snprintf(why, wl, "printf needs a quoted format with one conversion such as "
				 "\"%%.2f\"");
			return -1;
		}
	}
	q = tmpl_word(p, end, w2, sizeof(w2));
	if (tmpl_arg_of(w2, a)) {
		*at = (size_t)(p - s0);
		snprintf(why, wl, "%s needs $value or $labels.NAME, found '%s'", w1, w2);
		return -1;
	}
	while (q < end && *q == ' ')
		q++;
	if (q != end) {
		*at = (size_t)(q - s0);
		snprintf(why, wl, "unexpected '%.*s'", (int)(end - q), q);
		return -1;
	}
	return 0;
}

int rules_template_check(const char *t, char *why, size_t wl, size_t *off)
{
	const char *p = t;

	while ((p = strstr(p, "{{"))) {
		const char *s = p + 2, *end = strstr(s, "}}");
		struct tmpl_action a;
		size_t at;

		if (*s == '-')
			s++;	/* {{- trims space in Go; accepted */
		if (!end) {
			*off = (size_t)(p - t);
			snprintf(why, wl, "'{{' without its '}}'");
			return -EINVAL;
		}
		if (end > s && end[-1] == '-')
			end--;
		if (tmpl_parse_action(s, end, &a, why, wl, &at)) {
			*off = (size_t)(s - t) + at;
			return -EINVAL;
		}
		p = end + 2;
	}
	return 0;
}

/* v with an SI prefix, as Prometheus' humanize. */
static void humanize(double v, int base1024, char *out, size_t len)
{
	static const char *const big[] = { "", "k", "M", "G", "T", "P", "E", "Z", "Y" };
	static const char *const big2[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi" };
	static const char *const small[] = { "", "m", "u", "n", "p", "f", "a", "z", "y" };
	double step = base1024 ? 1024 : 1000;
	int i = 0;

	if (v == 0 || !isfinite(v)) {
		snprintf(out, len, "%.4g", v);
		return;
	}
	if (fabs(v) >= 1 || base1024) {
		while (fabs(v) >= step && i < 8) {
			v /= step;
			i++;
		}
		snprintf(out, len, "%.4g%s", v, base1024 ? big2[i] : big[i]);
		return;
	}
	while (fabs(v) < 1 && i < 8) {
		v *= 1000;
		i++;
	}
	snprintf(out, len, "%.4g%s", v, small[i]);
}

/* Seconds as Prometheus' humanizeDuration: 1d 2h 3m 4s, or 12.5ms below a second. */
static void humanize_duration(double v, char *out, size_t len)
{
	size_t o = 0;
	long long s;

	if (!isfinite(v) || v == 0 || fabs(v) < 1) {
		humanize(v, 0, out, len);
		if (v != 0 && isfinite(v))
			strncat(out, "s", len - strlen(out) - 1);
		else if (v == 0)
			snprintf(out, len, "0s");
		return;
	}
	if (v < 0) {
		o += (size_t)snprintf(out + o, len - o, "-");
		v = -v;
	}
	s = (long long)v;
	if (s / 86400)
		o += (size_t)snprintf(out + o, len - o, "%lldd ", s / 86400);
	if (s / 3600)
		o += (size_t)snprintf(out + o, len - o, "%lldh ", s / 3600 % 24);
	if (s / 60)
		o += (size_t)snprintf(out + o, len - o, "%lldm ", s / 60 % 60);
	if (o < len)
		snprintf(out + o, len - o, "%llds", s % 60);
}

static void tmpl_render(const struct tmpl_action *a, double value, const struct label *labels,
			int nlabels, char *out, size_t len)
{
	const char *sv = NULL;
	char num[64];

	if (a->arg == ARG_LABEL) {
		sv = "";
		for (int i = 0; i < nlabels; i++)
			if (!strcmp(labels[i].key, a->label))
				sv = labels[i].value;
		value = strtod(sv, NULL);
	}
	switch (a->fn) {
	case TF_NONE:
		if (sv)
			snprintf(out, len, "%s", sv);
		else
			snprintf(out, len, "%.4g", value);
		return;
	case TF_HUMANIZE: humanize(value, 0, out, len); return;
	case TF_HUMANIZE1024: humanize(value, 1, out, len); return;
	case TF_DURATION: humanize_duration(value, out, len); return;
	case TF_PERCENT: snprintf(out, len, "%.4g%%", value * 100); return;
	case TF_TITLE:
	case TF_UPPER:
	case TF_LOWER:
		if (!sv) {
			snprintf(num, sizeof(num), "%.4g", value);
			sv = num;
		}
		snprintf(out, len, "%s", sv);
		for (char *p = out, first = 1; *p; p++) {
			if (a->fn == TF_UPPER || (a->fn == TF_TITLE && first))
				*p = (char)toupper((unsigned char)*p);
			else if (a->fn == TF_LOWER)
				*p = (char)tolower((unsigned char)*p);
			first = a->fn == TF_TITLE && !isalnum((unsigned char)*p);
		}
		return;
	case TF_PRINTF: {
		char conv = 0, fmt[40];

		for (const char *p = a->format; *p; p++)
			if (*p == '%' && p[1] != '%') {
				const char *c = p + 1;

				while (*c && !strchr("fegdsv", *c))
					c++;
				conv = *c;
				break;
			} else if (*p == '%') {
				p++;
			}
		snprintf(fmt, sizeof(fmt), "%s", a->format);
		if (conv == 'd') {
			*strrchr(fmt, 'd') = 0;
			strncat(fmt, "lld", sizeof(fmt) - strlen(fmt) - 1);
			snprintf(out, len, fmt, (long long)value);
		} else if (conv == 's' || conv == 'v') {
			if (!sv) {
				snprintf(num, sizeof(num), "%.4g", value);
				sv = num;
			}
			*strrchr(fmt, conv) = 's';
			snprintf(out, len, fmt, sv);
		} else {
			snprintf(out, len, fmt, value);
		}
		return;
	}
	}
}

void rules_template(const char *t, double value, const struct label *labels, int nlabels,
		    char *out, size_t len)
{
	size_t o = 0;

	while (*t && o + 1 < len) {
		if (!strncmp(t, "{{", 2)) {
			const char *s = t + 2, *end = strstr(s, "}}");
			struct tmpl_action a;
			char why[200], piece[512];
			size_t at;

			if (!end)
				break;
			if (*s == '-')
				s++;
			t = end + 2;
			if (end > s && end[-1] == '-')
				end--;
			if (tmpl_parse_action(s, end, &a, why, sizeof(why), &at))
				continue;	/* refused by rules_template_check at load */
			tmpl_render(&a, value, labels, nlabels, piece, sizeof(piece));
			o += (size_t)snprintf(out + o, len - o, "%s", piece);
			if (o >= len)
				o = len - 1;
			continue;
		}
		out[o++] = *t++;
	}
	out[o] = '\0';
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
