/*
 * wake.h - fl:wake, "evaluate this host now".
 *
 * A probe that flushes a snapshot early because a counter a page hangs on
 * moved (probes/main.c) queues its host's name to fl:wake behind that
 * snapshot (store_put_wake).  faultline-rules blocks on the stream between
 * its ticks (wake_wait) and evaluates at once when a host it owns is
 * named, so a page does not wait for the next tick.
 *
 * An entry carries nothing but a host name.  A forged or flooded one
 * costs an early evaluation (the rules pace them), never a wrong page:
 * what is evaluated is read from the hosts' own streams.  The stream is
 * trimmed to ~KEY_WAKE_MAXLEN entries as it is written.
 */
#ifndef FL_STORE_WAKE_H
#define FL_STORE_WAKE_H

#include <stddef.h>
#include <stdint.h>

struct conn;
struct redisReply;

/* A cursor: the id of the last entry taken ("MS-SEQ"). */
struct wake_cursor {
	char id[48];
};

/*
 * Start after the stream's newest entry (XREVRANGE ... COUNT 1; "0-0" when
 * there is none): what comes later is read even if it comes between two
 * waits, which "$" would miss; the ids are Redis' own, whatever the
 * clocks say.  Returns 0, or -1 with the reason in err.
 */
int wake_cursor_init(struct conn *c, struct wake_cursor *cur, char *err, size_t errlen);

/* Called with each valid host name an entry carries; returns 1 if it is one the caller wants. */
typedef int (*wake_host_fn)(const char *host, void *arg);

/*
 * XREAD BLOCK block_ms COUNT 256 STREAMS fl:wake cursor: wait up to
 * block_ms (> 0) for entries after the cursor, move the cursor past them
 * and call fn with each one's host.  Returns how many fn wanted (0 on a
 * timeout), or -1 with the reason in err (the connection failed or Redis
 * refused; the cursor stays).
 */
int wake_wait(struct conn *c, struct wake_cursor *cur, int block_ms, wake_host_fn fn, void *arg,
	      char *err, size_t errlen);

/*
 * The entries of an XREAD reply r (nil: none), as wake_wait reads them:
 * the cursor moves to the last well-formed id; an entry without a valid
 * host name ("h", store_host_valid) is skipped.  Returns how many fn
 * wanted, or -1 with the reason in err when r is not an XREAD reply of
 * fl:wake.  Any bytes in r are survived (fuzz/fuzz_wake.c).
 */
int wake_decode(const struct redisReply *r, struct wake_cursor *cur, wake_host_fn fn, void *arg,
		char *err, size_t errlen);

#endif
