/*
 * ruletest_expr.c - promql_expr_test entries of rule tests; see
 * ruletest_expr.h.
 */
#include "rules/ruletest/ruletest_expr.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rules/lang/eval.h"
#include "rules/lang/expr.h"
#include "model/labels.h"
#include "core/strbuf.h"

/* ---- promql_expr_test --------------------------------------------------- */

/*
 * Whether PromQL's result of n keeps metric name (its __name__): the one
 * expr_result_name says, or either side's of an `or` (whose elements come
 * from both).
 */
static int keeps_name(const struct node *n, const char *name)
{
	const char *kept;

	if (n->t == N_BIN && n->op == OP_OR)
		return keeps_name(n->l, name) || keeps_name(n->r, name);
	kept = expr_result_name(n);
	return kept && !strcmp(kept, name);
}

/*
 * An expected sample's labels, 'name{k="v",...}' or '{k="v"}' (promtool's
 * form), into name (may be empty) and l[] (malloc'd strings, sorted by key
 * as velem labels are).  Returns the number of labels, or -1 (nothing
 * allocated).
 */
static int parse_sample_labels(const char *s, char *name, size_t namelen, struct label *l,
			       int max)
{
	const char *b = strchr(s, '{'), *p;
	size_t ml = b ? (size_t)(b - s) : strlen(s);
	int n = 0;

	snprintf(name, namelen, "%.*s", (int)ml, s);
	for (p = b ? b + 1 : NULL; p && *p && *p != '}';) {
		const char *eq = strchr(p, '='), *q1, *q2;

		if (n == max || !eq || !(q1 = strchr(eq, '"')) || !(q2 = strchr(q1 + 1, '"'))) {
			for (int i = 0; i < n; i++) {	/* the labels parsed before it */
				free(l[i].key);
				free(l[i].value);
			}
			return -1;
		}
		while (*p == ' ' || *p == ',')
			p++;
		l[n].key = strndup(p, (size_t)(eq - p));
		l[n].value = strndup(q1 + 1, (size_t)(q2 - q1 - 1));
		n++;
		p = q2 + 1;
		while (*p == ' ' || *p == ',')
			p++;
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && strcmp(l[j - 1].key, l[j].key) > 0; j--) {
			struct label t = l[j];

			l[j] = l[j - 1];
			l[j - 1] = t;
		}
	return n;
}

static int same_sample(const struct velem *g, const struct label *l, int n, double v)
{
	if (g->nlabels != n)
		return 0;
	for (int i = 0; i < n; i++)
		if (strcmp(g->labels[i].key, l[i].key) || strcmp(g->labels[i].value, l[i].value))
			return 0;
	return g->v == v || fabs(g->v - v) <= 1e-9 * fmax(fabs(g->v), fabs(v));
}

/*
 * One promql_expr_test entry at its eval_time: evaluate expr on what the
 * engine holds and compare with exp_samples as promtool does (the same
 * samples, labels exactly, values equal).  A bare selector's metric name
 * may be written in an expected sample (PromQL keeps __name__ there);
 * faultline's vectors carry no name.  Returns 1 if it failed.
 */
int ruletest_expr_check(const struct cfg *c, const struct cfg_node *ck, struct engine *e,
			uint64_t now_ms, const char *test, FILE *out)
{
	const struct cfg_node *es = cfg_get(ck, "exp_samples");
	struct node *n = NULL;
	struct value v = { 0 };
	char err[512], *expr = NULL;
	int failed = 0, nexp = es && es->type == CFG_SEQ ? (int)es->nchild : 0;
	int *used = NULL;

	cfg_string(c, ck, "expr", &expr, err, sizeof(err));
	if (!expr || expr_parse_names(expr, engine_rules(e)->records, engine_rules(e)->nrecords, &n,
				      err, sizeof(err)) ||
	    engine_query(e, n, now_ms, &v, err, sizeof(err))) {
		fprintf(out, "%s:%d:%d: test '%s': promql_expr_test %s: %s\n", c->file, ck->line,
			ck->col, test, expr ? expr : "(no expr)", expr ? err : "expr is required");
		failed = 1;
		goto out;
	}
	if (!v.is_vector) {	/* a scalar is one sample without labels */
		v.e = calloc(1, sizeof(*v.e));
		if (v.e) {
			v.e[0].v = v.scalar;
			v.n = 1;
		}
	}
	used = calloc(v.n + 1, sizeof(*used));
	failed = !used || (size_t)nexp != v.n;
	for (int x = 0; !failed && x < nexp; x++) {
		const struct cfg_node *sx = &es->child[x];
		const struct cfg_node *ln = cfg_get(sx, "labels"), *vn = cfg_get(sx, "value");
		struct label l[SNAPSHOT_MAX_LABELS * 2];
		char name[128], *end = NULL;
		double want = vn && vn->value ? strtod(vn->value, &end) : NAN;
		int nl = ln && ln->value ? parse_sample_labels(ln->value, name, sizeof(name), l,
							       SNAPSHOT_MAX_LABELS * 2) : 0;
		int matched = 0;

		if (nl < 0 || !end || *end || (name[0] && !keeps_name(n, name))) {
			if (nl < 0 || !end || *end)
				fprintf(out, "%s:%d:%d: exp_samples: expected labels: 'name{k=\"v\"}' "
					"and a number value\n", c->file, sx->line, sx->col);
			failed = 1;
		}
		for (size_t g = 0; !failed && g < v.n && !matched; g++)
			if (!used[g] && same_sample(&v.e[g], l, nl, want))
				matched = used[g] = 1;
		failed |= !matched;
		for (int i = 0; i < (nl > 0 ? nl : 0); i++) {
			free(l[i].key);
			free(l[i].value);
		}
	}
	if (failed) {
		fprintf(out, "%s:%d:%d: test '%s': %s: expected %d sample(s), got %zu:", c->file,
			ck->line, ck->col, test, expr, nexp, v.n);
		for (size_t g = 0; g < v.n; g++) {
			struct strbuf sb = STRBUF_INIT;

			labels_format(&sb, v.e[g].labels, v.e[g].nlabels);
			fprintf(out, " %s %.17g", strbuf_str(&sb), v.e[g].v);
			strbuf_release(&sb);
		}
		fprintf(out, "\n");
	}
out:
	free(used);
	value_free(&v);
	expr_free(n);
	free(expr);
	return failed;
}

