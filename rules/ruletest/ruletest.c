/*
 * ruletest.c - rule unit tests; see ruletest.h.
 */
#include "rules/ruletest/ruletest.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"
#include "core/array.h"
#include "core/config.h"
#include "rules/engine/engine.h"
#include "rules/ruletest/ruletest_expr.h"
#include "rules/ruletest/ruletest_input.h"
#include "rules/lang/eval.h"
#include "rules/lang/expr.h"
#include "rules/engine/minute_source.h"
#include "model/histogram.h"
#include "core/timeutil.h"
#include "model/labels.h"
#include "core/strbuf.h"

#define MAX_EVALS 100000	/* per test case, so a typo cannot run for hours */
#define T0 1764500000000ULL	/* tests start at a fixed wall-clock time (test time 0) */

/* The firing alerts of one check (label strings borrowed from the engine). */
struct got {
	struct firing {
		struct label *l, *ann;	/* owned copies */
		int n, nann;
	} *a;
	int n, cap;
};

static struct label *copy_labels(const struct label *l, int n)
{
	struct label *c = calloc((size_t)n + 1, sizeof(*c));

	for (int i = 0; c && i < n; i++) {
		c[i].key = strdup(l[i].key);
		c[i].value = strdup(l[i].value);
	}
	return c;
}

static void free_labels_n(struct label *l, int n)
{
	for (int i = 0; l && i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

static void firing_cb(const struct label *labels, int n, const struct label *ann, int nann,
		      void *arg)
{
	struct got *g = arg;

	if (ARRAY_GROW(g->a, g->cap, g->n + 1, 16))
		return;
	g->a[g->n++] = (struct firing){ copy_labels(labels, n), copy_labels(ann, nann), n, nann };
}

static void got_free(struct got *g)
{
	for (int i = 0; i < g->n; i++) {
		free_labels_n(g->a[i].l, g->a[i].n);
		free_labels_n(g->a[i].ann, g->a[i].nann);
	}
	free(g->a);
}

static const char *lv(const struct label *l, int n, const char *k)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(l[i].key, k))
			return l[i].value;
	return NULL;
}

static void sink(const char *json, void *arg)
{
	(void)json;
	(void)arg;
}

/*
 * deploys: [{service: api, version: "2", hosts: "web-[0-3]", at: 20m}] for
 * baseline rules (hosts defaults to every host).  Returns 0 or -1 (printed).
 */
static int set_deploys(const struct cfg *c, struct engine *e, const struct cfg_node *list,
		       FILE *out)
{
	struct deploy d[32];
	char err[512];
	int n = 0;

	if (!list)
		return 0;
	if (list->type != CFG_SEQ || list->nchild > 32) {
		fprintf(out, "%s:%d:%d: deploys: expected a list of at most 32 markers\n", c->file,
			list->line, list->col);
		return -1;
	}
	for (size_t i = 0; i < list->nchild; i++) {
		const struct cfg_node *m = &list->child[i];
		char *service = NULL, *version = NULL, *hosts = NULL;
		uint64_t at = 0;

		memset(&d[n], 0, sizeof(d[n]));
		err[0] = '\0';
		if (cfg_string(c, m, "service", &service, err, sizeof(err)) ||
		    cfg_string(c, m, "version", &version, err, sizeof(err)) ||
		    cfg_string(c, m, "hosts", &hosts, err, sizeof(err)) ||
		    cfg_duration(c, m, "at", &at, err, sizeof(err)) || !service || !version) {
			if (err[0])
				fprintf(out, "%s\n", err);
			else
				fprintf(out, "%s:%d:%d: deploys: each needs service, version and at\n",
					c->file, m->line, m->col);
			free(service);
			free(version);
			free(hosts);
			return -1;
		}
		snprintf(d[n].service, sizeof(d[n].service), "%s", service);
		snprintf(d[n].version, sizeof(d[n].version), "%s", version);
		snprintf(d[n].hosts, sizeof(d[n].hosts), "%s", hosts ? hosts : "*");
		d[n++].ts_ms = T0 + at / NSEC_PER_MSEC;
		free(service);
		free(version);
		free(hosts);
	}
	return engine_set_deploys(e, d, n);
}

/*
 * The engine a test case runs: the rule files, promtool's external_labels
 * and external_url (for $externalLabels / $externalURL; their strings are
 * c's, which outlives the engine; ext has room for 32), 1-minute rollups
 * from minutes.  NULL after printing the error to out.
 */
static struct engine *test_engine(const struct cfg *c, const struct cfg_node *t, int nfiles,
				  char **files, uint64_t interval, struct label *ext,
				  struct minute_source *minutes, FILE *out)
{
	/* a test's whole input stays: promql_expr_test may reach back over all of it */
	struct engine_opts eo = { .stale_ms = interval / NSEC_PER_MSEC * 3 + 1,
				  .keep_all_history = 1,
				  .min_keep_ms = interval / NSEC_PER_MSEC * (MAX_POINTS + 1) };
	const struct cfg_node *xl = cfg_get(t, "external_labels"), *xu = cfg_get(t, "external_url");
	struct ruleset rs = { 0 };
	struct engine *e;
	char err[512];

	for (int f = 0; f < nfiles; f++)
		if (rules_load(&rs, files[f], err, sizeof(err))) {
			fprintf(out, "%s\n", err);
			rules_free(&rs);
			return NULL;
		}
	/* (check_keys made sure of their shape) */
	for (size_t k = 0; xl && k < xl->nchild && k < 32; k++) {
		ext[k].key = xl->child[k].key;
		ext[k].value = xl->child[k].value ? xl->child[k].value : (char *)"";
		eo.nexternal_labels++;
	}
	eo.external_labels = ext;
	if (xu)
		snprintf(eo.generator_url, sizeof(eo.generator_url), "%s", xu->value);
	if (engine_init(&e, &rs, &eo)) {
		fprintf(out, "the rules engine cannot start (out of memory)\n");
		return NULL;
	}
	engine_set_rollup_loader(e, minute_source_load, minutes, 0);
	if (set_deploys(c, e, cfg_get(t, "deploys"), out)) {
		engine_free(e);
		return NULL;
	}
	return e;
}

/*
 * The eval_time of each item of list (alert_rule_test, which needs key
 * "alertname", or promql_expr_test, which needs "expr") into *ts (malloc'd,
 * indexed like list), the latest into *maxt.  Returns 0, or 1 after
 * printing the error to out.
 */
static int eval_times(const struct cfg *c, const struct cfg_node *list, const char *key,
		      uint64_t eval_ns, uint64_t **ts, uint64_t *maxt, FILE *out)
{
	char err[512];

	*ts = calloc(list ? list->nchild + 1 : 1, sizeof(**ts));
	if (!*ts) {
		fprintf(out, "out of memory\n");
		return 1;
	}
	for (size_t k = 0; list && k < list->nchild; k++) {
		const struct cfg_node *item = &list->child[k];
		uint64_t et = 0;

		err[0] = '\0';
		if (cfg_duration(c, item, "eval_time", &et, err, sizeof(err)) || et % eval_ns ||
		    et / eval_ns > MAX_EVALS || !cfg_get(item, key)) {
			if (!err[0])
				snprintf(err, sizeof(err), "%s:%d:%d: %s", c->file, item->line,
					 item->col, !cfg_get(item, key) ?
					 (!strcmp(key, "expr") ? "promql_expr_test needs expr" :
					  "alert_rule_test needs alertname") :
					 et % eval_ns ?
					 "eval_time must be a multiple of evaluation_interval" :
					 "eval_time is more than 100000 evaluations away; "
					 "raise evaluation_interval");
			fprintf(out, "%s\n", err);
			return 1;
		}
		(*ts)[k] = et;
		if (et > *maxt)
			*maxt = et;
	}
	return 0;
}

/*
 * promtool's rule: an expected alert's labels (plus alertname) are one
 * firing alert's labels exactly; its annotations, when given, too.
 */
static int expected_fires(const struct cfg_node *expected, const struct got *got)
{
	const struct cfg_node *el = cfg_get(expected, "exp_labels");
	const struct cfg_node *ea = cfg_get(expected, "exp_annotations");
	/* alertname is implied */
	size_t want = (el ? el->nchild : 0) + (el && cfg_get(el, "alertname") ? 0 : 1);

	for (int g = 0; g < got->n; g++) {
		const struct firing *f = &got->a[g];
		int all = (size_t)f->n == want;

		for (size_t j = 0; el && j < el->nchild && all; j++) {
			const char *v = lv(f->l, f->n, el->child[j].key);

			all = v && el->child[j].value && !strcmp(v, el->child[j].value);
		}
		if (all && ea) {
			all = (size_t)f->nann == ea->nchild;
			for (size_t j = 0; j < ea->nchild && all; j++) {
				const char *v = lv(f->ann, f->nann, ea->child[j].key);

				all = v && ea->child[j].value && !strcmp(v, ea->child[j].value);
			}
		}
		if (all)
			return 1;
	}
	return 0;
}

/*
 * One alert_rule_test item ck at eval_time et: the firing alerts of its
 * alertname must be exactly the expected ones.  Returns 0, or 1 after
 * printing what fired instead to out.
 */
static int check_alerts(const struct cfg *c, const struct cfg_node *ck, struct engine *e,
			const char *name, uint64_t et, FILE *out)
{
	const struct cfg_node *exp = cfg_get(ck, "exp_alerts");
	int nexp = exp && exp->type == CFG_SEQ ? (int)exp->nchild : 0, ok;
	struct got got = { 0 };
	char *alertname = NULL, err[256];

	cfg_string(c, ck, "alertname", &alertname, err, sizeof(err));
	engine_firing(e, alertname ? alertname : "", firing_cb, &got);
	ok = nexp == got.n;
	for (int x = 0; ok && x < nexp; x++)
		ok = expected_fires(&exp->child[x], &got);
	if (!ok) {
		char d[32];

		fprintf(out, "%s:%d:%d: test '%s': at %s, %s: expected %d firing alert(s), got %d:",
			c->file, ck->line, ck->col, name, duration_format(et, d, sizeof(d)),
			alertname ? alertname : "?", nexp, got.n);
		for (int g = 0; g < got.n; g++) {
			struct strbuf sb = STRBUF_INIT;

			strbuf_adds(&sb, " ");
			labels_format(&sb, got.a[g].l, got.a[g].n);
			if (got.a[g].nann) {
				strbuf_adds(&sb, " annotations ");
				labels_format(&sb, got.a[g].ann, got.a[g].nann);
			}
			fputs(strbuf_str(&sb), out);
			strbuf_release(&sb);
		}
		fprintf(out, "\n");
	}
	free(alertname);
	got_free(&got);
	return !ok;
}

static int run_one(const struct cfg *c, const struct cfg_node *t, int nfiles, char **files,
		   uint64_t eval_ns, FILE *out)
{
	const struct cfg_node *inputs = cfg_get(t, "input_series");
	const struct cfg_node *checks = cfg_get(t, "alert_rule_test");
	const struct cfg_node *queries = cfg_get(t, "promql_expr_test");
	struct minute_source minutes;
	size_t nalloc = inputs ? inputs->nchild + 1 : 1;
	struct input *in = calloc(nalloc, sizeof(*in));
	uint64_t interval = 60 * NSEC_PER_SEC, maxt = 0, *ets = NULL, *qts = NULL;
	struct engine *e = NULL;
	struct label ext[32];		/* external_labels: strings in c, which outlives e */
	char err[512], *name = NULL;
	const char *tn;
	int nin = 0, failed = 1;

	minute_source_init(&minutes);
	cfg_string(c, t, "name", &name, err, sizeof(err));
	tn = name ? name : "?";
	if (cfg_duration(c, t, "interval", &interval, err, sizeof(err)) || !in) {
		fprintf(out, "%s\n", err);
		goto done;
	}
	if (read_inputs(c, inputs, in, &nin, out) ||
	    !(e = test_engine(c, t, nfiles, files, interval, ext, &minutes, out)) ||
	    eval_times(c, checks, "alertname", eval_ns, &ets, &maxt, out) ||
	    eval_times(c, queries, "expr", eval_ns, &qts, &maxt, out))
		goto done;
	/* feed input points in time order, evaluating every eval_ns */
	failed = 0;
	for (uint64_t now = 0; now <= maxt; now += eval_ns) {
		uint64_t at = T0 + now / NSEC_PER_MSEC;

		if (interval && now % interval == 0)
			feed_step(e, &minutes, in, nin, now / interval, at, interval / NSEC_PER_MSEC);
		engine_eval(e, at, sink, NULL);
		for (size_t k = 0; queries && k < queries->nchild; k++)
			if (qts[k] == now)
				failed |= ruletest_expr_check(c, &queries->child[k], e, at, tn, out);
		for (size_t k = 0; checks && k < checks->nchild; k++)
			if (ets[k] == now)
				failed |= check_alerts(c, &checks->child[k], e, tn, now, out);
	}
	if (!failed)
		fprintf(out, "  PASS %s\n", tn);
done:
	if (e)
		engine_free(e);
	minute_source_free(&minutes);
	inputs_free(in, nalloc);
	free(ets);
	free(qts);
	free(name);
	return failed;
}

static const char *const not_supported[] = {
	"group_eval_order", "fuzzy_compare",
};

/* map's keys are among known (comma separated); 0, or -1 with the message written to out. */
static int keys_known(const struct cfg *c, const struct cfg_node *map, const char *known,
		      FILE *out)
{
	char err[512], list[256], *save, *k;

	if (!map || map->type != CFG_MAP)
		return 0;
	for (size_t i = 0; i < map->nchild; i++)
		for (size_t j = 0; j < sizeof(not_supported) / sizeof(not_supported[0]); j++)
			if (!strcmp(map->child[i].key, not_supported[j])) {
				cfg_error(c, &map->child[i], err, sizeof(err), "%s: promtool's, not "
					  "supported by faultline rules test (it checks alert_rule_test "
					  "only)", map->child[i].key);
				fprintf(out, "%s\n", err);
				return -1;
			}
	snprintf(list, sizeof(list), "%s", known);
	for (k = strtok_r(list, ", ", &save); k; k = strtok_r(NULL, ", ", &save))
		cfg_get(map, k);
	if (cfg_check_unknown(c, map, known, err, sizeof(err))) {
		fprintf(out, "%s\n", err);
		return -1;
	}
	return 0;
}

/* Every key of a rule test file, at every level, is one faultline knows. */
static int check_keys(const struct cfg *c, FILE *out)
{
	const struct cfg_node *tests = cfg_get(c->root, "tests");

	if (keys_known(c, c->root, "rule_files, evaluation_interval, tests", out))
		return -1;
	for (size_t i = 0; tests && tests->type == CFG_SEQ && i < tests->nchild; i++) {
		const struct cfg_node *t = &tests->child[i];
		const struct cfg_node *in = cfg_get(t, "input_series"), *ar = cfg_get(t,
										  "alert_rule_test");

		const struct cfg_node *pq = cfg_get(t, "promql_expr_test");

		const struct cfg_node *xl = cfg_get(t, "external_labels"), *xu = cfg_get(t,
											  "external_url");

		if (keys_known(c, t, "name, interval, input_series, alert_rule_test, "
			       "promql_expr_test, deploys, external_labels, external_url", out))
			return -1;
		if (xl && (xl->type != CFG_MAP || xl->nchild > 32)) {
			fprintf(out, "%s:%d:%d: external_labels: expected a map of at most 32 label "
				"names to values\n", c->file, xl->line, xl->col);
			return -1;
		}
		if (xu && (xu->type != CFG_SCALAR || !xu->value || strlen(xu->value) >= 200)) {
			fprintf(out, "%s:%d:%d: external_url: expected a URL (at most 199 bytes)\n",
				c->file, xu->line, xu->col);
			return -1;
		}
		for (size_t k = 0; pq && pq->type == CFG_SEQ && k < pq->nchild; k++) {
			const struct cfg_node *es = cfg_get(&pq->child[k], "exp_samples");

			if (keys_known(c, &pq->child[k], "expr, eval_time, exp_samples", out))
				return -1;
			for (size_t x = 0; es && es->type == CFG_SEQ && x < es->nchild; x++)
				if (keys_known(c, &es->child[x], "labels, value", out))
					return -1;
		}
		for (size_t k = 0; in && in->type == CFG_SEQ && k < in->nchild; k++)
			if (keys_known(c, &in->child[k], "series, values, count", out))
				return -1;
		for (size_t k = 0; ar && ar->type == CFG_SEQ && k < ar->nchild; k++) {
			const struct cfg_node *ea = cfg_get(&ar->child[k], "exp_alerts");

			if (keys_known(c, &ar->child[k], "eval_time, alertname, exp_alerts", out))
				return -1;
			for (size_t x = 0; ea && ea->type == CFG_SEQ && x < ea->nchild; x++)
				if (keys_known(c, &ea->child[x], "exp_labels, exp_annotations", out))
					return -1;
		}
	}
	return 0;
}

static int run_file(const char *path, FILE *out)
{
	const struct cfg_node *files, *tests;
	char err[512], *dir, *copy = strdup(path), *fpaths[16];
	uint64_t eval_ns = 10 * NSEC_PER_SEC;
	struct cfg c;
	int nfiles = 0, failed = 0;

	if (!copy || cfg_load_file(&c, path, err, sizeof(err))) {
		fprintf(out, "%s\n", err);
		free(copy);
		return -1;
	}
	dir = dirname(copy);
	if (check_keys(&c, out)) {
		cfg_free(&c);
		free(copy);
		return -1;
	}
	files = cfg_get(c.root, "rule_files");
	tests = cfg_get(c.root, "tests");
	if (cfg_duration(&c, c.root, "evaluation_interval", &eval_ns, err, sizeof(err)) ||
	    !files || files->type != CFG_SEQ || !tests || tests->type != CFG_SEQ || !eval_ns) {
		fprintf(out, "%s\n", err[0] && strchr(err, ':') ? err :
			"a rule test file needs rule_files: [...] and tests: [...]");
		cfg_free(&c);
		free(copy);
		return -1;
	}
	for (size_t i = 0; i < files->nchild; i++) {
		char p[1024];

		if (files->child[i].type != CFG_SCALAR || !files->child[i].value ||
		    !files->child[i].value[0] || i >= 16) {
			cfg_error(&c, &files->child[i], err, sizeof(err), i >= 16 ?
				  "rule_files: at most 16" : "rule_files: each entry is a file name");
			fprintf(out, "%s\n", err);
			for (int k = 0; k < nfiles; k++)
				free(fpaths[k]);
			cfg_free(&c);
			free(copy);
			return -1;
		}

		snprintf(p, sizeof(p), "%s%s%s", files->child[i].value[0] == '/' ? "" : dir,
			 files->child[i].value[0] == '/' ? "" : "/", files->child[i].value);
		fpaths[nfiles++] = strdup(p);
	}
	fprintf(out, "%s:\n", path);
	for (size_t i = 0; i < tests->nchild; i++)
		failed += run_one(&c, &tests->child[i], nfiles, fpaths, eval_ns, out);
	for (int i = 0; i < nfiles; i++)
		free(fpaths[i]);
	cfg_free(&c);
	free(copy);
	return failed;
}

int ruletest_run(const char *path, FILE *out)
{
	int ret;

	/* test time 0 is T0, as promtool's is the epoch: subquery steps count from it */
	eval_set_time_origin(T0);
	ret = run_file(path, out);
	eval_set_time_origin(0);
	return ret;
}
