/*
 * route.c - the routing tree; see route.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerter/alerter.h"
#include "alerter/route.h"
#include "core/strbuf.h"

/* What a route passes to its children. */
struct route_defaults {
	int receiver;
	const char (*group_by)[ROUTE_LABEL_MAX];
	int ngroup_by, group_by_all;
	uint64_t group_wait_ns, group_interval_ns, repeat_interval_ns;
};

struct route_ctx {
	struct alerter_config *ac;
	const struct cfg *c;
	int nodes;
	char *err;
	size_t errlen;
};

static int receiver_index(const struct alerter_config *ac, const char *name)
{
	for (int i = 0; i < ac->nreceiver_names; i++)
		if (!strcmp(ac->receiver_names[i].name, name))
			return i;
	return -1;
}

static int by_matcher_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Alertmanager's Matchers.String() of r's matchers: {a="b",c=~"d"},
 * sorted, as its route keys spell them.
 */
static int matchers_text(const struct route *r, struct strbuf *out)
{
	char **t = calloc((size_t)r->nm + 1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (int i = 0; i < r->nm; i++) {
		int len = matcher_format(&r->m[i], NULL, 0);

		t[i] = malloc((size_t)len + 1);
		if (!t[i])
			goto fail;
		matcher_format(&r->m[i], t[i], (size_t)len + 1);
	}
	qsort(t, (size_t)r->nm, sizeof(*t), by_matcher_text);
	strbuf_adds(out, "{");
	for (int i = 0; i < r->nm; i++)
		strbuf_addf(out, "%s%s", i ? "," : "", t[i]);
	strbuf_adds(out, "}");
	for (int i = 0; i < r->nm; i++)
		free(t[i]);
	free(t);
	return 0;
fail:
	for (int i = 0; i < r->nm; i++)
		free(t[i]);
	free(t);
	return -ENOMEM;
}

/* spec (one matcher, or a list when list) onto m[0..*nm). */
static int add_matcher(const struct cfg *c, const struct cfg_node *at, const char *spec,
		       int list, struct matcher *m, int *nm, char *err, size_t errlen)
{
	struct matcher tmp[ROUTE_MAX_MATCHERS];
	char why[400];
	int n;

	n = list ? matchers_parse(tmp, ROUTE_MAX_MATCHERS, spec, why, sizeof(why))
		 : (matcher_parse(&tmp[0], spec, why, sizeof(why)) ? -EINVAL : 1);
	if (n < 0)
		return cfg_error(c, at, err, errlen, "%s", why);
	if (*nm + n > ROUTE_MAX_MATCHERS) {
		while (n--)
			matcher_free(&tmp[n]);
		return cfg_error(c, at, err, errlen, "at most %d matchers", ROUTE_MAX_MATCHERS);
	}
	memcpy(&m[*nm], tmp, (size_t)n * sizeof(tmp[0]));
	*nm += n;
	return 0;
}

int route_matchers_parse(const struct cfg *c, const struct cfg_node *n, const char *prefix,
			 int legacy, struct matcher **m, int *nm, char *err, size_t errlen)
{
	static const char *const kinds[] = { "match", "match_re" };
	const struct cfg_node *ms;
	char key[64];
	int ret;

	*m = calloc(ROUTE_MAX_MATCHERS, sizeof(**m));
	*nm = 0;
	if (!*m)
		return -ENOMEM;
	for (int k = 0; k < 2; k++) {
		const struct cfg_node *map;

		snprintf(key, sizeof(key), "%s%s", prefix, kinds[k]);
		if ((ret = cfg_map(c, n, key, &map, err, errlen)))
			return ret;
		for (size_t i = 0; map && i < map->nchild; i++) {
			const struct cfg_node *e = &map->child[i];
			struct strbuf spec = STRBUF_INIT;
			int re = k == 1 || (legacy && e->value && e->value[0] == '~');

			((struct cfg_node *)e)->used = 1;
			if (e->type != CFG_SCALAR)
				return cfg_error(c, e, err, errlen, "%s.%s: expected a string", key,
						 e->key);
			/* the value is taken as it is: quote it for the matcher syntax */
			strbuf_addf(&spec, "%s%s\"", e->key, re ? "=~" : "=");
			for (const char *v = e->value + (legacy && k == 0 && re); *v; v++) {
				if (*v == '"' || *v == '\\')
					strbuf_adds(&spec, "\\");
				strbuf_add(&spec, v, 1);
			}
			strbuf_adds(&spec, "\"");
			ret = add_matcher(c, e, strbuf_str(&spec), 0, *m, nm, err, errlen);
			strbuf_release(&spec);
			if (ret)
				return ret;
		}
	}
	snprintf(key, sizeof(key), "%smatchers", prefix);
	ms = cfg_get(n, key);
	if (ms && legacy)
		return cfg_error(c, ms, err, errlen, "matchers: only in a `route:` tree (the flat "
				 "`routes:` list takes match)");
	if (ms && ms->type != CFG_SEQ)
		return cfg_error(c, ms, err, errlen, "%s: expected a list of matchers such as "
				 "'severity=\"page\"'", key);
	for (size_t i = 0; ms && i < ms->nchild; i++) {
		if (ms->child[i].type != CFG_SCALAR)
			return cfg_error(c, &ms->child[i], err, errlen, "%s: each item is a string",
					 key);
		if ((ret = add_matcher(c, &ms->child[i], ms->child[i].value, 1, *m, nm, err,
				       errlen)))
			return ret;
	}
	return 0;
}

/*
 * match: {label: value}, match_re: {label: regex} (deprecated in
 * Alertmanager, still read) and matchers: ["a=b", ...] into r.  legacy:
 * the flat list's match, where a value starting with ~ is a regex.
 */
static int parse_matchers(struct route_ctx *x, struct route *r, const struct cfg_node *n,
			  int legacy)
{
	return route_matchers_parse(x->c, n, "", legacy, &r->m, &r->nm, x->err, x->errlen);
}

static int parse_group_by(struct route_ctx *x, struct route *r, const struct cfg_node *gb)
{
	if (gb->type != CFG_SEQ)
		return cfg_error(x->c, gb, x->err, x->errlen, "group_by: expected a list of labels");
	r->group_by = calloc(gb->nchild + 1, sizeof(*r->group_by));
	if (!r->group_by)
		return -ENOMEM;
	for (size_t i = 0; i < gb->nchild; i++) {
		const struct cfg_node *e = &gb->child[i];
		const char *v = e->value ? e->value : "";

		if (e->type != CFG_SCALAR)
			return cfg_error(x->c, e, x->err, x->errlen, "group_by: each item is a label "
					 "name");
		if (!strcmp(v, "...")) {
			if (gb->nchild > 1)
				return cfg_error(x->c, e, x->err, x->errlen, "group_by: '...' (every "
						 "label) cannot be listed with other labels");
			r->group_by_all = 1;
			continue;
		}
		if (!*v || strlen(v) >= ROUTE_LABEL_MAX || strspn(v, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(v) || (v[0] >= '0' &&
		    v[0] <= '9'))
			return cfg_error(x->c, e, x->err, x->errlen, "group_by: '%s' is not a label "
					 "name ([a-zA-Z_][a-zA-Z0-9_]*, under %d bytes)", v,
					 ROUTE_LABEL_MAX);
		for (int k = 0; k < r->ngroup_by; k++)
			if (!strcmp(r->group_by[k], v))
				return cfg_error(x->c, e, x->err, x->errlen, "group_by: '%s' is "
						 "listed twice", v);
		snprintf(r->group_by[r->ngroup_by++], ROUTE_LABEL_MAX, "%s", v);
	}
	return 0;
}

static int copy_group_by(struct route *r, const struct route_defaults *d)
{
	r->group_by_all = d->group_by_all;
	r->group_by = calloc((size_t)d->ngroup_by + 1, sizeof(*r->group_by));
	if (!r->group_by)
		return -ENOMEM;
	memcpy(r->group_by, d->group_by, (size_t)d->ngroup_by * sizeof(*r->group_by));
	r->ngroup_by = d->ngroup_by;
	return 0;
}

/* mute_time_intervals or active_time_intervals: names of the config's time intervals. */
static int parse_intervals(struct route_ctx *x, const struct cfg_node *n, const char *key,
			   int **out, int *nout, int root)
{
	const struct cfg_node *l = cfg_get(n, key);

	if (!l)
		return 0;
	if (root)
		return cfg_error(x->c, l, x->err, x->errlen, "%s: the root route takes none (as "
				 "in Alertmanager: give them to the routes below it)", key);
	if (l->type != CFG_SEQ)
		return cfg_error(x->c, l, x->err, x->errlen, "%s: expected a list of time "
				 "interval names", key);
	*out = calloc(l->nchild + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < l->nchild; i++) {
		const struct cfg_node *e = &l->child[i];
		int k = e->type == CFG_SCALAR && e->value ?
			time_interval_find(x->ac->time_intervals, x->ac->ntime_intervals,
					   e->value) : -1;

		if (k < 0)
			return cfg_error(x->c, e, x->err, x->errlen, "%s: '%s' is not one of the "
					 "time_intervals", key, e->value ? e->value : "");
		(*out)[(*nout)++] = k;
	}
	return 0;
}

const char *route_time_muted(const struct route *r, const struct time_interval *ti, time_t t,
			     int *outside_active)
{
	*outside_active = 0;
	for (int i = 0; i < r->nmute; i++)
		if (time_interval_holds(&ti[r->mute[i]], t))
			return ti[r->mute[i]].name;
	for (int i = 0; i < r->nactive; i++)
		if (time_interval_holds(&ti[r->active[i]], t))
			return NULL;
	if (r->nactive) {
		*outside_active = 1;
		return ti[r->active[0]].name;
	}
	return NULL;
}

static int parse_node(struct route_ctx *x, struct route *r, const struct cfg_node *n,
		      const struct route_defaults *d, const struct route *parent, int index,
		      int depth)
{
	const struct cfg_node *gb, *kids;
	char *recv = NULL;
	struct route_defaults mine;
	struct strbuf text = STRBUF_INIT;
	int ret;

	memset(r, 0, sizeof(*r));
	r->receiver = d->receiver;
	r->line = n->line;
	if (n->type != CFG_MAP)
		return cfg_error(x->c, n, x->err, x->errlen, "a route is a map");
	if (++x->nodes > ROUTE_MAX_NODES)
		return cfg_error(x->c, n, x->err, x->errlen, "more than %d routes", ROUTE_MAX_NODES);
	if (depth > ROUTE_MAX_DEPTH)
		return cfg_error(x->c, n, x->err, x->errlen, "routes nested deeper than %d",
				 ROUTE_MAX_DEPTH);
	if ((ret = parse_intervals(x, n, "mute_time_intervals", &r->mute, &r->nmute, !parent)) ||
	    (ret = parse_intervals(x, n, "active_time_intervals", &r->active, &r->nactive,
				   !parent)))
		return ret;
	if ((ret = parse_matchers(x, r, n, 0)))
		return ret;
	if (!parent && r->nm)
		return cfg_error(x->c, n, x->err, x->errlen, "the root route matches every alert: "
				 "it takes no match, match_re or matchers");
	if ((ret = cfg_string(x->c, n, "receiver", &recv, x->err, x->errlen)))
		return ret;
	if (recv) {
		r->receiver = receiver_index(x->ac, recv);
		if (r->receiver < 0)
			ret = cfg_error(x->c, cfg_get(n, "receiver"), x->err, x->errlen,
					"receiver: '%s' is not one of the receivers", recv);
		free(recv);
		if (ret)
			return ret;
	} else if (!parent) {
		return cfg_error(x->c, n, x->err, x->errlen, "the root route needs a receiver "
				 "(where an alert no other route takes goes)");
	}
	if ((ret = cfg_bool(x->c, n, "continue", &r->cont, x->err, x->errlen)))
		return ret;
	if (!parent && r->cont)
		return cfg_error(x->c, cfg_get(n, "continue"), x->err, x->errlen,
				 "continue: the root route has no siblings to continue to");
	r->group_wait_ns = d->group_wait_ns;
	r->group_interval_ns = d->group_interval_ns;
	r->repeat_interval_ns = d->repeat_interval_ns;
	if ((ret = cfg_duration(x->c, n, "group_wait", &r->group_wait_ns, x->err, x->errlen)) ||
	    (ret = cfg_duration(x->c, n, "group_interval", &r->group_interval_ns, x->err,
				x->errlen)) ||
	    (ret = cfg_duration(x->c, n, "repeat_interval", &r->repeat_interval_ns, x->err,
				x->errlen)))
		return ret;
	if (r->group_interval_ns == 0 && cfg_get(n, "group_interval"))
		return cfg_error(x->c, cfg_get(n, "group_interval"), x->err, x->errlen,
				 "group_interval cannot be zero");
	if (r->repeat_interval_ns == 0 && cfg_get(n, "repeat_interval"))
		return cfg_error(x->c, cfg_get(n, "repeat_interval"), x->err, x->errlen,
				 "repeat_interval cannot be zero");
	gb = cfg_get(n, "group_by");
	if ((ret = gb ? parse_group_by(x, r, gb) : copy_group_by(r, d)))
		return ret;
	/* the key and id, as Alertmanager spells them */
	if ((ret = matchers_text(r, &text)))
		return ret;
	r->key = parent ? NULL : strdup(strbuf_str(&text));
	if (parent) {
		struct strbuf k = STRBUF_INIT;

		strbuf_addf(&k, "%s/%s", parent->key, strbuf_str(&text));
		r->key = strdup(strbuf_str(&k));
		strbuf_reset(&k);
		strbuf_addf(&k, "%s/%s/%d", parent->id, strbuf_str(&text), index);
		r->id = strdup(strbuf_str(&k));
		strbuf_release(&k);
	} else {
		r->id = strdup(strbuf_str(&text));
	}
	strbuf_release(&text);
	if (!r->key || !r->id)
		return -ENOMEM;
	kids = cfg_get(n, "routes");
	if ((ret = cfg_check_unknown(x->c, n, "receiver, group_by, continue, matchers, match, "
				     "match_re, group_wait, group_interval, repeat_interval, "
				     "routes, mute_time_intervals, active_time_intervals", x->err, x->errlen)))
		return ret;
	if (!kids)
		return 0;
	if (kids->type != CFG_SEQ)
		return cfg_error(x->c, kids, x->err, x->errlen, "routes: expected a list of routes");
	r->child = calloc(kids->nchild + 1, sizeof(*r->child));
	if (!r->child)
		return -ENOMEM;
	mine = (struct route_defaults){ r->receiver, (const char (*)[ROUTE_LABEL_MAX])r->group_by,
					r->ngroup_by, r->group_by_all, r->group_wait_ns,
					r->group_interval_ns, r->repeat_interval_ns };
	for (size_t i = 0; i < kids->nchild; i++) {
		r->nchild++;	/* counted now, so route_free frees a half-parsed child */
		if ((ret = parse_node(x, &r->child[i], &kids->child[i], &mine, r, (int)i,
				      depth + 1)))
			return ret;
	}
	return 0;
}

int route_tree_parse(struct alerter_config *ac, const struct cfg *c, const struct cfg_node *n,
		     char *err, size_t errlen)
{
	struct route_ctx x = { ac, c, 0, err, errlen };
	struct route_defaults d = { -1, NULL, 0, 0, ac->group_wait_ns, ac->group_interval_ns,
				    ac->repeat_interval_ns };

	route_free(&ac->root);
	ac->has_root = 1;
	return parse_node(&x, &ac->root, n, &d, NULL, 0, 0);
}

int route_list_parse(struct alerter_config *ac, const struct cfg *c, const struct cfg_node *n,
		     char *err, size_t errlen)
{
	struct route_ctx x = { ac, c, 0, err, errlen };
	struct route *root = &ac->root;
	int ret;

	route_free(root);
	ac->has_root = 1;
	root->receiver = -1;
	if (!(root->key = strdup("")) || !(root->id = strdup("")))
		return -ENOMEM;
	if (n->type != CFG_SEQ)
		return cfg_error(c, n, err, errlen, "routes: expected a list");
	root->child = calloc(n->nchild + 1, sizeof(*root->child));
	if (!root->child)
		return -ENOMEM;
	for (size_t i = 0; i < n->nchild; i++) {
		const struct cfg_node *e = &n->child[i], *gb;
		struct route *r = &root->child[root->nchild++];
		char *recv = NULL;

		r->receiver = -1;
		r->legacy = 1;
		r->group_wait_ns = ac->group_wait_ns;
		r->group_interval_ns = ac->group_interval_ns;
		r->repeat_interval_ns = ac->repeat_interval_ns;
		if (e->type != CFG_MAP)
			return cfg_error(c, e, err, errlen, "routes: each route is a map");
		if (++x.nodes > ROUTE_MAX_NODES)
			return cfg_error(c, e, err, errlen, "more than %d routes", ROUTE_MAX_NODES);
		if ((ret = parse_matchers(&x, r, e, 1)))
			return ret;
		if ((ret = cfg_string(c, e, "receiver", &recv, err, errlen)))
			return ret;
		r->receiver = recv ? receiver_index(ac, recv) : -1;
		if (r->receiver < 0) {
			ret = cfg_error(c, recv ? cfg_get(e, "receiver") : e, err, errlen,
					"receiver: '%s' is not one of the receivers", recv ? recv : "");
			free(recv);
			return ret;
		}
		free(recv);
		gb = cfg_get(e, "group_by");
		if (gb) {
			if ((ret = parse_group_by(&x, r, gb)))
				return ret;
			if (r->group_by_all)
				return cfg_error(c, gb, err, errlen, "group_by: '...' only in a "
						 "`route:` tree");
		} else {
			static const char alertname[1][ROUTE_LABEL_MAX] = { "alertname" };
			struct route_defaults d = { 0, alertname, 1, 0, 0, 0, 0 };

			if ((ret = copy_group_by(r, &d)))
				return ret;
		}
		if (!(r->key = strdup("")) || !(r->id = strdup("")))
			return -ENOMEM;
		if ((ret = cfg_check_unknown(c, e, "match, receiver, group_by", err, errlen)))
			return ret;
	}
	return 0;
}

int route_default(struct alerter_config *ac)
{
	static const char alertname[1][ROUTE_LABEL_MAX] = { "alertname" };
	struct route_defaults d = { 0, alertname, 1, 0, 0, 0, 0 };
	struct route *root = &ac->root, *r;

	route_free(root);
	ac->has_root = 1;
	root->receiver = -1;
	root->child = r = calloc(1, sizeof(*r));
	if (!r || !(root->key = strdup("")) || !(root->id = strdup("")))
		return -ENOMEM;
	root->nchild = 1;
	r->receiver = 0;
	r->legacy = 1;
	r->group_wait_ns = ac->group_wait_ns;
	r->group_interval_ns = ac->group_interval_ns;
	r->repeat_interval_ns = ac->repeat_interval_ns;
	if (copy_group_by(r, &d) || !(r->key = strdup("")) || !(r->id = strdup("")))
		return -ENOMEM;
	return 0;
}

static int match_node(const struct route *r, const struct alert *a, const struct route **out,
		      int max, int *n)
{
	int before = *n;

	for (int i = 0; i < r->nm; i++)
		if (!matcher_match(&r->m[i], a))
			return 0;
	for (int i = 0; i < r->nchild; i++)
		if (match_node(&r->child[i], a, out, max, n) && !r->child[i].cont)
			break;
	if (*n == before && r->receiver >= 0 && *n < max)
		out[(*n)++] = r;
	return 1;
}

int route_match(const struct route *root, const struct alert *a, const struct route **out,
		int max)
{
	int n = 0;

	match_node(root, a, out, max, &n);
	return n;
}

int route_group_labels(const struct route *r, const struct alert *a, struct label *out, int max)
{
	int n = 0;

	if (r->group_by_all) {
		for (uint32_t i = 0; i < a->nlabels && n < max; i++)
			if (a->labels[i].value && a->labels[i].value[0])
				out[n++] = a->labels[i];
		qsort(out, (size_t)n, sizeof(*out), label_key_cmp);
		return n;
	}
	for (int i = 0; i < r->ngroup_by && n < max; i++) {
		const char *v = alert_label(a, r->group_by[i]);

		/* Alertmanager groups by the labels an alert has; the flat list, by all */
		if (!r->legacy && (!v || !*v))
			continue;
		out[n].key = (char *)r->group_by[i];
		out[n].value = (char *)(v ? v : "");
		n++;
	}
	if (!r->legacy)
		qsort(out, (size_t)n, sizeof(*out), label_key_cmp);
	return n;
}

void route_free(struct route *r)
{
	for (int i = 0; i < r->nchild; i++)
		route_free(&r->child[i]);
	for (int i = 0; r->m && i < r->nm; i++)
		matcher_free(&r->m[i]);
	free(r->m);
	free(r->group_by);
	free(r->mute);
	free(r->active);
	free(r->key);
	free(r->id);
	free(r->child);
	memset(r, 0, sizeof(*r));
}
