/*
 * groups.c - an alert event into its route's group (alerter_internal.h): a
 * re-read is skipped, a repeat or an older state acknowledged, the newest
 * state of an alert held until a notification carries it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerter/alerter_internal.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "store/alert_stream.h"

/* Stream ids "ms-seq" in stream order (-1, 0, 1). */
static int entry_id_cmp(const char *a, const char *b)
{
	unsigned long long am = 0, as = 0, bm = 0, bs = 0;

	sscanf(a, "%llu-%llu", &am, &as);
	sscanf(b, "%llu-%llu", &bm, &bs);
	return am != bm ? (am < bm ? -1 : 1) : as != bs ? (as < bs ? -1 : 1) : 0;
}

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

/* Record that ga's entry is the newest of its alert this alerter took (several alerters). */
static void mark_latest(struct alerter *al, const struct group_alert *ga)
{
	char err[256];

	if (redis_ready(al))
		redis_result(al, alert_stream_mark_latest(al->rc, ga->a.fingerprint, ga->entry_id,
							  err, sizeof(err)), err);
}

/*
 * Drop from g the alerts another alerter has since taken a newer event of
 * (several alerters on one group): that state is the other's to notify,
 * and this one's would arrive after it, out of date.  Their entries stay
 * in g->ids and are acknowledged with g's next notification.
 */
void drop_superseded(struct alerter *al, struct group *g)
{
	const char **fps = calloc((size_t)g->nalerts + 1, sizeof(*fps));
	const char **ids = calloc((size_t)g->nalerts + 1, sizeof(*ids));
	char *newer = calloc((size_t)g->nalerts + 1, 1), err[256];
	int n = g->nalerts;

	if (!fps || !ids || !newer || !redis_ready(al))
		goto out;
	for (int i = 0; i < n; i++) {
		fps[i] = g->alerts[i]->a.fingerprint;
		ids[i] = g->alerts[i]->entry_id;
	}
	if (redis_result(al, alert_stream_superseded(al->rc, fps, ids, n, newer, err,
						     sizeof(err)), err) < 0)
		goto out;
	for (int i = n - 1; i >= 0; i--) {
		if (!newer[i])
			continue;
		log_info("%s %s: another alerter took a newer event of this alert; leaving it "
			 "to that one", alert_label(&g->alerts[i]->a, "alertname"),
			 g->alerts[i]->a.fingerprint);
		drop_alert(g->alerts[i]);
		g->alerts[i] = g->alerts[--g->nalerts];
		g->changed = 1;
	}
out:
	free(fps);
	free(ids);
	free(newer);
}

void take_event(struct alerter *al, const char *id, const char *json, size_t len)
{
	struct group_alert *ga;
	const struct silence *sil;
	struct group *g;
	char err[256];
	uint32_t dummy;
	int route;

	if (strmap_get(&al->held, id, &dummy))
		return;
	ga = calloc(1, sizeof(*ga));
	if (!ga)
		return;
	if (alert_parse(&ga->a, json, len, err, sizeof(err))) {
		log_error("%s entry %s is not an alert event (%s); dead-lettered to %s", STREAM, id,
			  err, DEAD_STREAM);
		if (dead_letter(al, err, "", "", id, json, len) == 0)
			ack_one(al, id);
		free(ga);
		return;
	}
	snprintf(ga->entry_id, sizeof(ga->entry_id), "%s", id);
	ga->sent_state = -1;
	al->received[ga->a.firing ? 1 : 0]++;
	sil = silence_find(al->silences, al->nsilences, &ga->a, time_wall_ns() / NSEC_PER_MSEC);
	if (sil) {
		char detail[800];

		snprintf(detail, sizeof(detail), "%s %s silenced by %s (%s)", ga->a.fingerprint,
			 alert_label(&ga->a, "alertname"), sil->id, sil->comment);
		record(al, "silenced", alert_label(&ga->a, "alertname"), detail);
		log_info("%s", detail);
		ack_one(al, id);
		drop_alert(ga);
		return;
	}
	route = route_of(&al->cfg, &ga->a);
	if (route < 0) {
		log_warn("alert %s matches no route; dead-lettered to %s (add a catch-all route)",
			 alert_label(&ga->a, "alertname"), DEAD_STREAM);
		if (dead_letter(al, "no route", "", "", id, json, len) == 0)
			ack_one(al, id);
		drop_alert(ga);
		return;
	}
	g = group_for(al, route, &ga->a);
	if (!g) {
		drop_alert(ga);
		return;
	}
	for (int i = 0; i < g->nalerts; i++) {
		struct group_alert *held = g->alerts[i];

		if (strcmp(held->a.fingerprint, ga->a.fingerprint))
			continue;
		if (entry_id_cmp(id, held->entry_id) < 0 ||
		    (held->a.firing == ga->a.firing && held->a.starts_ms == ga->a.starts_ms)) {
			/*
			 * Older than what we hold, or the same state again: the entry that
			 * carries the state is held (or was delivered), so this one may go.
			 */
			ack_one(al, id);
			drop_alert(ga);
			return;
		}
		/* the newest state wins; a different startsAt is a new incident */
		g->changed = 1;
		ga->sent_state = held->sent_state;
		if (ga->a.firing && held->a.starts_ms != ga->a.starts_ms)
			ga->sent_state = -1;
		drop_alert(held);
		g->alerts[i] = ga;
		hold(al, g, id);
		mark_latest(al, ga);
		return;
	}
	{
		struct group_alert **n = realloc(g->alerts, (size_t)(g->nalerts + 1) * sizeof(*n));

		if (!n) {
			drop_alert(ga);
			return;
		}
		g->alerts = n;
		g->alerts[g->nalerts++] = ga;
		g->changed = 1;
	}
	hold(al, g, id);
	mark_latest(al, ga);
}
