/*
 * compaction.h - replacing an ended span of a rollup tier (an hour of
 * minutes, a day of hours) by its chunk (model/chunk.h).
 *
 * The probe's writer (store.c) asks for it once the first window of the
 * next span has been written: the span's entries are read back, decoded
 * along their delta chain, encoded as one chunk (checked exact), and
 * swapped in one MULTI/EXEC: XADD fl:{H}:s60:chunks, XDEL of the entries
 * read.  Nothing is lost on any failure: a span that does not decode or
 * that a chunk cannot hold exactly stays as entries (logged), which
 * readers read as before and the tier's retention trims in time.
 */
#ifndef FL_STORE_COMPACTION_H
#define FL_STORE_COMPACTION_H

#include <stddef.h>
#include <stdint.h>

struct conn;

/*
 * Compact host's tier-`tier` span starting at span_start (ms, aligned to
 * snapshot_delta_span_ms(tier)); the chunk stream is trimmed to minid (0:
 * not trimmed).  Returns 0 when the span is done with (compacted, empty,
 * or left as entries for good, logged), -EIO when the connection failed
 * (reconnect, then retry), or -EAGAIN when Redis refused or memory ran
 * out (retry later, a few times; err says why).
 */
int store_compact_span(struct conn *c, const char *host, uint32_t tier, uint64_t span_start,
		       uint64_t minid, char *err, size_t errlen);

#endif
