/*
 * alert.c - alert event parsing; see alert.h.
 */
#include "core/jsonc.h"
#include "model/alert.h"

#include "core/fnv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "core/strbuf.h"
#include "model/labels.h"

static int read_map(json_object *o, struct label **out, uint32_t *n)
{
	struct json_object_iterator it, end;
	uint32_t cnt = 0;

	*out = NULL;
	*n = 0;
	if (!o)
		return 0;
	if (!json_object_is_type(o, json_type_object))
		return -1;
	cnt = (uint32_t)json_object_object_length(o);
	if (cnt > 128)
		return -1;
	*out = calloc(cnt + 1, sizeof(**out));
	if (!*out)
		return -1;
	it = json_object_iter_begin(o);
	end = json_object_iter_end(o);
	while (!json_object_iter_equal(&it, &end)) {
		json_object *v = json_object_iter_peek_value(&it);

		if (!json_object_is_type(v, json_type_string))
			return -1;
		(*out)[*n].key = strdup(json_object_iter_peek_name(&it));
		(*out)[*n].value = strdup(json_object_get_string(v));
		(*n)++;
		json_object_iter_next(&it);
	}
	qsort(*out, *n, sizeof(**out), label_key_cmp);
	return 0;
}

uint64_t alert_parse_time(const char *s)
{
	struct tm tm = { 0 };
	char *end;
	uint64_t ms = 0;

	if (!s || !*s)
		return 0;
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return 0;
	if (*end == '.') {
		int digits = 0;

		for (end++; *end >= '0' && *end <= '9'; end++, digits++)
			if (digits < 3)
				ms = ms * 10 + (uint64_t)(*end - '0');
		for (; digits < 3; digits++)
			ms *= 10;
	}
	return (uint64_t)timegm(&tm) * 1000 + ms;
}

char *alert_format_time(uint64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
	return buf;
}

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int alert_parse(struct alert *a, const char *json, size_t len, char *err, size_t errlen)
{
	json_object *root = NULL, *o, *fl, *v;
	const char *s;
	char why[160];

	memset(a, 0, sizeof(*a));
	root = len <= 1 << 24 ? jsonc_parse_depth(json, len, 16, why, sizeof(why)) : NULL;
	if (!root || !json_object_is_type(root, json_type_object)) {
		snprintf(err, errlen, "alert event is not a JSON object");
		goto fail;
	}
	s = str_of(root, "status");
	if (!s || (strcmp(s, "firing") && strcmp(s, "resolved"))) {
		snprintf(err, errlen, "alert event: 'status' must be \"firing\" or \"resolved\"");
		goto fail;
	}
	a->firing = !strcmp(s, "firing");
	s = str_of(root, "fingerprint");
	if (!s || !*s || strlen(s) > 32) {
		snprintf(err, errlen, "alert event: 'fingerprint' missing or longer than 32");
		goto fail;
	}
	snprintf(a->fingerprint, sizeof(a->fingerprint), "%s", s);
	if (!json_object_object_get_ex(root, "labels", &o) || read_map(o, &a->labels, &a->nlabels) ||
	    !alert_label(a, "alertname")) {
		snprintf(err, errlen, "alert event: 'labels' must be a map of strings with alertname");
		goto fail;
	}
	if (json_object_object_get_ex(root, "annotations", &o) &&
	    read_map(o, &a->annotations, &a->nannotations)) {
		snprintf(err, errlen, "alert event: 'annotations' must be a map of strings");
		goto fail;
	}
	a->starts_ms = alert_parse_time(str_of(root, "startsAt"));
	a->ends_ms = alert_parse_time(str_of(root, "endsAt"));
	if ((s = str_of(root, "generatorURL")))
		snprintf(a->generator_url, sizeof(a->generator_url), "%s", s);
	if (json_object_object_get_ex(root, "faultline", &fl) &&
	    json_object_is_type(fl, json_type_object)) {
		if (json_object_object_get_ex(fl, "domain", &o) &&
		    json_object_is_type(o, json_type_object)) {
			if ((s = str_of(o, "label")))
				snprintf(a->domain_label, sizeof(a->domain_label), "%s", s);
			if ((s = str_of(o, "value")))
				snprintf(a->domain_value, sizeof(a->domain_value), "%s", s);
			if ((s = str_of(o, "same_as")))
				snprintf(a->domain_same, sizeof(a->domain_same), "%s", s);
			if (json_object_object_get_ex(o, "p", &v) &&
			    (json_object_is_type(v, json_type_double) ||
			     json_object_is_type(v, json_type_int)) &&
			    json_object_get_double(v) >= 0 && json_object_get_double(v) <= 1) {
				a->domain_p = json_object_get_double(v);
				a->has_domain_p = 1;
			}
		}
		if (json_object_object_get_ex(fl, "hosts", &o) &&
		    json_object_is_type(o, json_type_array)) {
			size_t n = json_object_array_length(o);

			if (n > ALERT_MAX_HOSTS)
				n = ALERT_MAX_HOSTS;
			a->hosts = calloc(n + 1, sizeof(*a->hosts));
			for (size_t i = 0; a->hosts && i < n; i++) {
				json_object *h = json_object_array_get_idx(o, i);

				if (json_object_is_type(h, json_type_string))
					a->hosts[a->nhosts++] = strdup(json_object_get_string(h));
			}
		}
		if (json_object_object_get_ex(fl, "total_hosts", &o))
			a->total_hosts = (uint32_t)json_object_get_int(o);
		if (json_object_object_get_ex(fl, "value", &o) &&
		    (json_object_is_type(o, json_type_double) || json_object_is_type(o, json_type_int))) {
			a->value = json_object_get_double(o);
			a->has_value = 1;
		}
		if ((s = str_of(fl, "runbook")))
			snprintf(a->runbook, sizeof(a->runbook), "%s", s);
		if ((s = str_of(fl, "firedAt")))
			a->fired_ms = alert_parse_time(s);
		if (json_object_object_get_ex(fl, "evidence", &o) &&
		    json_object_is_type(o, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(o); i++) {
				const char *e = json_object_get_string(json_object_array_get_idx(o, i));

				if (!e)
					continue;
				a->evidence |= alert_evidence_bit(e);
			}
		}
		if (json_object_object_get_ex(fl, "deploy", &o) &&
		    json_object_is_type(o, json_type_object)) {
			json_object *x;

			if ((s = str_of(o, "service")))
				snprintf(a->deploy_service, sizeof(a->deploy_service), "%s", s);
			if (json_object_object_get_ex(o, "at_ms", &x))
				a->deploy_at_ms = (uint64_t)json_object_get_int64(x);
			if (json_object_object_get_ex(o, "base_ms", &x))
				a->deploy_base_ms = (uint64_t)json_object_get_int64(x);
		}
	}
	json_object_put(root);
	return 0;
fail:
	json_object_put(root);
	alert_free(a);
	return -EINVAL;
}

static void free_labels(struct label *l, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

void alert_free(struct alert *a)
{
	free_labels(a->labels, a->nlabels);
	free_labels(a->annotations, a->nannotations);
	for (uint32_t i = 0; i < a->nhosts; i++)
		free(a->hosts[i]);
	free(a->hosts);
	memset(a, 0, sizeof(*a));
}

const char *alert_label(const struct alert *a, const char *key)
{
	for (uint32_t i = 0; i < a->nlabels; i++)
		if (!strcmp(a->labels[i].key, key))
			return a->labels[i].value;
	return NULL;
}

const char *alert_annotation(const struct alert *a, const char *key)
{
	for (uint32_t i = 0; i < a->nannotations; i++)
		if (!strcmp(a->annotations[i].key, key))
			return a->annotations[i].value;
	return NULL;
}

static const char *const evidence_names[] = { "cpu_stacks", "drive", "csum_peers", "io_stacks" };

uint32_t alert_evidence_bit(const char *name)
{
	for (uint32_t i = 0; i < sizeof(evidence_names) / sizeof(evidence_names[0]); i++)
		if (!strcmp(name, evidence_names[i]))
			return 1u << i;
	return 0;
}

static json_object *map_of(const struct label *l, uint32_t n)
{
	json_object *o = json_object_new_object();

	for (uint32_t i = 0; o && i < n; i++)
		json_object_object_add(o, l[i].key, jsonc_string(l[i].value));
	return o;
}

int alert_encode(const struct alert *a, struct strbuf *out)
{
	json_object *root = json_object_new_object(), *fl, *hosts, *ev;
	char t[40];
	int ret = 0;

	if (!root)
		return -ENOMEM;
	json_object_object_add(root, "status", jsonc_string(a->firing ? "firing"
									       : "resolved"));
	json_object_object_add(root, "fingerprint", jsonc_string(a->fingerprint));
	json_object_object_add(root, "labels", map_of(a->labels, a->nlabels));
	json_object_object_add(root, "annotations", map_of(a->annotations, a->nannotations));
	json_object_object_add(root, "startsAt",
			       jsonc_string(alert_format_time(a->starts_ms, t, sizeof(t))));
	if (!a->firing)
		json_object_object_add(root, "endsAt", jsonc_string(
					       alert_format_time(a->ends_ms, t, sizeof(t))));
	json_object_object_add(root, "generatorURL", jsonc_string(a->generator_url));
	fl = json_object_new_object();
	hosts = json_object_new_array();
	for (uint32_t i = 0; hosts && i < a->nhosts; i++)
		json_object_array_add(hosts, jsonc_string(a->hosts[i]));
	json_object_object_add(fl, "hosts", hosts);
	json_object_object_add(fl, "total_hosts", json_object_new_int((int)a->total_hosts));
	json_object_object_add(fl, "value", json_object_new_double(a->has_value ? a->value : 0));
	if (a->deploy_at_ms) {
		json_object *d = json_object_new_object();

		json_object_object_add(d, "service", jsonc_string(a->deploy_service));
		json_object_object_add(d, "at_ms", json_object_new_int64((int64_t)a->deploy_at_ms));
		json_object_object_add(d, "base_ms",
				       json_object_new_int64((int64_t)a->deploy_base_ms));
		json_object_object_add(fl, "deploy", d);
	}
	if (a->domain_label[0]) {
		json_object *d = json_object_new_object();

		json_object_object_add(d, "label", jsonc_string(a->domain_label));
		json_object_object_add(d, "value", jsonc_string(a->domain_value));
		if (a->domain_same[0])
			json_object_object_add(d, "same_as", jsonc_string(a->domain_same));
		if (a->has_domain_p)
			json_object_object_add(d, "p", json_object_new_double(a->domain_p));
		json_object_object_add(fl, "domain", d);
	}
	if (a->runbook[0])
		json_object_object_add(fl, "runbook", jsonc_string(a->runbook));
	if (a->fired_ms)
		json_object_object_add(fl, "firedAt", jsonc_string(
					       alert_format_time(a->fired_ms, t, sizeof(t))));
	ev = json_object_new_array();
	for (uint32_t i = 0; ev && i < sizeof(evidence_names) / sizeof(evidence_names[0]); i++)
		if (a->evidence & (1u << i))
			json_object_array_add(ev, jsonc_string(evidence_names[i]));
	json_object_object_add(fl, "evidence", ev);
	json_object_object_add(root, "faultline", fl);
	{
		const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
								  JSON_C_TO_STRING_NOSLASHESCAPE);

		if (text)
			strbuf_adds(out, text);
		if (!text || strbuf_failed(out))
			ret = -ENOMEM;
	}
	json_object_put(root);
	return ret;
}

/* qsort of pointers to labels, by key */
static int label_ptr_key_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct label *const *)a)->key, (*(const struct label *const *)b)->key);
}

void alert_fingerprint(const struct label *l, uint32_t n, char out[17])
{
	const struct label *sorted[64], **p = n <= 64 ? sorted : malloc(n * sizeof(*p));
	uint64_t h = FNV64_OFFSET;

	if (!p) {
		snprintf(out, 17, "%016x", 0);
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		p[i] = &l[i];
	qsort(p, n, sizeof(*p), label_ptr_key_cmp);
	for (uint32_t i = 0; i < n; i++) {
		h = fnv64_sep(fnv64_str(h, p[i]->key));
		h = fnv64_sep(fnv64_str(h, p[i]->value));
	}
	snprintf(out, 17, "%016" PRIx64, h);
	if (p != sorted)
		free(p);
}
