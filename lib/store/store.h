/*
 * store.h - faultline's Redis layout, a non-blocking writer, and readers.
 *
 * The snapshot tiers, the host registry and the rules' alert checkpoint;
 * keyspace.h documents every key (docs/design.md, Storage).
 *
 * Streams are trimmed by age with XADD MINID ~ (retention per tier), so the
 * retention is in time whatever the interval.
 *
 * The writer (struct store) never blocks its caller on Redis: store_put_*()
 * encode and append to an in-memory spool; a writer thread drains the spool
 * in order, pipelined, reconnecting with backoff while Redis is away.  The
 * spool is bounded (entries and bytes); past the bound the oldest entry not
 * yet in flight is dropped and counted, so an outage shorter than the bound
 * loses nothing and a longer one loses the oldest data first.  Writes are
 * idempotent: a replayed XADD whose id already exists is counted as written.
 *
 * The writer works the same on a Redis Cluster (conn.h): each entry goes
 * to its key's node, and an entry whose node is away (a master failing
 * over) stays spooled, in order, until the slot map names its new master.
 *
 * Readers take a struct conn (conn_open) used from the caller's thread.
 */
#ifndef FL_STORE_H
#define FL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "model/chunk.h"
#include "model/snapshot.h"

#define STORE_TIERS 3
extern const uint32_t store_tiers[STORE_TIERS];	/* 1, 60, 3600 */

struct conn;	/* a connection from conn_open (store/conn.h) */

/* 1 if name is usable as a host (letters, digits, . _ - : only). */
int store_host_valid(const char *name);

struct store_opts {
	const char *url;
	uint64_t timeout_ns;		/* connect and command timeout */
	uint64_t retention_ms[STORE_TIERS];
	size_t spool_max_entries;
	size_t spool_max_bytes;
	/*
	 * NULL/"": the spool is memory only.  Else what is still spooled when
	 * the store closes is saved there (0600) and queued again by the next
	 * store_open: a restart during an outage loses nothing.
	 */
	const char *spool_path;
	/* called first thing in the writer thread (e.g. to drop capabilities) */
	void (*thread_start)(void);
	/*
	 * 1 s snapshots stay entries, never minute chunks: the simulator's,
	 * whose whole duration a replay then reads second by second (a reader
	 * of one second of a compacted minute decodes the minute's chunk).
	 */
	int s1_entries_only;
	/*
	 * Profile windows stay entries, never span chunks (profile_store.h):
	 * the simulator's, which its tests and tools read as entries.
	 */
	int profiles_entries_only;
};

struct store_stats {
	uint64_t written;		/* entries acknowledged by Redis */
	uint64_t dropped;		/* entries dropped from a full spool */
	uint64_t errors;		/* entries Redis refused (not retried) */
	uint64_t reconnects;		/* successful (re)connections */
	uint64_t spooled;		/* entries waiting now */
	uint64_t spooled_bytes;
	int connected;
};

struct store;

/*
 * Start a writer for opts (copied).  Redis need not be up yet.  Returns
 * NULL with a reason in err for a bad URL or -ENOMEM.
 */
struct store *store_open(const struct store_opts *opts, char *err, size_t errlen);

/*
 * Queue snapshot s for its tier's stream (s->tier picks s1/s60/s3600) and
 * update the host registry.  Never waits for Redis.  Returns 0, or -ENOMEM
 * / -EINVAL (tier not 1, 60 or 3600).
 */
int store_put_snapshot(struct store *st, const struct snapshot *s);

/*
 * The same for a rollup (tier 60 or 3600), with base the window before it
 * (rollup_cascade's; NULL: none): when Redis is known to hold base as the
 * stream's newest entry, s is written as a delta on it (snapshot.h), else
 * whole.  Readers of the tier follow the chain (store_read_range).  When
 * s is the first window of a span (an hour; a day for hours) and base
 * the last of the one before, that span is then replaced by its chunk, in
 * the background (compaction.h).
 */
int store_put_rollup(struct store *st, const struct snapshot *s, const struct snapshot *base);

/*
 * Queue XADD key (id ts_ms, field "d" = blob) trimmed to retention_ms (0:
 * no trimming), like snapshots.  Used for profile windows (fl:{H}:p10,
 * fl:{H}:p3600).  Returns 0 or -ENOMEM.
 */
int store_put_stream(struct store *st, const char *key, uint64_t ts_ms, uint64_t retention_ms,
		     const void *blob, size_t len);

#define STORE_MAX_FIELDS 8

/*
 * Queue XADD key (id ts_ms) with nfields field/value pairs fv[0], fv[1],
 * ... (strings, copied), trimmed to retention_ms like store_put_stream.
 * Used for deploy markers.  Returns 0, -EINVAL (nfields not 1..8) or
 * -ENOMEM.
 */
int store_put_fields(struct store *st, const char *key, uint64_t ts_ms, uint64_t retention_ms,
		     const char *const *fv, int nfields);

/*
 * Queue XADD fl:wake * h HOST behind everything queued before it (the
 * snapshot it wakes the rules for): faultline-rules evaluates at once
 * when a host it owns is named (wake.h) instead of at its next tick.  For
 * a snapshot flushed early because a page counter moved.  Never saved to
 * the spool file.  Returns 0, -EINVAL (not a host name) or -ENOMEM.
 */
int store_put_wake(struct store *st, const char *host);

/*
 * Queue HSET key field value (len bytes, copied) behind everything queued
 * before it.  Used for drive records and their wear history.  Never waits
 * for Redis.  Returns 0 or -ENOMEM.
 */
int store_put_hash(struct store *st, const char *key, const char *field, const char *value,
		   size_t len);

/*
 * Wait until the spool is empty and every span it handed to the compactor
 * is done (compaction.h), or timeout_ns passes.  Returns 0 when empty,
 * -ETIMEDOUT otherwise.
 */
int store_flush(struct store *st, uint64_t timeout_ns);

void store_get_stats(struct store *st, struct store_stats *out);

/* Stop the writer thread (without flushing) and free everything. */
void store_close(struct store *st);

/*
 * Read snapshots of host/tier with from_ms <= ts <= to_ms (0 = open end),
 * oldest first, at most max (0 = no limit), calling cb for each decoded
 * one; cb returns non-zero to stop.  cb may keep the snapshot by moving
 * *s out and zeroing it (what is left is freed after cb returns).  Entries
 * that fail to decode are skipped and counted in *bad (may be NULL) rather
 * than failing the read.  A rollup tier's deltas (snapshot.h) are read on
 * the entry before them: the read starts at from_ms's hour (day) and
 * delivers from from_ms; an entry whose base is missing is counted bad.
 * Returns the number delivered, or -EIO with a reason in err.
 */
typedef int (*store_snapshot_cb)(struct snapshot *s, void *arg);
int store_read_range(struct conn *c, const char *host, uint32_t tier, uint64_t from_ms,
		     uint64_t to_ms, size_t max, store_snapshot_cb cb, void *arg,
		     size_t *bad, char *err, size_t errlen);

/*
 * store_read_range for many hosts in pipelined exchanges: each hosts[i]'s
 * snapshots with from_ms[i] <= ts <= to_ms (0: open), each host's oldest
 * first, in pages of a bounded number of entries (a host with more is read
 * on in a later round, after the other hosts' first pages); same callback
 * contract, except that cb returning non-zero skips only the rest of that
 * page of the host's snapshots, and histograms arrive in their compact form
 * (snapshot_decode_compact: read them with series_hist()).  A host whose read Redis refuses (e.g. WRONGTYPE)
 * is skipped and counted in *bad.  A snapshot is always filed under the
 * host of the stream it came from, whatever host it names inside.  Every
 * entry that does not decode (and every refused read, entry_ms 0) is
 * reported to rd->bad with the host's index, the entry's id (ms) and why,
 * or logged as a warning when it is NULL.  Returns the number
 * delivered, or -EIO if the connection failed.
 */
typedef void (*store_bad_cb)(size_t host_index, uint64_t entry_ms, const char *why, void *arg);
/*
 * The snapshot host host_index's next one most likely repeats (its newest
 * as the reader keeps it), or NULL: entries are decoded like it
 * (snapshot_decode_like), and the reader's cb must adopt the strings
 * (snapshot_adopt_strings) before it frees that snapshot.
 */
typedef const struct snapshot *(*store_like_cb)(size_t host_index, void *arg);
/*
 * Points pts[0..n) of host host_index, one after another from an ended
 * chunk (strictly ascending, newer than what came before, none of the
 * host's entries between them), lent for the call: the reader takes them
 * as if each had come through its snapshot cb, but must not change them
 * (they may be a chunk cache's).  Their host field may name another host
 * (a chunk filed under this one): they are host_index's.  Returns
 * non-zero to stop, as the snapshot cb.
 */
typedef int (*store_run_cb)(size_t host_index, const struct snapshot *pts, size_t n,
			    void *arg);
struct chunk_cache;	/* store/chunk_cache.h */
/*
 * A host whose page of entries (STORE_READ_PAGE of them from from_ms) is larger
 * than STORE_READ_PAGE_MAX: it was not read (its reply was refused
 * unread); the caller quarantines it.  The other hosts are read as usual.
 */
typedef void (*store_oversize_cb)(size_t host_index, void *arg);
#define STORE_READ_PAGE 128
#define STORE_READ_PAGE_MAX (32u << 20)
struct store_readers {
	store_snapshot_cb snapshot;	/* each decoded snapshot */
	store_bad_cb bad;		/* NULL: undecodable entries logged as warnings */
	store_like_cb like;		/* NULL: decoded without a template */
	store_oversize_cb oversize;	/* NULL: logged as an error */
	/*
	 * NULL: chunk points come one by one through snapshot.  Else in runs
	 * through run, never copied (a reader that only reads their values:
	 * a query's columns, columns_push_run).
	 */
	store_run_cb run;
	/*
	 * NULL: every series.  Else the series a chunk's points are built
	 * with (chunk_decode_select: the rest are read and dropped); entries
	 * still hold all theirs.  A reader of a few series over a long range.
	 */
	chunk_series_cb series;
	/*
	 * NULL: chunks decoded for this read alone.  Else ended chunks are
	 * decoded once and kept there (chunk_cache.h) for the reads after;
	 * with a series pick, series_key must name it (else nothing is
	 * cached): a chunk decoded with one pick serves that pick only.
	 */
	struct chunk_cache *cache;
	const char *series_key;
	void *arg;			/* passed to each */
};
int store_read_ranges(struct conn *c, const char *const *hosts, const uint64_t *from_ms,
		      size_t n, uint32_t tier, uint64_t to_ms, const struct store_readers *rd,
		      size_t *bad, char *err, size_t errlen);

/*
 * Raw entries of any stream: call cb with each entry's "d" field, oldest
 * first, for from_ms <= id <= to_ms (0 = open).  Returns the number
 * delivered or -EIO.
 */
typedef int (*store_blob_cb)(const char *blob, size_t len, void *arg);
int store_read_blobs(struct conn *c, const char *key, uint64_t from_ms, uint64_t to_ms,
		     store_blob_cb cb, void *arg, char *err, size_t errlen);

/*
 * The newest `count` snapshots of a tier that is not chained (1 s), oldest
 * first; when the stream holds fewer entries (its minute before was just
 * compacted), the rest from its newest chunk.  Same contract as above.
 */
int store_read_latest(struct conn *c, const char *host, uint32_t tier, size_t count,
		      store_snapshot_cb cb, void *arg, size_t *bad, char *err, size_t errlen);

#endif
