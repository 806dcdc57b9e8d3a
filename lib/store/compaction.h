/*
 * compaction.h - replacing an ended span of a tier (a minute of 1 s
 * snapshots, an hour of minutes, a day of hours: chunk_span_ms) by its
 * chunk (model/chunk.h).
 *
 * The probe's writer (store.c) asks for it once the first window of the
 * next span has landed: the span's entries are read back, decoded along
 * their delta chain, encoded as one chunk (checked exact), and swapped in
 * one script on the host's slot: XADD fl:{H}:s60:chunks, then XDEL of the
 * entries read, only if the chunk was taken.  Nothing is lost on any
 * failure: a span that does not decode or that a chunk cannot hold
 * exactly stays as entries (logged), which readers read as before and the
 * tier's retention trims in time.
 *
 * A compactor is a thread with its own connection that runs the spans it
 * is given one by one, so that compacting (a read, ~4 ms of CPU, a write
 * per host and hour) never holds up the writer: a simulator writing for
 * thousands of hosts hands it thousands of spans at the top of the hour.
 */
#ifndef FL_STORE_COMPACTION_H
#define FL_STORE_COMPACTION_H

#include <stddef.h>
#include <stdint.h>

struct conn;

/*
 * What a compaction compacts, its `tier`: a snapshot tier (1, 60, 3600;
 * model/chunk.h), or a profile stream, COMPACT_PROFILE(enum profile_kind),
 * whose ended span (key_profile_span_ms, keyspace.h) of windows goes into one
 * model/profile_span.h blob at fl:{H}:p10:chunks (keyspace.h), the same
 * way: read back, encoded, checked, swapped in one script.
 */
#define COMPACT_PROFILE_BASE 0x10000u
#define COMPACT_PROFILE(kind) (COMPACT_PROFILE_BASE + (uint32_t)(kind))	/* kind: 0-3 */

/*
 * Compact host's tier-`tier` span starting at span_start (ms, aligned to
 * chunk_span_ms(tier)); the chunk stream is trimmed to minid (0:
 * not trimmed).  Returns 0 when the span is done with (compacted, empty,
 * or left as entries for good, logged), -EIO when the connection failed
 * (reconnect, then retry), or -EAGAIN when Redis refused or memory ran
 * out (retry later, a few times; err says why).
 */
int store_compact_span(struct conn *c, const char *host, uint32_t tier, uint64_t span_start,
		       uint64_t minid, char *err, size_t errlen);

struct compactor;

/*
 * Start a compactor on url (conn_open), its thread calling thread_start
 * first (may be NULL).  At most max_queued spans wait; beyond, a span is
 * left as entries (counted, logged).  Returns NULL with the reason in err.
 */
struct compactor *compactor_start(const char *url, uint64_t timeout_ns, size_t max_queued,
				  void (*thread_start)(void), char *err, size_t errlen);

/*
 * Queue host's tier-`tier` span at span_start, the chunk stream trimmed to
 * minid (store_compact_span).  Never waits for Redis.
 */
void compactor_queue(struct compactor *cp, const char *host, uint32_t tier,
		     uint64_t span_start, uint64_t minid);

/* Wait until nothing is queued or running. Returns 0 or -ETIMEDOUT. */
int compactor_flush(struct compactor *cp, uint64_t timeout_ns);

/*
 * Stop after the span under way (the ones still queued stay as entries,
 * logged) and free cp (NULL is fine).
 */
void compactor_stop(struct compactor *cp);

#endif
