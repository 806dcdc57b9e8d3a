/*
 * silence.h - silences: label matchers with an expiry, stored in Redis
 * (hash fl:silences: id -> JSON), created with `faultline silence add` and
 * honoured by the alerter: a silenced alert is recorded, not sent.
 *
 * Matchers are Alertmanager's (model/matcher.h: =, !=, =~, !~, quoted
 * values); a silence matches an alert when every matcher does.
 */
#ifndef FL_SILENCE_H
#define FL_SILENCE_H

#include <stddef.h>
#include <stdint.h>

struct conn;	/* a connection from conn_open (store/conn.h) */

#include "model/alert.h"
#include "model/matcher.h"

#define SILENCE_MAX_MATCHERS 16

struct silence {
	char id[40];
	struct matcher m[SILENCE_MAX_MATCHERS];
	int nm;
	uint64_t starts_ms, ends_ms;
	char comment[256];
	char created_by[64];
};

/*
 * A silence record of fl:silences (len bytes of JSON) into s: every field
 * checked (any writer of the key wrote it), a record of the wrong shape
 * refused whole with the field named in err.  Returns 0, -EINVAL or
 * -ENOMEM.
 */
#define SILENCE_MAX_BYTES 65536
int silence_decode(struct silence *s, const char *text, size_t len, char *err, size_t errlen);

/*
 * A postableSilence of Alertmanager's API v2 (text, len bytes of JSON:
 * matchers [{name, value, isRegex, isEqual}], startsAt, endsAt, createdBy,
 * comment, id for an update) into s, every field checked as Alertmanager
 * checks it: at least one matcher, one that does not match "" (else it
 * would mute everything), endsAt after startsAt and after now_ms (a
 * startsAt in the past becomes now_ms), createdBy given; nothing cut (a
 * field over its bound is an error).  Returns 0 (s->id "" unless given;
 * matcher_free its matchers) or -EINVAL with the reason in err.
 */
int silence_parse_postable(struct silence *s, const char *text, size_t len, uint64_t now_ms,
			   char *err, size_t errlen);

/* Store a new silence (id filled in). Returns 0 or -EIO. */
int silence_add(struct conn *c, struct silence *s, char *err, size_t errlen);
/* Store s under its id (a new one, or an update of it). Returns 0 or -EIO. */
int silence_put(struct conn *c, const struct silence *s, char *err, size_t errlen);

/*
 * Read silence id into s (matcher_free its matchers).  Returns 0, -ENOENT,
 * -EINVAL (a record of the wrong shape: err says what) or -EIO.
 */
int silence_get(struct conn *c, const char *id, struct silence *s, char *err, size_t errlen);

/*
 * 1 when s passes the filter f[0..nf) as Alertmanager's silence query
 * filters: each filter matcher must match the value s's matcher of that
 * name has ("" when none); an empty value asks only for presence (=, =~)
 * or absence (!=, !~) of a matcher of that name.
 */
int silence_matches_filter(const struct silence *s, const struct matcher *f, int nf);

/* Set a silence's end to now (if it is later). Returns 0, -ENOENT or -EIO. */
int silence_expire(struct conn *c, const char *id, char *err, size_t errlen);
/*
 * Load every silence (active and expired) into a malloc'd array.
 * Returns the count or -EIO.
 */
int silence_load(struct conn *c, struct silence **out, char *err, size_t errlen);
void silence_free_all(struct silence *s, int n);

/* The first silence active at now_ms that matches a, or NULL. */
const struct silence *silence_find(const struct silence *s, int n, const struct alert *a,
				   uint64_t now_ms);

#endif
