/*
 * alert_group.h - the state of an alert group, in Redis, shared by every
 * alerter: which alerts the group holds, each one's newest state (the event
 * itself), a version that moves with every change, and which version was
 * last notified, when.
 *
 * A group is a receiver plus the values of its route's group_by labels
 * (alerter.h); its state is one hash, {fl:alerts}:group:GID (GID: the
 * first 32 hex digits of the SHA-256 of the group's key), in fl:alerts'
 * slot, kept 7 days past its last change:
 *
 *   FP    "ID S STARTS JSON": the newest event of alert FP any alerter took
 *         (its fl:alerts entry ID, S f firing / r resolved, its startsAt in
 *         ms, the event), or "ID d STARTS " once its resolution was
 *         delivered (or muted): kept an hour so that a late copy of that
 *         resolution is known for one
 *   _v    the version: +1 for every state taken
 *   _n    "VERSION MS": the version last notified, and when (wall ms)
 *
 * Because the state is in Redis, whichever alerter notifies — after a
 * restart, or a peer that read the group's newest event — sends the whole
 * group as it is: a PagerDuty incident resolves only when every alert of
 * its group has, a retry sends the newest state rather than the one it
 * first built, and a version already notified is not sent again.
 *
 * Every record is read back as outside input: a record of the wrong shape
 * is skipped and counted (alert_group_load's *bad), never trusted.
 */
#ifndef FL_STORE_ALERT_GROUP_H
#define FL_STORE_ALERT_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "model/alert.h"

struct conn;

/* What alert_group_take made of an event. */
enum alert_group_verdict {
	ALERT_GROUP_NEW,	/* a new state of its alert: the group changed */
	ALERT_GROUP_SAME,	/* the state the group holds already (a copy) */
	ALERT_GROUP_OLDER,	/* older than the state the group holds */
};

/* The group id (33 bytes) of a group key. */
void alert_group_id(const char *group_key, char gid[33]);

/*
 * Take event json (len bytes; alert fp, fl:alerts entry id, firing,
 * starts_ms) into group gid.  *verdict says what it was; *unsent is set
 * when the group holds a version not yet notified (so whoever holds an
 * entry of it must see it notified before acknowledging).  Returns 0 or an
 * ALERT_STREAM_ error (alert_stream.h).
 */
int alert_group_take(struct conn *rc, const char *gid, const char *fp, const char *id,
		     int firing, uint64_t starts_ms, const char *json, size_t len,
		     enum alert_group_verdict *verdict, int *unsent, char *err, size_t errlen);

/* One alert of a group as loaded: its newest event and the entry it came in. */
struct alert_group_member {
	struct alert a;
	char entry_id[32];
};

/* A group's state as loaded. */
struct alert_group_state {
	struct alert_group_member *m;
	int n;
	uint64_t version;		/* _v */
	uint64_t notified_version;	/* _n: 0 never */
	uint64_t notified_ms;
	int bad;			/* records skipped: not of the shape above */
};

/*
 * Load group gid (at most ALERT_GROUP_MAX alerts; past that, err says so
 * and the rest are not loaded: *st->bad counts them).  Resolved alerts
 * already notified are not members.  Returns 0 or an ALERT_STREAM_ error.
 */
#define ALERT_GROUP_MAX 10000
int alert_group_load(struct conn *rc, const char *gid, struct alert_group_state *st, char *err,
		     size_t errlen);
void alert_group_state_free(struct alert_group_state *st);

/*
 * Parse one record (the value of an FP field) into m; 1 when it is a
 * resolution already notified (m untouched), 0 when m holds the member,
 * -EINVAL when the record is not of that shape (why in err).
 */
int alert_group_record_parse(const char *rec, size_t len, struct alert_group_member *m,
			     char *err, size_t errlen);

/*
 * Version `version` of group gid was notified (delivered, or muted as a
 * whole) at now_ms: _n is set to it, unless a newer version was notified
 * meanwhile; the resolutions it carried (fps[i] of entry ids[i]) become
 * notified records unless a newer state of them was taken meanwhile; such
 * records older than an hour go.  Returns 0 or an ALERT_STREAM_ error.
 */
int alert_group_notified(struct conn *rc, const char *gid, uint64_t version, uint64_t now_ms,
			 const char *const *fps, const char *const *ids, int n, char *err,
			 size_t errlen);

/* The group's current version (0: none).  Returns 0 or an ALERT_STREAM_ error. */
int alert_group_version(struct conn *rc, const char *gid, uint64_t *version, char *err,
			size_t errlen);

#endif
