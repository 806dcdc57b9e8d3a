/*
 * silence.c - silences; see silence.h.
 */
#include "core/jsonc.h"
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

#include "core/log.h"
#include "core/strbuf.h"
#include "core/timeutil.h"

static json_object *to_json(const struct silence *s)
{
	json_object *o = json_object_new_object(), *ms = json_object_new_array();

	json_object_object_add(o, "id", jsonc_string(s->id));
	for (int i = 0; i < s->nm; i++) {
		char buf[MATCHER_NAME_MAX + 2 * MATCHER_VALUE_MAX + 8];

		matcher_format(&s->m[i], buf, sizeof(buf));
		json_object_array_add(ms, jsonc_string(buf));
	}
	json_object_object_add(o, "matchers", ms);
	json_object_object_add(o, "starts_ms", json_object_new_int64((int64_t)s->starts_ms));
	json_object_object_add(o, "ends_ms", json_object_new_int64((int64_t)s->ends_ms));
	json_object_object_add(o, "comment", jsonc_string(s->comment));
	json_object_object_add(o, "created_by", jsonc_string(s->created_by));
	return o;
}

int silence_decode(struct silence *s, const char *text, size_t len, char *err, size_t errlen)
{
	static const char *const strings[] = { "id", "comment", "created_by" };
	json_object *o, *x;
	char why[160];
	size_t n;

	memset(s, 0, sizeof(*s));
	o = len <= SILENCE_MAX_BYTES ? jsonc_parse(text, len, why, sizeof(why)) : NULL;
	if (!o || !json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "silence: not a JSON object of at most %d bytes",
			 SILENCE_MAX_BYTES);
		json_object_put(o);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		if (json_object_object_get_ex(o, strings[i], &x) &&
		    !json_object_is_type(x, json_type_string)) {
			snprintf(err, errlen, "silence: \"%s\" is not a string", strings[i]);
			goto bad;
		}
	if (json_object_object_get_ex(o, "id", &x))
		snprintf(s->id, sizeof(s->id), "%s", json_object_get_string(x));
	if (json_object_object_get_ex(o, "comment", &x))
		snprintf(s->comment, sizeof(s->comment), "%s", json_object_get_string(x));
	if (json_object_object_get_ex(o, "created_by", &x))
		snprintf(s->created_by, sizeof(s->created_by), "%s", json_object_get_string(x));
	if (!json_object_object_get_ex(o, "starts_ms", &x) || !json_object_is_type(x, json_type_int) ||
	    json_object_get_int64(x) < 0) {
		snprintf(err, errlen, "silence %s: \"starts_ms\" is not a non-negative integer", s->id);
		goto bad;
	}
	s->starts_ms = (uint64_t)json_object_get_int64(x);
	if (!json_object_object_get_ex(o, "ends_ms", &x) || !json_object_is_type(x, json_type_int) ||
	    json_object_get_int64(x) < 0) {
		snprintf(err, errlen, "silence %s: \"ends_ms\" is not a non-negative integer", s->id);
		goto bad;
	}
	s->ends_ms = (uint64_t)json_object_get_int64(x);
	if (!json_object_object_get_ex(o, "matchers", &x) || !json_object_is_type(x, json_type_array) ||
	    !(n = json_object_array_length(x)) || n > SILENCE_MAX_MATCHERS) {
		snprintf(err, errlen, "silence %s: \"matchers\" is not a list of 1 to %d matchers",
			 s->id, SILENCE_MAX_MATCHERS);
		goto bad;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *m = json_object_array_get_idx(x, i);
		char why[300];

		if (!json_object_is_type(m, json_type_string)) {
			snprintf(err, errlen, "silence %s: matchers[%zu] is not a string", s->id, i);
			goto bad;
		}
		if (matcher_parse(&s->m[s->nm], json_object_get_string(m), why, sizeof(why))) {
			snprintf(err, errlen, "silence %s: matchers[%zu]: %s", s->id, i, why);
			goto bad;
		}
		s->nm++;
	}
	json_object_put(o);
	return 0;
bad:
	for (int i = 0; i < s->nm; i++)
		matcher_free(&s->m[i]);
	s->nm = 0;
	json_object_put(o);
	return -EINVAL;
}

int silence_add(struct conn *c, struct silence *s, char *err, size_t errlen)
{
	snprintf(s->id, sizeof(s->id), "%llx-%x", (unsigned long long)(time_wall_ns() / 1000),
		 (unsigned)getpid());
	return silence_put(c, s, err, errlen);
}

int silence_put(struct conn *c, const struct silence *s, char *err, size_t errlen)
{
	json_object *o = to_json(s);
	redisReply *r = conn_commandf(c, KEY_SILENCES, "HSET " KEY_SILENCES " %s %s", s->id,
				      json_object_to_json_string(o));
	int ret = 0;

	json_object_put(o);
	if (!r || r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "redis: %s", r ? r->str : conn_errstr(c));
		ret = -EIO;
	}
	if (r)
		freeReplyObject(r);
	return ret;
}

int silence_get(struct conn *c, const char *id, struct silence *s, char *err, size_t errlen)
{
	redisReply *r = conn_commandf(c, KEY_SILENCES, "HGET " KEY_SILENCES " %s", id);
	int ret;

	if (!r || r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "redis: %s", r ? r->str : conn_errstr(c));
		if (r)
			freeReplyObject(r);
		return -EIO;
	}
	if (r->type != REDIS_REPLY_STRING) {
		freeReplyObject(r);
		snprintf(err, errlen, "no silence with id %s", id);
		return -ENOENT;
	}
	ret = silence_decode(s, r->str, r->len, err, errlen);
	freeReplyObject(r);
	return ret;
}

int silence_expire(struct conn *c, const char *id, char *err, size_t errlen)
{
	struct silence s;
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	int ret = silence_get(c, id, &s, err, errlen);

	if (ret == -EINVAL) {
		/* a record no alerter can read mutes nothing: expiring it is removing it */
		redisReply *r = conn_commandf(c, KEY_SILENCES, "HDEL " KEY_SILENCES " %s", id);

		if (r)
			freeReplyObject(r);
		return r ? 0 : -EIO;
	}
	if (ret)
		return ret;
	if (s.ends_ms > now)
		s.ends_ms = now;
	if (s.starts_ms > s.ends_ms)
		s.starts_ms = s.ends_ms;	/* one that never started ends unstarted */
	ret = silence_put(c, &s, err, errlen);
	for (int i = 0; i < s.nm; i++)
		matcher_free(&s.m[i]);
	return ret;
}

int silence_matches_filter(const struct silence *s, const struct matcher *f, int nf)
{
	for (int i = 0; i < nf; i++) {
		const char *v = NULL;
		int negative = f[i].op == MATCH_NE || f[i].op == MATCH_NRE;

		for (int k = 0; k < s->nm && !v; k++)
			if (!strcmp(s->m[k].name, f[i].name))
				v = s->m[k].value;
		/* Alertmanager's filter: an empty value asks for the name's presence or absence */
		if (!f[i].value[0] && (negative ? v != NULL : v == NULL))
			continue;
		if (!matcher_match_value(&f[i], v ? v : ""))
			return 0;
	}
	return 1;
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
	for (size_t i = 0; s && i + 1 < r->elements; i += 2) {
		const redisReply *v = r->element[i + 1];
		char why[400];

		if (v->type != REDIS_REPLY_STRING) {
			log_error("%s: the entry of %.64s is not a string; skipped", KEY_SILENCES,
				  r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : "?");
			continue;
		}
		if (silence_decode(&s[n], v->str, v->len, why, sizeof(why)) == 0)
			n++;
		else
			log_error("%s: %s; skipped (fix or expire it: faultline silence expire ID)",
				  KEY_SILENCES, why);
	}
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

int silence_parse_postable(struct silence *s, const char *text, size_t len, uint64_t now_ms,
			   char *err, size_t errlen)
{
	json_object *o, *ms;
	const char *v;
	char why[600];
	int all_empty = 1;

	memset(s, 0, sizeof(*s));
	o = jsonc_parse_depth(text, len, 8, why, sizeof(why));
	if (!o || !json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "the body is not a silence (a JSON object): %s",
			 o ? "not an object" : why);
		json_object_put(o);
		return -EINVAL;
	}
	ms = jsonc_path(o, "matchers");
	if (!ms || !json_object_is_type(ms, json_type_array) || !json_object_array_length(ms)) {
		snprintf(err, errlen, "matchers: at least one is needed");
		goto bad;
	}
	if (json_object_array_length(ms) > SILENCE_MAX_MATCHERS) {
		snprintf(err, errlen, "matchers: at most %d", SILENCE_MAX_MATCHERS);
		goto bad;
	}
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i), *re, *eq;
		const char *name = jsonc_str(m, "name"), *value = jsonc_str(m, "value");
		int is_re, is_eq = 1;
		struct strbuf spec = STRBUF_INIT;

		if (!name || !value || !json_object_object_get_ex(m, "isRegex", &re)) {
			snprintf(err, errlen, "matchers[%zu]: name, value and isRegex are needed",
				 i);
			goto bad;
		}
		if (!*name || strlen(name) >= MATCHER_NAME_MAX || (*name >= '0' && *name <= '9') ||
		    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
		    strlen(name)) {
			snprintf(err, errlen, "matchers[%zu]: '%.64s' is not a label name "
				 "([a-zA-Z_][a-zA-Z0-9_]*)", i, name);
			goto bad;
		}
		is_re = json_object_get_boolean(re);
		if (json_object_object_get_ex(m, "isEqual", &eq))
			is_eq = json_object_get_boolean(eq);
		strbuf_addf(&spec, "%s%s\"", name, is_eq ? (is_re ? "=~" : "=")
							 : (is_re ? "!~" : "!="));
		for (const char *p = value; *p; p++) {
			if (*p == '"' || *p == '\\')
				strbuf_adds(&spec, "\\");
			strbuf_add(&spec, p, 1);
		}
		strbuf_adds(&spec, "\"");
		if (matcher_parse(&s->m[s->nm], strbuf_str(&spec), why, sizeof(why))) {
			strbuf_release(&spec);
			snprintf(err, errlen, "matchers[%zu]: %s", i, why);
			goto bad;
		}
		strbuf_release(&spec);
		all_empty &= matcher_match_value(&s->m[s->nm], "");
		s->nm++;
	}
	if (all_empty) {
		snprintf(err, errlen, "matchers: at least one must not match the empty string "
			 "(else the silence would mute every alert)");
		goto bad;
	}
	s->starts_ms = alert_parse_time(jsonc_str(o, "startsAt"));
	s->ends_ms = alert_parse_time(jsonc_str(o, "endsAt"));
	if (!s->starts_ms || !s->ends_ms) {
		snprintf(err, errlen, "startsAt and endsAt: RFC 3339 times are needed");
		goto bad;
	}
	if (s->ends_ms <= s->starts_ms) {
		snprintf(err, errlen, "endsAt is not after startsAt");
		goto bad;
	}
	if (s->ends_ms <= now_ms) {
		snprintf(err, errlen, "endsAt is in the past");
		goto bad;
	}
	if (s->starts_ms < now_ms)
		s->starts_ms = now_ms;
	v = jsonc_str(o, "createdBy");
	if (!v || !*v || strlen(v) >= sizeof(s->created_by)) {
		snprintf(err, errlen, "createdBy: needed, under %zu bytes", sizeof(s->created_by));
		goto bad;
	}
	snprintf(s->created_by, sizeof(s->created_by), "%s", v);
	v = jsonc_str(o, "comment");
	if (v && strlen(v) >= sizeof(s->comment)) {
		snprintf(err, errlen, "comment: under %zu bytes", sizeof(s->comment));
		goto bad;
	}
	snprintf(s->comment, sizeof(s->comment), "%s", v ? v : "");
	v = jsonc_str(o, "id");
	if (v && *v) {
		if (strlen(v) >= sizeof(s->id)) {
			snprintf(err, errlen, "id: not a silence id");
			goto bad;
		}
		snprintf(s->id, sizeof(s->id), "%s", v);
	}
	json_object_put(o);
	return 0;
bad:
	for (int i = 0; i < s->nm; i++)
		matcher_free(&s->m[i]);
	json_object_put(o);
	return -EINVAL;
}
