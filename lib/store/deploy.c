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

/* Copy v (len bytes) into dst (size bytes): -EINVAL when it does not fit whole. */
static int take_field(char *dst, size_t size, const char *v, size_t len)
{
	if (len >= size || strlen(v) != len)
		return -EINVAL;
	memcpy(dst, v, len + 1);
	return 0;
}

int deploy_decode_entry(struct deploy *d, const struct redisReply *entry, char *err,
			size_t errlen)
{
	const redisReply *id, *fv;

	memset(d, 0, sizeof(*d));
	if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 ||
	    (id = entry->element[0])->type != REDIS_REPLY_STRING ||
	    (fv = entry->element[1])->type != REDIS_REPLY_ARRAY || fv->elements % 2) {
		snprintf(err, errlen, "not a stream entry");
		return -EINVAL;
	}
	if (take_field(d->id, sizeof(d->id), id->str, id->len)) {
		snprintf(err, errlen, "entry id too long");
		return -EINVAL;
	}
	for (size_t i = 0; i < fv->elements; i += 2) {
		const redisReply *k = fv->element[i], *v = fv->element[i + 1];
		char *end;
		int bad = 0;

		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
			snprintf(err, errlen, "entry %s: a field or value is not a string", d->id);
			return -EINVAL;
		}
		if (!strcmp(k->str, "service"))
			bad = take_field(d->service, sizeof(d->service), v->str, v->len);
		else if (!strcmp(k->str, "version"))
			bad = take_field(d->version, sizeof(d->version), v->str, v->len);
		else if (!strcmp(k->str, "hosts"))
			bad = take_field(d->hosts, sizeof(d->hosts), v->str, v->len);
		else if (!strcmp(k->str, "by"))
			bad = take_field(d->by, sizeof(d->by), v->str, v->len);
		else if (!strcmp(k->str, "ts_ms")) {
			d->ts_ms = strtoull(v->str, &end, 10);
			bad = !v->len || *end || v->str[0] == '-';
		} else if (!strcmp(k->str, "kind")) {
			/* markers from before kinds existed have none: deploys */
			if (!strcmp(v->str, "rollback"))
				d->rollback = 1;
			else
				bad = strcmp(v->str, "deploy") != 0;
		}
		if (bad) {
			snprintf(err, errlen, "entry %s: field \"%.32s\" is out of shape or too long",
				 d->id, k->str);
			return -EINVAL;
		}
	}
	if (!d->ts_ms) {
		snprintf(err, errlen, "entry %s: no ts_ms", d->id);
		return -EINVAL;
	}
	if (deploy_validate(d, err, errlen))
		return -EINVAL;
	return 0;
}

int deploy_list(struct conn *c, uint64_t since_ms, const char *service, deploy_cb cb,
		void *arg, char *err, size_t errlen)
{
	char start[32] = "-";
	int n = 0, pages = 0;

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

			char why[300];

			if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
			    e->element[0]->type != REDIS_REPLY_STRING ||
			    e->element[0]->len >= sizeof(start) - 2) {
				freeReplyObject(r);
				snprintf(err, errlen, "redis: XRANGE %s: an entry of an unexpected shape",
					 KEY_DEPLOYS);
				return -EIO;
			}
			if (i + 1 == r->elements)
				snprintf(start, sizeof(start), "(%s", e->element[0]->str);
			if (deploy_decode_entry(&d, e, why, sizeof(why))) {
				log_warn("%s: %s: not a deploy marker; skipped", KEY_DEPLOYS, why);
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
		/* bounded: a flood of markers (any probe may add one) cannot stall a reader */
		if (++pages == DEPLOY_LIST_MAX / 1000) {
			log_error("%s: more than %d markers since %llu; the newer ones are not read "
				  "(a flood? see who writes them: XINFO STREAM %s)", KEY_DEPLOYS,
				  DEPLOY_LIST_MAX, (unsigned long long)since_ms, KEY_DEPLOYS);
			return n;
		}
	}
}

int deploy_covers(const struct deploy *d, const char *host)
{
	return fnmatch(d->hosts[0] ? d->hosts : "*", host, 0) == 0;
}

int deploy_verdict_put(struct conn *c, const char *deploy_id, const char *rule, const char *json,
		       char *err, size_t errlen)
{
	char field[400];
	redisReply *r;

	if (strlen(json) > DEPLOY_VERDICT_MAX) {
		snprintf(err, errlen, "verdict of %s on %s: over %d bytes", rule, deploy_id,
			 DEPLOY_VERDICT_MAX);
		return -EIO;
	}
	snprintf(field, sizeof(field), "%s %s", deploy_id, rule);
	r = conn_commandf(c, KEY_DEPLOY_VERDICTS, "HSET " KEY_DEPLOY_VERDICTS " %s %s", field, json);
	if (!r || r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "redis: HSET %s: %s", KEY_DEPLOY_VERDICTS,
			 r && r->type == REDIS_REPLY_ERROR ? r->str : conn_errstr(c));
		if (r)
			freeReplyObject(r);
		return -EIO;
	}
	freeReplyObject(r);
	return 0;
}

int deploy_verdicts_read(struct conn *c, deploy_verdict_cb cb, void *arg, char *err,
			 size_t errlen)
{
	char cursor[32] = "0";
	int n = 0;

	do {
		redisReply *r = conn_commandf(c, KEY_DEPLOY_VERDICTS, "HSCAN " KEY_DEPLOY_VERDICTS
					      " %s COUNT 1000", cursor);
		const redisReply *kv;

		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[0]->len >= sizeof(cursor) ||
		    r->element[1]->type != REDIS_REPLY_ARRAY) {
			snprintf(err, errlen, "redis: HSCAN %s: %s", KEY_DEPLOY_VERDICTS,
				 r && r->type == REDIS_REPLY_ERROR ? r->str :
				 r ? "a reply of an unexpected shape" : conn_errstr(c));
			if (r)
				freeReplyObject(r);
			return -EIO;
		}
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		kv = r->element[1];
		for (size_t i = 0; i + 1 < kv->elements && n < DEPLOY_LIST_MAX; i += 2) {
			const redisReply *f = kv->element[i], *v = kv->element[i + 1];
			char id[64], rule[256];
			const char *sp;

			if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
			    v->len > DEPLOY_VERDICT_MAX || !(sp = memchr(f->str, ' ', f->len)) ||
			    (size_t)(sp - f->str) >= sizeof(id) ||
			    f->len - (size_t)(sp - f->str) - 1 >= sizeof(rule) ||
			    memchr(v->str, '\0', v->len)) {
				log_warn("%s: a field of the wrong shape or size; skipped",
					 KEY_DEPLOY_VERDICTS);
				continue;
			}
			memcpy(id, f->str, (size_t)(sp - f->str));
			id[sp - f->str] = '\0';
			memcpy(rule, sp + 1, f->len - (size_t)(sp - f->str) - 1);
			rule[f->len - (size_t)(sp - f->str) - 1] = '\0';
			cb(id, rule, v->str, arg);
			n++;
		}
		freeReplyObject(r);
		if (n >= DEPLOY_LIST_MAX) {
			log_error("%s: more than %d verdicts; the rest are not read",
				  KEY_DEPLOY_VERDICTS, DEPLOY_LIST_MAX);
			break;
		}
	} while (strcmp(cursor, "0"));
	return n;
}
