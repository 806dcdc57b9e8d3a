/*
 * evidence.h - what a notification shows about why it paged (evidence.c).
 */
#ifndef FL_ALERTER_EVIDENCE_H
#define FL_ALERTER_EVIDENCE_H

#include <json-c/json.h>

#include "alerter/alerter.h"

/*
 * Add each firing alert's evidence (the kinds its ALERT_EV_* bits ask for,
 * read through rc) to evs, an array inside doc, while doc stays under
 * cfg->max_payload_bytes.  Returns 1 when some evidence was left out for
 * size, else 0.
 */
int evidence_add(const struct alerter_config *cfg, json_object *doc, json_object *evs,
		 struct group_alert *const *as, int n, struct conn *rc);

#endif
