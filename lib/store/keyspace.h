/*
 * keyspace.h - faultline's Redis layout: every key, what it holds, who
 * writes and reads it, how long it lives, and where a cluster keeps it.
 *
 * This header and keyspace.c are the only places that spell a key; the
 * typed functions of lib/store (store.h, alert_stream.h, deploy.h,
 * drives.h, profile_store.h, silence.h) are the only code that issues a
 * Redis command, through a struct conn (conn.h).
 *
 * Per-host keys carry the host in a hash tag, {H}, so a Redis Cluster keeps
 * all of one host's keys in one slot (CRC16(H) mod 16384) and one host's
 * writes and reads touch one node:
 *
 *   key                          type    writer            readers            retention
 *   fl:{H}:s1                    stream  probe, sim        rules, CLI top     (retention.s1, 15 min)
 *   fl:{H}:s60                   stream  probe, sim        tools              (retention.s60, 1 d)
 *   fl:{H}:s3600                 stream  probe, sim        tools              (retention.s3600, 7 d)
 *       entry id = snapshot ts (ms), field "d" = msgpack snapshot
 *       (model/snapshot.h); trimmed by age with XADD MINID ~; a rollup
 *       may be a delta on the entry before it, within an hour (a day):
 *       trimmed at such a span's start, read from it (store.h)
 *   fl:{H}:s1:chunks             stream  probe, sim        rules, web, tools  (retention.s1, 15 min)
 *   fl:{H}:s60:chunks            stream  probe, sim        rules, tools       (retention.s60, 1 d)
 *   fl:{H}:s3600:chunks          stream  probe, sim        rules, tools       (retention.s3600, 7 d)
 *       entry id = the span's start (ms), field "c" = model/chunk.h: an
 *       ended minute (hour, day) of the tier as one block of columns
 *       (chunk_span_ms).  The
 *       compactor replaces the span's entries by it in one script (XADD
 *       here, XDEL there), so a reader that reads the tier before its
 *       chunks meets every point once or twice, never not at all
 *       (store_read.c)
 *   fl:{H}:p10                   stream  probe, sim        alerter, CLI, web  retention.p10 (1 h)
 *   fl:{H}:p3600                 stream  probe             alerter, CLI       retention.p3600 (7 d)
 *   fl:{H}:io10                  stream  probe             alerter, CLI       retention.p10
 *   fl:{H}:iowait10              stream  probe             alerter, CLI       retention.p10
 *       profile windows (10 s, hourly top; I/O submissions, I/O waits),
 *       entry id = the window's end (ms), field "d" = model/profile.h blob
 *   fl:{H}:p10:chunks (and p3600, io10, iowait10)
 *                                stream  probe             as the stream      as the stream
 *       entry id = the span's start (ms), field "c" = model/profile_span.h:
 *       an ended span of the stream's windows (10 min of 10 s ones, a day
 *       of hourly ones: key_profile_span_ms) sharing one set of tables,
 *       swapped in for its entries as the tiers' chunks are; a reader
 *       reads the entries, then the chunks, and takes each window once
 *       (profile_store.c)
 *   fl:{H}:profile:burst         string  CLI profile       probe              TTL of the burst
 *       requested sampling rate (Hz) for a burst profile
 *   fl:{H}:drives                hash    probe             alerter, CLI       kept
 *       device -> drive record JSON (model/drive.h)
 *   fl:{H}:drives:wear:SERIAL    hash    probe             CLI wear report    kept
 *       YYYY-MM-DD -> "wear,bytes,hours"
 *   fl:{H}:host                  string  probe, sim        rules, CLI         kept
 *       the host's registry record: JSON {last_seen_ms, labels}
 *       (model/host_entry.h), refreshed every minute.  Hosts are found by
 *       SCAN MATCH fl:{*}:host on every master (host_registry.c): a host
 *       registers by writing its own key, so a probe's ACL (acl.h) needs
 *       no shared key and cannot register, rename or relabel another host.
 *       (Before 0.2, one hash fl:hosts held every host's record.)
 *
 * Fleet-wide keys have no host and live in the slot of their own name.
 * Each is one small key written at a low rate (a deploy or silence by
 * hand, an alert event per state change), so one slot carries them comfortably; spreading them would buy
 * nothing and would break the transactions below:
 *
 *   fl:deploys                   stream  CLI deploy, probe rules              90 d
 *       deploy markers (deploy.h)                                  slot 3313
 *   fl:deploys:verdicts          hash    rules (the judge) CLI deploy list    kept (one per
 *       "DEPLOY_ID RULE" -> verdict JSON (deploy.h)                       deploy and rule)
 *   fl:wake                      stream  probe             rules (XREAD       ~1,000 entries
 *       field "h" = a host whose page counter     BLOCK)           slot 6228
 *       moved: evaluate it now (wake.h)
 *   fl:silences                  hash    CLI silence       alerter            until expired
 *       id -> silence JSON (silence.h)                             slot 9711
 *   fl:alerts                    stream  rules             alerter (group     undelivered + 7 d
 *       field "e" = event JSON (model/alert.h)  "alerter")         slot 1464
 *   {fl:alerts}:rules            hash    rules             rules (at start)   replaced each commit
 *       fingerprint -> JSON of a firing or pending alert: the rules engine's
 *       checkpoint, written with its events in one script, after them.  Its hash tag puts it in
 *       fl:alerts' slot (1464), which is what lets that
 *       transaction run on a cluster.  Single-server installs before this
 *       layout kept it as fl:rules:alerts; it is renamed on first read.
 *
 *   Several faultline-rules workers (workers.h) coordinate beside fl:alerts,
 *   in its slot (1464) so a lease check and a commit are one transaction:
 *   {fl:alerts}:workers          hash    rules workers     rules workers      entries expire
 *       worker -> expiry (ms, Redis' clock): who is alive
 *   {fl:alerts}:lease:P          string  rules workers     rules workers      TTL (3 intervals)
 *       "worker|epoch": the worker evaluating partition P (0..64; 64:
 *       fleet-wide alerts) and the epoch it took the lease under
 *   {fl:alerts}:epoch:P          string  rules workers     rules workers      kept
 *       partition P's epoch counter: INCR on every take of its lease, so a
 *       commit under an older epoch (a paused worker) is refused
 *   {fl:alerts}:rules:P          hash    rules workers     the next owner     replaced each commit
 *       partition P's checkpoint (as {fl:alerts}:rules for one engine)
 *   {fl:alerts}:partial:TOPIC    hash    rules workers     rules workers      TTL
 *       worker -> its partial aggregate of TOPIC (a fleet-wide comparison)
 *
 *   {fl:alerts}:group:GID        hash    alerters          alerters           7 d after a change
 *       an alert group's state (alert_group.h): FP -> "ID S STARTS EVENT",
 *       _v its version, _n the version last notified and when; every
 *       alerter notifies from it, so a restart or a peer sends the same
 *       page and a PagerDuty incident resolves only when all of it has
 *
 *   {fl:alerts}:active           hash    alerters          alerters, API,     resolutions
 *       the fleet's alerts as the alerters took them       `faultline alerts`  kept 1 h
 *       (alert_index.h): FP -> "ID S STARTS EVENT", the newest event of
 *       each alert whatever group it went to, _v its version; what
 *       inhibit_rules look at and what the API lists
 *
 *   fl:alerts:dead               stream  alerter           operators          ~100,000 entries
 *       dead letters {reason, group, receiver, entries, body}      slot 6460
 *   fl:notifications             stream  alerter           operators, tests   ~100,000 entries
 *       what became of each notification {what, group, detail}     slot 14376
 */
#ifndef FL_STORE_KEYSPACE_H
#define FL_STORE_KEYSPACE_H

#include <stddef.h>
#include <stdint.h>

#define KEY_DEPLOYS "fl:deploys"
#define KEY_DEPLOY_VERDICTS "fl:deploys:verdicts"
#define KEY_SILENCES "fl:silences"
#define KEY_ALERTS "fl:alerts"
#define KEY_ALERTS_STATE "{fl:alerts}:rules"
#define KEY_ALERTS_STATE_LEGACY "fl:rules:alerts"
#define KEY_ALERTS_DEAD "fl:alerts:dead"
#define KEY_NOTIFICATIONS "fl:notifications"
#define KEY_ALERTS_GROUP "alerter"	/* fl:alerts' consumer group */
#define KEY_WORKERS "{fl:alerts}:workers"
#define KEY_ALERTS_ACTIVE "{fl:alerts}:active"
#define KEY_WAKE "fl:wake"
#define KEY_WAKE_MAXLEN 1000	/* trimmed with MAXLEN ~ */

/* Retentions the layout fixes (the snapshot tiers' are configured). */
#define KEY_DEPLOYS_RETENTION_MS (90ULL * 24 * 3600 * 1000)
#define KEY_P10_RETENTION_MS (3600ULL * 1000)
#define KEY_P3600_RETENTION_MS (7ULL * 24 * 3600 * 1000)

/*
 * The span of a profile stream's chunks (ms): a chunk holds the windows
 * whose ends are in (S, S + span].  Ten minutes of 10 s windows (60 share
 * one set of tables, ~2x smaller than alone; the newest span stays
 * entries: ~5 of the hour's 60 minutes), a day of hourly ones.
 */
#define KEY_PROFILE_KINDS 4	/* enum profile_kind: p10, p3600, io10, iowait10 */
#define KEY_PROFILE_SPAN_10S_MS (600ULL * 1000)
#define KEY_PROFILE_SPAN_HOURLY_MS (24ULL * 3600 * 1000)
static inline uint64_t key_profile_span_ms(int kind)
{
	return kind == 1 ? KEY_PROFILE_SPAN_HOURLY_MS : KEY_PROFILE_SPAN_10S_MS;
}
#define KEY_STREAM_MAXLEN "100000"	/* what the alerter writes (dead letters, records) */
/*
 * fl:alerts keeps what its consumers have acknowledged this long, unless it
 * holds more than KEY_ALERTS_KEEP_MAX entries; what they have not is never
 * trimmed (alert_stream_trim).
 */
#define KEY_ALERTS_KEEP_MS (7ULL * 24 * 3600 * 1000)
#define KEY_ALERTS_KEEP_MAX 100000

/*
 * Each writes a key name into buf (len bytes) and returns its length, or
 * -ENAMETOOLONG when it does not fit (buf then holds "").
 */
int key_tier(char *buf, size_t len, const char *host, uint32_t tier);	/* fl:{H}:s60 */
int key_chunks(char *buf, size_t len, const char *host, uint32_t tier);	/* fl:{H}:s60:chunks */
/* kind: enum profile_kind (store/profile_store.h) */
int key_profile(char *buf, size_t len, const char *host, int kind);	/* fl:{H}:p10 */
int key_profile_chunks(char *buf, size_t len, const char *host, int kind); /* fl:{H}:p10:chunks */
int key_profile_burst(char *buf, size_t len, const char *host);
int key_drives(char *buf, size_t len, const char *host);
int key_host_record(char *buf, size_t len, const char *host);	/* fl:{H}:host */
#define KEY_HOST_RECORD_MATCH "fl:{*}:host"	/* SCAN pattern of every host's record */
int key_wear(char *buf, size_t len, const char *host, const char *serial);
int key_lease(char *buf, size_t len, int part);		/* {fl:alerts}:lease:P */
int key_lease_epoch(char *buf, size_t len, int part);	/* {fl:alerts}:epoch:P */
int key_part_state(char *buf, size_t len, int part);	/* {fl:alerts}:rules:P */
int key_partial(char *buf, size_t len, const char *topic);	/* {fl:alerts}:partial:T */
int key_alert_group(char *buf, size_t len, const char *gid);	/* {fl:alerts}:group:GID */

#endif
