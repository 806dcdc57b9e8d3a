/*
 * time_interval.c - recurring periods; see time_interval.h.
 *
 * A zone other than UTC and Local is read through TZ: the process's zone is
 * switched for the conversion and put back.  The alerter converts on one
 * thread (its loop), and a conversion is a few microseconds per muted
 * route per flush, so owning a zoneinfo reader would buy nothing.
 */
#include "alerter/time_interval.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/array.h"

static const char *const weekday_names[] = { "sunday", "monday", "tuesday", "wednesday",
					     "thursday", "friday", "saturday" };
static const char *const month_names[] = { "january", "february", "march", "april", "may",
					   "june", "july", "august", "september", "october",
					   "november", "december" };

/* "HH:MM" (00:00 .. 24:00) into minutes; -1 when it is not one. */
static int parse_hhmm(const char *s)
{
	int h, m;
	char tail;

	if (strlen(s) != 5 || s[2] != ':' || !isdigit((unsigned char)s[0]) ||
	    !isdigit((unsigned char)s[1]) || !isdigit((unsigned char)s[3]) ||
	    !isdigit((unsigned char)s[4]) || sscanf(s, "%2d:%2d%c", &h, &m, &tail) != 2)
		return -1;
	if (h > 24 || m > 59 || (h == 24 && m))
		return -1;
	return h * 60 + m;
}

/* A number or, when names, one of them (case-insensitive; base: the first's value). */
static int parse_value(const char *s, const char *const *names, int nnames, int base, int *v)
{
	char *end;
	long n;

	for (int i = 0; names && i < nnames; i++)
		if (!strcasecmp(s, names[i])) {
			*v = base + i;
			return 0;
		}
	if (!*s)
		return -1;
	n = strtol(s, &end, 10);
	if (*end || n < -100000 || n > 100000)
		return -1;
	*v = (int)n;
	return 0;
}

struct range_kind {
	const char *key;
	const char *const *names;
	int nnames, base;
	int lo, hi;		/* values allowed */
	const char *what;
};

static const struct range_kind kinds[] = {
	{ "weekdays", weekday_names, 7, 0, 0, 6, "a weekday (sunday .. saturday)" },
	{ "days_of_month", NULL, 0, 0, -31, 31, "a day of the month (1 .. 31, or -31 .. -1 "
	  "from the end)" },
	{ "months", month_names, 12, 1, 1, 12, "a month (january .. december, or 1 .. 12)" },
	{ "years", NULL, 0, 0, 1, 9999, "a year" },
};

/* One "A" or "A:B" of kind k into r. */
static int parse_range(const struct cfg *c, const struct cfg_node *e, const struct range_kind *k,
		       struct ti_range *r, char *err, size_t errlen)
{
	char buf[64], *colon;

	if (e->type != CFG_SCALAR || !e->value || strlen(e->value) >= sizeof(buf))
		return cfg_error(c, e, err, errlen, "%s: each item is %s or a range A:B", k->key,
				 k->what);
	snprintf(buf, sizeof(buf), "%s", e->value);
	/* a negative day has its own '-': split on ':' only */
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	for (char *p = buf; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if (parse_value(buf, k->names, k->nnames, k->base, &r->lo) ||
	    (colon && parse_value(colon + 1, k->names, k->nnames, k->base, &r->hi)))
		return cfg_error(c, e, err, errlen, "%s: '%s' is not %s or a range of them",
				 k->key, e->value, k->what);
	if (!colon)
		r->hi = r->lo;
	if (r->lo < k->lo || r->lo > k->hi || r->hi < k->lo || r->hi > k->hi ||
	    (!strcmp(k->key, "days_of_month") && (!r->lo || !r->hi)))
		return cfg_error(c, e, err, errlen, "%s: '%s' is out of range: %s", k->key,
				 e->value, k->what);
	/* a day range may run from a day to one counted from the end ('1:-1') */
	if ((r->lo > 0) == (r->hi > 0) && r->lo > r->hi)
		return cfg_error(c, e, err, errlen, "%s: '%s' starts after it ends", k->key,
				 e->value);
	return 0;
}

static int parse_ranges(const struct cfg *c, const struct cfg_node *p, const struct range_kind *k,
			struct ti_range **out, int *n, char *err, size_t errlen)
{
	const struct cfg_node *l = cfg_get(p, k->key);
	int ret;

	if (!l)
		return 0;
	if (l->type != CFG_SEQ)
		return cfg_error(c, l, err, errlen, "%s: expected a list", k->key);
	*out = calloc(l->nchild + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < l->nchild; i++) {
		if ((ret = parse_range(c, &l->child[i], k, &(*out)[i], err, errlen)))
			return ret;
		(*n)++;
	}
	return 0;
}

static int parse_times(const struct cfg *c, const struct cfg_node *p, struct ti_period *tp,
		       char *err, size_t errlen)
{
	const struct cfg_node *l = cfg_get(p, "times");
	int ret;

	if (!l)
		return 0;
	if (l->type != CFG_SEQ)
		return cfg_error(c, l, err, errlen, "times: expected a list of {start_time, "
				 "end_time}");
	tp->times = calloc(l->nchild + 1, sizeof(*tp->times));
	if (!tp->times)
		return -ENOMEM;
	for (size_t i = 0; i < l->nchild; i++) {
		const struct cfg_node *e = &l->child[i];
		char *s = NULL, *t = NULL;
		int lo, hi;

		if (e->type != CFG_MAP)
			return cfg_error(c, e, err, errlen, "times: each item is {start_time: "
					 "'HH:MM', end_time: 'HH:MM'}");
		if ((ret = cfg_string(c, e, "start_time", &s, err, errlen)) ||
		    (ret = cfg_string(c, e, "end_time", &t, err, errlen)) ||
		    (ret = cfg_check_unknown(c, e, "start_time, end_time", err, errlen))) {
			free(s);
			free(t);
			return ret;
		}
		lo = s ? parse_hhmm(s) : -1;
		hi = t ? parse_hhmm(t) : -1;
		free(s);
		free(t);
		if (lo < 0 || lo == 24 * 60)
			return cfg_error(c, cfg_get(e, "start_time") ? cfg_get(e, "start_time") : e,
					 err, errlen, "start_time: expected 'HH:MM' from 00:00 to "
					 "23:59");
		if (hi < 0)
			return cfg_error(c, cfg_get(e, "end_time") ? cfg_get(e, "end_time") : e,
					 err, errlen, "end_time: expected 'HH:MM' from 00:00 to "
					 "24:00");
		if (hi <= lo)
			return cfg_error(c, cfg_get(e, "end_time"), err, errlen, "end_time: not "
					 "after start_time (a period across midnight is two: "
					 "start..24:00 and 00:00..end)");
		tp->times[tp->ntimes++] = (struct ti_range){ lo, hi };
	}
	return 0;
}

static int parse_location(const struct cfg *c, const struct cfg_node *p, struct ti_period *tp,
			  char *err, size_t errlen)
{
	char *loc = NULL, path[160];
	int ret;

	if ((ret = cfg_string(c, p, "location", &loc, err, errlen)) || !loc)
		return ret;
	if (!strcmp(loc, "UTC") || !*loc) {
		free(loc);
		return 0;
	}
	if (strlen(loc) >= sizeof(tp->location) || strstr(loc, "..") || loc[0] == '/' ||
	    (strcmp(loc, "Local") && (snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", loc),
				      access(path, R_OK)))) {
		ret = cfg_error(c, cfg_get(p, "location"), err, errlen, "location: '%s' is not a "
				"time zone (an IANA name such as 'Europe/Berlin' under "
				"/usr/share/zoneinfo, 'Local' or 'UTC')", loc);
		free(loc);
		return ret;
	}
	snprintf(tp->location, sizeof(tp->location), "%s", loc);
	free(loc);
	return 0;
}

static void period_free(struct ti_period *tp)
{
	free(tp->times);
	free(tp->weekdays);
	free(tp->days);
	free(tp->months);
	free(tp->years);
}

static int parse_period(const struct cfg *c, const struct cfg_node *p, struct ti_period *tp,
			char *err, size_t errlen)
{
	struct ti_range **outs[] = { &tp->weekdays, &tp->days, &tp->months, &tp->years };
	int *ns[] = { &tp->nweekdays, &tp->ndays, &tp->nmonths, &tp->nyears };
	int ret;

	if (p->type != CFG_MAP)
		return cfg_error(c, p, err, errlen, "time_intervals: each period is a map (times, "
				 "weekdays, days_of_month, months, years, location)");
	if ((ret = parse_times(c, p, tp, err, errlen)) ||
	    (ret = parse_location(c, p, tp, err, errlen)))
		return ret;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if ((ret = parse_ranges(c, p, &kinds[k], outs[k], ns[k], err, errlen)))
			return ret;
	return cfg_check_unknown(c, p, "times, weekdays, days_of_month, months, years, location",
				 err, errlen);
}

int time_intervals_parse(const struct cfg *c, const struct cfg_node *n,
			 struct time_interval **ti, int *nti, char *err, size_t errlen)
{
	size_t cap = (size_t)*nti;
	int ret;

	if (n->type == CFG_SCALAR && !n->value)
		return 0;	/* an empty section */
	if (n->type != CFG_SEQ)
		return cfg_error(c, n, err, errlen, "%s: expected a list of {name, "
				 "time_intervals}", n->key);
	for (size_t i = 0; i < n->nchild; i++) {
		const struct cfg_node *e = &n->child[i], *ps;
		struct time_interval *t;
		char *name = NULL;

		if (e->type != CFG_MAP)
			return cfg_error(c, e, err, errlen, "%s: each item is {name, "
					 "time_intervals}", n->key);
		ps = cfg_get(e, "time_intervals");
		if ((ret = cfg_string(c, e, "name", &name, err, errlen)) ||
		    (ret = cfg_check_unknown(c, e, "name, time_intervals", err, errlen))) {
			free(name);
			return ret;
		}
		if (!name || !*name || strlen(name) >= TIME_INTERVAL_NAME_MAX) {
			free(name);
			return cfg_error(c, e, err, errlen, "name: every time interval has a name "
					 "(under %d bytes)", TIME_INTERVAL_NAME_MAX);
		}
		if (time_interval_find(*ti, *nti, name) >= 0) {
			ret = cfg_error(c, cfg_get(e, "name"), err, errlen, "name: '%s' is defined "
					"twice", name);
			free(name);
			return ret;
		}
		if (ARRAY_GROW(*ti, cap, *nti + 1, 4)) {
			free(name);
			return -ENOMEM;
		}
		t = &(*ti)[(*nti)++];
		memset(t, 0, sizeof(*t));
		snprintf(t->name, sizeof(t->name), "%s", name);
		free(name);
		if (!ps)
			continue;	/* no period: it never holds (as Alertmanager reads it) */
		if (ps->type != CFG_SEQ)
			return cfg_error(c, ps, err, errlen, "time_intervals: expected a list of "
					 "periods");
		t->p = calloc(ps->nchild + 1, sizeof(*t->p));
		if (!t->p)
			return -ENOMEM;
		for (size_t k = 0; k < ps->nchild; k++) {
			t->np++;	/* counted first, so a half-parsed period is freed */
			if ((ret = parse_period(c, &ps->child[k], &t->p[k], err, errlen)))
				return ret;
		}
	}
	return 0;
}

int time_interval_find(const struct time_interval *ti, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(ti[i].name, name))
			return i;
	return -1;
}

/* t broken down in zone loc ("" UTC, "Local", or an IANA name). */
static void in_zone(time_t t, const char *loc, struct tm *tm)
{
	char *old;

	if (!*loc) {
		gmtime_r(&t, tm);
		return;
	}
	if (!strcmp(loc, "Local")) {
		localtime_r(&t, tm);
		return;
	}
	old = getenv("TZ");
	old = old ? strdup(old) : NULL;
	setenv("TZ", loc, 1);
	tzset();
	localtime_r(&t, tm);
	if (old) {
		setenv("TZ", old, 1);
		free(old);
	} else {
		unsetenv("TZ");
	}
	tzset();
}

static int days_in_month(const struct tm *tm)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y = tm->tm_year + 1900;

	if (tm->tm_mon == 1 && ((y % 4 == 0 && y % 100) || y % 400 == 0))
		return 29;
	return days[tm->tm_mon];
}

static int in_ranges(const struct ti_range *r, int n, int v)
{
	if (!n)
		return 1;
	for (int i = 0; i < n; i++)
		if (v >= r[i].lo && v <= r[i].hi)
			return 1;
	return 0;
}

static int period_holds(const struct ti_period *p, time_t t)
{
	struct tm tm;
	int minute, dim, hit = 0;

	in_zone(t, p->location, &tm);
	minute = tm.tm_hour * 60 + tm.tm_min;
	for (int i = 0; i < p->ntimes && !hit; i++)
		hit = minute >= p->times[i].lo && minute < p->times[i].hi;
	if (p->ntimes && !hit)
		return 0;
	if (!in_ranges(p->weekdays, p->nweekdays, tm.tm_wday) ||
	    !in_ranges(p->months, p->nmonths, tm.tm_mon + 1) ||
	    !in_ranges(p->years, p->nyears, tm.tm_year + 1900))
		return 0;
	if (!p->ndays)
		return 1;
	dim = days_in_month(&tm);
	for (int i = 0; i < p->ndays; i++) {
		int lo = p->days[i].lo < 0 ? dim + p->days[i].lo + 1 : p->days[i].lo;
		int hi = p->days[i].hi < 0 ? dim + p->days[i].hi + 1 : p->days[i].hi;

		if (lo > dim)
			continue;	/* day 31 of a 30-day month: not this month */
		if (hi > dim)
			hi = dim;
		if (tm.tm_mday >= lo && tm.tm_mday <= hi)
			return 1;
	}
	return 0;
}

int time_interval_holds(const struct time_interval *ti, time_t t)
{
	for (int i = 0; i < ti->np; i++)
		if (period_holds(&ti->p[i], t))
			return 1;
	return 0;
}

void time_intervals_free(struct time_interval *ti, int n)
{
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < ti[i].np; k++)
			period_free(&ti[i].p[k]);
		free(ti[i].p);
	}
	free(ti);
}
