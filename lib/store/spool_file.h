/*
 * spool_file.h - the probe's spool entries and the file that keeps them
 * across a restart; what lib/store's writer (store.c) shares with
 * spool_file.c and nobody else.
 *
 * What a store still holds when it closes (Redis unreachable) is written to
 * its spool path and read back by the next store_open, so a probe restart
 * during an outage loses nothing.  The file is 0600, written to a
 * temporary name, fsynced and renamed (never half-written), and removed
 * once read.  Format: "FLSPOOL1" then per entry kind, key, field, ts,
 * minid, star, host_registry, nfields (u32/u64 little-endian as stored,
 * strings and the blob length-prefixed).  It is read as untrusted input
 * (store_spool_check, fuzz/fuzz_spool.c): the first entry that does not
 * fit ends the read, with a warning.  A rollup's delta is not saved: the
 * whole entry is, as the base it was taken on may be gone by the next run.
 */
#ifndef FL_SPOOL_FILE_H
#define FL_SPOOL_FILE_H

#include <stddef.h>
#include <stdint.h>

/* A queued XADD's most field/value pairs: store.h's STORE_MAX_FIELDS. */
#define SPOOL_MAX_FIELDS 8

enum item_kind {
	ITEM_XADD,		/* field "d" = blob */
	ITEM_XADD_FIELDS,	/* blob = field\0value\0... (nfields pairs) */
	ITEM_HSET,
	/*
	 * Replace host `field`'s ended span of tier `tier` starting at ts_ms
	 * by its chunk (compaction.h), the chunk stream trimmed to minid.
	 * Not saved to a spool file: a span left uncompacted stays readable.
	 */
	ITEM_COMPACT,
};

struct spool_item {
	enum item_kind kind;
	char key[320];
	char field[256];	/* HSET field (host) */
	uint64_t ts_ms;		/* XADD entry id ms part */
	uint64_t minid;		/* XADD MINID trim point */
	int star;		/* XADD with '*' (clock went back) */
	/*
	 * XADD trimmed with MAXLEN ~ maxlen instead of MINID (0: MINID).  Such
	 * an entry (fl:wake) is worth only its moment: not saved to a spool file.
	 */
	uint32_t maxlen;
	int host_registry;	/* the host's registry record, fl:{H}:host (one queued) */
	int attempts;
	int done;
	char *blob;
	size_t bloblen;
	int nfields;
	/*
	 * A rollup (tier > 1) is a link of its stream's chain: blob is the
	 * whole entry; delta (or NULL) the same on the entry at base_ts, sent
	 * instead when the writer knows that entry is the stream's newest.
	 */
	int chain;
	char *delta;
	size_t deltalen;
	uint64_t base_ts;
	int sent_delta;		/* what the last append sent */
	uint32_t tier;		/* ITEM_COMPACT */
};

/* Free an entry and what it owns (NULL is fine). */
void spool_item_free(struct spool_item *it);

/*
 * Write entries at(arg, 0..n) that are not done to path (atomically, 0600).
 * Logs what happened, with what was lost on failure.  Returns 0 or -1.
 */
int spool_file_save(const char *path, const struct spool_item *(*at)(void *arg, size_t i),
		    void *arg, size_t n);

/*
 * Hand every entry of the spool file at path (blobs up to max_bytes) to
 * push, which takes ownership, then remove the file.  A file that is not a
 * spool or is damaged part-way is logged; what came before the damage is
 * kept.  Returns how many entries were handed over (0: no file).
 */
size_t spool_file_load(const char *path, size_t max_bytes,
		       void (*push)(void *arg, struct spool_item *it), void *arg);

/*
 * Parse a spool file's bytes as store_open would, keeping nothing: the
 * number of entries, or -EINVAL when it is not a spool file or an entry is
 * damaged.  For tests and the fuzzer.
 */
int store_spool_check(const void *buf, size_t len, size_t max_bytes);

#endif
