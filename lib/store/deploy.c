/*
 * deploy.c - deploy markers in the fl:deploys stream; see deploy.h.
 */
#include "store/deploy.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "core/jsonc.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "core/log.h"
#include "store/store.h"
#include "store/store_internal.h"
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

static const char *const verdicts_known[] = {
	"regression", "no regression", "confounded", "too little data",
};

int deploy_verdict_known(const char *s)
{
	for (size_t i = 0; i < sizeof(verdicts_known) / sizeof(*verdicts_known); i++)
		if (!strcmp(s, verdicts_known[i]))
			return 1;
	return 0;
}

/* The verdict's JSON into out (DEPLOY_VERDICT_MAX + 1 bytes); -EINVAL if it does not fit. */
static int verdict_json(const struct deploy_verdict *v, char *out, size_t len)
{
	json_object *o = json_object_new_object();
	const char *js;
	int ret = 0;

	if (!o)
		return -ENOMEM;
	jsonc_put(o, "verdict", jsonc_string(v->verdict));
	jsonc_put(o, "service", jsonc_string(v->service));
	jsonc_put(o, "version", jsonc_string(v->version));
	if (v->by[0])
		jsonc_put(o, "by", jsonc_string(v->by));
	if (v->function[0])
		jsonc_put(o, "function", jsonc_string(v->function));
	if (v->value)
		jsonc_put(o, "value", json_object_new_double(v->value));
	jsonc_put(o, "judged_ms", json_object_new_int64((int64_t)v->judged_ms));
	js = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (!js || strlen(js) >= len)
		ret = -EINVAL;
	else
		memcpy(out, js, strlen(js) + 1);
	json_object_put(o);
	return ret;
}

/* The ms of a stream id "MS-SEQ", or 0 when it is not one. */
static uint64_t id_ms(const char *id, size_t len)
{
	uint64_t ms = 0;
	size_t i;

	for (i = 0; i < len && i < 20 && id[i] >= '0' && id[i] <= '9'; i++)
		ms = ms * 10 + (uint64_t)(id[i] - '0');
	return i && i < len && id[i] == '-' ? ms : 0;
}

struct prune_arg {
	struct conn *c;
	uint64_t oldest;		/* ms: verdicts of older markers go */
};

/* store_hscan: delete the verdict if its marker is older than a->oldest. */
static int prune_one(const redisReply *f, const redisReply *v, void *arg)
{
	const struct prune_arg *a = arg;
	uint64_t ms;

	(void)v;
	if (f->type != REDIS_REPLY_STRING)
		return 0;
	ms = id_ms(f->str, f->len);
	if (ms && ms < a->oldest)
		freeReplyObject(conn_commandf(a->c, KEY_DEPLOY_VERDICTS, "HDEL " KEY_DEPLOY_VERDICTS
					      " %b", f->str, f->len));
	return 0;
}

/*
 * Delete the verdicts of markers fl:deploys no longer holds (their id older
 * than now_ms - KEY_DEPLOYS_RETENTION_MS): once the hash holds
 * DEPLOY_VERDICTS_PRUNE_AT fields, so a small hash is never swept.
 */
static int verdicts_prune(struct conn *c, uint64_t now_ms, char *err, size_t errlen)
{
	struct prune_arg a = { c, now_ms > KEY_DEPLOYS_RETENTION_MS ?
				  now_ms - KEY_DEPLOYS_RETENTION_MS : 0 };
	redisReply *r = conn_commandf(c, KEY_DEPLOY_VERDICTS, "HLEN " KEY_DEPLOY_VERDICTS);

	if (!r || r->type != REDIS_REPLY_INTEGER)
		return store_reply_failed(c, r, "HLEN " KEY_DEPLOY_VERDICTS, err, errlen);
	if (r->integer < DEPLOY_VERDICTS_PRUNE_AT) {
		freeReplyObject(r);
		return 0;
	}
	freeReplyObject(r);
	return store_hscan(c, KEY_DEPLOY_VERDICTS, 1000, prune_one, &a, err, errlen);
}

int deploy_verdict_put(struct conn *c, const struct deploy_verdict *v, char *err, size_t errlen)
{
	char field[sizeof(v->id) + sizeof(v->rule) + 1], json[DEPLOY_VERDICT_MAX + 1];
	redisReply *r;

	if (!id_ms(v->id, strlen(v->id)) || !v->rule[0] || strchr(v->rule, ' ') ||
	    !deploy_verdict_known(v->verdict)) {
		snprintf(err, errlen, "verdict of '%s' on '%s': want a marker's id, a rule and "
			 "a known verdict, got '%s'", v->rule, v->id, v->verdict);
		return -EINVAL;
	}
	if (verdict_json(v, json, sizeof(json))) {
		snprintf(err, errlen, "verdict of %s on %s: over %d bytes", v->rule, v->id,
			 DEPLOY_VERDICT_MAX);
		return -EINVAL;
	}
	snprintf(field, sizeof(field), "%s %s", v->id, v->rule);
	r = conn_commandf(c, KEY_DEPLOY_VERDICTS, "HSET " KEY_DEPLOY_VERDICTS " %s %s", field, json);
	if (!r || r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "redis: HSET %s: %s", KEY_DEPLOY_VERDICTS,
			 r && r->type == REDIS_REPLY_ERROR ? r->str : conn_errstr(c));
		if (r)
			freeReplyObject(r);
		return -EIO;
	}
	freeReplyObject(r);
	/* written: a sweep that fails is said and tried again with the next verdict */
	if (verdicts_prune(c, id_ms(v->id, strlen(v->id)), err, errlen))
		log_warn("%s; old verdicts are pruned with the next one written", err);
	return 0;
}

/* A JSON string member of o into out (len bytes): 0, or -EINVAL (not a string, too long). */
static int verdict_str(json_object *o, const char *key, int need, char *out, size_t len,
		       char *err, size_t errlen)
{
	json_object *x;
	const char *s;

	out[0] = '\0';
	if (!json_object_object_get_ex(o, key, &x)) {
		if (need)
			snprintf(err, errlen, "no \"%s\"", key);
		return need ? -EINVAL : 0;
	}
	if (!json_object_is_type(x, json_type_string) ||
	    (size_t)json_object_get_string_len(x) >= len) {
		snprintf(err, errlen, "\"%s\" is not a string of under %zu bytes", key, len);
		return -EINVAL;
	}
	s = json_object_get_string(x);
	if (memchr(s, '\0', (size_t)json_object_get_string_len(x)) || has_control(s)) {
		snprintf(err, errlen, "\"%s\" holds control characters", key);
		return -EINVAL;
	}
	memcpy(out, s, (size_t)json_object_get_string_len(x) + 1);
	return 0;
}

int deploy_verdict_decode(struct deploy_verdict *v, const redisReply *field,
			  const redisReply *value, char *err, size_t errlen)
{
	const char *sp;
	json_object *o, *x, *val = NULL;
	char why[160];
	size_t idlen;
	int ret = -EINVAL;

	memset(v, 0, sizeof(*v));
	if (!field || !value || field->type != REDIS_REPLY_STRING ||
	    value->type != REDIS_REPLY_STRING) {
		snprintf(err, errlen, "a field or value that is not a string");
		return -EINVAL;
	}
	sp = memchr(field->str, ' ', field->len);
	idlen = sp ? (size_t)(sp - field->str) : 0;
	if (!sp || idlen >= sizeof(v->id) || !id_ms(field->str, idlen) ||
	    field->len - idlen - 1 >= sizeof(v->rule) || field->len - idlen - 1 == 0 ||
	    memchr(sp + 1, ' ', field->len - idlen - 1) ||
	    memchr(field->str, '\0', field->len)) {
		snprintf(err, errlen, "field '%.60s' is not \"STREAM-ID RULE\"", field->str);
		return -EINVAL;
	}
	memcpy(v->id, field->str, idlen);
	memcpy(v->rule, sp + 1, field->len - idlen - 1);
	if (value->len > DEPLOY_VERDICT_MAX) {
		snprintf(err, errlen, "%s %s: a value over %d bytes", v->id, v->rule,
			 DEPLOY_VERDICT_MAX);
		return -EINVAL;
	}
	o = jsonc_parse(value->str, value->len, why, sizeof(why));
	if (!o || !json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "%s %s: not a JSON object (%s)", v->id, v->rule,
			 o ? "another JSON value" : why);
		json_object_put(o);
		return -EINVAL;
	}
	if (verdict_str(o, "verdict", 1, v->verdict, sizeof(v->verdict), why, sizeof(why)) ||
	    verdict_str(o, "service", 0, v->service, sizeof(v->service), why, sizeof(why)) ||
	    verdict_str(o, "version", 0, v->version, sizeof(v->version), why, sizeof(why)) ||
	    verdict_str(o, "by", 0, v->by, sizeof(v->by), why, sizeof(why)) ||
	    verdict_str(o, "function", 0, v->function, sizeof(v->function), why, sizeof(why))) {
		snprintf(err, errlen, "%s %s: %s", v->id, v->rule, why);
	} else if (!deploy_verdict_known(v->verdict)) {
		snprintf(err, errlen, "%s %s: unknown verdict '%s'", v->id, v->rule, v->verdict);
	} else if (json_object_object_get_ex(o, "value", &val) &&
		   ((!json_object_is_type(val, json_type_double) &&
		     !json_object_is_type(val, json_type_int)) ||
		    !isfinite(json_object_get_double(val)))) {
		snprintf(err, errlen, "%s %s: \"value\" is not a finite number", v->id, v->rule);
	} else {
		v->value = val ? json_object_get_double(val) : 0;
		if (json_object_object_get_ex(o, "judged_ms", &x) &&
		    json_object_is_type(x, json_type_int) && json_object_get_int64(x) > 0)
			v->judged_ms = (uint64_t)json_object_get_int64(x);
		ret = 0;
	}
	json_object_put(o);
	if (ret)
		memset(v, 0, sizeof(*v));
	return ret;
}

struct read_arg {
	deploy_verdict_cb cb;
	void *arg;
	int n;
};

/* store_hscan: decode one verdict for deploy_verdicts_read. */
static int read_one(const redisReply *f, const redisReply *value, void *arg)
{
	struct read_arg *a = arg;
	struct deploy_verdict v;
	char why[256];

	if (a->n >= DEPLOY_LIST_MAX) {
		log_error("%s: more than %d verdicts; the rest are not read", KEY_DEPLOY_VERDICTS,
			  DEPLOY_LIST_MAX);
		return 1;
	}
	if (deploy_verdict_decode(&v, f, value, why, sizeof(why))) {
		log_warn("%s: %s; skipped", KEY_DEPLOY_VERDICTS, why);
		return 0;
	}
	a->cb(&v, a->arg);
	a->n++;
	return 0;
}

int deploy_verdicts_read(struct conn *c, deploy_verdict_cb cb, void *arg, char *err,
			 size_t errlen)
{
	struct read_arg a = { cb, arg, 0 };
	int ret = store_hscan(c, KEY_DEPLOY_VERDICTS, 1000, read_one, &a, err, errlen);

	return ret < 0 ? ret : a.n;
}
