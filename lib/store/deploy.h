/*
 * deploy.h - deploy markers: "service S went to version V on these hosts at
 * time T", the reference points of post-deploy comparisons.
 *
 * Stored in the Redis stream fl:deploys (docs/design.md), one entry per marker,
 * fields: service, version, hosts (a glob over host names, "*" = all),
 * by (who or what marked it: a user or "probe:build-id"), ts_ms, and kind
 * ("deploy", or "rollback": the service went back; a standing regression
 * verdict on it ends and the rollback itself is not judged).  Entries
 * older than 90 days are trimmed when a new one is added.
 */
#ifndef FL_DEPLOY_H
#define FL_DEPLOY_H

#include <stddef.h>
#include <stdint.h>

struct conn;	/* a connection from conn_open (store/conn.h) */


struct deploy {
	char id[32];		/* stream entry id, filled in by deploy_mark */
	char service[128];
	char version[128];
	char hosts[256];	/* fnmatch(3) glob */
	char by[128];
	uint64_t ts_ms;
	int rollback;		/* a rollback mark, not a deploy */
};

/*
 * Check d's fields (service and version set, no control characters).
 * Returns 0 or -EINVAL with the reason in err.
 */
int deploy_validate(const struct deploy *d, char *err, size_t errlen);

/*
 * One fl:deploys entry as read ([id, [field, value, ...]]) into d: every
 * field a string that fits whole, ts_ms digits, kind deploy or rollback,
 * then deploy_validate.  Any writer of the stream wrote it: a wrong shape
 * is -EINVAL with why in err, never a partial marker.
 */
struct redisReply;
int deploy_decode_entry(struct deploy *d, const struct redisReply *entry, char *err,
			size_t errlen);

/*
 * Append d to fl:deploys (ts_ms 0 means now) and fill in d->id.
 * Returns 0, -EINVAL (invalid marker) or -EIO (Redis; reason in err).
 */
int deploy_mark(struct conn *c, struct deploy *d, char *err, size_t errlen);

struct store;
/*
 * The same through a probe's spool (never waits for Redis; the marker
 * survives a Redis outage like snapshots do).  d->id stays empty.
 * Returns 0, -EINVAL or -ENOMEM.
 */
int deploy_queue(struct store *st, struct deploy *d, char *err, size_t errlen);

typedef int (*deploy_cb)(const struct deploy *d, void *arg);

/* deploy_list reads at most this many markers (logged as an error beyond) */
#define DEPLOY_LIST_MAX 100000

/*
 * Call cb for each marker with ts_ms >= since_ms, oldest first, of service
 * (NULL: any).  Entries that are not deploy markers are skipped with a
 * warning, never fatal.  A non-zero return from cb stops the walk.
 * Returns the number of markers passed to cb, or -EIO.
 */
int deploy_list(struct conn *c, uint64_t since_ms, const char *service, deploy_cb cb,
		void *arg, char *err, size_t errlen);

/*
 * Verdicts: what a baseline rule decided about a deploy, so `faultline
 * deploy list` shows it beside the marker.  One field per deploy (its
 * stream id) and rule in fl:deploys:verdicts, "ID RULE", the value JSON:
 * {"verdict": one of the four below, "service", "version", "by": the
 * other deploys of a train, "value" (a regression's), "function" (a
 * profile verdict's), "judged_ms"}.  Verdicts of markers trimmed from
 * fl:deploys (older than KEY_DEPLOYS_RETENTION_MS) are deleted as new ones
 * are written, once the hash holds DEPLOY_VERDICTS_PRUNE_AT fields.
 */
#define DEPLOY_VERDICT_MAX 4096		/* bytes of one verdict's JSON */
#define DEPLOY_VERDICTS_PRUNE_AT 1000

struct deploy_verdict {
	char id[32];			/* the marker's stream id */
	char rule[256];
	char verdict[32];		/* "regression", "no regression", "confounded",
					 * "too little data" */
	char service[128], version[128];
	char by[512];			/* "service version, ..." of a train, or "" */
	char function[256];		/* a profile regression's, or "" */
	double value;			/* a regression's: its ratio or share, else 0 */
	uint64_t judged_ms;
};

/* Whether s is one of the four verdicts. */
int deploy_verdict_known(const char *s);

/*
 * Write v (its id, rule and verdict set).  Returns 0 once it is written
 * (a failed prune of old verdicts is logged, not returned), -EINVAL or
 * -EIO.
 */
int deploy_verdict_put(struct conn *c, const struct deploy_verdict *v, char *err, size_t errlen);

/*
 * One fl:deploys:verdicts field and value as read into v: "ID RULE", JSON
 * of the shape above with a known verdict.  Any bytes may be there: a
 * wrong shape is -EINVAL with why in err, never a partial verdict.
 */
int deploy_verdict_decode(struct deploy_verdict *v, const struct redisReply *field,
			  const struct redisReply *value, char *err, size_t errlen);

/*
 * Call cb with every stored verdict (at most DEPLOY_LIST_MAX; those that do
 * not decode are skipped, each with a warning).  Returns how many, or -EIO.
 */
typedef void (*deploy_verdict_cb)(const struct deploy_verdict *v, void *arg);
int deploy_verdicts_read(struct conn *c, deploy_verdict_cb cb, void *arg, char *err,
			 size_t errlen);

/* Whether d covers host (its hosts glob matches the name). */
int deploy_covers(const struct deploy *d, const char *host);

#endif
