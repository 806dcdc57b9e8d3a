/*
 * engine.c - the rules engine; see engine.h.
 */
#include "engine.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "alert.h"
#include "deploy.h"
#include "eval.h"
#include "fnv.h"
#include "log.h"
#include "profile.h"
#include "stats.h"
#include "store.h"
#include "strbuf.h"
#include "timeutil.h"

/* Undecodable entries of a host within this window raise HostUndecodable. */
#define BAD_WINDOW_MS 60000
#define BAD_BOUND 3
/* Entries dated further ahead than this wait until their time comes. */
#define FUTURE_SLACK_MS 10000

struct host_state {
	char name[200];			/* store_host_valid: shorter than 200 */
	struct snapshot *snaps;		/* oldest first */
	size_t n, cap;
	size_t thinned;			/* snaps[0..thinned) are THIN_MS apart */
	uint64_t first_seen_ms;		/* when fl:hosts first named it */
	uint64_t read_ms;		/* newest entry id read, decodable or not */
	uint64_t bad_ms[8];		/* ids (or read times) of the last undecodable entries */
	uint32_t nbad;			/* undecodable entries ever */
	uint64_t said_ms;		/* last warning about this host */
};

struct instance {
	char fp[17];
	struct label *labels;
	int nlabels;
	double value;
	int firing;
	uint64_t since_ms, last_true_ms;
	char **hosts;			/* domain alerts: affected hosts */
	int nhosts, total_hosts;
	char domain_label[64], domain_value[128];
	char deploy_service[128];	/* baseline alerts: the deploy judged */
	uint64_t deploy_at_ms, deploy_base_ms;
	int seen;
};

/* A baseline rule's verdict on one deploy, computed once per deploy. */
struct verdict {
	char key[300];			/* service@version@ts of the deploy judged */
	int fires;
	double value;			/* after / before, relative to peers if any */
	char **hosts;			/* deployed hosts with data */
	int nhosts, total;
	char function[256];		/* profile baselines: the function that grew */
};

struct rule_inst {
	char name[128];
	uint64_t err_said_ms;		/* last evaluation error logged (once a minute) */
	struct instance *inst;
	int n, cap;
	struct verdict verdict;
};

/* ---- hosts ------------------------------------------------------------- */

static struct host_state *host_of(struct engine *e, const char *name)
{
	uint32_t i;

	if (strmap_get(&e->host_index, name, &i))
		return &e->hosts[i];
	if (e->nhosts == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 64;
		struct host_state *n = realloc(e->hosts, cap * sizeof(*n));

		if (!n)
			return NULL;
		e->hosts = n;
		e->cap = cap;
	}
	memset(&e->hosts[e->nhosts], 0, sizeof(e->hosts[0]));
	snprintf(e->hosts[e->nhosts].name, sizeof(e->hosts[0].name), "%s", name);
	if (strmap_put(&e->host_index, e->hosts[e->nhosts].name, (uint32_t)e->nhosts))
		return NULL;
	return &e->hosts[e->nhosts++];
}

/*
 * History older than the longest range a non-baseline rule reads is only
 * read by baselines, in slots of window/30 (30 s for a 15 min window), so
 * one snapshot per THIN_MS is kept there.  With the shipped rules that is
 * 300 snapshots at full resolution plus 150 thinned instead of 1,800.
 */
#define THIN_MS 10000

/*
 * Remove h->snaps[i] (0 < i < n - 1) from the middle of the history.  The
 * strings it owns that its older neighbour shares go back to that
 * neighbour (ownership moves to the newest holder; snapshot_share_strings),
 * and its newer neighbour is linked to the older one.
 */
static void drop_middle(struct host_state *h, size_t i)
{
	struct snapshot *older = &h->snaps[i - 1], *gone = &h->snaps[i];

	for (uint32_t k = 0; k < gone->nseries; k++) {
		struct series *x = &gone->series[k], *y;

		if (x->borrowed || !x->link || x->link == SERIES_LINK_NONE ||
		    x->link > older->nseries)
			continue;
		y = &older->series[x->link - 1];
		if (y->borrowed && y->name == x->name) {
			y->borrowed = 0;
			x->borrowed = 1;
		}
	}
	snapshot_free(gone);
	memmove(&h->snaps[i], &h->snaps[i + 1], (h->n - i - 1) * sizeof(*h->snaps));
	h->n--;
	snapshot_link(&h->snaps[i], &h->snaps[i - 1]);
}

/* Thin the snapshots that aged past e->dense_ms to one per THIN_MS. */
static void thin(const struct engine *e, struct host_state *h)
{
	uint64_t boundary;
	size_t i;

	if (h->n < 3 || e->dense_ms >= e->keep_ms)
		return;
	boundary = h->snaps[h->n - 1].ts_ms - e->dense_ms;
	for (i = h->thinned ? h->thinned : 1; i + 1 < h->n && h->snaps[i].ts_ms < boundary;) {
		if (h->snaps[i].ts_ms - h->snaps[i - 1].ts_ms < THIN_MS)
			drop_middle(h, i);
		else
			i++;
	}
	h->thinned = i;
}

int engine_take_snapshot(struct engine *e, struct snapshot *s)
{
	struct host_state *h = host_of(e, s->host);
	struct snapshot *added;
	size_t drop = 0;

	if (!h)
		goto nomem;
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct snapshot *n = realloc(h->snaps, cap * sizeof(*n));

		if (!n)
			goto nomem;
		h->snaps = n;
		h->cap = cap;
	}
	added = &h->snaps[h->n];
	*added = *s;
	memset(s, 0, sizeof(*s));
	/* kept for minutes: histograms in their compact form (30x smaller) */
	if (topology_apply(e->opts.topology, added) || snapshot_compact(added)) {
		snapshot_free(added);
		return -ENOMEM;
	}
	/*
	 * Range functions follow each series back through these links, and
	 * the kept snapshots share one copy of each series' strings.
	 */
	if (h->n) {
		snapshot_link(added, &h->snaps[h->n - 1]);
		snapshot_share_strings(added, &h->snaps[h->n - 1]);
	}
	h->n++;
	while (drop < h->n && h->snaps[drop].ts_ms + e->keep_ms < added->ts_ms)
		snapshot_free(&h->snaps[drop++]);
	if (drop) {
		memmove(h->snaps, h->snaps + drop, (h->n - drop) * sizeof(*h->snaps));
		h->n -= drop;
		h->thinned = h->thinned > drop ? h->thinned - drop : 0;
	}
	thin(e, h);
	return 0;
nomem:
	snapshot_free(s);
	return -ENOMEM;
}

size_t engine_history(const struct engine *e, const char *host)
{
	uint32_t i;

	return strmap_get(&e->host_index, host, &i) ? e->hosts[i].n : 0;
}

int engine_add_snapshot(struct engine *e, const struct snapshot *s)
{
	struct snapshot copy;

	if (snapshot_copy(&copy, s))
		return -ENOMEM;
	return engine_take_snapshot(e, &copy);
}

struct load_arg {
	struct engine *e;
	int n;
	uint64_t now;			/* the clock reads are judged by */
	struct host_state **hosts;	/* by the index given to the store */
};

/* Warn about host h at most once a minute. */
static int may_say(struct host_state *h, uint64_t now)
{
	if (h->said_ms && now - h->said_ms < 60000)
		return 0;
	h->said_ms = now;
	return 1;
}

static int load_cb(struct snapshot *s, void *arg)
{
	struct load_arg *la = arg;
	struct host_state *h = host_of(la->e, s->host);

	if (h && s->ts_ms > la->now + FUTURE_SLACK_MS) {
		/* kept in Redis and read when its time comes; never freezes the host */
		if (may_say(h, la->now))
			log_warn("host %s: snapshot dated %.0f s in the future (clock ahead?); "
				 "held back until then", h->name,
				 (double)(s->ts_ms - la->now) / 1000);
		return 0;
	}
	if (h && s->ts_ms > h->read_ms)
		h->read_ms = s->ts_ms;
	if (h && h->n && s->ts_ms <= h->snaps[h->n - 1].ts_ms)
		return 0;	/* not newer than what we hold */
	engine_take_snapshot(la->e, s);
	la->n++;
	return 0;
}

static void bad_cb(size_t idx, uint64_t entry_ms, const char *why, void *arg)
{
	struct load_arg *la = arg;
	struct host_state *h = la->hosts[idx];
	uint64_t at = entry_ms && entry_ms <= la->now + FUTURE_SLACK_MS ? entry_ms : la->now;

	if (entry_ms && entry_ms <= la->now + FUTURE_SLACK_MS && entry_ms > h->read_ms)
		h->read_ms = entry_ms;	/* read once, counted once */
	h->bad_ms[h->nbad++ % 8] = at;
	la->e->undecodable++;
	if (may_say(h, la->now))
		log_warn("host %s: stream entry %" PRIu64 " cannot be read (%s); %u so far — the "
			 "host is not monitored while its entries are unreadable (HostUndecodable)",
			 h->name, entry_ms, why, h->nbad);
}

void engine_undecodable(const struct engine *e,
			void (*cb)(const char *host, uint64_t n, void *arg), void *arg)
{
	for (size_t i = 0; i < e->nhosts; i++)
		if (e->hosts[i].nbad)
			cb(e->hosts[i].name, e->hosts[i].nbad, arg);
}

/* Undecodable entries of h within BAD_WINDOW_MS before now. */
static int recent_bad(const struct host_state *h, uint64_t now)
{
	int n = 0;

	for (uint32_t i = 0; i < 8 && i < h->nbad; i++)
		n += h->bad_ms[i] + BAD_WINDOW_MS >= now;
	return n;
}

int engine_load_redis(struct engine *e, redisContext *rc, uint64_t until_ms, char *err,
		      size_t errlen)
{
	struct load_arg la = { e, 0, until_ms ? until_ms : time_wall_ns() / NSEC_PER_MSEC, NULL };
	const char **names = NULL;
	uint64_t *from = NULL;
	char **all = NULL;
	size_t n = 0, nall = 0;
	int ret;

	ret = store_host_names(rc, &all, &nall, err, errlen);
	if (ret)
		return ret;
	names = calloc(nall + 1, sizeof(*names));
	from = calloc(nall + 1, sizeof(*from));
	la.hosts = calloc(nall + 1, sizeof(*la.hosts));
	if (!names || !from || !la.hosts) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nall; i++) {
		struct host_state *h;

		if (!store_host_valid(all[i])) {
			if (!e->bad_name_said_ms || la.now - e->bad_name_said_ms >= 60000) {
				log_warn("fl:hosts names '%.80s', which is not a host name (letters, "
					 "digits, . _ - :, under 200 bytes); it is not monitored — "
					 "remove it with HDEL fl:hosts", all[i]);
				e->bad_name_said_ms = la.now;
			}
			continue;
		}
		h = host_of(e, all[i]);
		if (!h)
			continue;
		if (!h->first_seen_ms)
			h->first_seen_ms = la.now;
		from[n] = (h->read_ms > (h->n ? h->snaps[h->n - 1].ts_ms : 0) ? h->read_ms
			   : h->n ? h->snaps[h->n - 1].ts_ms : 0);
		from[n] = from[n] ? from[n] + 1 : 0;
		la.hosts[n] = h;
		names[n++] = h->name;
	}
	ret = store_read_ranges(rc, names, from, n, 1, until_ms, load_cb, &la, bad_cb, NULL, err,
				errlen);
out:
	free(names);
	free(from);
	free(la.hosts);
	store_host_names_free(all, nall);
	return ret < 0 ? ret : la.n;
}

/* ---- setup ------------------------------------------------------------- */

static int flat_rules(struct ruleset *rs, struct rule ***out)
{
	int n = 0;

	*out = NULL;
	for (int g = 0; g < rs->ngroups; g++)
		n += rs->groups[g].nrules;
	*out = calloc((size_t)n + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	n = 0;
	for (int g = 0; *out && g < rs->ngroups; g++)
		for (int i = 0; i < rs->groups[g].nrules; i++)
			(*out)[n++] = &rs->groups[g].rules[i];
	return n;
}

static void free_verdict(struct verdict *v)
{
	for (int k = 0; k < v->nhosts; k++)
		free(v->hosts[k]);
	free(v->hosts);
	memset(v, 0, sizeof(*v));
}

static void free_instance(struct instance *in)
{
	for (int k = 0; k < in->nlabels; k++) {
		free(in->labels[k].key);
		free(in->labels[k].value);
	}
	free(in->labels);
	for (int k = 0; k < in->nhosts; k++)
		free(in->hosts[k]);
	free(in->hosts);
}

int engine_init(struct engine *e, struct ruleset *rs, const struct engine_opts *opts)
{
	struct rule **rules;
	uint64_t maxr = 0, dense = 0;
	int n;

	memset(e, 0, sizeof(*e));
	e->rules = *rs;
	memset(rs, 0, sizeof(*rs));
	n = flat_rules(&e->rules, &rules);
	if (n < 0) {
		rules_free(&e->rules);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		uint64_t range = expr_max_range(rules[i]->expr);
		uint64_t need = range + 2 * rules[i]->baseline.window_ns;

		if (need > maxr)
			maxr = need;	/* a baseline looks back over both its windows */
		if (!rules[i]->baseline.window_ns && range > dense)
			dense = range;
	}
	e->keep_ms = maxr / NSEC_PER_MSEC + 5000;
	e->dense_ms = dense / NSEC_PER_MSEC + 5000;
	if (opts)
		e->opts = *opts;
	if (!e->opts.stale_ms)
		e->opts.stale_ms = 5000;
	e->nstate = n;
	e->state = calloc((size_t)n + ENGINE_BUILTINS, sizeof(*e->state));
	if (!e->state) {
		free(rules);
		free(e->state);
		e->state = NULL;
		rules_free(&e->rules);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		snprintf(e->state[i].name, sizeof(e->state[i].name), "%s", rules[i]->name);
	/* HostSilent: built in, rolled up by rack */
	snprintf(e->silent_rule.name, sizeof(e->silent_rule.name), "HostSilent");
	snprintf(e->silent_rule.severity, sizeof(e->silent_rule.severity), "page");
	snprintf(e->silent_rule.rollup_by[0], sizeof(e->silent_rule.rollup_by[0]), "rack");
	e->silent_rule.nrollup = 1;
	e->silent_rule.rollup_min_hosts = 2;
	e->silent_rule.rollup_min_fraction = 0.5;
	snprintf(e->silent_rule.runbook, sizeof(e->silent_rule.runbook), "runbooks/host-silent.md");
	snprintf(e->state[n].name, sizeof(e->state[n].name), "HostSilent");
	/* HostUndecodable: a host whose entries arrive but cannot be read */
	e->undecodable_rule = e->silent_rule;
	snprintf(e->undecodable_rule.name, sizeof(e->undecodable_rule.name), "HostUndecodable");
	snprintf(e->undecodable_rule.runbook, sizeof(e->undecodable_rule.runbook),
		 "runbooks/host-undecodable.md");
	snprintf(e->state[n + 1].name, sizeof(e->state[n + 1].name), "HostUndecodable");
	free(rules);
	return 0;
}

void engine_free(struct engine *e)
{
	for (int i = 0; e->state && i < e->nstate + ENGINE_BUILTINS; i++) {
		for (int k = 0; k < e->state[i].n; k++)
			free_instance(&e->state[i].inst[k]);
		free(e->state[i].inst);
		free_verdict(&e->state[i].verdict);
	}
	free(e->state);
	for (size_t i = 0; i < e->nhosts; i++) {
		for (size_t k = 0; k < e->hosts[i].n; k++)
			snapshot_free(&e->hosts[i].snaps[k]);
		free(e->hosts[i].snaps);
	}
	free(e->hosts);
	strmap_free(&e->host_index);
	free(e->deploys);
	rules_free(&e->rules);
	memset(e, 0, sizeof(*e));
}

int engine_reload(struct engine *e, struct ruleset *rs)
{
	struct engine fresh;
	int ret = engine_init(&fresh, rs, &e->opts);

	if (ret)
		return ret;
	/* keep alert state of rules that survived, by name */
	for (int i = 0; i < fresh.nstate + ENGINE_BUILTINS; i++)
		for (int k = 0; k < e->nstate + ENGINE_BUILTINS; k++)
			if (!strcmp(fresh.state[i].name, e->state[k].name)) {
				struct rule_inst t = fresh.state[i];

				fresh.state[i] = e->state[k];
				e->state[k] = t;
				break;
			}
	/* the options came with engine_init; the deploy markers move over */
	fresh.deploys = e->deploys;
	fresh.ndeploys = e->ndeploys;
	e->deploys = NULL;
	e->ndeploys = 0;
	fresh.hosts = e->hosts;
	fresh.nhosts = e->nhosts;
	fresh.cap = e->cap;
	strmap_free(&fresh.host_index);
	fresh.host_index = e->host_index;
	strmap_init(&e->host_index);
	e->hosts = NULL;
	e->nhosts = e->cap = 0;
	engine_free(e);
	*e = fresh;
	return 0;
}

/* ---- instances --------------------------------------------------------- */

static void fingerprint(const char *name, const struct label *l, int n, char out[17])
{
	uint64_t h = snapshot_labels_hash(fnv64_str(FNV64_OFFSET, name), l, (uint32_t)n);

	snprintf(out, 17, "%016" PRIx64, h);
}

/* The instance of fingerprint fp (index in *by_fp), added if new. */
static struct instance *find_or_add(struct rule_inst *ri, struct strmap *by_fp, const char *fp)
{
	uint32_t i;

	if (strmap_get(by_fp, fp, &i))
		return &ri->inst[i];
	if (ri->n == ri->cap) {
		int cap = ri->cap ? ri->cap * 2 : 16;
		struct instance *n = realloc(ri->inst, (size_t)cap * sizeof(*n));

		if (!n)
			return NULL;
		ri->inst = n;
		ri->cap = cap;
	}
	if (strmap_put(by_fp, fp, (uint32_t)ri->n))
		return NULL;
	memset(&ri->inst[ri->n], 0, sizeof(ri->inst[0]));
	snprintf(ri->inst[ri->n].fp, sizeof(ri->inst[0].fp), "%s", fp);
	return &ri->inst[ri->n++];
}

/*
 * Emit instance in of rule r as an event (lib/alert.h, encoded by
 * alert_encode): labels are alertname, severity, the instance's own and the
 * rule's; annotations are the rule's templates expanded.
 */
static void emit(struct engine *e, const struct rule *r, const struct instance *in, int firing,
		 uint64_t now, engine_event_cb cb, void *arg)
{
	struct label *labels = calloc((size_t)in->nlabels + (size_t)r->nlabels + 2,
				      sizeof(*labels));
	struct label *ann = calloc((size_t)r->nannotations + 1, sizeof(*ann));
	char (*text)[1024] = calloc((size_t)r->nannotations + 1, sizeof(*text));
	char *hostv[1];
	struct strbuf sb = STRBUF_INIT;
	struct alert a = { 0 };

	if (!labels || !ann || !text) {
		log_error("out of memory: the %s event of %s is lost", firing ? "firing" :
			  "resolved", r->name);
		goto out;
	}
	a.firing = firing;
	snprintf(a.fingerprint, sizeof(a.fingerprint), "%s", in->fp);
	labels[a.nlabels].key = "alertname";
	labels[a.nlabels++].value = (char *)r->name;
	if (r->severity[0]) {
		labels[a.nlabels].key = "severity";
		labels[a.nlabels++].value = (char *)r->severity;
	}
	for (int i = 0; i < in->nlabels; i++)
		if (strcmp(in->labels[i].key, "alertname") && strcmp(in->labels[i].key, "severity"))
			labels[a.nlabels++] = in->labels[i];
	for (int i = 0; i < r->nlabels; i++)
		labels[a.nlabels++] = r->labels[i];
	a.labels = labels;
	for (int i = 0; i < r->nannotations; i++) {
		rules_template(r->annotations[i].value, in->value, in->labels, in->nlabels, text[i],
			       sizeof(text[i]));
		ann[i].key = r->annotations[i].key;
		ann[i].value = text[i];
	}
	a.annotations = ann;
	a.nannotations = (uint32_t)r->nannotations;
	a.starts_ms = in->since_ms;
	a.ends_ms = firing ? 0 : now;
	snprintf(a.generator_url, sizeof(a.generator_url), "%s", e->opts.generator_url);
	if (in->nhosts) {
		a.hosts = in->hosts;
		a.nhosts = (uint32_t)in->nhosts;
	} else {
		for (int i = 0; i < in->nlabels; i++)
			if (!strcmp(in->labels[i].key, "host")) {
				hostv[0] = in->labels[i].value;
				a.hosts = hostv;
				a.nhosts = 1;
			}
	}
	a.total_hosts = in->total_hosts ? (uint32_t)in->total_hosts : 1;
	a.value = isfinite(in->value) ? in->value : 0.0;
	a.has_value = 1;
	snprintf(a.runbook, sizeof(a.runbook), "%s", r->runbook);
	snprintf(a.domain_label, sizeof(a.domain_label), "%s", in->domain_label);
	snprintf(a.domain_value, sizeof(a.domain_value), "%s", in->domain_value);
	if (in->deploy_at_ms) {
		snprintf(a.deploy_service, sizeof(a.deploy_service), "%s", in->deploy_service);
		a.deploy_at_ms = in->deploy_at_ms;
		a.deploy_base_ms = in->deploy_base_ms;
	}
	{
		char ev[128], *save, *tok;

		snprintf(ev, sizeof(ev), "%s", r->evidence);
		for (tok = strtok_r(ev, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			a.evidence |= alert_evidence_bit(tok);
	}
	if (alert_encode(&a, &sb) == 0)
		cb(strbuf_str(&sb), arg);
	else
		log_error("out of memory: the %s event of %s is lost", firing ? "firing" :
			  "resolved", r->name);
out:
	strbuf_release(&sb);
	free(labels);
	free(ann);
	free(text);
}

/* One matching element: labels and the hosts it stands for. */
struct match {
	struct label *labels;
	int nlabels;
	double value;
	const char *host;		/* for host-level matches */
	char **hosts;			/* for domain matches */
	int nhosts, total;
	const char *dlabel, *dvalue;
	const struct deploy *deploy;	/* baseline matches */
	uint64_t base_ms;
};

/* Update rule r's instances with this evaluation's matches. */
static void track(struct engine *e, const struct rule *r, struct rule_inst *ri,
		  struct match *m, int nm, uint64_t now, engine_event_cb cb, void *arg)
{
	struct strmap by_fp;	/* this call's index: a linear search is n^2 per rule */

	strmap_init(&by_fp);
	for (int i = 0; i < ri->n; i++) {
		ri->inst[i].seen = 0;
		strmap_put(&by_fp, ri->inst[i].fp, (uint32_t)i);
	}
	for (int i = 0; i < nm; i++) {
		char fp[17];
		struct instance *in;

		fingerprint(r->name, m[i].labels, m[i].nlabels, fp);
		in = find_or_add(ri, &by_fp, fp);
		if (!in)
			continue;
		if (!in->labels) {
			in->labels = calloc((size_t)m[i].nlabels + 1, sizeof(*in->labels));
			for (int k = 0; in->labels && k < m[i].nlabels; k++) {
				in->labels[k].key = strdup(m[i].labels[k].key);
				in->labels[k].value = strdup(m[i].labels[k].value);
			}
			in->nlabels = m[i].nlabels;
			in->since_ms = now;
		}
		for (int k = 0; k < in->nhosts; k++)
			free(in->hosts[k]);
		free(in->hosts);
		in->hosts = NULL;
		in->nhosts = 0;
		if (m[i].nhosts) {
			in->hosts = calloc((size_t)m[i].nhosts, sizeof(char *));
			for (int k = 0; in->hosts && k < m[i].nhosts; k++)
				in->hosts[in->nhosts++] = strdup(m[i].hosts[k]);
			in->total_hosts = m[i].total;
			snprintf(in->domain_label, sizeof(in->domain_label), "%s", m[i].dlabel);
			snprintf(in->domain_value, sizeof(in->domain_value), "%s", m[i].dvalue);
		}
		if (m[i].deploy) {
			snprintf(in->deploy_service, sizeof(in->deploy_service), "%s",
				 m[i].deploy->service);
			in->deploy_at_ms = m[i].deploy->ts_ms;
			in->deploy_base_ms = m[i].base_ms;
		}
		in->value = m[i].value;
		in->last_true_ms = now;
		in->seen = 1;
		if (!in->firing && now - in->since_ms >= r->for_ns / NSEC_PER_MSEC) {
			in->firing = 1;
			emit(e, r, in, 1, now, cb, arg);
		}
	}
	strmap_free(&by_fp);	/* removals below reorder the instances */
	for (int i = 0; i < ri->n;) {
		struct instance *in = &ri->inst[i];

		if (in->seen || (in->firing &&
				 now - in->last_true_ms < r->keep_firing_for_ns / NSEC_PER_MSEC)) {
			i++;
			continue;
		}
		if (in->firing)
			emit(e, r, in, 0, now, cb, arg);
		free_instance(in);
		ri->inst[i] = ri->inst[--ri->n];
	}
}

/*
 * An evaluation of r failed (out of memory, a limit): counted, and logged
 * at most once a minute per rule; its alerts keep their state (neither
 * resolved nor fired on an error).
 */
static void eval_failed(struct engine *e, const struct rule *r, struct rule_inst *ri,
			uint64_t now, const char *err)
{
	e->eval_errors++;
	if (ri->err_said_ms && now - ri->err_said_ms < 60000)
		return;
	ri->err_said_ms = now;
	log_warn("rule %s: evaluation failed: %s; its alerts keep their state", r->name, err);
}

/* ---- checkpoint ------------------------------------------------------- */

/* The rule behind state slot i (the built-in HostSilent for the last). */
static const struct rule *rule_of_state(const struct engine *e, int i)
{
	int k = 0;

	if (i == e->nstate)
		return &e->silent_rule;
	if (i == e->nstate + 1)
		return &e->undecodable_rule;
	for (int g = 0; g < e->rules.ngroups; g++) {
		if (i < k + e->rules.groups[g].nrules)
			return &e->rules.groups[g].rules[i - k];
		k += e->rules.groups[g].nrules;
	}
	return NULL;
}

static json_object *labels_obj(const struct label *l, int n)
{
	json_object *o = json_object_new_object();

	for (int i = 0; o && i < n; i++)
		json_object_object_add(o, l[i].key, json_object_new_string(l[i].value));
	return o;
}

int engine_state_export(const struct engine *e, engine_state_cb cb, void *arg)
{
	int n = 0;

	for (int i = 0; i < e->nstate + ENGINE_BUILTINS; i++) {
		const struct rule *r = rule_of_state(e, i);

		for (int k = 0; r && k < e->state[i].n; k++) {
			const struct instance *in = &e->state[i].inst[k];
			json_object *o, *hosts;

			if (!in->firing)
				continue;
			o = json_object_new_object();
			if (!o)
				return -ENOMEM;
			json_object_object_add(o, "rule", json_object_new_string(r->name));
			json_object_object_add(o, "severity", json_object_new_string(r->severity));
			json_object_object_add(o, "labels", labels_obj(in->labels, in->nlabels));
			json_object_object_add(o, "since_ms", json_object_new_int64((int64_t)in->since_ms));
			json_object_object_add(o, "last_true_ms",
					       json_object_new_int64((int64_t)in->last_true_ms));
			json_object_object_add(o, "value", json_object_new_double(
					       isfinite(in->value) ? in->value : 0.0));
			hosts = json_object_new_array();
			for (int h = 0; h < in->nhosts; h++)
				json_object_array_add(hosts, json_object_new_string(in->hosts[h]));
			json_object_object_add(o, "hosts", hosts);
			json_object_object_add(o, "total_hosts", json_object_new_int(in->total_hosts));
			json_object_object_add(o, "domain_label",
					       json_object_new_string(in->domain_label));
			json_object_object_add(o, "domain_value",
					       json_object_new_string(in->domain_value));
			json_object_object_add(o, "deploy_service",
					       json_object_new_string(in->deploy_service));
			json_object_object_add(o, "deploy_at_ms",
					       json_object_new_int64((int64_t)in->deploy_at_ms));
			json_object_object_add(o, "deploy_base_ms",
					       json_object_new_int64((int64_t)in->deploy_base_ms));
			cb(in->fp, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
								   JSON_C_TO_STRING_NOSLASHESCAPE), arg);
			json_object_put(o);
			n++;
		}
	}
	return n;
}

static const char *obj_str(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
	       ? json_object_get_string(v) : "";
}

static uint64_t obj_u64(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? (uint64_t)json_object_get_int64(v) : 0;
}

int engine_state_import(struct engine *e, const char *fp, const char *json, uint64_t now,
			engine_event_cb cb, void *arg, char *err, size_t errlen)
{
	json_object *o = json_tokener_parse(json), *labels, *hosts, *v;
	struct instance tmp = { 0 }, *in;
	struct rule_inst *ri = NULL;
	const char *name;
	int ret = 0;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "labels", &labels) ||
	    !json_object_is_type(labels, json_type_object) || strlen(fp) != 16) {
		snprintf(err, errlen, "alert state %.16s: not a checkpointed alert", fp);
		json_object_put(o);
		return -EINVAL;
	}
	name = obj_str(o, "rule");
	for (int i = 0; i < e->nstate + ENGINE_BUILTINS; i++)
		if (!strcmp(e->state[i].name, name))
			ri = &e->state[i];
	in = &tmp;
	if (ri) {
		for (int k = 0; k < ri->n; k++)
			if (!strcmp(ri->inst[k].fp, fp))
				goto out;	/* already known (a second import) */
		if (ri->n == ri->cap) {
			int cap = ri->cap ? ri->cap * 2 : 16;
			struct instance *n = realloc(ri->inst, (size_t)cap * sizeof(*n));

			if (!n) {
				ret = -ENOMEM;
				goto out;
			}
			ri->inst = n;
			ri->cap = cap;
		}
		in = &ri->inst[ri->n++];
		memset(in, 0, sizeof(*in));
	}
	snprintf(in->fp, sizeof(in->fp), "%s", fp);
	in->labels = calloc((size_t)json_object_object_length(labels) + 1, sizeof(*in->labels));
	json_object_object_foreach(labels, key, val) {
		if (!in->labels || !json_object_is_type(val, json_type_string))
			continue;
		in->labels[in->nlabels].key = strdup(key);
		in->labels[in->nlabels].value = strdup(json_object_get_string(val));
		in->nlabels++;
	}
	in->firing = 1;
	in->since_ms = obj_u64(o, "since_ms");
	in->last_true_ms = obj_u64(o, "last_true_ms");
	if (json_object_object_get_ex(o, "value", &v))
		in->value = json_object_get_double(v);
	if (json_object_object_get_ex(o, "hosts", &hosts) &&
	    json_object_is_type(hosts, json_type_array) && json_object_array_length(hosts)) {
		in->hosts = calloc(json_object_array_length(hosts), sizeof(char *));
		for (size_t h = 0; in->hosts && h < json_object_array_length(hosts); h++)
			in->hosts[in->nhosts++] =
				strdup(json_object_get_string(json_object_array_get_idx(hosts, h)));
	}
	in->total_hosts = (int)obj_u64(o, "total_hosts");
	snprintf(in->domain_label, sizeof(in->domain_label), "%s", obj_str(o, "domain_label"));
	snprintf(in->domain_value, sizeof(in->domain_value), "%s", obj_str(o, "domain_value"));
	snprintf(in->deploy_service, sizeof(in->deploy_service), "%s",
		 obj_str(o, "deploy_service"));
	in->deploy_at_ms = obj_u64(o, "deploy_at_ms");
	in->deploy_base_ms = obj_u64(o, "deploy_base_ms");
	if (!ri) {
		/* its rule is gone from the rule files: it can only resolve */
		struct rule *stand_in = calloc(1, sizeof(*stand_in));

		if (stand_in) {
			snprintf(stand_in->name, sizeof(stand_in->name), "%s", name);
			snprintf(stand_in->severity, sizeof(stand_in->severity), "%s",
				 obj_str(o, "severity"));
			emit(e, stand_in, in, 0, now, cb, arg);
			free(stand_in);
		}
		free_instance(in);
		ret = 1;
	}
out:
	json_object_put(o);
	return ret;
}

static const char *host_label(const struct host_state *h, const char *key)
{
	const struct snapshot *s;

	if (!h->n)
		return NULL;	/* nothing readable yet: no labels */
	s = &h->snaps[h->n - 1];

	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].value;
	return NULL;
}

/* The index of domain d in map/name[], added as *nd if new.  0 or -ENOMEM. */
static int domain_index(struct strmap *map, const char **name, uint32_t *nd, const char *d,
			uint32_t *idx)
{
	if (strmap_get(map, d, idx))
		return 0;
	*idx = *nd;
	name[(*nd)++] = d;
	return strmap_put(map, d, *idx);
}

/*
 * One domain level: host-level matches of domains that cross the
 * thresholds become domain matches appended to out (*nout grows); the host
 * matches they explain are marked inhibited (host = NULL).
 */
static void rollup_level(struct engine *e, const struct rule *r, const char *label,
			 struct match *m, int nm, const struct host_state **live, size_t nlive,
			 struct match *out, int *nout)
{
	/* domains by name -> index; totals from the live hosts, hits from the matches */
	struct strmap dmap;
	const char **name = calloc(nlive + (size_t)nm + 1, sizeof(char *));
	int *total = calloc(nlive + (size_t)nm + 1, sizeof(int));
	int *hit = calloc(nlive + (size_t)nm + 1, sizeof(int));
	uint32_t *dom = calloc((size_t)nm + 1, sizeof(uint32_t));
	uint32_t nd = 0, *order = calloc(nlive + (size_t)nm + 1, sizeof(uint32_t)), norder = 0;

	strmap_init(&dmap);
	if (!name || !total || !hit || !dom || !order)
		goto out;
	for (size_t h = 0; h < nlive; h++) {
		const char *d = host_label(live[h], label);
		uint32_t idx;

		if (domain_index(&dmap, name, &nd, d ? d : "unplaced", &idx))
			goto out;
		total[idx]++;
	}
	for (int i = 0; i < nm; i++) {
		const char *d = NULL;
		uint32_t hidx, idx;

		if (!m[i].host)
			continue;
		if (strmap_get(&e->host_index, m[i].host, &hidx))
			d = host_label(&e->hosts[hidx], label);
		if (domain_index(&dmap, name, &nd, d ? d : "unplaced", &idx))
			goto out;
		dom[i] = idx;
		if (!hit[idx]++)
			order[norder++] = idx;	/* domains in the order matches name them */
	}
	for (uint32_t k = 0; k < norder; k++) {
		uint32_t idx = order[k];
		struct match *dm;
		double worst = -INFINITY;

		if ((uint64_t)hit[idx] < r->rollup_min_hosts || !total[idx] ||
		    (double)hit[idx] / total[idx] < r->rollup_min_fraction)
			continue;
		dm = &out[(*nout)++];
		memset(dm, 0, sizeof(*dm));
		dm->labels = calloc(1, sizeof(struct label));
		dm->labels[0].key = (char *)label;
		dm->labels[0].value = (char *)name[idx];
		dm->nlabels = 1;
		dm->hosts = calloc((size_t)hit[idx], sizeof(char *));
		dm->total = total[idx];
		dm->dlabel = label;
		dm->dvalue = name[idx];
		for (int i = 0; i < nm; i++) {
			if (!m[i].host || dom[i] != idx)
				continue;
			dm->hosts[dm->nhosts++] = (char *)m[i].host;
			if (m[i].value > worst)
				worst = m[i].value;
			m[i].host = NULL;	/* inhibited by the domain alert */
			e->inhibited++;
		}
		dm->value = worst;
	}
out:
	strmap_free(&dmap);
	free(name);
	free(total);
	free(hit);
	free(dom);
	free(order);
}

/* Every domain level, outermost first, then the host matches left. */
static int rollup(struct engine *e, const struct rule *r, struct match *m, int nm,
		  const struct host_state **live, size_t nlive, struct match *out)
{
	int nout = 0;

	for (int l = 0; l < r->nrollup; l++)
		rollup_level(e, r, r->rollup_by[l], m, nm, live, nlive, out, &nout);
	for (int i = 0; i < nm; i++)
		if (m[i].host)
			out[nout++] = m[i];
	return nout;
}

/* ---- post-deploy baselines -------------------------------------------- */

#define BASELINE_POINTS 30		/* values per window compared */
#define BASELINE_MIN_POINTS 8		/* fewer: no verdict (Mann–Whitney needs ~8) */
#define BASELINE_HOLD_MS (24ULL * 3600 * 1000)	/* a verdict stands this long at most */

int engine_set_deploys(struct engine *e, const struct deploy *d, int n)
{
	struct deploy *copy = n ? malloc((size_t)n * sizeof(*copy)) : NULL;

	if (n && !copy)
		return -ENOMEM;
	if (n)
		memcpy(copy, d, (size_t)n * sizeof(*copy));
	free(e->deploys);
	e->deploys = copy;
	e->ndeploys = n;
	return 0;
}

/* The newest marker of r's service at or before now, or NULL. */
static const struct deploy *latest_deploy(const struct engine *e, const struct rule *r,
					  uint64_t now)
{
	const struct deploy *best = NULL;

	for (int i = 0; i < e->ndeploys; i++) {
		const struct deploy *d = &e->deploys[i];

		if (d->ts_ms <= now && (!r->baseline.service[0] ||
					!strcmp(d->service, r->baseline.service)) &&
		    (!best || d->ts_ms >= best->ts_ms))
			best = d;
	}
	return best;
}

struct side_arg {
	const struct engine *e;
	const struct deploy *d;
	int *seen;
};

/* Deployed hosts are side 0 (and flagged seen), the others side 1. */
static int deploy_side(const char *host, void *arg)
{
	struct side_arg *a = arg;
	uint32_t idx;

	if (!deploy_covers(a->d, host))
		return 1;
	if (a->seen && strmap_get(&a->e->host_index, host, &idx))
		a->seen[idx] = 1;
	return 0;
}

/*
 * The q-quantiles of r's histograms merged over (t - span, t], across the
 * deployed hosts into *dv and across the others into *pv (NAN if none).
 */
static void merged_quantiles_at(const struct engine *e, const struct rule *r,
				const struct deploy *d, const struct host_window *win, size_t nwin,
				uint64_t t, uint64_t span, double q, double *dv, double *pv,
				int *seen)
{
	struct histogram *m = calloc(2, sizeof(*m));
	struct side_arg a = { e, d, seen };

	*dv = *pv = NAN;
	if (!m)
		return;
	if (eval_merge_quantile_hist(r->expr, win, nwin, t, span, deploy_side, &a, m) > 0) {
		if (m[0].count)
			*dv = (double)hist_quantile(&m[0], q);
		if (m[1].count)
			*pv = (double)hist_quantile(&m[1], q);
	}
	free(m);
}

/*
 * r's expression over the live hosts as they were at t (their history cut
 * at t), averaged over the deployed hosts into *dv and over the others
 * into *pv (NAN where none reported); for quantile(q, hist[...]), the
 * q-quantile of each side's histograms merged over the slot (t - step, t].
 * Deployed hosts that reported are flagged in seen[] (indexed like
 * e->hosts).
 */
static void value_at(const struct engine *e, const struct rule *r, const struct deploy *d,
		     const struct host_window *win, size_t nwin, struct host_window *cut,
		     uint64_t t, uint64_t step_ms, double *dv, double *pv, int *seen)
{
	double dsum = 0, psum = 0;
	size_t dn = 0, pn = 0, ncut = 0;
	struct value v = { 0 };
	char err[256];
	double q;

	*dv = *pv = NAN;
	for (size_t h = 0; h < nwin; h++) {
		size_t n = win[h].n;

		while (n && win[h].snaps[n - 1].ts_ms > t)
			n--;
		/* a host that was silent around t says nothing about t */
		if (!n || win[h].snaps[n - 1].ts_ms + e->opts.stale_ms + step_ms <= t)
			continue;
		cut[ncut] = win[h];
		cut[ncut++].n = n;
	}
	/* a percentile's baseline merges the slot's histograms, never averages percentiles */
	if (ncut && eval_is_quantile(r->expr, &q)) {
		merged_quantiles_at(e, r, d, cut, ncut, t, step_ms, q, dv, pv, seen);
		return;
	}
	if (!ncut)
		return;
	if (eval(r->expr, cut, ncut, &v, err, sizeof(err))) {
		/* a slot of a baseline (many per verdict): logged once a minute at most */
		static uint64_t said_ms;

		if (!said_ms || t - said_ms >= 60000 || t < said_ms) {
			log_warn("rule %s: baseline evaluation failed: %s; that slot is left out",
				 r->name, err);
			said_ms = t;
		}
		return;
	}
	if (!v.is_vector) {
		value_free(&v);
		return;
	}
	for (size_t i = 0; i < v.n; i++) {
		const char *host = velem_label(&v.e[i], "host");

		if (!host || isnan(v.e[i].v))
			continue;
		if (deploy_covers(d, host)) {
			uint32_t idx;

			dsum += v.e[i].v;
			dn++;
			if (strmap_get(&e->host_index, host, &idx))
				seen[idx] = 1;
		} else {
			psum += v.e[i].v;
			pn++;
		}
	}
	if (dn)
		*dv = dsum / (double)dn;
	if (pn)
		*pv = psum / (double)pn;
	value_free(&v);
}

/* Copy the non-NaN values of x[0..n) to out; returns how many. */
static size_t finite_values(const double *x, size_t n, double *out)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(x[i]))
			out[m++] = x[i];
	return m;
}

/* The verdict's hosts: those flagged in seen[] (indexed like e->hosts), of nwin live. */
static void verdict_hosts(const struct engine *e, struct verdict *v, const int *seen, size_t nwin)
{
	v->total = (int)nwin;
	v->hosts = calloc(e->nhosts + 1, sizeof(char *));
	for (size_t h = 0; v->hosts && h < e->nhosts; h++)
		if (seen[h])
			v->hosts[v->nhosts++] = strdup(e->hosts[h].name);
}

/*
 * Judge deploy d for baseline rule r: BASELINE_POINTS values of the
 * deployed hosts' mean before the deploy and as many after, the same for
 * the undeployed peers; fills v.  The comparison with peers uses each
 * side's values relative to its own pre-deploy median, so a load shift
 * that moves everybody cancels out.
 */
static void judge(const struct engine *e, const struct rule *r, const struct deploy *d,
		  const struct host_window *win, size_t nwin, struct verdict *v)
{
	const struct rule_baseline *b = &r->baseline;
	uint64_t w = b->window_ns / NSEC_PER_MSEC, step = w / BASELINE_POINTS;
	double dser[2 * BASELINE_POINTS], pser[2 * BASELINE_POINTS];
	double db[BASELINE_POINTS], da[BASELINE_POINTS], pb[BASELINE_POINTS], pa[BASELINE_POINTS];
	struct host_window *cut = calloc(nwin + 1, sizeof(*cut));
	int *seen = calloc(e->nhosts + 1, sizeof(int));
	size_t ndb, nda, npb, npa;
	double self_change, self_p, change, p, mdb, mpb, q, qb[2], qa[2];

	if (!cut || !seen || !step)
		goto out;
	for (int k = 0; k < 2 * BASELINE_POINTS; k++) {
		/* slot k covers (t - step, t]; the before slots end just before the deploy */
		uint64_t t = d->ts_ms - w + (uint64_t)(k + 1) * step - 1;

		value_at(e, r, d, win, nwin, cut, t, step, &dser[k], &pser[k], seen);
	}
	ndb = finite_values(dser, BASELINE_POINTS, db);
	nda = finite_values(dser + BASELINE_POINTS, BASELINE_POINTS, da);
	npb = finite_values(pser, BASELINE_POINTS, pb);
	npa = finite_values(pser + BASELINE_POINTS, BASELINE_POINTS, pa);
	if (ndb < BASELINE_MIN_POINTS || nda < BASELINE_MIN_POINTS) {
		log_info("%s: deploy %s %s: too little data around it to judge (%zu before, "
			 "%zu after of %d)", r->name, d->service, d->version, ndb, nda,
			 BASELINE_POINTS);
		goto out;
	}
	self_p = stats_mann_whitney_greater(da, nda, db, ndb);
	{
		double tmp_a[BASELINE_POINTS], tmp_b[BASELINE_POINTS];

		memcpy(tmp_a, da, nda * sizeof(double));
		memcpy(tmp_b, db, ndb * sizeof(double));
		mdb = stats_median(tmp_b, ndb);
		self_change = stats_median(tmp_a, nda) / fmax(mdb, 1e-12) - 1;
	}
	/*
	 * Percentiles: the size of the change is read off the whole windows'
	 * merged distributions (the slots only test its significance).
	 */
	int merged = eval_is_quantile(r->expr, &q);

	if (merged) {
		merged_quantiles_at(e, r, d, win, nwin, d->ts_ms - 1, w, q, &qb[0], &qb[1], NULL);
		merged_quantiles_at(e, r, d, win, nwin, d->ts_ms + w - 1, w, q, &qa[0], &qa[1],
				    NULL);
		self_change = qa[0] / fmax(qb[0], 1e-12) - 1;
	}
	change = self_change;
	p = self_p;
	v->fires = self_change >= b->min_change && self_p < b->alpha;
	if (npb >= BASELINE_MIN_POINTS && npa >= BASELINE_MIN_POINTS) {
		double tmp[BASELINE_POINTS], pchange;

		memcpy(tmp, pb, npb * sizeof(double));
		mpb = stats_median(tmp, npb);
		for (size_t i = 0; i < nda; i++)
			da[i] /= fmax(mdb, 1e-12);
		for (size_t i = 0; i < npa; i++)
			pa[i] /= fmax(mpb, 1e-12);
		p = stats_mann_whitney_greater(da, nda, pa, npa);
		memcpy(tmp, pa, npa * sizeof(double));
		pchange = stats_median(tmp, npa);
		memcpy(tmp, da, nda * sizeof(double));
		change = stats_median(tmp, nda) / fmax(pchange, 1e-12) - 1;
		if (merged)
			change = (1 + self_change) / fmax(qa[1] / fmax(qb[1], 1e-12), 1e-12) - 1;
		v->fires = v->fires && change >= b->min_change && p < b->alpha;
	}
	v->value = 1 + change;
	log_info("%s: deploy %s %s: %+.1f%% vs before (p=%.2g), %+.1f%% vs %s (p=%.2g): %s",
		 r->name, d->service, d->version, self_change * 100, self_p, change * 100,
		 npa ? "undeployed peers" : "before (no undeployed peers)", p,
		 v->fires ? "regression" : "no regression");
	verdict_hosts(e, v, seen, nwin);
out:
	free(cut);
	free(seen);
}

/* Share of f's samples in p (total share, stacks containing it), or 0. */
static double share_of(const struct profile_delta *d, size_t n, const char *f, int after)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(d[i].name, f))
			return after ? d[i].target : d[i].base;
	return 0;
}

/*
 * Judge deploy d for profile baseline rule r: merge the deployed hosts'
 * profiles of the window before the deploy and of the window after it,
 * and the same for the undeployed peers; the function whose share grew
 * most beyond the peers' growth, if that is at least profile_share points
 * and significant (two-proportion z-test on sample counts), fires.
 */
static void judge_profile(const struct engine *e, const struct rule *r, const struct deploy *d,
			  const struct host_window *win, size_t nwin, struct verdict *v)
{
	const struct rule_baseline *b = &r->baseline;
	uint64_t w = b->window_ns / NSEC_PER_MSEC;
	struct profile db, da, pb, pa;
	struct profile_delta *dd = NULL, *pd = NULL;
	size_t ndd = 0, npd = 0;
	int *seen = calloc(e->nhosts + 1, sizeof(int));
	double best = 0;

	if (!seen)
		return;
	if (!e->opts.load_profile) {
		log_info("%s: no profile source (profile baselines read Redis)", r->name);
		free(seen);
		return;
	}
	profile_init(&db, "");
	profile_init(&da, "");
	profile_init(&pb, "");
	profile_init(&pa, "");
	for (size_t h = 0; h < nwin; h++) {
		int mine = deploy_covers(d, win[h].host);
		int nb = e->opts.load_profile(e->opts.load_profile_arg, win[h].host, d->ts_ms - w, d->ts_ms - 1,
					 mine ? &db : &pb);
		int na = e->opts.load_profile(e->opts.load_profile_arg, win[h].host, d->ts_ms, d->ts_ms + w,
					 mine ? &da : &pa);
		uint32_t idx;

		if (mine && nb > 0 && na > 0 && strmap_get(&e->host_index, win[h].host, &idx))
			seen[idx] = 1;
	}
	if (!db.total || !da.total) {
		log_info("%s: deploy %s %s: no CPU profiles of the deployed hosts around it",
			 r->name, d->service, d->version);
		goto out;
	}
	ndd = profile_diff(&db, &da, &dd);
	if (pb.total && pa.total)
		npd = profile_diff(&pb, &pa, &pd);
	for (size_t i = 0; i < ndd; i++) {
		double p1 = dd[i].base, p2 = dd[i].target, n1 = (double)db.total,
		       n2 = (double)da.total, pool = (p1 * n1 + p2 * n2) / (n1 + n2);
		double grew = p2 - p1, peers = npd ? share_of(pd, npd, dd[i].name, 1) -
						     share_of(pd, npd, dd[i].name, 0) : 0;
		double se = sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2)), pval;

		if ((grew - peers) * 100 < b->profile_share || !(se > 0))
			continue;
		pval = 0.5 * erfc((grew / se) / sqrt(2));
		if (pval >= b->alpha || grew - peers <= best)
			continue;
		best = grew - peers;
		snprintf(v->function, sizeof(v->function), "%s", dd[i].name);
	}
	v->fires = best > 0;
	v->value = best * 100;
	if (v->fires)
		log_info("%s: deploy %s %s: %s grew %.1f points more than on undeployed peers",
			 r->name, d->service, d->version, v->function, v->value);
	else
		log_info("%s: deploy %s %s: no function's CPU share grew beyond the peers'",
			 r->name, d->service, d->version);
	verdict_hosts(e, v, seen, nwin);
out:
	free(dd);
	free(pd);
	profile_free(&db);
	profile_free(&da);
	profile_free(&pb);
	profile_free(&pa);
	free(seen);
}

/*
 * A baseline rule: judge the newest deploy of its service once its
 * after-window has passed, and keep that verdict (one alert per deploy)
 * until a newer deploy or BASELINE_HOLD_MS.
 */
static void run_baseline(struct engine *e, const struct rule *r, struct rule_inst *ri,
			 const struct host_window *win, size_t nwin, uint64_t now,
			 engine_event_cb cb, void *arg)
{
	uint64_t w = r->baseline.window_ns / NSEC_PER_MSEC;
	const struct deploy *d = latest_deploy(e, r, now);
	struct label l[3];
	struct match m = { 0 };
	char key[300];
	int nm = 0;

	if (d && now >= d->ts_ms + w && now < d->ts_ms + w + BASELINE_HOLD_MS) {
		snprintf(key, sizeof(key), "%s@%s@%" PRIu64, d->service, d->version, d->ts_ms);
		if (strcmp(ri->verdict.key, key)) {
			free_verdict(&ri->verdict);
			snprintf(ri->verdict.key, sizeof(ri->verdict.key), "%s", key);
			if (r->baseline.profile_share)
				judge_profile(e, r, d, win, nwin, &ri->verdict);
			else
				judge(e, r, d, win, nwin, &ri->verdict);
		}
		if (ri->verdict.fires) {
			/* sorted by key, as every alert's labels are */
			if (ri->verdict.function[0])
				l[m.nlabels++] = (struct label){ "function", ri->verdict.function };
			l[m.nlabels++] = (struct label){ "service", (char *)d->service };
			l[m.nlabels++] = (struct label){ "version", (char *)d->version };
			m.labels = l;
			m.value = ri->verdict.value;
			m.hosts = ri->verdict.hosts;
			m.nhosts = ri->verdict.nhosts;
			m.total = ri->verdict.total;
			m.dlabel = "service";
			m.dvalue = d->service;
			m.deploy = d;
			m.base_ms = d->ts_ms - w;
			nm = 1;
		}
	}
	track(e, r, ri, &m, nm, now, cb, arg);
}

static void run_rule(struct engine *e, const struct rule *r, struct rule_inst *ri,
		     struct host_window *win, const struct host_state **live, size_t nlive,
		     uint64_t now, engine_event_cb cb, void *arg)
{
	struct value v;
	struct match *m, *out;
	char err[256];
	int nm = 0, nout;

	if (r->baseline.window_ns) {
		run_baseline(e, r, ri, win, nlive, now, cb, arg);
		return;
	}
	if (eval(r->expr, win, nlive, &v, err, sizeof(err))) {
		eval_failed(e, r, ri, now, err);
		return;
	}
	if (!v.is_vector) {
		value_free(&v);
		return;
	}
	m = calloc(v.n + 1, sizeof(*m));
	out = calloc(v.n + 1, sizeof(*out));
	for (size_t i = 0; m && out && i < v.n; i++) {
		m[nm].labels = v.e[i].labels;
		m[nm].nlabels = v.e[i].nlabels;
		m[nm].value = v.e[i].v;
		m[nm].host = velem_label(&v.e[i], "host");
		nm++;
	}
	if (m && out) {
		nout = r->nrollup ? rollup(e, r, m, nm, live, nlive, out) : nm;
		track(e, r, ri, r->nrollup ? out : m, nout, now, cb, arg);
		for (int i = 0; r->nrollup && i < nout; i++)
			if (out[i].nhosts) {
				free(out[i].labels);
				free(out[i].hosts);
			}
	}
	free(m);
	free(out);
	value_free(&v);
}

void engine_eval(struct engine *e, uint64_t now, engine_event_cb cb, void *arg)
{
	struct host_window *win = calloc(e->nhosts + 1, sizeof(*win));
	const struct host_state **live = calloc(e->nhosts + 1, sizeof(*live));
	struct match *silent = calloc(e->nhosts + 1, sizeof(*silent));
	struct match *sout = calloc(e->nhosts + 1, sizeof(*sout));
	struct label *slabels = calloc(e->nhosts + 1, sizeof(*slabels));
	struct match *bad = calloc(e->nhosts + 1, sizeof(*bad));
	struct label *ulabels = calloc(e->nhosts + 1, sizeof(*ulabels));
	const struct host_state **all = calloc(e->nhosts + 1, sizeof(*all));
	size_t nlive = 0, nall = 0;
	int nsilent = 0, nbad = 0, rule = 0;

	if (!win || !live || !silent || !sout || !slabels || !all || !bad || !ulabels)
		goto out;
	for (size_t i = 0; i < e->nhosts; i++) {
		struct host_state *h = &e->hosts[i];
		/* a host never read since fl:hosts named it counts from then */
		uint64_t last = h->n ? h->snaps[h->n - 1].ts_ms : h->first_seen_ms;

		if (!h->n && !h->first_seen_ms)
			continue;
		all[nall++] = h;
		if (recent_bad(h, now) >= BAD_BOUND) {
			ulabels[nbad].key = "host";
			ulabels[nbad].value = h->name;
			bad[nbad].labels = &ulabels[nbad];
			bad[nbad].nlabels = 1;
			bad[nbad].host = h->name;
			bad[nbad].value = recent_bad(h, now);
			nbad++;
		}
		if (!h->n || last + e->opts.stale_ms < now) {
			if (last + e->opts.stale_ms >= now)
				continue;	/* nothing yet, but not for long */
			slabels[nsilent].key = "host";
			slabels[nsilent].value = h->name;
			silent[nsilent].labels = &slabels[nsilent];
			silent[nsilent].nlabels = 1;
			silent[nsilent].host = h->name;
			silent[nsilent].value = (double)(now - last) / 1000.0;
			nsilent++;
			continue;
		}
		win[nlive].host = h->name;
		win[nlive].snaps = h->snaps;
		win[nlive].n = h->n;
		live[nlive++] = h;
	}
	for (int g = 0; g < e->rules.ngroups; g++)
		for (int i = 0; i < e->rules.groups[g].nrules; i++, rule++)
			run_rule(e, &e->rules.groups[g].rules[i], &e->state[rule], win, live, nlive,
				 now, cb, arg);
	/*
	 * HostSilent, rolled up over all hosts (silent ones included in the
	 * totals); not while probes may still be draining their spools after a
	 * Redis outage (silent_grace_until_ms), when what fires stays firing.
	 */
	if (now >= e->silent_grace_until_ms) {
		int n = rollup(e, &e->silent_rule, silent, nsilent, all, nall, sout);

		track(e, &e->silent_rule, &e->state[e->nstate], sout, n, now, cb, arg);
		for (int i = 0; i < n; i++)
			if (sout[i].nhosts) {
				free(sout[i].labels);
				free(sout[i].hosts);
			}
	}
	/* HostUndecodable, likewise: entries arrive that cannot be read */
	{
		int n = rollup(e, &e->undecodable_rule, bad, nbad, all, nall, sout);

		track(e, &e->undecodable_rule, &e->state[e->nstate + 1], sout, n, now, cb, arg);
		for (int i = 0; i < n; i++)
			if (sout[i].nhosts) {
				free(sout[i].labels);
				free(sout[i].hosts);
			}
	}
out:
	free(win);
	free(live);
	free(silent);
	free(sout);
	free(slabels);
	free(bad);
	free(ulabels);
	free(all);
}

void engine_firing(const struct engine *e, const char *alertname, engine_firing_cb cb, void *arg)
{
	int rule = 0;

	for (int g = 0; g < e->rules.ngroups; g++) {
		for (int i = 0; i < e->rules.groups[g].nrules; i++, rule++) {
			const struct rule *r = &e->rules.groups[g].rules[i];

			if (strcmp(r->name, alertname))
				continue;
			for (int k = 0; k < e->state[rule].n; k++) {
				const struct instance *in = &e->state[rule].inst[k];
				struct label l[SNAPSHOT_MAX_LABELS * 2 + 4];
				int n = 0;

				if (!in->firing)
					continue;
				l[n].key = "alertname";
				l[n++].value = (char *)r->name;
				if (r->severity[0]) {
					l[n].key = "severity";
					l[n++].value = (char *)r->severity;
				}
				for (int j = 0; j < in->nlabels && n < (int)(sizeof(l) / sizeof(l[0])); j++)
					l[n++] = in->labels[j];
				for (int j = 0; j < r->nlabels && n < (int)(sizeof(l) / sizeof(l[0])); j++)
					l[n++] = r->labels[j];
				cb(l, n, arg);
			}
		}
	}
}
