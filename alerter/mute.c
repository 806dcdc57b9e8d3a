/*
 * mute.c - what mutes a notification, decided at flush as Alertmanager
 * decides it: the route's time intervals (the whole notification), then,
 * alert by alert, the inhibit rules and the silences.  A mute touches the
 * notification only, never the group's state: a muted firing alert makes
 * the group look again at its group_interval (delivery.c), and goes out
 * once nothing mutes it.
 *
 * Inhibition looks at the fleet's firing alerts in Redis (store/
 * alert_index.h), re-read only when its version moved, and only for a
 * group with an alert some rule may target: every alerter mutes the same
 * alerts, and a config without inhibit_rules costs nothing.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alerter/alerter_internal.h"
#include "alerter/mute.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "store/alert_index.h"

/* Bring al->ix up to date with Redis; on failure the last one read stays. */
static void refresh_index(struct alerter *al)
{
	struct alert_index fresh;
	uint64_t version;
	char err[300];

	if (!redis_ready(al) ||
	    redis_result(al, alert_index_version(al->rc, &version, err, sizeof(err)), err) < 0)
		goto stale;
	if (al->ix_loaded && version == al->ix.version)
		return;
	if (redis_result(al, alert_index_load(al->rc, &fresh, err, sizeof(err)), err) < 0)
		goto stale;
	if (fresh.bad) {
		al->bad_records += (uint64_t)fresh.bad;
		log_error("the fleet's alerts (" KEY_ALERTS_ACTIVE "): %d record(s) skipped%s%s",
			  fresh.bad, err[0] ? ": " : "", err);
	}
	alert_index_free(&al->ix);
	al->ix = fresh;
	al->ix_loaded = 1;
	return;
stale:
	log_warn("inhibition: the fleet's alerts could not be read from Redis; muting by the "
		 "last read (%d firing)", al->ix.n);
}

int mute_group(struct alerter *al, const struct group *g, time_t now, char *why, size_t len)
{
	const struct alerter_config *cfg = &al->cfg;
	const char *name;
	int outside;

	if (g->route && (name = route_time_muted(g->route, cfg->time_intervals, now, &outside))) {
		snprintf(why, len, outside ? "outside its active time interval '%s'" :
			 "in its mute time interval '%s'", name);
		return 1;
	}
	if (cfg->ninhibit_rules) {
		for (int i = 0; i < g->nalerts; i++)
			if (inhibit_may_target(cfg->inhibit_rules, cfg->ninhibit_rules,
					       &g->alerts[i]->a)) {
				refresh_index(al);
				break;
			}
	}
	return 0;
}

enum mute_kind mute_alert(struct alerter *al, const struct alert *a, uint64_t wall_ms,
			  char *why, size_t len)
{
	const struct alerter_config *cfg = &al->cfg;
	const struct silence *sil;
	int k, rule;

	if (cfg->ninhibit_rules && al->ix_loaded &&
	    (k = inhibit_source(cfg->inhibit_rules, cfg->ninhibit_rules, al->ix.m, al->ix.n, a,
				&rule)) >= 0) {
		snprintf(why, len, "inhibited by %s %s (inhibit rule at line %d)",
			 al->ix.m[k].a.fingerprint, alert_label(&al->ix.m[k].a, "alertname"),
			 cfg->inhibit_rules[rule].line);
		return MUTE_INHIBITED;
	}
	sil = silence_find(al->silences, al->nsilences, a, wall_ms);
	if (sil) {
		snprintf(why, len, "silenced by %s (%s)", sil->id, sil->comment);
		return MUTE_SILENCED;
	}
	return MUTE_NONE;
}
