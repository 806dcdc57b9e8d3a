/*
 * alert_stream.h - the alert events stream as its consumer (the alerter)
 * reads it, and the two streams the alerter writes beside it.  The one
 * place that names them; the rules engine's side (appending events, its
 * checkpoint) is store.h's.
 *
 *   fl:alerts          stream; each entry {e: event JSON (model/alert.h)};
 *                      written by faultline-rules, read by the consumer
 *                      group "alerter" (one consumer per alerter process)
 *   fl:alerts:dead     stream of dead letters, one shape for every reason:
 *                      {reason, group, receiver, entries, body}
 *   fl:notifications   stream of what became of each notification:
 *                      {what, group, detail}
 *
 * Both written streams are capped at about 100,000 entries (MAXLEN ~);
 * fl:alerts itself is never capped: it is trimmed only below what its
 * consumer group has delivered (alert_stream_trim).
 * Every function takes the connection and says how it went the same way:
 * >= 0 on success, ALERT_STREAM_LOST when the connection dropped (the
 * caller reconnects), ALERT_STREAM_REFUSED when Redis answered an error or
 * a reply of a shape it should not have (why in err, with the command), and
 * from reads ALERT_STREAM_NOGROUP when the stream or the group is gone
 * (Redis restarted empty: create the group again).
 */
#ifndef FL_ALERT_STREAM_H
#define FL_ALERT_STREAM_H

#include <stddef.h>
#include <stdint.h>

struct conn;	/* conn.h */

#define ALERT_STREAM_LOST (-1)
#define ALERT_STREAM_REFUSED (-2)
#define ALERT_STREAM_NOGROUP (-3)


/*
 * One entry read: its id and its event (len bytes), or event NULL and why
 * it has none ("no \"e\" field", or trimmed from the stream while pending).
 */
typedef void (*alert_stream_cb)(const char *id, const char *event, size_t len, const char *why,
				void *arg);

/* Create the consumer group (and the stream) unless it exists. */
int alert_stream_create_group(struct conn *rc, char *err, size_t errlen);

/*
 * XREADGROUP for consumer from `from`: ">" for new entries (waiting up to
 * block_ms, 0: not at all), or an id to page through the consumer's own
 * pending list; at most count entries, each given to cb.  *last (lastlen)
 * gets the id of the last one.  Returns how many, 0 when none.
 */
int alert_stream_read(struct conn *rc, const char *consumer, const char *from, int count,
		      int block_ms, alert_stream_cb cb, void *arg, char *last, size_t lastlen,
		      char *err, size_t errlen);

/* Acknowledge ids[0..n) (one XACK). */
int alert_stream_ack(struct conn *rc, const char *const *ids, int n, char *err, size_t errlen);

/*
 * Keep ids[0..n) the consumer's own: reset the idle time of each still
 * pending for it (XCLAIM to it, JUSTID, in one script that checks the
 * owner first), so another consumer's claim does not take entries still in
 * hand; gone(id, arg) for each that is no longer the consumer's (another
 * took it over while this one looked idle: it is the other's to deliver).
 */
typedef void (*alert_stream_gone_cb)(const char *id, void *arg);
int alert_stream_hold(struct conn *rc, const char *consumer, const char *const *ids, int n,
		      alert_stream_gone_cb gone, void *arg, char *err, size_t errlen);

/*
 * How many of ids[0..n) are pending in the consumer group (read by some
 * alerter and not yet acknowledged: that alerter's to settle, or to be
 * claimed from it once it looks dead), into *pending.
 */
int alert_stream_pending_of(struct conn *rc, const char *const *ids, int n, int *pending,
			    char *err, size_t errlen);

/*
 * One page of taking over entries other consumers left idle for idle_ms
 * (XAUTOCLAIM from cursor, which is advanced; "0-0" again when done):
 * each given to cb; pending entries already deleted from the stream come
 * with why set.  Returns how many.
 */
int alert_stream_claim(struct conn *rc, const char *consumer, uint64_t idle_ms,
		       char cursor[32], alert_stream_cb cb, void *arg, char *err, size_t errlen);

/*
 * Append a dead letter: why, the group and receiver (empty when it never
 * reached one), the stream entries it stands for, and the event or
 * notification body (len bytes).
 */
int alert_stream_dead_letter(struct conn *rc, const char *reason, const char *group,
			     const char *receiver, const char *ids, const char *body, size_t len,
			     char *err, size_t errlen);

/*
 * How far behind the consumers of fl:alerts are: *undelivered gets the
 * entries no consumer group has read yet plus those read and not
 * acknowledged (for each group, its lag plus its pending count; the most of
 * any group), *oldest_ms the time of the oldest such entry (0: none).  No
 * group yet: every entry is undelivered.  Returns 0 or an ALERT_STREAM_
 * error.
 */
int alert_stream_backlog(struct conn *rc, uint64_t *undelivered, uint64_t *oldest_ms,
			 char *err, size_t errlen);

/*
 * Dead letters written to fl:alerts:dead since since_ms: *n gets how many
 * (at most 10,000 counted), *last_ms the newest one's time (0: none).
 * Returns 0 or an ALERT_STREAM_ error.
 */
int alert_stream_dead_since(struct conn *rc, uint64_t since_ms, uint64_t *n, uint64_t *last_ms,
			    char *err, size_t errlen);

/*
 * Trim fl:alerts below what some consumer group still needs: never an
 * entry a group has not read or has read and not acknowledged.  Of what
 * every group acknowledged, entries younger than keep_ms stay (an audit
 * trail), unless the stream holds more than keep_max entries: then it is
 * cut at the oldest undelivered one.  No group: nothing is trimmed.
 * *trimmed gets how many entries went.  Returns 0 or an ALERT_STREAM_
 * error.
 */
int alert_stream_trim(struct conn *rc, uint64_t now_ms, uint64_t keep_ms, uint64_t keep_max,
		      uint64_t *trimmed, char *err, size_t errlen);

/*
 * Remove consumers of the group other than me that hold nothing pending
 * and have been idle for idle_ms (alerters that stopped, or were renamed):
 * *removed gets how many.  One with entries pending is left for XAUTOCLAIM
 * to empty first.  Returns 0 or an ALERT_STREAM_ error.
 */
int alert_stream_prune_consumers(struct conn *rc, const char *me, uint64_t idle_ms, int *removed,
				 char *err, size_t errlen);

/* Append a record of what became of a notification (sent, silenced...). */
int alert_stream_record(struct conn *rc, const char *what, const char *group,
			const char *detail, char *err, size_t errlen);

#endif
