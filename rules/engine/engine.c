/*
 * engine.c - the rules engine: setup, reload and one evaluation of every
 * rule; the work is in history.c, alert_state.c, domain_rollup.c and
 * baseline.c (engine_internal.h).  See engine.h.
 */
#include "rules/engine/engine_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "model/alert.h"
#include "store/deploy.h"
#include "rules/lang/eval.h"
#include "rules/engine/fleet.h"
#include "core/fnv.h"
#include "core/log.h"
#include "model/profile.h"
#include "rules/engine/stats.h"
#include "store/store.h"
#include "core/strbuf.h"
#include "core/timeutil.h"

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

static void history_name(const char *wire, void *arg)
{
	struct engine *e = arg;

	if (!wire || !*wire)
		e->history_all = 1;	/* a selector without a name: anything may be read */
	else if (strmap_put(&e->history_names, wire, 1))
		e->history_all = 1;	/* out of memory: keep everything rather than lose it */
}

static int keeps_history(const struct series *def, void *arg)
{
	const struct engine *e = arg;
	uint32_t v;

	return e->history_all || strmap_get(&e->history_names, def->name, &v);
}

static int engine_setup(struct engine *e, struct ruleset *rs, const struct engine_opts *opts)
{
	struct rule **rules;
	uint64_t maxr = 0;
	int n;

	memset(e, 0, sizeof(*e));
	e->rules = *rs;
	memset(rs, 0, sizeof(*rs));
	n = flat_rules(&e->rules, &rules);
	if (n < 0) {
		rules_free(&e->rules);
		return -ENOMEM;
	}
	/* baselines read the 1-minute tier when they judge (baseline.c), not this history */
	for (int i = 0; i < n; i++) {
		uint64_t range = expr_max_range(rules[i]->expr);

		if (!rules[i]->baseline.window_ns && range > maxr)
			maxr = range;
	}
	e->keep_ms = maxr / NSEC_PER_MSEC + 5000;
	if (opts)
		e->opts = *opts;
	if (e->opts.min_keep_ms > e->keep_ms)
		e->keep_ms = e->opts.min_keep_ms;
	strmap_init(&e->history_names);
	e->history_all = e->opts.keep_all_history;
	for (int i = 0; i < n; i++)
		if (!rules[i]->baseline.window_ns)
			expr_history_names(rules[i]->expr, history_name, e);
	e->keep_policy.keeps = keeps_history;
	e->keep_policy.gen = 1;
	if (!e->opts.stale_ms)
		e->opts.stale_ms = 5000;
	if (!e->opts.for_grace_ms)
		e->opts.for_grace_ms = ENGINE_FOR_GRACE_MS;
	e->nstate = n;
	e->cur_group = -1;
	e->state = calloc((size_t)n + ENGINE_BUILTINS, sizeof(*e->state));
	e->gstats = calloc((size_t)e->rules.ngroups + 1, sizeof(*e->gstats));
	if (!e->state || !e->gstats) {
		free(rules);
		free(e->state);
		free(e->gstats);
		e->state = NULL;
		e->gstats = NULL;
		rules_free(&e->rules);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		snprintf(e->state[i].name, sizeof(e->state[i].name), "%s", rules[i]->name);
	/* HostSilent: built in, rolled up through every domain level */
	snprintf(e->silent_rule.name, sizeof(e->silent_rule.name), "HostSilent");
	snprintf(e->silent_rule.severity, sizeof(e->silent_rule.severity), "page");
	strmap_init(&e->said_levels);
	if (!e->opts.ndomains) {
		static const char *const levels[] = { "site", "agg", "switch", "rack" };

		e->domains_default = 1;
		for (int l = 0; l < 4; l++)
			snprintf(e->opts.domains[l], sizeof(e->opts.domains[l]), "%s", levels[l]);
		e->opts.ndomains = 4;
	}
	for (int l = 0; l < e->opts.ndomains; l++)
		snprintf(e->silent_rule.rollup_by[l], sizeof(e->silent_rule.rollup_by[l]), "%s",
			 e->opts.domains[l]);
	e->silent_rule.nrollup = e->opts.ndomains;
	e->silent_rule.rollup_min_hosts = 2;
	e->silent_rule.rollup_min_fraction = 0.5;
	e->silent_rule.rollup_alpha = 0.001;
	snprintf(e->silent_rule.runbook, sizeof(e->silent_rule.runbook), "runbooks/host-silent.md");
	snprintf(e->state[n].name, sizeof(e->state[n].name), "HostSilent");
	/* HostUndecodable: a host whose entries arrive but cannot be read */
	e->undecodable_rule = e->silent_rule;
	snprintf(e->undecodable_rule.name, sizeof(e->undecodable_rule.name), "HostUndecodable");
	snprintf(e->undecodable_rule.runbook, sizeof(e->undecodable_rule.runbook),
		 "runbooks/host-undecodable.md");
	snprintf(e->state[n + 1].name, sizeof(e->state[n + 1].name), "HostUndecodable");
	/* AlertDeliveryBacklog: pages wait for the alerters (none runs, or too slow) */
	snprintf(e->backlog_rule.name, sizeof(e->backlog_rule.name), "AlertDeliveryBacklog");
	snprintf(e->backlog_rule.severity, sizeof(e->backlog_rule.severity), "page");
	snprintf(e->backlog_rule.runbook, sizeof(e->backlog_rule.runbook),
		 "runbooks/alert-delivery-backlog.md");
	snprintf(e->state[n + 2].name, sizeof(e->state[n + 2].name), "AlertDeliveryBacklog");
	snprintf(e->dead_rule.name, sizeof(e->dead_rule.name), "AlertsDeadLettered");
	snprintf(e->dead_rule.severity, sizeof(e->dead_rule.severity), "page");
	snprintf(e->dead_rule.runbook, sizeof(e->dead_rule.runbook),
		 "runbooks/alerts-dead-lettered.md");
	snprintf(e->state[n + 3].name, sizeof(e->state[n + 3].name), "AlertsDeadLettered");
	if (!e->opts.alert_backlog_max)
		e->opts.alert_backlog_max = ENGINE_ALERT_BACKLOG_MAX;
	free(rules);
	return 0;
}

static void engine_release(struct engine *e)
{
	for (int i = 0; e->state && i < e->nstate + ENGINE_BUILTINS; i++) {
		for (int k = 0; k < e->state[i].n; k++)
			alert_state_free_instance(&e->state[i].inst[k]);
		free(e->state[i].inst);
		baseline_verdicts_free(&e->state[i]);
		hit_onsets_free(e->state[i].onsets);
	}
	free(e->state);
	free(e->gstats);
	for (size_t i = 0; i < e->nhosts; i++)
		columns_free(&e->hosts[i].hist);
	free(e->hosts);
	strmap_free(&e->host_index);
	strmap_free(&e->said_levels);
	strmap_free(&e->history_names);
	free(e->deploys);
	rules_free(&e->rules);
	memset(e, 0, sizeof(*e));
}

void engine_set_dead_letters(struct engine *e, uint64_t last_hour)
{
	e->dead_letters = last_hour;
}

void engine_set_alert_backlog(struct engine *e, uint64_t undelivered, uint64_t oldest_ms)
{
	e->backlog = undelivered;
	e->backlog_oldest_ms = oldest_ms;
}

int engine_reload(struct engine *e, struct ruleset *rs)
{
	struct engine fresh;
	int ret = engine_setup(&fresh, rs, &e->opts);

	if (ret)
		return ret;
	fresh.domains_default = e->domains_default;	/* the options were filled in once */
	fresh.backlog = e->backlog;
	fresh.dead_letters = e->dead_letters;
	fresh.backlog_oldest_ms = e->backlog_oldest_ms;
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
	/* the hosts' columns ask the new rules again what keeps history */
	fresh.keep_policy.gen = e->keep_policy.gen + 1;
	fresh.hosts = e->hosts;
	fresh.nhosts = e->nhosts;
	fresh.cap = e->cap;
	strmap_free(&fresh.host_index);
	fresh.host_index = e->host_index;
	strmap_init(&e->host_index);
	e->hosts = NULL;
	e->nhosts = e->cap = 0;
	engine_release(e);
	*e = fresh;
	return 0;
}

int engine_init(struct engine **e, struct ruleset *rs, const struct engine_opts *opts)
{
	*e = calloc(1, sizeof(**e));
	if (!*e) {
		rules_free(rs);
		return -ENOMEM;
	}
	if (engine_setup(*e, rs, opts)) {
		free(*e);
		*e = NULL;
		return -ENOMEM;
	}
	return 0;
}

void engine_free(struct engine *e)
{
	if (!e)
		return;
	engine_release(e);
	free(e);
}

const struct ruleset *engine_rules(const struct engine *e)
{
	return &e->rules;
}

const struct engine_opts *engine_options(const struct engine *e)
{
	return &e->opts;
}

void engine_group_stats(const struct engine *e, int g, struct engine_group_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (g >= 0 && g < e->rules.ngroups)
		*out = e->gstats[g];
}

void engine_counts(const struct engine *e, struct engine_counts *out)
{
	out->hosts = e->nhosts;
	out->undecodable = e->undecodable;
	out->oversize = e->oversize;
	out->quarantined = 0;
	for (size_t i = 0; i < e->nhosts; i++)
		out->quarantined += e->hosts[i].quarantine_until_ms > e->evaluated_ms;
	out->eval_errors = e->eval_errors;
	out->inhibited = e->inhibited;
}

void engine_set_profile_loader(struct engine *e, engine_profile_fn fn, void *arg)
{
	e->opts.load_profile = fn;
	e->opts.load_profile_arg = arg;
}

void engine_set_rollup_loader(struct engine *e, engine_rollup_fn fn, void *arg,
			      uint64_t delay_ms)
{
	e->opts.load_rollups = fn;
	e->opts.load_rollups_arg = arg;
	e->opts.rollups_delay_ms = delay_ms;
}

void engine_hold_silent(struct engine *e, uint64_t until_ms)
{
	e->silent_grace_until_ms = until_ms;
}

/*
 * A recording rule: its result kept in the hosts' history (history_record),
 * where the rules after it, in this evaluation and later ones, select it.
 * An element without a host label has no history to live in: it is an
 * evaluation error, logged and counted, never dropped quietly.
 */
static void record_rule(struct engine *e, const struct rule *r, struct rule_inst *ri,
			struct host_window *win, size_t nlive, uint64_t now)
{
	struct value v;
	char err[256];
	size_t hostless = 0;

	if (eval(r->expr, win, nlive, &v, err, sizeof(err))) {
		alert_state_eval_failed(e, r, ri, now, err);
		return;
	}
	hostless = v.is_vector ? 0 : 1;
	for (size_t i = 0; v.is_vector && i < v.n; i++) {
		const char *host = velem_label(&v.e[i], "host");
		uint32_t hi;

		if (!host || !strmap_get(&e->host_index, host, &hi) || !columns_len(&e->hosts[hi].hist)) {
			hostless++;
			continue;
		}
		if (history_record(e, &e->hosts[hi], r, &v.e[i])) {
			alert_state_eval_failed(e, r, ri, now, "out of memory");
			break;
		}
	}
	if (hostless) {
		snprintf(err, sizeof(err), "%zu result(s) without a host label not recorded: "
			 "faultline keeps history per host (keep host in the aggregation's by)",
			 hostless);
		alert_state_eval_failed(e, r, ri, now, err);
	}
	value_free(&v);
}

/* A sharded worker's peer_ratio calls in one alerting rule's evaluation. */
struct rule_peers {
	const struct engine_fleet *fleet;
	const char *rule;
	int seq;		/* peer_ratio calls so far: each its own topic */
};

/* eval_peers.merge: through the fleet, topic "peer/RULE/LABEL/SEQ". */
static int merge_peers(void *arg, const char *label, char *const *groups,
		       struct histogram *hists, size_t n)
{
	struct rule_peers *rp = arg;
	char topic[300];
	int ret;

	snprintf(topic, sizeof(topic), "peer/%s/%s/%d", rp->rule, label, rp->seq++);
	ret = fleet_peer_merge(rp->fleet, topic, groups, hists, n);
	if (ret < 0)
		log_warn("%s: peer medians from this worker's hosts only (the other workers' "
			 "parts cannot be read)", topic);
	return ret;
}

static void run_rule(struct engine *e, const struct rule *r, struct rule_inst *ri,
		     struct host_window *win, const struct host_state **live, size_t nlive,
		     uint64_t now, engine_event_cb cb, void *arg)
{
	struct value v;
	struct match *m, *out;
	char err[256];
	int nm = 0, nout;

	if (r->record) {
		record_rule(e, r, ri, win, nlive, now);
		return;
	}
	if (r->baseline.window_ns) {
		baseline_run(e, r, ri, win, nlive, now, cb, arg);
		return;
	}
	{
		struct rule_peers rp = { e->opts.fleet, r->name, 0 };
		struct eval_peers peers = { &rp, merge_peers };
		int ret = eval_sharded(r->expr, win, nlive, e->opts.fleet ? &peers : NULL, &v, err,
				       sizeof(err));

		if (ret) {
			alert_state_eval_failed(e, r, ri, now, err);
			return;
		}
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
		nout = r->nrollup ? domain_rollup(e, r, &ri->onsets, now, m, nm, live, nlive, out) : nm;
		alert_state_track(e, r, ri, r->nrollup ? out : m, nout, now, cb, arg);
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

/*
 * Whether host h reports (has a snapshot no older than the stale
 * threshold at now): the hosts every rule and every query looks at.
 */
static int host_live(const struct engine *e, const struct host_state *h, uint64_t now)
{
	size_t n = columns_len(&h->hist);

	return n && columns_ts(&h->hist, n - 1) + e->opts.stale_ms >= now;
}

int engine_query(struct engine *e, const struct node *n, uint64_t now_ms, struct value *out,
		 char *err, size_t errlen)
{
	struct host_window *win = calloc(e->nhosts + 1, sizeof(*win));
	size_t nlive = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!win) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < e->nhosts; i++) {
		const struct host_state *h = &e->hosts[i];

		if (!host_live(e, h, now_ms))
			continue;	/* silent: left out, as every rule leaves it out */
		win[nlive].host = h->name;
		win[nlive].c = &h->hist;
		win[nlive++].n = columns_len(&h->hist);
	}
	ret = eval(n, win, nlive, out, err, errlen);
	free(win);
	return ret;
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

	e->evaluated_ms = now;
	if (!win || !live || !silent || !sout || !slabels || !all || !bad || !ulabels)
		goto out;
	for (size_t i = 0; i < e->nhosts; i++) {
		struct host_state *h = &e->hosts[i];
		/* a host never read since the registry named it counts from then */
		size_t n = columns_len(&h->hist);
		uint64_t last = n ? columns_ts(&h->hist, n - 1) : h->first_seen_ms;

		if (!n && !h->first_seen_ms)
			continue;
		all[nall++] = h;
		if (history_recent_bad(h, now) >= BAD_BOUND) {
			ulabels[nbad].key = "host";
			ulabels[nbad].value = h->name;
			bad[nbad].labels = &ulabels[nbad];
			bad[nbad].nlabels = 1;
			bad[nbad].host = h->name;
			bad[nbad].value = history_recent_bad(h, now);
			nbad++;
		}
		if (h->quarantine_until_ms > now)
			continue;	/* not read on purpose: HostUndecodable, not HostSilent */
		if (!host_live(e, h, now)) {
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
		if (!h->watched_ms)
			h->watched_ms = now;
		win[nlive].host = h->name;
		win[nlive].c = &h->hist;
		win[nlive].n = n;
		live[nlive++] = h;
	}
	for (int g = 0; g < e->rules.ngroups; g++) {
		uint64_t t0 = time_mono_ns();

		e->cur_group = g;
		for (int i = 0; i < e->rules.groups[g].nrules; i++, rule++)
			run_rule(e, &e->rules.groups[g].rules[i], &e->state[rule], win, live, nlive,
				 now, cb, arg);
		e->gstats[g].evaluations += (uint64_t)e->rules.groups[g].nrules;
		e->gstats[g].last_duration_s = (double)(time_mono_ns() - t0) / 1e9;
	}
	e->cur_group = -1;
	/*
	 * HostSilent, rolled up over all hosts (silent ones included in the
	 * totals); not while probes may still be draining their spools after a
	 * Redis outage (silent_grace_until_ms), when what fires stays firing.
	 */
	if (now >= e->silent_grace_until_ms) {
		int n = domain_rollup(e, &e->silent_rule, NULL, now, silent, nsilent, all, nall, sout);

		alert_state_track(e, &e->silent_rule, &e->state[e->nstate], sout, n, now, cb, arg);
		for (int i = 0; i < n; i++)
			if (sout[i].nhosts) {
				free(sout[i].labels);
				free(sout[i].hosts);
			}
	}
	/* HostUndecodable, likewise: entries arrive that cannot be read */
	{
		int n = domain_rollup(e, &e->undecodable_rule, NULL, now, bad, nbad, all, nall, sout);

		alert_state_track(e, &e->undecodable_rule, &e->state[e->nstate + 1], sout, n, now, cb, arg);
		for (int i = 0; i < n; i++)
			if (sout[i].nhosts) {
				free(sout[i].labels);
				free(sout[i].hosts);
			}
	}
	/* AlertDeliveryBacklog: about the fleet, so its owner's under --shard */
	if (!e->opts.fleet || e->opts.fleet->owns_fleet(e->opts.fleet->arg)) {
		struct label l = { "stream", "fl:alerts" };
		struct match m = { .labels = &l, .nlabels = 1, .value = (double)e->backlog };

		struct label dl = { "stream", "fl:alerts:dead" };
		struct match dm = { .labels = &dl, .nlabels = 1, .value = (double)e->dead_letters };

		alert_state_track(e, &e->backlog_rule, &e->state[e->nstate + 2], &m,
				  e->backlog > e->opts.alert_backlog_max, now, cb, arg);
		alert_state_track(e, &e->dead_rule, &e->state[e->nstate + 3], &dm,
				  e->dead_letters > 0, now, cb, arg);
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
				struct label *l, *ann;
				char (*text)[1024];
				uint32_t n;

				if (!in->firing)
					continue;
				l = calloc((size_t)in->nlabels + (size_t)r->nlabels + 2, sizeof(*l));
				ann = calloc((size_t)r->nannotations + 1, sizeof(*ann));
				text = calloc((size_t)r->nannotations + 1, sizeof(*text));
				if (l && ann && text) {
					n = alert_state_labels(r, in->labels, in->nlabels, l);
					for (int j = 0; j < r->nannotations; j++) {
						struct rules_template_ctx ctx = engine_template_ctx(e);

						rules_template(r->annotations[j].value, in->value, in->labels,
							       in->nlabels, &ctx, text[j], sizeof(text[j]));
						ann[j].key = r->annotations[j].key;
						ann[j].value = text[j];
					}
					cb(l, (int)n, ann, r->nannotations, arg);
				}
				free(l);
				free(ann);
				free(text);
			}
		}
	}
}
