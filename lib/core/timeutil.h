/*
 * timeutil.h - clocks and durations.
 *
 * Intervals are measured on CLOCK_MONOTONIC (immune to NTP steps); what is
 * stored and shown uses CLOCK_REALTIME.  Durations are u64 nanoseconds
 * throughout; the human form is Prometheus-like: "500ms", "1s", "1m30s",
 * "7d".
 */
#ifndef FL_TIMEUTIL_H
#define FL_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL

/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t time_mono_ns(void);

/* Nanoseconds since the Unix epoch on CLOCK_REALTIME. */
uint64_t time_wall_ns(void);

/*
 * CLOCK_REALTIME ns from now as a timespec: the deadline
 * pthread_cond_timedwait takes.
 */
struct timespec time_wall_after(uint64_t ns);

/*
 * Parse a duration such as "250ms", "1s", "1m30s", "2h", "7d", "1w" into
 * nanoseconds.  Units: ns us ms s m h d w.  A bare "0" is accepted.
 * Returns 0, or -EINVAL for an empty string, a missing or unknown unit, or
 * overflow; *out is untouched on failure.
 */
int duration_parse(const char *s, uint64_t *out);

/*
 * Parse "NAME=DUR,NAME=DUR" (any of names[0..n), each at most once, in any
 * order) into out_ns[i] for names[i]; names not given keep their value.
 * Returns 0, or -EINVAL with err naming the item that is not NAME=DUR with
 * a known NAME and a non-zero duration (out_ns is then partly updated).
 */
int duration_list_parse(const char *arg, const char *const *names, size_t n,
			uint64_t *out_ns, char *err, size_t errlen);

/*
 * Format ns as the shortest exact duration string ("1m30s", "250ms") into
 * buf.  Returns buf.
 */
char *duration_format(uint64_t ns, char *buf, size_t len);

/* Format a wall-clock time in ns as RFC 3339 UTC with milliseconds. */
char *time_format_rfc3339(uint64_t wall_ns, char *buf, size_t len);

#endif
