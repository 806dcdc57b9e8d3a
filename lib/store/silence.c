/*
 * silence.c - silences; see silence.h.
 */
#include "store/silence.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "store/keyspace.h"
#include <json-c/json.h>

#include "core/timeutil.h"

int matcher_parse(struct matcher *m, const char *s, char *err, size_t errlen)
{
	const char *op = strpbrk(s, "=!");
	size_t nl;

	memset(m, 0, sizeof(*m));
	if (!op || op == s) {
		snprintf(err, errlen, "matcher '%s': expected name=value, name!=value or name=~regex", s);
		return -EINVAL;
	}
	nl = (size_t)(op - s);
	if (nl >= sizeof(m->name)) {
		snprintf(err, errlen, "matcher '%s': label name too long", s);
		return -EINVAL;
	}
	memcpy(m->name, s, nl);
	if (op[0] == '!' && op[1] == '=') {
		m->op = '!';
		op += 2;
	} else if (op[0] == '=' && op[1] == '~') {
		m->op = '~';
		op += 2;
	} else if (op[0] == '=') {
		m->op = '=';
		op += 1;
	} else {
		snprintf(err, errlen, "matcher '%s': expected =, != or =~", s);
		return -EINVAL;
	}
	snprintf(m->value, sizeof(m->value), "%s", op);
	if (m->op == '~') {
		char why[200];

		if (promregex_compile(&m->re, m->value, why, sizeof(why))) {
			snprintf(err, errlen, "matcher '%s': not a valid regular expression: %s", s,
				 why);
			return -EINVAL;
		}
		m->has_re = 1;
	}
	return 0;
}

void matcher_free(struct matcher *m)
{
	if (m->has_re)
		promregex_free(&m->re);
	m->has_re = 0;
}

int matcher_match(const struct matcher *m, const struct alert *a)
{
	const char *v = alert_label(a, m->name);

	if (!v)
		v = "";
	switch (m->op) {
	case '=': return !strcmp(v, m->value);
	case '!': return strcmp(v, m->value) != 0;
	case '~': return promregex_match(&m->re, v);
	}
	return 0;
}

static json_object *to_json(const struct silence *s)
{
	json_object *o = json_object_new_object(), *ms = json_object_new_array();

	json_object_object_add(o, "id", json_object_new_string(s->id));
	for (int i = 0; i < s->nm; i++) {
		char buf[400];

		snprintf(buf, sizeof(buf), "%s%s%s", s->m[i].name,
			 s->m[i].op == '=' ? "=" : s->m[i].op == '!' ? "!=" : "=~", s->m[i].value);
		json_object_array_add(ms, json_object_new_string(buf));
	}
	json_object_object_add(o, "matchers", ms);
	json_object_object_add(o, "starts_ms", json_object_new_int64((int64_t)s->starts_ms));
	json_object_object_add(o, "ends_ms", json_object_new_int64((int64_t)s->ends_ms));
	json_object_object_add(o, "comment", json_object_new_string(s->comment));
	json_object_object_add(o, "created_by", json_object_new_string(s->created_by));
	return o;
}

static int from_json(struct silence *s, const char *text)
{
	json_object *o = json_tokener_parse(text), *x;
	char err[256];

	memset(s, 0, sizeof(*s));
	if (!o)
		return -1;
	if (json_object_object_get_ex(o, "id", &x))
		snprintf(s->id, sizeof(s->id), "%s", json_object_get_string(x));
	if (json_object_object_get_ex(o, "starts_ms", &x))
		s->starts_ms = (uint64_t)json_object_get_int64(x);
	if (json_object_object_get_ex(o, "ends_ms", &x))
		s->ends_ms = (uint64_t)json_object_get_int64(x);
	if (json_object_object_get_ex(o, "comment", &x))
		snprintf(s->comment, sizeof(s->comment), "%s", json_object_get_string(x));
	if (json_object_object_get_ex(o, "created_by", &x))
		snprintf(s->created_by, sizeof(s->created_by), "%s", json_object_get_string(x));
	if (json_object_object_get_ex(o, "matchers", &x) && json_object_is_type(x, json_type_array))
		for (size_t i = 0; i < json_object_array_length(x) && s->nm < SILENCE_MAX_MATCHERS; i++)
			if (!matcher_parse(&s->m[s->nm],
					   json_object_get_string(json_object_array_get_idx(x, i)),
					   err, sizeof(err)))
				s->nm++;
	json_object_put(o);
	return s->nm ? 0 : -1;
}

int silence_add(struct conn *c, struct silence *s, char *err, size_t errlen)
{
	json_object *o;
	redisReply *r;

	snprintf(s->id, sizeof(s->id), "%llx-%x", (unsigned long long)(time_wall_ns() / 1000),
		 (unsigned)getpid());
	o = to_json(s);
	r = conn_commandf(c, KEY_SILENCES, "HSET " KEY_SILENCES " %s %s", s->id, json_object_to_json_string(o));
	json_object_put(o);
	if (!r || r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "redis: %s", r ? r->str : conn_errstr(c));
		if (r)
			freeReplyObject(r);
		return -EIO;
	}
	freeReplyObject(r);
	return 0;
}

int silence_expire(struct conn *c, const char *id, char *err, size_t errlen)
{
	redisReply *r = conn_commandf(c, KEY_SILENCES, "HGET " KEY_SILENCES " %s", id);
	struct silence s;
	json_object *o;

	if (!r) {
		snprintf(err, errlen, "redis: %s", conn_errstr(c));
		return -EIO;
	}
	if (r->type != REDIS_REPLY_STRING || from_json(&s, r->str)) {
		freeReplyObject(r);
		snprintf(err, errlen, "no silence with id %s", id);
		return -ENOENT;
	}
	freeReplyObject(r);
	s.ends_ms = time_wall_ns() / NSEC_PER_MSEC;
	o = to_json(&s);
	r = conn_commandf(c, KEY_SILENCES, "HSET " KEY_SILENCES " %s %s", id, json_object_to_json_string(o));
	json_object_put(o);
	for (int i = 0; i < s.nm; i++)
		matcher_free(&s.m[i]);
	if (r)
		freeReplyObject(r);
	return r ? 0 : -EIO;
}

int silence_load(struct conn *c, struct silence **out, char *err, size_t errlen)
{
	redisReply *r = conn_commandf(c, KEY_SILENCES, "HGETALL " KEY_SILENCES);
	struct silence *s;
	int n = 0;

	*out = NULL;
	if (!r || r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "redis: %s", r && r->type == REDIS_REPLY_ERROR ? r->str :
			 conn_errstr(c));
		if (r)
			freeReplyObject(r);
		return -EIO;
	}
	s = calloc(r->elements / 2 + 1, sizeof(*s));
	for (size_t i = 0; s && i + 1 < r->elements; i += 2)
		if (from_json(&s[n], r->element[i + 1]->str) == 0)
			n++;
	freeReplyObject(r);
	*out = s;
	return n;
}

void silence_free_all(struct silence *s, int n)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < s[i].nm; k++)
			matcher_free(&s[i].m[k]);
	free(s);
}

const struct silence *silence_find(const struct silence *s, int n, const struct alert *a,
				   uint64_t now_ms)
{
	for (int i = 0; i < n; i++) {
		int all = 1;

		if (now_ms < s[i].starts_ms || now_ms >= s[i].ends_ms)
			continue;
		for (int k = 0; k < s[i].nm && all; k++)
			all = matcher_match(&s[i].m[k], a);
		if (all)
			return &s[i];
	}
	return NULL;
}
