/*
 * timeline.c - writing the simulator's timeline; see timeline.h.
 */
#include "sim/timeline.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "core/jsonc.h"
#include "sim/sim.h"

static json_object *expect_json(const struct sim_expect *ex)
{
	json_object *o = json_object_new_object(), *l = json_object_new_object();

	json_object_object_add(o, "alertname", jsonc_string(ex->alertname));
	json_object_object_add(o, "resolves", json_object_new_boolean(ex->resolves));
	for (int i = 0; i < ex->nlabels; i++)
		json_object_object_add(l, ex->key[i], jsonc_string(ex->value[i]));
	json_object_object_add(o, "labels", l);
	if (ex->within_ms)
		json_object_object_add(o, "within_ms", json_object_new_int64((int64_t)ex->within_ms));
	if (ex->ev_function[0] || ex->ev_peer[0] || ex->ev_device[0]) {
		json_object *e = json_object_new_object();

		if (ex->ev_function[0])
			json_object_object_add(e, "function", jsonc_string(ex->ev_function));
		if (ex->ev_peer[0])
			json_object_object_add(e, "peer", jsonc_string(ex->ev_peer));
		if (ex->ev_device[0])
			json_object_object_add(e, "device", jsonc_string(ex->ev_device));
		json_object_object_add(o, "evidence", e);
	}
	if (ex->wear_row) {
		json_object *w = json_object_new_object();

		json_object_object_add(w, "row", json_object_new_int64(ex->wear_row));
		if (ex->wear_verdict[0])
			json_object_object_add(w, "verdict", jsonc_string(ex->wear_verdict));
		json_object_object_add(o, "wear", w);
	}
	return o;
}

int sim_timeline_write(const struct sim_timeline *sm, const char *path, char *err, size_t errlen)
{
	json_object *doc = json_object_new_object(), *fleet = json_object_new_object();
	json_object *evs = json_object_new_array();
	int ret = 0;

	json_object_object_add(doc, "scenario", jsonc_string(sm->sc->name));
	json_object_object_add(doc, "start_ms", json_object_new_int64((int64_t)sm->start_ms));
	json_object_object_add(doc, "end_ms", json_object_new_int64((int64_t)sm->end_ms));
	json_object_object_add(doc, "hosts", json_object_new_int64(sm->n));
	json_object_object_add(fleet, "hosts_per_rack", json_object_new_int64(sm->sh->hosts_per_rack));
	json_object_object_add(fleet, "racks_per_switch",
			       json_object_new_int64(sm->sh->racks_per_switch));
	json_object_object_add(fleet, "switches_per_site",
			       json_object_new_int64(sm->sh->switches_per_site));
	json_object_object_add(fleet, "switches_per_agg",
			       json_object_new_int64(sm->sh->switches_per_agg));
	json_object_object_add(doc, "fleet", fleet);
	for (int e = 0; e < sm->sc->nev; e++) {
		const struct sim_event *ev = &sm->sc->ev[e];
		uint64_t from = sm->start_ms + ev->at_ms;
		uint64_t to = ev->for_ms ? from + ev->for_ms : sm->end_ms;
		json_object *o = json_object_new_object(), *hosts = json_object_new_array(),
			    *exp = json_object_new_array();

		json_object_object_add(o, "name", jsonc_string(ev->name));
		json_object_object_add(o, "kind", jsonc_string(sim_kind_names[ev->kind]));
		json_object_object_add(o, "start_ms", json_object_new_int64((int64_t)from));
		json_object_object_add(o, "end_ms", json_object_new_int64(
			(int64_t)(to < sm->end_ms ? to : sm->end_ms)));
		json_object_object_add(o, "ends",
				       json_object_new_boolean(ev->for_ms && to < sm->end_ms));
		json_object_object_add(o, "value", json_object_new_double(ev->value));
		for (uint32_t k = 0; k < sm->nsel[e]; k++)
			json_object_array_add(hosts, jsonc_string(sm->name(sm->sel[e][k], sm->arg)));
		json_object_object_add(o, "hosts", hosts);
		for (int x = 0; x < ev->nexpect; x++)
			json_object_array_add(exp, expect_json(&ev->expect[x]));
		json_object_object_add(o, "expect", exp);
		json_object_array_add(evs, o);
	}
	json_object_object_add(doc, "events", evs);
	if (json_object_to_file_ext(path, doc, JSON_C_TO_STRING_PLAIN) < 0) {
		ret = errno ? -errno : -EIO;
		snprintf(err, errlen, "cannot write the timeline to %s: %s", path, strerror(-ret));
	}
	json_object_put(doc);
	return ret;
}
