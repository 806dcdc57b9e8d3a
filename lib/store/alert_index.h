/*
 * alert_index.h - the fleet's alerts as the alerters took them: one hash,
 * {fl:alerts}:active, FP -> "ID S STARTS EVENT" (the group record's shape,
 * alert_group.h: S f firing or r resolved), the newest event of each alert
 * whichever group it went to, and _v, a version that moves with every
 * change.
 *
 * It is written by alert_group_take's script, in the same step that takes
 * the event into its group, so it never says less than the groups do.  It
 * is what Alertmanager's alert store is to its inhibitor and its API:
 * inhibit_rules look at the firing alerts in it (every alerter sees the
 * same sources), GET /api/v2/alerts and `faultline alerts` list it.
 * Resolutions stay an hour (a late, older copy of a firing event is then
 * known to be older) and are pruned by alert_index_prune.
 *
 * Every record is read back as outside input (alert_group_record_parse):
 * one of the wrong shape is skipped and counted, never trusted.
 */
#ifndef FL_STORE_ALERT_INDEX_H
#define FL_STORE_ALERT_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "store/alert_group.h"

struct conn;

struct alert_index {
	struct alert_group_member *m;	/* the firing alerts */
	int n;
	uint64_t version;		/* _v */
	int resolved;			/* resolutions held (not loaded) */
	int bad;			/* records skipped: not of the shape above */
};

/*
 * Load the firing alerts (at most ALERT_INDEX_MAX; past that err says so
 * and ix->bad counts the rest).  Returns 0 or an ALERT_STREAM_ error.
 */
#define ALERT_INDEX_MAX 200000
int alert_index_load(struct conn *rc, struct alert_index *ix, char *err, size_t errlen);
void alert_index_free(struct alert_index *ix);

/* The index's version (0: empty).  Returns 0 or an ALERT_STREAM_ error. */
int alert_index_version(struct conn *rc, uint64_t *version, char *err, size_t errlen);

/*
 * Drop resolutions whose entry is older than keep_ms at now_ms (and
 * records that are not of the shape above).  Returns how many went, or an
 * ALERT_STREAM_ error.
 */
int alert_index_prune(struct conn *rc, uint64_t now_ms, uint64_t keep_ms, char *err,
		      size_t errlen);

/*
 * An index never written (an alerter upgraded from before it, whose groups
 * hold alerts firing since): filled from every group's state, each alert's
 * newest record kept, then marked written so this runs once.  Any number
 * of alerters may run it at once.  *groups and *taken say what it read.
 * Returns 0 or an ALERT_STREAM_ error.
 */
int alert_index_backfill(struct conn *rc, int *groups, int *taken, char *err, size_t errlen);

/*
 * Call fn with the id of every alert group in Redis (SCAN: each at least
 * once while they change; fn may read the group).  fn returns 0 to go on
 * or an ALERT_STREAM_ error, which stops the walk and is returned.
 * Returns 0 or an ALERT_STREAM_ error.
 */
typedef int (*alert_group_fn)(struct conn *rc, const char *gid, void *arg, char *err,
			      size_t errlen);
int alert_groups_each(struct conn *rc, alert_group_fn fn, void *arg, char *err, size_t errlen);

#endif
