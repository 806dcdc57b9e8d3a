/*
 * alert_view.h - one firing alert as the API and `faultline alerts` show
 * it: the receivers its routes reach, the silences that mute it (active
 * now, every one), the firing alert that inhibits it, and its JSON in
 * Alertmanager's API v2 shape (gettableAlert).  Worked out from the
 * config, the fleet's index (store/alert_index.h) and the silences, the
 * way the alerter mutes at flush (mute.c).
 */
#ifndef FL_ALERTER_ALERT_VIEW_H
#define FL_ALERTER_ALERT_VIEW_H

#include <stdint.h>

#include <json-c/json.h>

#include "alerter/alerter.h"
#include "store/alert_index.h"
#include "store/silence.h"

struct alert_view {
	const struct alert *a;
	const char *entry_id;
	const char *receivers[MAX_RECEIVER_NAMES];
	int nreceivers;
	const struct route *routes[ROUTE_MAX_NODES];
	int nroutes;
	const struct silence *sil;	/* the silences looked at (every one listed) */
	int nsil;
	uint64_t now_ms;
	int nsilenced;			/* how many of them mute it now */
	const char *inhibited_by;	/* a firing source's fingerprint */
};

/* v for member m of ix, at now_ms (v points into cfg, ix, sil and m). */
void alert_view_of(const struct alerter_config *cfg, const struct alert_index *ix,
		   const struct silence *sil, int nsil, uint64_t now_ms,
		   const struct alert_group_member *m, struct alert_view *v);

/* 1 when silence i of v->sil mutes v's alert now. */
int alert_view_silenced_by(const struct alert_view *v, int i);

/* v as a gettableAlert. */
json_object *alert_view_json(const struct alert_view *v);

/* An RFC 3339 time with milliseconds (0: Go's zero time, as Alertmanager writes it). */
json_object *alert_view_time(uint64_t ms);

/* A label set as a JSON object. */
json_object *alert_view_labels(const struct label *l, uint32_t n);

#endif
