/*
 * groups.c - an alert event into its route's group (alerter_internal.h):
 * the group's state lives in Redis (store/alert_group.h); here an entry is
 * routed, taken into that state, and held until a notification settles it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerter/alerter_internal.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "store/alert_group.h"
#include "store/alert_stream.h"

static int route_of(const struct alerter_config *cfg, const struct alert *a)
{
	for (int i = 0; i < cfg->nroutes; i++) {
		int all = 1;

		for (int k = 0; k < cfg->routes[i].nm && all; k++)
			all = matcher_match(&cfg->routes[i].m[k], a);
		if (all)
			return i;
	}
	return -1;
}

static struct group *group_for(struct alerter *al, int route, const struct alert *a)
{
	const struct route *rt = &al->cfg.routes[route];
	char key[512];
	size_t off;
	struct group *g, **n;

	off = (size_t)snprintf(key, sizeof(key), "%s:{", al->cfg.receivers[rt->receiver].name);
	for (int i = 0; i < rt->ngroup_by && off < sizeof(key); i++) {
		const char *v = alert_label(a, rt->group_by[i]);

		off += (size_t)snprintf(key + off, sizeof(key) - off, "%s%s=\"%s\"", i ? "," : "",
					rt->group_by[i], v ? v : "");
	}
	if (off < sizeof(key))
		snprintf(key + off, sizeof(key) - off, "}");
	for (int i = 0; i < al->ngroups; i++)
		if (!strcmp(al->groups[i]->key, key))
			return al->groups[i];
	g = calloc(1, sizeof(*g));
	n = realloc(al->groups, (size_t)(al->ngroups + 1) * sizeof(*n));
	if (!g || !n) {
		free(g);
		return NULL;
	}
	al->groups = n;
	snprintf(g->key, sizeof(g->key), "%s", key);
	g->receiver = rt->receiver;
	for (int i = 0; i < rt->ngroup_by; i++) {
		const char *v = alert_label(a, rt->group_by[i]);

		g->glabels[g->ngl].key = strdup(rt->group_by[i]);
		g->glabels[g->ngl].value = strdup(v ? v : "");
		g->ngl++;
	}
	g->created_ns = time_mono_ns();
	alert_group_id(g->key, g->gid);
	strbuf_init(&g->body);
	al->groups[al->ngroups++] = g;
	return g;
}

/* Hold entry id in g until a notification carrying it is delivered. */
static void hold(struct alerter *al, struct group *g, const char *id)
{
	char (*n)[32] = realloc(g->ids, (size_t)(g->nids + 1) * sizeof(*n));

	if (!n) {
		/* not held: it stays pending in Redis and comes back on a re-read */
		log_error("out of memory holding %s entry %s", STREAM, id);
		return;
	}
	g->ids = n;
	snprintf(g->ids[g->nids++], 32, "%s", id);
	strmap_put(&al->held, id, 1);
}

void drop_alert(struct group_alert *ga)
{
	alert_free(&ga->a);
	free(ga);
}

void take_event(struct alerter *al, const char *id, const char *json, size_t len)
{
	enum alert_group_verdict verdict;
	struct alert a;
	struct group *g;
	char err[300];
	uint32_t dummy;
	int route, unsent, ret;

	if (strmap_get(&al->held, id, &dummy))
		return;
	if (alert_parse(&a, json, len, err, sizeof(err))) {
		log_error("%s entry %s is not an alert event (%s); dead-lettered to %s", STREAM, id,
			  err, DEAD_STREAM);
		if (dead_letter(al, err, "", "", id, json, len) == 0)
			ack_one(al, id);
		return;
	}
	al->received[a.firing ? 1 : 0]++;
	route = route_of(&al->cfg, &a);
	if (route < 0) {
		log_warn("alert %s matches no route; dead-lettered to %s (add a catch-all route)",
			 alert_label(&a, "alertname"), DEAD_STREAM);
		if (dead_letter(al, "no route", "", "", id, json, len) == 0)
			ack_one(al, id);
		alert_free(&a);
		return;
	}
	g = group_for(al, route, &a);
	if (!g || !redis_ready(al)) {
		alert_free(&a);
		al->read_pending = 1;	/* not taken: read it again from our pending list */
		return;
	}
	ret = redis_result(al, alert_group_take(al->rc, g->gid, a.fingerprint, id, a.firing,
						a.starts_ms, json, len, &verdict, &unsent, err,
						sizeof(err)), err);
	if (ret < 0) {
		alert_free(&a);
		al->read_pending = 1;
		return;
	}
	if (verdict == ALERT_GROUP_NEW || unsent) {
		/* a new state, or one a version not yet notified covers: held until it is */
		g->changed = 1;
		hold(al, g, id);
	} else {
		log_debug("%s %s: %s; acknowledged", alert_label(&a, "alertname"), a.fingerprint,
			  verdict == ALERT_GROUP_SAME ? "a state its group holds and notified" :
			  "older than the state its group holds");
		ack_one(al, id);
	}
	alert_free(&a);
}

void prune_groups(struct alerter *al)
{
	int kept = 0;

	for (int i = 0; i < al->ngroups; i++) {
		struct group *g = al->groups[i];

		if (g->nids || g->pending || g->firing || g->muted_firing || g->changed) {
			al->groups[kept++] = g;
			continue;
		}
		group_free(al, g);
	}
	al->ngroups = kept;
}
