/*
 * mute.h - what mutes a notification (time intervals, inhibit rules,
 * silences); see mute.c.
 */
#ifndef FL_ALERTER_MUTE_H
#define FL_ALERTER_MUTE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct alerter;
struct group;
struct alert;

enum mute_kind {
	MUTE_NONE,
	MUTE_INHIBITED,		/* an inhibit rule, by a firing source */
	MUTE_SILENCED,		/* a silence */
};

/*
 * Before a flush of g (its alerts loaded): 1 when its route's time
 * intervals mute the whole notification at now (why says which), else 0,
 * with the fleet's firing alerts brought up to date when some alert of g
 * may be inhibited.
 */
int mute_group(struct alerter *al, const struct group *g, time_t now, char *why, size_t len);

/* Whether alert a is muted at wall_ms, and by what (why). */
enum mute_kind mute_alert(struct alerter *al, const struct alert *a, uint64_t wall_ms,
			  char *why, size_t len);

#endif
