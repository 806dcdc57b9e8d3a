/*
 * host_usage.h - what one host's data costs in Redis, stream by stream,
 * and what it would cost at a retention.
 *
 * A host's streams (keyspace.h) hold their newest span as entries and the
 * spans before as chunks; the two cost very different amounts a point (a
 * real host's second: ~5 KB as an entry, ~0.4 KB in a minute's chunk).  So
 * what a host holds now, minutes after its probe started, says little about
 * what it will hold at its retention.  host_usage measures both costs from
 * what is there (MEMORY USAGE of each key, the points each chunk holds) and
 * projects the steady state: half a span as entries on average (the span
 * under way), the rest of the retention as chunks.
 *
 * Read-only; one host at a time (a few commands a stream, and every chunk
 * of the host is read and decoded to count its points).
 */
#ifndef FL_HOST_USAGE_H
#define FL_HOST_USAGE_H

#include <stddef.h>
#include <stdint.h>

struct conn;	/* a connection from conn_open (store/conn.h) */

/* The streams of a host, in this order; names as the retention keys say. */
enum usage_stream {
	USAGE_S1, USAGE_S60, USAGE_S3600,
	USAGE_P10, USAGE_P3600, USAGE_IO10, USAGE_IOWAIT10,
	USAGE_STREAMS
};

/* Name of stream k ("s1", "p3600", ...), as in probe.yaml's retention:. */
const char *usage_stream_name(int k);

/*
 * probe.yaml's retention keys, and which one keeps stream k (io10 and
 * iowait10 follow p10): an index into usage_retention_keys.
 */
#define USAGE_RETENTION_KEYS 5
extern const char *const usage_retention_keys[USAGE_RETENTION_KEYS];
int usage_stream_retention_key(int k);

/* What one chunk of stream k spans (ms): a minute of s1, an hour of s60, ... */
uint64_t usage_stream_span_ms(int k);

struct stream_usage {
	uint64_t step_ms;	/* a point every: measured (entry ids, else chunk points) */
	uint64_t span_ms;	/* what one chunk holds */
	uint64_t entries, entry_bytes;	/* the stream: XLEN, MEMORY USAGE */
	uint64_t oldest_ms, newest_ms;	/* its first and last entry ids (0: none) */
	uint64_t chunks, chunk_bytes;	/* its chunk stream */
	uint64_t chunk_points;	/* the points (windows) those chunks hold */
	uint64_t chunk_ms;	/* the time they cover: their intervals (windows' lengths) */
	uint64_t bad_chunks;	/* chunks that did not decode (their bytes counted) */
};

struct host_usage {
	struct stream_usage s[USAGE_STREAMS];
	uint64_t other_bytes;	/* host record, drive records, wear history, burst */
	uint64_t other_keys;
};

/*
 * Measure host's keys into *u.  Returns 0, or -1 with err (Redis
 * unreachable, or an answer that is not what the command returns).  A
 * host with no keys at all is not an error: everything is 0.
 */
int host_usage_read(struct conn *c, const char *host, struct host_usage *u, char *err,
		    size_t errlen);

/*
 * The oldest point host holds in each stream (oldest_ms[k], 0: none): the
 * first entry's id or the first chunk's span start, whichever is older.
 * Cheap (two XRANGE ... COUNT 1 a stream), for a probe's start-up: what a
 * shorter retention is about to trim.  Returns 0, or -1 with err.
 */
int host_history_oldest(struct conn *c, const char *host, uint64_t oldest_ms[USAGE_STREAMS],
			char *err, size_t errlen);

/*
 * Bytes stream u would hold at retention_ms in steady state: the span under
 * way as entries (half a span on average, at the entries' cost a point),
 * the rest of the retention as chunks (at the chunks' cost a point).  With
 * no chunk seen yet, all of it at the entries' cost (an upper bound) and
 * *basis 'e'; with chunks but no entry, all at the chunks' cost, 'c';
 * both measured, 'b'; nothing to measure, 0 and '-'; chunks that are
 * young (stream_chunks_young: their cost a point is an upper bound), 'y'.
 */
double stream_usage_at(const struct stream_usage *u, uint64_t retention_ms, char *basis);

/*
 * Whether u's chunks hold under half a span's points on average: a young
 * stream's first chunk (the hours of a probe's first day), whose tables
 * are shared among few points.
 */
int stream_chunks_young(const struct stream_usage *u);

#endif
