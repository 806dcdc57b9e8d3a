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
#include "core/promtext.h"
#include "model/labels.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "store/alert_group.h"
#include "store/alert_index.h"
#include "store/alert_stream.h"

/*
 * The group of alert a under route rt for integration `integ`, made when
 * new.  Its key names the integration, the route and the group labels, so
 * the same alert routed twice (continue, several configs) is two groups;
 * the flat list's keys are the ones faultline always used.
 */
static struct group *group_for(struct alerter *al, const struct route *rt, int integ,
			       const struct alert *a)
{
	struct label *gl = calloc(a->nlabels + (size_t)rt->ngroup_by + 1, sizeof(*gl));
	struct strbuf key = STRBUF_INIT, pkey = STRBUF_INIT;
	struct group *g = NULL, **n;
	int ngl;

	if (!gl)
		return NULL;
	ngl = route_group_labels(rt, a, gl, (int)a->nlabels + rt->ngroup_by);
	/* whole, escaped: a key is never cut, so two groups never share one */
	strbuf_addf(&key, "%s:", al->cfg.integrations[integ].name);
	if (!rt->legacy)
		strbuf_addf(&key, "%s:", rt->id);
	labels_format(&key, gl, ngl);
	if (rt->legacy) {
		strbuf_adds(&pkey, strbuf_str(&key));
	} else {
		/* Alertmanager's groupKey: route key, then its LabelSet.String() */
		strbuf_addf(&pkey, "%s:{", rt->key);
		for (int i = 0; i < ngl; i++) {
			if (i)
				strbuf_adds(&pkey, ", ");
			promtext_label(&pkey, gl[i].key, gl[i].value, 1);
		}
		strbuf_adds(&pkey, "}");
	}
	for (int i = 0; i < al->ngroups; i++)
		if (!strcmp(al->groups[i]->key, strbuf_str(&key))) {
			g = al->groups[i];
			goto out;
		}
	g = calloc(1, sizeof(*g));
	n = realloc(al->groups, (size_t)(al->ngroups + 1) * sizeof(*n));
	if (n)
		al->groups = n;
	if (!g || !n || !(g->glabels = calloc((size_t)ngl + 1, sizeof(*g->glabels))) ||
	    !(g->key = strdup(strbuf_str(&key))) || !(g->pkey = strdup(strbuf_str(&pkey)))) {
		if (g) {
			free(g->glabels);
			free(g->key);
		}
		free(g);
		g = NULL;
		goto out;
	}
	g->integration = integ;
	g->route = rt;
	g->group_wait_ns = rt->group_wait_ns;
	g->group_interval_ns = rt->group_interval_ns;
	g->repeat_interval_ns = rt->repeat_interval_ns;
	for (int i = 0; i < ngl; i++) {
		g->glabels[g->ngl].key = strdup(gl[i].key);
		g->glabels[g->ngl].value = strdup(gl[i].value);
		g->ngl++;
	}
	g->created_ns = time_mono_ns();
	alert_group_id(g->key, g->gid);
	strbuf_init(&g->body);
	al->groups[al->ngroups++] = g;
out:
	free(gl);
	strbuf_release(&key);
	strbuf_release(&pkey);
	return g;
}

/* Hold entry id in g until a notification carrying it is delivered; -1: out of memory. */
static int hold(struct alerter *al, struct group *g, const char *id)
{
	char (*n)[32] = realloc(g->ids, (size_t)(g->nids + 1) * sizeof(*n));
	uint32_t holders = 0;

	if (!n) {
		/* not held: it stays pending in Redis and comes back on a re-read */
		log_error("out of memory holding %s entry %s", STREAM, id);
		return -1;
	}
	g->ids = n;
	snprintf(g->ids[g->nids++], 32, "%s", id);
	strmap_get(&al->held, id, &holders);
	strmap_put(&al->held, id, holders + 1);
	return 0;
}

/* Undo hold(): g gives id back without it being settled (a take that failed half-way). */
static void unhold(struct alerter *al, struct group *g, const char *id)
{
	uint32_t holders = 0;

	for (int i = g->nids - 1; i >= 0; i--) {
		if (strcmp(g->ids[i], id))
			continue;
		memmove(g->ids + i, g->ids + i + 1, (size_t)(g->nids - i - 1) * sizeof(*g->ids));
		g->nids--;
		if (strmap_get(&al->held, id, &holders) && holders > 1)
			strmap_put(&al->held, id, holders - 1);
		else
			strmap_del(&al->held, id);
		return;
	}
}

int release(struct alerter *al, char (*ids)[32], int n)
{
	char (*done)[32] = calloc((size_t)n + 1, sizeof(*done));
	int ndone = 0, ret;

	if (!done)
		return -1;	/* still held: acknowledged with a later release or re-read */
	for (int i = 0; i < n; i++) {
		uint32_t holders = 0;

		if (strmap_get(&al->held, ids[i], &holders) && holders > 1) {
			strmap_put(&al->held, ids[i], holders - 1);
			continue;	/* another group still has it to notify */
		}
		memcpy(done[ndone++], ids[i], sizeof(done[0]));
	}
	ret = ack(al, done, ndone);
	free(done);
	return ret;
}

void drop_alert(struct group_alert *ga)
{
	alert_free(&ga->a);
	free(ga);
}

/*
 * A group taken up whose newest version was notified at notified_ms (wall
 * ms), by this alerter before a restart or by a peer: as if this one had
 * sent it then, so its next repeat is due a repeat_interval after that.
 */
static void sent_before(struct group *g, uint64_t notified_ms)
{
	uint64_t now = time_mono_ns(), wall_ms = time_wall_ns() / NSEC_PER_MSEC;
	uint64_t ago = wall_ms > notified_ms ? (wall_ms - notified_ms) * NSEC_PER_MSEC : 0;

	g->sent_once = 1;
	g->firing = 1;
	/* longer ago than this machine is up (it rebooted): due as soon as it can be */
	g->last_sent_ns = now > ago ? now - ago : 0;
}

/*
 * Take event json into every group it reaches.  from_stream: it is the
 * fl:alerts entry id, held by the groups until settled (or dead-lettered
 * or acknowledged at once); else it is an alert a group in Redis already
 * holds, whose entry was settled long ago (groups_take_up): its groups
 * are made to look at it again, nothing is held or acknowledged.  Then
 * notified_ms, when not 0, says the group's newest version was notified
 * then (wall ms): a group this alert reaches unchanged counts as sent at
 * that time, so its repeats (and resends to an Alertmanager) go on.
 */
static void take_alert(struct alerter *al, const char *id, const char *json, size_t len,
		       int from_stream, uint64_t notified_ms)
{
	const struct route *routes[ROUTE_MAX_NODES];	/* a route matches once at most */
	struct group **held_by = NULL;
	struct alert a;
	char err[300];
	uint32_t dummy;
	int nroutes, nheld = 0, ntaken = 0, nreach = 0;

	if (from_stream && strmap_get(&al->held, id, &dummy))
		return;
	if (alert_parse(&a, json, len, err, sizeof(err))) {
		if (!from_stream)
			return;	/* a group's record: alert_group_load checked it */
		log_error("%s entry %s is not an alert event (%s); dead-lettered to %s", STREAM, id,
			  err, DEAD_STREAM);
		if (dead_letter(al, err, "", "", id, json, len) == 0)
			ack_one(al, id);
		return;
	}
	al->received[a.firing ? 1 : 0]++;
	nroutes = route_match(&al->cfg.root, &a, routes, ROUTE_MAX_NODES);
	if (nroutes == 0 && !from_stream) {
		alert_free(&a);
		return;	/* the routes changed since: nothing of this config holds it */
	}
	if (nroutes == 0) {
		log_warn("alert %s matches no route; dead-lettered to %s (add a catch-all route)",
			 alert_label(&a, "alertname"), DEAD_STREAM);
		if (dead_letter(al, "no route", "", "", id, json, len) == 0)
			ack_one(al, id);
		alert_free(&a);
		return;
	}
	/* every route it reaches, every integration of that route's receiver */
	for (int r = 0; r < nroutes; r++)
		nreach += al->cfg.receiver_names[routes[r]->receiver].n;
	held_by = calloc((size_t)nreach + 1, sizeof(*held_by));
	if (!held_by)
		goto again;
	for (int r = 0; r < nroutes; r++) {
		const struct receiver_name *rn = &al->cfg.receiver_names[routes[r]->receiver];

		for (int k = 0; k < rn->n; k++) {
			enum alert_group_verdict verdict;
			struct group *g = group_for(al, routes[r], rn->first + k, &a);
			int unsent, ret;

			if (!g || !redis_ready(al))
				goto again;
			ret = redis_result(al, alert_group_take(al->rc, g->gid, a.fingerprint, id,
								a.firing, a.starts_ms, json, len,
								&verdict, &unsent, err,
								sizeof(err)), err);
			if (ret < 0)
				goto again;
			ntaken++;
			if (!from_stream && notified_ms && verdict != ALERT_GROUP_NEW && !unsent &&
			    !g->sent_once)
				sent_before(g, notified_ms);
			if (verdict == ALERT_GROUP_NEW || unsent) {
				/* a new state, or one a version not yet notified covers */
				g->changed = 1;
				if (a.firing && alert_label(&a, "severity") &&
				    !strcmp(alert_label(&a, "severity"), "page"))
					g->page = 1;
				if (!from_stream)
					continue;
				if (hold(al, g, id))
					goto again;
				held_by[nheld++] = g;
			}
		}
	}
	if (!nheld && from_stream) {
		log_debug("%s %s: %s; acknowledged", alert_label(&a, "alertname"), a.fingerprint,
			  ntaken ? "nothing new to any group it reaches" :
			  "its receiver has no integrations (it drops what reaches it)");
		ack_one(al, id);
	}
	free(held_by);
	alert_free(&a);
	return;
again:
	/* not taken everywhere: give back what was held and read it again (takes repeat safely) */
	while (nheld--)
		unhold(al, held_by[nheld], id);
	free(held_by);
	alert_free(&a);
	al->read_pending = 1;
}

void take_event(struct alerter *al, const char *id, const char *json, size_t len)
{
	take_alert(al, id, json, len, 1, 0);
}

struct take_up {
	struct alerter *al;
	int groups, notified, alerts, held;
};

/*
 * 1 when an entry a member of st came in is still pending: an alerter read
 * it and has not settled it.  The group is that alerter's to notify (or,
 * should it be dead, whoever claims the entry); taking it up too would
 * page twice.  0 else, or the ALERT_STREAM_ error of Redis not saying.
 */
static int group_held(struct conn *rc, const struct alert_group_state *st, char *err,
		      size_t errlen)
{
	const char **ids = calloc((size_t)st->n + 1, sizeof(*ids));
	int pending, ret;

	if (!ids) {
		snprintf(err, errlen, "out of memory");
		return ALERT_STREAM_REFUSED;
	}
	for (int i = 0; i < st->n; i++)
		ids[i] = st->m[i].entry_id;
	ret = alert_stream_pending_of(rc, ids, st->n, &pending, err, errlen);
	free(ids);
	return ret ? ret : pending > 0;
}

/*
 * A group holding a firing alert that no alerter holds (no entry of it
 * pending): its firing alerts taken again.  Its newest version not yet
 * notified (muted when it came, or its alerter stopped first): it is
 * notified as its intervals come.  Notified: it counts as sent then, so
 * its repeats and Alertmanager resends go on after a restart.
 */
static int take_up_group(struct conn *rc, const char *gid, void *arg, char *err, size_t errlen)
{
	struct take_up *tu = arg;
	struct alert_group_state st;
	struct strbuf sb = STRBUF_INIT;
	int firing = 0, held, notified;

	if (alert_group_load(rc, gid, &st, err, errlen))
		return 0;	/* unreadable now: its next event brings it back */
	for (int i = 0; i < st.n; i++)
		firing += st.m[i].a.firing;
	if (!firing) {
		alert_group_state_free(&st);
		return 0;
	}
	if ((held = group_held(rc, &st, err, errlen)) < 0) {
		alert_group_state_free(&st);
		return held;	/* Redis did not say: the take-up is tried again */
	}
	notified = st.notified_version && st.version <= st.notified_version;
	if (held) {
		tu->held++;
	} else {
		if (notified)
			tu->notified++;
		else
			tu->groups++;
		for (int i = 0; i < st.n; i++) {
			if (!st.m[i].a.firing)
				continue;
			strbuf_reset(&sb);
			if (alert_encode(&st.m[i].a, &sb) || strbuf_failed(&sb))
				continue;
			take_alert(tu->al, st.m[i].entry_id, strbuf_str(&sb), sb.len, 0,
				   notified ? (st.notified_ms ? st.notified_ms :
					       time_wall_ns() / NSEC_PER_MSEC) : 0);
			tu->alerts++;
		}
	}
	strbuf_release(&sb);
	alert_group_state_free(&st);
	return 0;
}

int groups_take_up(struct alerter *al)
{
	struct take_up tu = { al, 0, 0, 0, 0 };
	char err[300];

	if (redis_result(al, alert_groups_each(al->rc, take_up_group, &tu, err, sizeof(err)),
			 err) < 0)
		return -1;
	if (tu.groups || tu.notified)
		log_info("took up %d firing alert group(s) (%d firing alert(s)): %d whose newest "
			 "state no alerter notified (muted when it was read, or an alerter stopped "
			 "first), looked at again as their intervals come; %d notified, repeated "
			 "from when they were", tu.groups + tu.notified, tu.alerts, tu.groups,
			 tu.notified);
	if (tu.held)
		log_info("left %d alert group(s) to the alerter(s) holding their events (claimed "
			 "from them after claim_idle should they be dead)", tu.held);
	return 0;
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
