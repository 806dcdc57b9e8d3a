/*
 * profile_span.h - a span of one host's profile windows stored as one
 * blob: the store's chunk of a profile stream (store/compaction.h).
 *
 * Ten-second windows of one host repeat themselves: the same processes,
 * the same few thousand frame names and stacks, window after window.
 * Each window stored alone carries its own tables; a span shares one set
 * of tables (names, stacks, mappings, locations) among all its windows,
 * and each window keeps only its rows as indexes into them.  What a window
 * was is kept exactly: its time, length, rate and every row (service,
 * comm, pid, stack, count, cgroup), in its order.  One thing is shared, as
 * profile_merge shares it: a stack's frame locations are the first the
 * span saw of that stack (an address inside the same named function).
 *
 * Wire form (msgpack, version 1, stored as a zstd frame of it):
 *   { "v": 1, "host": str,
 *     "str": [...], "stk": [...], "map": [...], "floc": [...],
 *     "xloc": [...], "loc": [...]  (as profile.h)
 *     "win": [ [ ts, dur, hz, [ service, comm, pid, stack, count,
 *                               cgroup, ... ] ]... ] }   (six per row)
 * profile_span_decode treats input as hostile, as profile_decode does,
 * and as it does skips keys it does not know (a later writer's, which
 * this reader cannot use and need not refuse).
 */
#ifndef FL_PROFILE_SPAN_H
#define FL_PROFILE_SPAN_H

#include <stddef.h>
#include <stdint.h>

#include "model/profile.h"

/* The most windows a span holds: a day of hourly windows, an hour of 10 s ones, bursts. */
#define PROFILE_SPAN_MAX_WINDOWS 2048

struct profile_span_window {
	uint64_t ts_ms, duration_ms, total;
	uint32_t rate_hz;
	uint32_t first, nrows;		/* rows[first .. first + nrows) */
};

struct profile_span {
	struct profile tables;		/* host, names, stacks, mappings; no rows */
	struct profile_span_window *windows;
	uint32_t nwindows;
	struct profile_row *rows;	/* indexes into tables */
	uint32_t nrows;
	uint32_t cap_windows, cap_rows;
};

/*
 * Append window w to s (zeroed, or built by this: the first window names
 * the host).  Returns 0, -EINVAL when w is another host's or s holds
 * PROFILE_SPAN_MAX_WINDOWS, or -ENOMEM (w is not added).
 */
int profile_span_add(struct profile_span *s, const struct profile *w);

/*
 * s (at least one window) as a span blob into *out (malloc'd, *outlen
 * bytes), a zstd frame at level.  Returns 0, -EINVAL (no windows, or
 * compression off: FAULTLINE_WIRE_COMPRESS=0) or -ENOMEM.
 */
int profile_span_pack(const struct profile_span *s, int level, char **out, size_t *outlen);

/*
 * Whether window i of s is w exactly: its time, length, rate and every
 * row in order (names, pid, stack frames, count, cgroup compared as
 * strings).  Frame locations are not compared (a span keeps the first).
 */
int profile_span_window_is(const struct profile_span *s, uint32_t i, const struct profile *w);

/*
 * Windows w[0..n) (one host's, oldest first) as one span blob into *out
 * (malloc'd, *outlen bytes), a zstd frame at level (PROFILE_LEVEL_*).
 * The blob is decoded back and every window compared with what it was
 * given before it is returned.  Returns 0, -EINVAL when n is 0 or past
 * PROFILE_SPAN_MAX_WINDOWS, the hosts differ, or the blob does not read
 * back the same (a bug: the windows stay as they were), or -ENOMEM.
 */
int profile_span_encode(const struct profile *w, size_t n, int level, char **out,
			size_t *outlen);

/*
 * The span in buf[0..len) (untrusted) into s.  Returns 0, or -EINVAL /
 * -E2BIG / -ENOMEM with "profile span: why" in err and s left as
 * profile_span_free leaves it.
 */
int profile_span_decode(const void *buf, size_t len, struct profile_span *s, char *err,
			size_t errlen);

/*
 * Window i of s as a profile in *view for reading (profile_merge,
 * profile_row_in, ...): it shares s's tables and rows, lives as long as s,
 * and is neither changed nor freed.
 */
void profile_span_view(const struct profile_span *s, uint32_t i, struct profile *view);

void profile_span_free(struct profile_span *s);

#endif
