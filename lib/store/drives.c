/*
 * drives.c - drive records and wear history in Redis; see drives.h.
 */
#include "store/drives.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "store/keyspace.h"
#include "core/strbuf.h"
#include "store/store.h"
#include "store/store_internal.h"

void drives_put(struct store *st, const char *host, const struct drive_record *r,
		const char *day)
{
	struct strbuf sb = STRBUF_INIT;
	char key[320], point[128];

	drive_to_json(r, &sb);
	key_drives(key, sizeof(key), host);
	if (!strbuf_failed(&sb))
		store_put_hash(st, key, r->device, strbuf_str(&sb), sb.len);
	strbuf_release(&sb);
	if (!day || !r->serial[0] || strcmp(r->status, "ok"))
		return;
	key_wear(key, sizeof(key), host, r->serial);
	drive_wear_point_format(r, point, sizeof(point));
	store_put_hash(st, key, day, point, strlen(point));
}

/* HGETALL key: the reply (an array), or NULL with the reason in err. */
static redisReply *hgetall(struct conn *c, const char *key, char *err, size_t errlen)
{
	redisReply *r;
	char what[300];

	/* a host's drives or one drive's history: kilobytes; bounded all the same */
	conn_set_reply_limit(c, STORE_READ_PAGE_MAX);
	r = conn_commandf(c, key, "HGETALL %s", key);
	conn_set_reply_limit(c, 0);
	if (r && r->type == REDIS_REPLY_ARRAY)
		return r;
	snprintf(what, sizeof(what), "HGETALL %s", key);
	store_reply_failed(c, r, what, err, errlen);
	return NULL;
}

char *drives_get_json(struct conn *c, const char *host, const char *device)
{
	char key[320], *json = NULL;
	redisReply *r;

	key_drives(key, sizeof(key), host);
	r = conn_commandf(c, key, "HGET %s %s", key, device);
	if (r && r->type == REDIS_REPLY_STRING)
		json = strndup(r->str, r->len);
	if (r)
		freeReplyObject(r);
	return json;
}

int drives_load(struct conn *c, const char *host, drives_record_cb cb, void *arg, char *err,
		size_t errlen)
{
	char key[320];
	redisReply *r;
	int n = 0;

	key_drives(key, sizeof(key), host);
	if (!(r = hgetall(c, key, err, errlen)))
		return -EIO;
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		redisReply *v = r->element[i + 1];
		struct drive_record rec;

		if (v->type != REDIS_REPLY_STRING || drive_from_json(&rec, v->str, v->len))
			continue;
		cb(&rec, arg);
		n++;
	}
	freeReplyObject(r);
	return n;
}

int drives_wear_history(struct conn *c, const char *host, const char *serial,
			drives_wear_cb cb, void *arg, char *err, size_t errlen)
{
	char key[400];
	redisReply *r;
	int n = 0;

	key_wear(key, sizeof(key), host, serial);
	if (!(r = hgetall(c, key, err, errlen)))
		return -EIO;
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		redisReply *d = r->element[i], *v = r->element[i + 1];
		double wear, bytes, hours;

		if (d->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
		    drive_wear_point_parse(v->str, &wear, &bytes, &hours))
			continue;
		cb(d->str, wear, bytes, hours, arg);
		n++;
	}
	freeReplyObject(r);
	return n;
}
