/*
 * profile_store.h - a host's CPU profiles in Redis, the one place that
 * names their keys:
 *
 *   fl:{H}:p10            stream of 10 s profile windows (msgpack, kept 1 h)
 *   fl:{H}:p3600          stream of hourly top-stack profiles (kept 30 d)
 *   fl:{H}:io10           stream of 10 s I/O submission profiles: counts are
 *                         sampled block requests, each stack's root frame
 *                         "[DEVICE OP]" (kept 1 h)
 *   fl:{H}:iowait10       stream of 10 s I/O wait profiles: counts are
 *                         microseconds its submitters waited in io_schedule,
 *                         rooted the same (kept 1 h)
 *   fl:{H}:p10:chunks     (and p3600, io10, iowait10) each ended span of
 *                         the stream's windows as one blob that shares one
 *                         set of names and stacks (model/profile_span.h):
 *                         10 min of 10 s windows, a day of hourly ones
 *   fl:{H}:profile:burst  string: a sampling rate in Hz, with a TTL; the
 *                         probe samples at it until the key expires
 *                         (`faultline profile burst`)
 *
 * Written by the probe (and the simulator) through the store's spool; read
 * back and merged by `faultline profile`, the alerter's evidence and the
 * rules engine's profile baselines.
 */
#ifndef FL_PROFILE_STORE_H
#define FL_PROFILE_STORE_H

#include <stddef.h>
#include <stdint.h>

struct conn;	/* a connection from conn_open (store/conn.h) */

#include "model/profile.h"

struct store;

/* Which profiles: the `kind` of profile_store_put and profile_read_merge. */
enum profile_kind {
	PROFILE_CPU = 0,		/* fl:{H}:p10 */
	PROFILE_CPU_HOURLY = 1,		/* fl:{H}:p3600 */
	PROFILE_IO = 2,			/* fl:{H}:io10 */
	PROFILE_IO_WAIT = 3,		/* fl:{H}:iowait10 */
};

/*
 * Queue profile window blob (len bytes, ts_ms) for host into the stream of
 * its kind (enum profile_kind), trimmed to retention_ms (0: the kind's
 * default, KEY_P10_RETENTION_MS or KEY_P3600_RETENTION_MS).  The first
 * window of a span queues the compaction of the span before it
 * (store.h's compaction; not with store_opts.profiles_entries_only or
 * compression off).  Returns what store_put_stream returns.
 */
int profile_store_put(struct store *st, const char *host, int kind, uint64_t ts_ms,
		      uint64_t retention_ms, const void *blob, size_t len);

/*
 * Ask host's probe to sample at hz for ttl_ms (SET fl:{H}:profile:burst).
 * Returns 0, or -EIO with the reason in err.
 */
int profile_burst_set(struct conn *rc, const char *host, unsigned long hz, uint64_t ttl_ms,
		      char *err, size_t errlen);

/*
 * The burst rate asked for host, 0 if none; -EIO if Redis did not answer
 * (the caller reconnects).
 */
long profile_burst_get(struct conn *rc, const char *host);

/*
 * Merge host's windows of a kind (enum profile_kind) with from_ms <= ts <=
 * to_ms (0 = open end) into *into (initialised by the caller), only rows
 * in scope (NULL: all), each window once whether it is an entry or in a
 * chunk (entries are read first, then the chunks that may hold the
 * range; a window met in both, compacted in between, is taken once, by
 * its end time).  Windows and chunks that do not decode are skipped and
 * counted in *bad (may be NULL).  Returns the number merged, or -EIO with
 * the reason in err.
 */
int profile_read_merge(struct conn *rc, const char *host, int kind, uint64_t from_ms,
		       uint64_t to_ms, const struct profile_scope *scope, struct profile *into,
		       size_t *bad,
		       char *err, size_t errlen);

#endif
