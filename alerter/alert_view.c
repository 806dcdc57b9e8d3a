/*
 * alert_view.c - what faultline says of one firing alert to whoever asks
 * (the API, `faultline alerts`): its receivers, the silences and the
 * inhibiting alert that mute it, in Alertmanager's shape; see
 * alert_view.h.
 */
#include <stdlib.h>
#include <string.h>

#include "alerter/alert_view.h"
#include "core/jsonc.h"

json_object *alert_view_time(uint64_t ms)
{
	char t[40];

	if (!ms)
		return jsonc_string("0001-01-01T00:00:00.000Z");
	return jsonc_string(alert_format_time(ms, t, sizeof(t)));
}

json_object *alert_view_labels(const struct label *l, uint32_t n)
{
	json_object *o = json_object_new_object();

	for (uint32_t i = 0; i < n; i++)
		jsonc_put(o, l[i].key, jsonc_string(l[i].value));
	return o;
}

/* What the API says of one alert: its receivers, what silences and inhibits it. */


void alert_view_of(const struct alerter_config *cfg, const struct alert_index *ix,
		    const struct silence *sil, int nsil, uint64_t now_ms,
		    const struct alert_group_member *m, struct alert_view *v)
{
	int rule, k;

	v->a = &m->a;
	v->entry_id = m->entry_id;
	v->nreceivers = v->nsilenced = 0;
	v->inhibited_by = NULL;
	v->nroutes = cfg->has_root ? route_match(&cfg->root, &m->a, v->routes, ROUTE_MAX_NODES) : 0;
	for (int i = 0; i < v->nroutes; i++) {
		const char *name = cfg->receiver_names[v->routes[i]->receiver].name;
		int seen = 0;

		for (int j = 0; j < v->nreceivers && !seen; j++)
			seen = !strcmp(v->receivers[j], name);
		if (!seen && v->nreceivers < MAX_RECEIVER_NAMES)
			v->receivers[v->nreceivers++] = name;
	}
	v->sil = sil;
	v->nsil = nsil;
	v->now_ms = now_ms;
	for (int i = 0; i < nsil; i++)
		v->nsilenced += alert_view_silenced_by(v, i);
	k = inhibit_source(cfg->inhibit_rules, cfg->ninhibit_rules, ix->m, ix->n, &m->a, &rule);
	if (k >= 0)
		v->inhibited_by = ix->m[k].a.fingerprint;
}

int alert_view_silenced_by(const struct alert_view *v, int i)
{
	return silence_find(&v->sil[i], 1, v->a, v->now_ms) != NULL;
}

json_object *alert_view_json(const struct alert_view *v)
{
	json_object *o = json_object_new_object(), *st = json_object_new_object();
	json_object *rs = json_object_new_array(), *sb = json_object_new_array();
	json_object *ib = json_object_new_array();
	uint64_t updated = strtoull(v->entry_id, NULL, 10);

	jsonc_put(o, "labels", alert_view_labels(v->a->labels, v->a->nlabels));
	jsonc_put(o, "annotations", alert_view_labels(v->a->annotations, v->a->nannotations));
	jsonc_put(o, "fingerprint", jsonc_string(v->a->fingerprint));
	jsonc_put(o, "startsAt", alert_view_time(v->a->starts_ms));
	jsonc_put(o, "updatedAt", alert_view_time(updated));
	jsonc_put(o, "endsAt", alert_view_time(v->a->ends_ms));
	if (v->a->generator_url[0])
		jsonc_put(o, "generatorURL", jsonc_string(v->a->generator_url));
	for (int i = 0; i < v->nreceivers; i++) {
		json_object *r = json_object_new_object();

		jsonc_put(r, "name", jsonc_string(v->receivers[i]));
		json_object_array_add(rs, r);
	}
	jsonc_put(o, "receivers", rs);
	for (int i = 0; i < v->nsil; i++)
		if (alert_view_silenced_by(v, i))
			json_object_array_add(sb, jsonc_string(v->sil[i].id));
	if (v->inhibited_by)
		json_object_array_add(ib, jsonc_string(v->inhibited_by));
	jsonc_put(st, "state", jsonc_string(v->nsilenced || v->inhibited_by ? "suppressed"
										: "active"));
	jsonc_put(st, "silencedBy", sb);
	jsonc_put(st, "inhibitedBy", ib);
	jsonc_put(st, "mutedBy", json_object_new_array());
	jsonc_put(o, "status", st);
	return o;
}

