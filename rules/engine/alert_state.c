/*
 * alert_state.c - alert instances: pending, firing (after `for`), resolved
 * (after `keep_firing_for`), the events they emit, and their checkpoint in
 * Redis; see engine.h.
 */
#include "core/jsonc.h"
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
#include "core/array.h"
#include "core/fnv.h"
#include "core/log.h"
#include "model/profile.h"
#include "rules/engine/stats.h"
#include "store/store.h"
#include "core/strbuf.h"
#include "core/timeutil.h"

/* ---- instances --------------------------------------------------------- */

void alert_state_free_instance(struct instance *in)
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

/*
 * The alert's labels as sent, into out (room for n + r->nlabels + 2):
 * alertname, severity, the match's labels, then the rule's own labels,
 * which override a match label of the same name (as in Prometheus; the
 * event never carries a key twice).  Returns how many.
 */
uint32_t alert_state_labels(const struct rule *r, const struct label *l, int n, struct label *out)
{
	uint32_t k = 0;

	out[k].key = "alertname";
	out[k++].value = (char *)r->name;
	if (r->severity[0]) {
		out[k].key = "severity";
		out[k++].value = (char *)r->severity;
	}
	for (int i = 0; i < n; i++) {
		int overridden = !strcmp(l[i].key, "alertname") || !strcmp(l[i].key, "severity");

		for (int j = 0; j < r->nlabels && !overridden; j++)
			overridden = !strcmp(r->labels[j].key, l[i].key);
		if (!overridden)
			out[k++] = l[i];
	}
	for (int j = 0; j < r->nlabels; j++)
		out[k++] = r->labels[j];
	return k;
}

/* Alertmanager's fingerprint of the alert's final label set. */
static void fingerprint(const struct rule *r, const struct label *l, int n, char out[17])
{
	struct label *all = calloc((size_t)n + (size_t)r->nlabels + 2, sizeof(*all));

	if (!all) {
		snprintf(out, 17, "%016x", 0);
		return;
	}
	alert_fingerprint(all, alert_state_labels(r, l, n, all), out);
	free(all);
}

/* The instance of fingerprint fp (index in *by_fp), added if new. */
static struct instance *find_or_add(struct rule_inst *ri, struct strmap *by_fp, const char *fp)
{
	uint32_t i;

	if (strmap_get(by_fp, fp, &i))
		return &ri->inst[i];
	if (ARRAY_GROW(ri->inst, ri->cap, ri->n + 1, 16))
		return NULL;
	if (strmap_put(by_fp, fp, (uint32_t)ri->n))
		return NULL;
	memset(&ri->inst[ri->n], 0, sizeof(ri->inst[0]));
	snprintf(ri->inst[ri->n].fp, sizeof(ri->inst[0].fp), "%s", fp);
	return &ri->inst[ri->n++];
}

/*
 * Emit instance in of rule r as an event (lib/model/alert.h, encoded by
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
	a.nlabels = alert_state_labels(r, in->labels, in->nlabels, labels);
	a.labels = labels;
	for (int i = 0; i < r->nannotations; i++) {
		struct rules_template_ctx ctx = engine_template_ctx(e);

		rules_template(r->annotations[i].value, in->value, in->labels, in->nlabels, &ctx,
			       text[i], sizeof(text[i]));
		ann[i].key = r->annotations[i].key;
		ann[i].value = text[i];
	}
	a.annotations = ann;
	a.nannotations = (uint32_t)r->nannotations;
	a.starts_ms = in->since_ms;
	a.fired_ms = in->fired_ms;
	a.ends_ms = firing ? 0 : now;
	if (e->opts.generator_url[0])
		snprintf(a.generator_url, sizeof(a.generator_url), "%.199s#%.55s",
			 e->opts.generator_url, r->name);
	else if (e->opts.web_url[0])
		snprintf(a.generator_url, sizeof(a.generator_url), "%.199s/alert/%.40s",
			 e->opts.web_url, in->fp);
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
	snprintf(a.domain_same, sizeof(a.domain_same), "%s", in->domain_same);
	a.has_domain_p = in->domain_label[0] && in->domain_p >= 0 && in->domain_p <= 1;
	a.domain_p = a.has_domain_p ? in->domain_p : 0;
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

void alert_state_track(struct engine *e, const struct rule *r, struct rule_inst *ri,
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

		fingerprint(r, m[i].labels, m[i].nlabels, fp);
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
			e->state_gen++;
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
			snprintf(in->domain_same, sizeof(in->domain_same), "%s", m[i].dsame);
			in->domain_p = m[i].dp;
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
		if (!in->firing && now >= in->since_ms &&
		    now - in->since_ms >= r->for_ns / NSEC_PER_MSEC) {
			in->firing = 1;
			in->fired_ms = now;
			e->state_gen++;
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
		alert_state_free_instance(in);
		ri->inst[i] = ri->inst[--ri->n];
		e->state_gen++;
	}
}

/*
 * An evaluation of r failed (out of memory, a limit): counted, and logged
 * at most once a minute per rule; its alerts keep their state (neither
 * resolved nor fired on an error).
 */
void alert_state_eval_failed(struct engine *e, const struct rule *r, struct rule_inst *ri,
			uint64_t now, const char *err)
{
	e->eval_errors++;
	if (e->cur_group >= 0)
		e->gstats[e->cur_group].failures++;
	if (ri->err_said_ms && now - ri->err_said_ms < 60000)
		return;
	ri->err_said_ms = now;
	if (r->record)
		log_warn("recording rule %s: %s", r->name, err);
	else
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
	if (i == e->nstate + 2)
		return &e->backlog_rule;
	if (i == e->nstate + 3)
		return &e->dead_rule;
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
		json_object_object_add(o, l[i].key, jsonc_string(l[i].value));
	return o;
}

/*
 * The checkpoint record of in (rule r) as of the evaluation at at_ms, or
 * NULL on -ENOMEM.
 */
static json_object *instance_json(const struct rule *r, const struct instance *in,
				  uint64_t at_ms)
{
	json_object *o = json_object_new_object(), *hosts;

	if (!o)
		return NULL;
	json_object_object_add(o, "rule", jsonc_string(r->name));
	json_object_object_add(o, "severity", jsonc_string(r->severity));
	json_object_object_add(o, "labels", labels_obj(in->labels, in->nlabels));
	if (!in->firing)
		json_object_object_add(o, "pending", json_object_new_boolean(1));
	json_object_object_add(o, "at_ms", json_object_new_int64((int64_t)at_ms));
	json_object_object_add(o, "since_ms", json_object_new_int64((int64_t)in->since_ms));
	json_object_object_add(o, "fired_ms", json_object_new_int64((int64_t)in->fired_ms));
	json_object_object_add(o, "last_true_ms",
			       json_object_new_int64((int64_t)in->last_true_ms));
	json_object_object_add(o, "value", json_object_new_double(
			       isfinite(in->value) ? in->value : 0.0));
	hosts = json_object_new_array();
	for (int h = 0; h < in->nhosts; h++)
		json_object_array_add(hosts, jsonc_string(in->hosts[h]));
	json_object_object_add(o, "hosts", hosts);
	json_object_object_add(o, "total_hosts", json_object_new_int(in->total_hosts));
	json_object_object_add(o, "domain_label",
			       jsonc_string(in->domain_label));
	json_object_object_add(o, "domain_value",
			       jsonc_string(in->domain_value));
	if (in->domain_same[0])
		json_object_object_add(o, "domain_same", jsonc_string(in->domain_same));
	if (in->domain_label[0] && in->domain_p >= 0 && in->domain_p <= 1)
		json_object_object_add(o, "domain_p", json_object_new_double(in->domain_p));
	json_object_object_add(o, "deploy_service",
			       jsonc_string(in->deploy_service));
	json_object_object_add(o, "deploy_at_ms",
			       json_object_new_int64((int64_t)in->deploy_at_ms));
	json_object_object_add(o, "deploy_base_ms",
			       json_object_new_int64((int64_t)in->deploy_base_ms));
	return o;
}

static const char *json_text(json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
}

int engine_state_export(const struct engine *e, engine_state_cb cb, void *arg)
{
	int n = 0;

	for (int i = 0; i < e->nstate + ENGINE_BUILTINS; i++) {
		const struct rule *r = rule_of_state(e, i);

		for (int k = 0; r && k < e->state[i].n; k++) {
			const struct instance *in = &e->state[i].inst[k];
			json_object *o;

			o = instance_json(r, in, e->evaluated_ms);
			if (!o)
				return -ENOMEM;
			cb(in->fp, json_text(o), arg);
			json_object_put(o);
			n++;
		}
	}
	return n;
}

int engine_forget(struct engine *e, int (*keep)(const char *json, void *arg), void *arg)
{
	int dropped = 0;

	for (int i = 0; i < e->nstate + ENGINE_BUILTINS; i++) {
		const struct rule *r = rule_of_state(e, i);
		struct rule_inst *ri = &e->state[i];

		for (int k = 0; r && k < ri->n;) {
			json_object *o = instance_json(r, &ri->inst[k], e->evaluated_ms);
			int drop = o && !keep(json_text(o), arg);

			json_object_put(o);
			if (!drop) {
				k++;
				continue;
			}
			alert_state_free_instance(&ri->inst[k]);
			ri->inst[k] = ri->inst[--ri->n];
			dropped++;
		}
		/* a verdict is judged again by whoever judges now */
		if (r && r->baseline.window_ns && e->opts.fleet &&
		    !e->opts.fleet->owns_fleet(e->opts.fleet->arg))
			baseline_verdicts_free(ri);
	}
	history_forget_hosts(e);
	return dropped;
}

/* Limits of a checkpoint record (any writer of its key wrote it). */
#define REC_MAX_LABELS 64
#define REC_MAX_HOSTS 100000
#define REC_MAX_STRING 1024

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

/*
 * Whether record o is of the shape engine_state_export writes: why not in
 * err (the field named), 0 if it is.  Optional fields may be missing
 * (records of older versions); present ones must be of their type.
 */
static int record_check(json_object *o, const char *fp, char *err, size_t errlen)
{
	static const char *const strings[] = { "rule", "severity", "domain_label",
					       "domain_value", "domain_same", "deploy_service" };
	static const char *const times[] = { "since_ms", "last_true_ms", "fired_ms", "at_ms",
					     "deploy_at_ms", "deploy_base_ms", "total_hosts" };
	json_object *labels, *hosts, *v;
	size_t n;

	if (strlen(fp) != 16 || strspn(fp, "0123456789abcdef") != 16) {
		snprintf(err, errlen, "alert state %.20s: the fingerprint is not 16 hex digits", fp);
		return -EINVAL;
	}
	if (!o || !json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "alert state %s: not a JSON object", fp);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		if (json_object_object_get_ex(o, strings[i], &v) &&
		    (!json_object_is_type(v, json_type_string) ||
		     json_object_get_string_len(v) >= REC_MAX_STRING)) {
			snprintf(err, errlen, "alert state %s: \"%s\" is not a string of at most "
				 "%d bytes", fp, strings[i], REC_MAX_STRING - 1);
			return -EINVAL;
		}
	if (!obj_str(o, "rule")[0]) {
		snprintf(err, errlen, "alert state %s: \"rule\" is missing or empty", fp);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
		if (json_object_object_get_ex(o, times[i], &v) &&
		    (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)) {
			snprintf(err, errlen, "alert state %s: \"%s\" is not a non-negative integer",
				 fp, times[i]);
			return -EINVAL;
		}
	if (json_object_object_get_ex(o, "value", &v) &&
	    !json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) {
		snprintf(err, errlen, "alert state %s: \"value\" is not a number", fp);
		return -EINVAL;
	}
	if (json_object_object_get_ex(o, "domain_p", &v) &&
	    ((!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) ||
	     !(json_object_get_double(v) >= 0 && json_object_get_double(v) <= 1))) {
		snprintf(err, errlen, "alert state %s: \"domain_p\" is not a number from 0 to 1", fp);
		return -EINVAL;
	}
	if (json_object_object_get_ex(o, "pending", &v) &&
	    !json_object_is_type(v, json_type_boolean)) {
		snprintf(err, errlen, "alert state %s: \"pending\" is not true or false", fp);
		return -EINVAL;
	}
	if (!json_object_object_get_ex(o, "labels", &labels) ||
	    !json_object_is_type(labels, json_type_object) ||
	    json_object_object_length(labels) > REC_MAX_LABELS) {
		snprintf(err, errlen, "alert state %s: \"labels\" is not an object of at most %d "
			 "labels", fp, REC_MAX_LABELS);
		return -EINVAL;
	}
	json_object_object_foreach(labels, key, val) {
		if (!key[0] || strlen(key) >= REC_MAX_STRING ||
		    !json_object_is_type(val, json_type_string) ||
		    json_object_get_string_len(val) >= REC_MAX_STRING) {
			snprintf(err, errlen, "alert state %s: label \"%.60s\" is not a string of at "
				 "most %d bytes", fp, key, REC_MAX_STRING - 1);
			return -EINVAL;
		}
	}
	if (json_object_object_get_ex(o, "hosts", &hosts)) {
		if (!json_object_is_type(hosts, json_type_array) ||
		    (n = json_object_array_length(hosts)) > REC_MAX_HOSTS) {
			snprintf(err, errlen, "alert state %s: \"hosts\" is not an array of at most "
				 "%d hosts", fp, REC_MAX_HOSTS);
			return -EINVAL;
		}
		for (size_t h = 0; h < n; h++) {
			v = json_object_array_get_idx(hosts, h);
			if (!json_object_is_type(v, json_type_string) ||
			    !json_object_get_string_len(v) ||
			    json_object_get_string_len(v) >= REC_MAX_STRING) {
				snprintf(err, errlen, "alert state %s: hosts[%zu] is not a host "
					 "name", fp, h);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/*
 * When a pending instance restored at now counts as having started: the
 * time between its record (at_ms) and now does not count, and when its
 * `for` exceeds the grace, it fires no sooner than the grace after now
 * (Prometheus' restore of `for` state).
 */
static uint64_t restored_since(const struct engine *e, const struct rule *r, uint64_t since_ms,
			       uint64_t at_ms, uint64_t now)
{
	uint64_t for_ms = r->for_ns / NSEC_PER_MSEC, grace = e->opts.for_grace_ms;
	uint64_t spent, left, down;

	if (at_ms < since_ms)
		at_ms = since_ms;
	if (at_ms > now)
		at_ms = now;
	spent = at_ms - since_ms;
	if (spent >= for_ms)
		return since_ms;	/* it fires at the first evaluation that still finds it */
	left = for_ms - spent;
	down = now - at_ms;
	if (for_ms > grace && left < grace)
		return now + grace - for_ms;
	return since_ms + down;
}

int engine_alert_subject(const char *json, char *host, size_t hostlen)
{
	char why[160];
	json_object *o = jsonc_parse(json, strlen(json), why, sizeof(why)), *v, *labels;
	const char *h = NULL;
	int ret = 1;

	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return -1;
	}
	if (json_object_object_get_ex(o, "deploy_service", &v) &&
	    json_object_get_string_len(v) > 0)
		h = NULL;	/* a deploy verdict: the fleet's */
	else if (json_object_object_get_ex(o, "labels", &labels) &&
		 json_object_object_get_ex(labels, "host", &v) &&
		 json_object_is_type(v, json_type_string))
		h = json_object_get_string(v);
	else if (json_object_object_get_ex(o, "hosts", &v) &&
		 json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0 &&
		 json_object_is_type(json_object_array_get_idx(v, 0), json_type_string))
		h = json_object_get_string(json_object_array_get_idx(v, 0));
	if (h) {
		snprintf(host, hostlen, "%s", h);
		ret = 0;
	}
	json_object_put(o);
	return ret;
}

int engine_alert_series(const char *json, struct label *l, int max, uint64_t *since_ms,
			uint64_t *fired_ms)
{
	char why[160];
	json_object *o = jsonc_parse(json, strlen(json), why, sizeof(why)), *v, *labels;
	int n = 0, ok = 1;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "rule", &v) || !json_object_is_type(v, json_type_string) ||
	    max < 2) {
		json_object_put(o);
		return -1;
	}
	l[n].key = strdup("alertname");
	l[n++].value = strdup(json_object_get_string(v));
	if (json_object_object_get_ex(o, "severity", &v) && json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) > 0) {
		l[n].key = strdup("severity");
		l[n++].value = strdup(json_object_get_string(v));
	}
	if (json_object_object_get_ex(o, "labels", &labels) &&
	    json_object_is_type(labels, json_type_object)) {
		json_object_object_foreach(labels, k, lv) {
			if (!json_object_is_type(lv, json_type_string) || !strcmp(k, "alertname") ||
			    !strcmp(k, "alertstate") || !strcmp(k, "severity"))
				continue;
			if (n == max) {
				ok = 0;
				break;
			}
			l[n].key = strdup(k);
			l[n++].value = strdup(json_object_get_string(lv));
		}
	}
	*since_ms = json_object_object_get_ex(o, "since_ms", &v) ?
		    (uint64_t)json_object_get_int64(v) : 0;
	*fired_ms = json_object_object_get_ex(o, "pending", &v) && json_object_get_boolean(v) ? 0 :
		    json_object_object_get_ex(o, "fired_ms", &v) ?
		    (uint64_t)json_object_get_int64(v) : 0;
	if (!*fired_ms && !(json_object_object_get_ex(o, "pending", &v) &&
			    json_object_get_boolean(v)))
		*fired_ms = *since_ms;	/* firing, from an older record without fired_ms */
	for (int i = 0; i < n; i++)
		ok &= l[i].key && l[i].value;
	json_object_put(o);
	if (!ok) {
		for (int i = 0; i < n; i++) {
			free(l[i].key);
			free(l[i].value);
		}
		return -1;
	}
	return n;
}

int engine_state_import(struct engine *e, const char *fp, const char *json, uint64_t now,
			engine_event_cb cb, void *arg, char *err, size_t errlen)
{
	char why[160];
	json_object *o = jsonc_parse(json, strlen(json), why, sizeof(why)), *labels, *hosts, *v;
	struct instance tmp = { 0 }, *in;
	struct rule_inst *ri = NULL;
	const struct rule *rule = NULL;
	const char *name;
	int ret = 0, pending;

	if (record_check(o, fp, err, errlen)) {
		json_object_put(o);
		return -EINVAL;
	}
	json_object_object_get_ex(o, "labels", &labels);
	name = obj_str(o, "rule");
	pending = json_object_object_get_ex(o, "pending", &v) && json_object_get_boolean(v);
	for (int i = 0; i < e->nstate + ENGINE_BUILTINS; i++)
		if (!strcmp(e->state[i].name, name)) {
			ri = &e->state[i];
			rule = rule_of_state(e, i);
		}
	if (!ri && pending) {
		ret = 1;	/* its rule is gone and it never fired: nothing to say */
		goto out;
	}
	in = &tmp;
	if (ri) {
		for (int k = 0; k < ri->n; k++)
			if (!strcmp(ri->inst[k].fp, fp))
				goto out;	/* already known (a second import) */
		if (ARRAY_GROW(ri->inst, ri->cap, ri->n + 1, 16)) {
			ret = -ENOMEM;
			goto out;
		}
		in = &ri->inst[ri->n++];
		memset(in, 0, sizeof(*in));
		e->state_gen++;
	}
	snprintf(in->fp, sizeof(in->fp), "%s", fp);
	in->labels = calloc((size_t)json_object_object_length(labels) + 1, sizeof(*in->labels));
	json_object_object_foreach(labels, key, val) {
		if (!in->labels)
			break;
		in->labels[in->nlabels].key = strdup(key);
		in->labels[in->nlabels].value = strdup(json_object_get_string(val));
		if (!in->labels[in->nlabels].key || !in->labels[in->nlabels].value) {
			free(in->labels[in->nlabels].key);
			free(in->labels[in->nlabels].value);
			continue;
		}
		in->nlabels++;
	}
	in->firing = !pending;
	in->since_ms = obj_u64(o, "since_ms");
	in->last_true_ms = obj_u64(o, "last_true_ms");
	in->fired_ms = obj_u64(o, "fired_ms");	/* 0 in checkpoints from before it was kept */
	if (pending && rule)
		in->since_ms = restored_since(e, rule, in->since_ms,
					      json_object_object_get_ex(o, "at_ms", &v) ?
					      obj_u64(o, "at_ms") : in->last_true_ms, now);
	if (json_object_object_get_ex(o, "value", &v))
		in->value = json_object_get_double(v);
	if (json_object_object_get_ex(o, "hosts", &hosts) && json_object_array_length(hosts)) {
		in->hosts = calloc(json_object_array_length(hosts), sizeof(char *));
		for (size_t h = 0; in->hosts && h < json_object_array_length(hosts); h++) {
			char *host = strdup(json_object_get_string(json_object_array_get_idx(hosts,
											      h)));

			if (host)
				in->hosts[in->nhosts++] = host;
		}
	}
	in->total_hosts = (int)obj_u64(o, "total_hosts");
	snprintf(in->domain_label, sizeof(in->domain_label), "%s", obj_str(o, "domain_label"));
	snprintf(in->domain_value, sizeof(in->domain_value), "%s", obj_str(o, "domain_value"));
	snprintf(in->domain_same, sizeof(in->domain_same), "%s", obj_str(o, "domain_same"));
	in->domain_p = json_object_object_get_ex(o, "domain_p", &v) ? json_object_get_double(v) : NAN;
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
		alert_state_free_instance(in);
		ret = 1;
	}
out:
	json_object_put(o);
	return ret;
}

uint64_t engine_state_generation(const struct engine *e)
{
	return e->state_gen;
}

size_t engine_pending_alerts(const struct engine *e)
{
	size_t n = 0;

	for (int i = 0; i < e->nstate + ENGINE_BUILTINS; i++)
		for (int k = 0; k < e->state[i].n; k++)
			n += !e->state[i].inst[k].firing;
	return n;
}

void engine_import_entry(const char *fp, const char *json, void *arg)
{
	struct engine_import *im = arg;
	char err[256];
	int ret = engine_state_import(im->e, fp, json, im->now, im->cb, im->arg, err,
				      sizeof(err));

	if (ret < 0) {
		im->refused++;
		log_error("%s; skipped (a record of the wrong shape: was the checkpoint written "
			  "by something else?)", err);
	} else if (ret == 1)
		im->resolved++;
	else
		im->restored++;
}
