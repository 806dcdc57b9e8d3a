/*
 * timeutil.c - clocks and durations; see timeutil.h.
 */
#include "core/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t time_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t time_wall_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

struct timespec time_wall_after(uint64_t ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ns / NSEC_PER_SEC);
	ts.tv_nsec += (long)(ns % NSEC_PER_SEC);
	if (ts.tv_nsec >= (long)NSEC_PER_SEC) {
		ts.tv_sec++;
		ts.tv_nsec -= (long)NSEC_PER_SEC;
	}
	return ts;
}

static const struct {
	const char *name;
	uint64_t ns;
} duration_units[] = {
	{ "ns", 1 },
	{ "us", NSEC_PER_USEC },
	{ "ms", NSEC_PER_MSEC },
	{ "s", NSEC_PER_SEC },
	{ "m", 60 * NSEC_PER_SEC },
	{ "h", 3600 * NSEC_PER_SEC },
	{ "d", 86400 * NSEC_PER_SEC },
	{ "w", 7 * 86400 * NSEC_PER_SEC },
};

#define N_UNITS (sizeof(duration_units) / sizeof(duration_units[0]))

int duration_parse(const char *s, uint64_t *out)
{
	uint64_t total = 0;
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	if (strcmp(s, "0") == 0) {
		*out = 0;
		return 0;
	}
	while (*p) {
		uint64_t num = 0, unit = 0;
		size_t best = 0;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		while (*p >= '0' && *p <= '9') {
			if (num > (UINT64_MAX - 9) / 10)
				return -EINVAL;
			num = num * 10 + (uint64_t)(*p++ - '0');
		}
		/* Longest unit name that matches ("ms" before "m"). */
		for (size_t i = 0; i < N_UNITS; i++) {
			size_t l = strlen(duration_units[i].name);

			if (l > best && strncmp(p, duration_units[i].name, l) == 0) {
				best = l;
				unit = duration_units[i].ns;
			}
		}
		if (!best)
			return -EINVAL;
		p += best;
		if (num && unit > UINT64_MAX / num)
			return -EINVAL;
		if (total > UINT64_MAX - num * unit)
			return -EINVAL;
		total += num * unit;
	}
	*out = total;
	return 0;
}

int duration_list_parse(const char *arg, const char *const *names, size_t n,
			uint64_t *out_ns, char *err, size_t errlen)
{
	uint64_t seen = 0;
	const char *p = *arg ? arg : NULL;	/* "" sets nothing; "a=1h," has an empty item */

	while (p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		char dur[64];
		uint64_t ns;
		size_t i;

		for (i = 0; eq && i < n && i < 64; i++)
			if ((size_t)(eq - p) == strlen(names[i]) && !strncmp(p, names[i], eq - p))
				break;
		if (!eq || i == n || i == 64) {
			char known[256] = "";

			for (size_t k = 0; k < n; k++)
				snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s",
					 k ? ", " : "", names[k]);
			snprintf(err, errlen, "'%.*s': expected NAME=DURATION, NAME one of %s",
				 (int)len, p, known);
			return -EINVAL;
		}
		snprintf(dur, sizeof(dur), "%.*s", (int)(len - (size_t)(eq + 1 - p)), eq + 1);
		if (duration_parse(dur, &ns) || !ns) {
			snprintf(err, errlen, "'%.*s': '%s' is not a non-zero duration (1h, 7d, 90m)",
				 (int)len, p, dur);
			return -EINVAL;
		}
		if (seen & (1ULL << i)) {
			snprintf(err, errlen, "'%.*s': %s given twice", (int)len, p, names[i]);
			return -EINVAL;
		}
		seen |= 1ULL << i;
		out_ns[i] = ns;
		p = comma ? comma + 1 : NULL;
	}
	return 0;
}

char *duration_format(uint64_t ns, char *buf, size_t len)
{
	size_t off = 0;

	if (ns == 0) {
		snprintf(buf, len, "0s");
		return buf;
	}
	if (ns % NSEC_PER_SEC) {
		/* Sub-second: one unit, the largest that divides exactly. */
		if (ns % NSEC_PER_MSEC == 0)
			snprintf(buf, len, "%llums", (unsigned long long)(ns / NSEC_PER_MSEC));
		else if (ns % NSEC_PER_USEC == 0)
			snprintf(buf, len, "%lluus", (unsigned long long)(ns / NSEC_PER_USEC));
		else
			snprintf(buf, len, "%lluns", (unsigned long long)ns);
		return buf;
	}
	buf[0] = '\0';
	for (int i = (int)N_UNITS - 1; i >= 3 && off < len; i--) {
		uint64_t u = duration_units[i].ns, n = ns / u;

		if (i == 7)	/* weeks read badly; stop at days */
			continue;
		if (n) {
			off += snprintf(buf + off, len - off, "%llu%s",
					(unsigned long long)n, duration_units[i].name);
			ns -= n * u;
		}
	}
	return buf;
}

char *time_format_rfc3339(uint64_t wall_ns, char *buf, size_t len)
{
	time_t secs = (time_t)(wall_ns / NSEC_PER_SEC);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03lluZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec,
		 (unsigned long long)(wall_ns % NSEC_PER_SEC / NSEC_PER_MSEC));
	return buf;
}
