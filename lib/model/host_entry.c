/*
 * host_entry.c - the host registry entry; see host_entry.h.
 */
#include "model/host_entry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonc.h"

int host_entry_encode(const struct snapshot *s, struct strbuf *out)
{
	json_object *o = json_object_new_object(), *l = json_object_new_object();
	int ret;

	if (!o || !l) {
		json_object_put(o);
		json_object_put(l);
		strbuf_mark_failed(out);
		return -ENOMEM;
	}
	json_object_object_add(o, "last_seen_ms", json_object_new_int64((int64_t)s->ts_ms));
	json_object_object_add(o, "interval_ms", json_object_new_int64((int64_t)s->interval_ms));
	for (uint32_t i = 0; i < s->nlabels; i++)
		jsonc_put(l, s->labels[i].key, jsonc_string(s->labels[i].value));
	json_object_object_add(o, "labels", l);
	ret = jsonc_append(out, o);
	json_object_put(o);
	return ret;
}

static int uint_field(json_object *o, const char *key, uint64_t *out, char *err, size_t errlen)
{
	json_object *x;

	if (!json_object_object_get_ex(o, key, &x))
		return 0;
	if (!json_object_is_type(x, json_type_int) || json_object_get_int64(x) < 0) {
		snprintf(err, errlen, "%s: expected a non-negative integer", key);
		return -EINVAL;
	}
	*out = (uint64_t)json_object_get_int64(x);
	return 0;
}

int host_entry_decode(const char *json, size_t len, struct host_entry *e, char *err,
		      size_t errlen)
{
	json_object *o = jsonc_parse(json, len, err, errlen), *l;
	int ret = -EINVAL;

	memset(e, 0, sizeof(*e));
	if (!o)
		return -EINVAL;
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "expected a JSON object");
		goto out;
	}
	if (uint_field(o, "last_seen_ms", &e->last_seen_ms, err, errlen) ||
	    uint_field(o, "interval_ms", &e->interval_ms, err, errlen))
		goto out;
	if (json_object_object_get_ex(o, "labels", &l)) {
		if (!json_object_is_type(l, json_type_object)) {
			snprintf(err, errlen, "labels: expected an object");
			goto out;
		}
		e->labels = calloc((size_t)json_object_object_length(l) + 1, sizeof(*e->labels));
		if (!e->labels) {
			ret = -ENOMEM;
			goto out;
		}
		json_object_object_foreach(l, k, v) {
			if (!json_object_is_type(v, json_type_string)) {
				snprintf(err, errlen, "labels.%.64s: expected a string", k);
				goto out;
			}
			e->labels[e->nlabels].key = strdup(k);
			e->labels[e->nlabels].value = strdup(json_object_get_string(v));
			if (!e->labels[e->nlabels].key || !e->labels[e->nlabels].value) {
				e->nlabels++;
				ret = -ENOMEM;
				goto out;
			}
			e->nlabels++;
		}
	}
	ret = 0;
out:
	json_object_put(o);
	if (ret)
		host_entry_free(e);
	return ret;
}

const char *host_entry_label(const struct host_entry *e, const char *key)
{
	for (uint32_t i = 0; i < e->nlabels; i++)
		if (!strcmp(e->labels[i].key, key))
			return e->labels[i].value;
	return NULL;
}

void host_entry_free(struct host_entry *e)
{
	for (uint32_t i = 0; i < e->nlabels; i++) {
		free(e->labels[i].key);
		free(e->labels[i].value);
	}
	free(e->labels);
	memset(e, 0, sizeof(*e));
}
