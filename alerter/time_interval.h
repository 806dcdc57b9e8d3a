/*
 * time_interval.h - Alertmanager's time intervals: named sets of recurring
 * periods (`time_intervals:`, or the older `mute_time_intervals:`) that a
 * route names in `mute_time_intervals` (no notification while any of them
 * holds) or `active_time_intervals` (none unless one of them holds).
 *
 * One period is a conjunction of what it gives: `times` (HH:MM, start
 * included, end excluded, 24:00 the end of the day), `weekdays`
 * ('monday:friday', 'sunday'), `days_of_month` ('1:5', '-1' the last day,
 * '-7:-1' the last week), `months` ('january:march', '1:3'), `years`
 * ('2026:2027'), each a list of ranges any of which may hold, all of them
 * read in `location` (an IANA zone such as 'Europe/Berlin', 'Local', or
 * UTC when absent).  A named interval holds when any of its periods does.
 *
 * As in Alertmanager, a route's intervals are its own (a child does not
 * inherit them), the root route takes none, and a muted notification is
 * not sent and not recorded as notified: its firing alerts are looked at
 * again at the group's interval, and go out once the mute ends.  A mute
 * touches notifications only, never the group's state.
 */
#ifndef FL_ALERTER_TIME_INTERVAL_H
#define FL_ALERTER_TIME_INTERVAL_H

#include <stddef.h>
#include <time.h>

#include "core/config.h"

#define TIME_INTERVAL_NAME_MAX 128

struct ti_range {
	int lo, hi;	/* inclusive; minutes for times (hi exclusive there) */
};

struct ti_period {
	struct ti_range *times, *weekdays, *days, *months, *years;
	int ntimes, nweekdays, ndays, nmonths, nyears;
	char location[64];	/* "" UTC, "Local", or a zone under /usr/share/zoneinfo */
};

struct time_interval {
	char name[TIME_INTERVAL_NAME_MAX];
	struct ti_period *p;
	int np;
};

/*
 * The list node n (a `time_intervals:` section) appended to *ti / *nti;
 * names must be new.  Every key is checked, values and ranges too (a day
 * 0, a start after its end, an unknown zone): file:line:col in err.
 * Returns 0, -EINVAL or -ENOMEM.
 */
int time_intervals_parse(const struct cfg *c, const struct cfg_node *n,
			 struct time_interval **ti, int *nti, char *err, size_t errlen);

/* The index of the interval called name, or -1. */
int time_interval_find(const struct time_interval *ti, int n, const char *name);

/* 1 when t falls in ti (any of its periods). */
int time_interval_holds(const struct time_interval *ti, time_t t);

void time_intervals_free(struct time_interval *ti, int n);

#endif
