/*
 * deploy.c - deploy markers in the fl:deploys stream; see deploy.h.
 */
#include "store/deploy.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "store/keyspace.h"
#include "core/log.h"
#include "store/store.h"
#include "core/timeutil.h"

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

int deploy_validate(const struct deploy *d, char *err, size_t errlen)
{
	if (!d->service[0] || !d->version[0]) {
		snprintf(err, errlen, "a deploy marker needs a service and a version");
		return -EINVAL;
	}
	if (has_control(d->service) || has_control(d->version) || has_control(d->hosts) ||
	    has_control(d->by)) {
		snprintf(err, errlen, "deploy marker fields may not contain control characters");
		return -EINVAL;
	}
	return 0;
}

#define DEPLOY_FIELDS 6		/* field/value pairs of a marker */

/*
 * Validate d, fill its defaults (now, every host) and lay it out as the
 * stream entry's field/value pairs fv[0..2 * DEPLOY_FIELDS); ts holds the
 * time's digits.  Returns 0 or -EINVAL.  Both writers below use it, so a
 * marker has one shape whichever way it is written.
 */
static int prepare(struct deploy *d, char ts[24], const char *fv[2 * DEPLOY_FIELDS], char *err,
		   size_t errlen)
{
	int ret = deploy_validate(d, err, errlen);

	if (ret)
		return ret;
	if (!d->ts_ms)
		d->ts_ms = time_wall_ns() / NSEC_PER_MSEC;
	if (!d->hosts[0])
		snprintf(d->hosts, sizeof(d->hosts), "*");
	snprintf(ts, 24, "%llu", (unsigned long long)d->ts_ms);
	fv[0] = "service";
	fv[1] = d->service;
	fv[2] = "version";
	fv[3] = d->version;
	fv[4] = "hosts";
	fv[5] = d->hosts;
	fv[6] = "by";
	fv[7] = d->by;
	fv[8] = "ts_ms";
	fv[9] = ts;
	fv[10] = "kind";
	fv[11] = d->rollback ? "rollback" : "deploy";
	return 0;
}

int deploy_mark(struct conn *c, struct deploy *d, char *err, size_t errlen)
{
	char ts[24], minid[24];
	const char *fv[2 * DEPLOY_FIELDS], *argv[6 + 2 * DEPLOY_FIELDS];
	redisReply *r;
	int ret = prepare(d, ts, fv, err, errlen), argc = 0;

	if (ret)
		return ret;
	snprintf(minid, sizeof(minid), "%llu", (unsigned long long)
		 (d->ts_ms > KEY_DEPLOYS_RETENTION_MS ? d->ts_ms - KEY_DEPLOYS_RETENTION_MS : 0));
	argv[argc++] = "XADD";
	argv[argc++] = KEY_DEPLOYS;
	argv[argc++] = "MINID";
	argv[argc++] = "~";
	argv[argc++] = minid;
	argv[argc++] = "*";
	for (int i = 0; i < 2 * DEPLOY_FIELDS; i++)
		argv[argc++] = fv[i];
	r = conn_command(c, KEY_DEPLOYS, argc, argv, NULL);
	if (!r || r->type != REDIS_REPLY_STRING) {
		snprintf(err, errlen, "redis: XADD %s: %s", KEY_DEPLOYS,
			 r && r->type == REDIS_REPLY_ERROR ? r->str : conn_errstr(c));
		if (r)
			freeReplyObject(r);
		return -EIO;
	}
	snprintf(d->id, sizeof(d->id), "%s", r->str);
	freeReplyObject(r);
	return 0;
}

int deploy_queue(struct store *st, struct deploy *d, char *err, size_t errlen)
{
	char ts[24];
	const char *fv[2 * DEPLOY_FIELDS];
	int ret = prepare(d, ts, fv, err, errlen);

	return ret ? ret : store_put_fields(st, KEY_DEPLOYS, d->ts_ms, KEY_DEPLOYS_RETENTION_MS, fv,
					    DEPLOY_FIELDS);
}

/* Fill d from one stream entry's field/value array; 0 if it is a marker. */
static int from_entry(struct deploy *d, const redisReply *id, const redisReply *fv)
{
	memset(d, 0, sizeof(*d));
	if (id->type != REDIS_REPLY_STRING || fv->type != REDIS_REPLY_ARRAY)
		return -EINVAL;
	snprintf(d->id, sizeof(d->id), "%s", id->str);
	for (size_t i = 0; i + 1 < fv->elements; i += 2) {
		const char *k = fv->element[i]->str, *v = fv->element[i + 1]->str;
		char *end;

		if (!k || !v)
			continue;
		if (!strcmp(k, "service"))
			snprintf(d->service, sizeof(d->service), "%s", v);
		else if (!strcmp(k, "version"))
			snprintf(d->version, sizeof(d->version), "%s", v);
		else if (!strcmp(k, "hosts"))
			snprintf(d->hosts, sizeof(d->hosts), "%s", v);
		else if (!strcmp(k, "by"))
			snprintf(d->by, sizeof(d->by), "%s", v);
		else if (!strcmp(k, "ts_ms")) {
			d->ts_ms = strtoull(v, &end, 10);
			if (*end)
				return -EINVAL;
		} else if (!strcmp(k, "kind")) {
			/* markers from before kinds existed have none: deploys */
			if (!strcmp(v, "rollback"))
				d->rollback = 1;
			else if (strcmp(v, "deploy"))
				return -EINVAL;
		}
	}
	return d->service[0] && d->version[0] && d->ts_ms ? 0 : -EINVAL;
}

int deploy_list(struct conn *c, uint64_t since_ms, const char *service, deploy_cb cb,
		void *arg, char *err, size_t errlen)
{
	char start[32] = "-";
	int n = 0;

	/* entry ids are the XADD time, so since_ms bounds the range */
	if (since_ms)
		snprintf(start, sizeof(start), "%llu", (unsigned long long)since_ms);
	for (;;) {
		redisReply *r = conn_commandf(c, KEY_DEPLOYS, "XRANGE " KEY_DEPLOYS " %s + COUNT 1000", start);
		size_t got;

		if (!r || r->type != REDIS_REPLY_ARRAY) {
			snprintf(err, errlen, "redis: XRANGE %s: %s", KEY_DEPLOYS,
				 r && r->type == REDIS_REPLY_ERROR ? r->str : conn_errstr(c));
			if (r)
				freeReplyObject(r);
			return -EIO;
		}
		got = r->elements;
		for (size_t i = 0; i < r->elements; i++) {
			const redisReply *e = r->element[i];
			struct deploy d;

			if (e->type != REDIS_REPLY_ARRAY || e->elements != 2)
				continue;
			if (i + 1 == r->elements)
				snprintf(start, sizeof(start), "(%s", e->element[0]->str);
			if (from_entry(&d, e->element[0], e->element[1])) {
				log_warn("%s entry %s is not a deploy marker; skipped", KEY_DEPLOYS,
					 e->element[0]->str ? e->element[0]->str : "?");
				continue;
			}
			if (d.ts_ms < since_ms || (service && strcmp(service, d.service)))
				continue;
			n++;
			if (cb(&d, arg)) {
				freeReplyObject(r);
				return n;
			}
		}
		freeReplyObject(r);
		if (got < 1000)
			return n;
	}
}

int deploy_covers(const struct deploy *d, const char *host)
{
	return fnmatch(d->hosts[0] ? d->hosts : "*", host, 0) == 0;
}
