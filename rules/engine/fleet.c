/*
 * fleet.c - the partial aggregates sharded rules workers exchange for the
 * comparisons that span the fleet (engine_fleet, rules/shard/shard.h).
 *
 * Two kinds, both sums of per-host parts, so merging them in any order
 * gives the same result:
 *
 *   peer groups   peer_ratio's groups: per group value, a histogram of the
 *                 elements' values (eval_peer_record: x 1e9, so 1e-9 resolution).
 *                 The median a worker divides by is that of the merged
 *                 histogram (within a bucket: 1/16 of a power of two).
 *                 Blob: JSON {"group": [count, sum, [[bucket, n], ...]]}.
 *   baselines     a deploy verdict's slots (sums and counts per side, or
 *                 per-side histograms for percentile rules), its whole
 *                 windows' histograms, its profiles and the deployed hosts
 *                 with data.  Blob: "FLBP1" then length-prefixed sections:
 *                 the JSON part, then four profiles (profile_encode).
 */
#include "core/jsonc.h"
#include "rules/engine/fleet.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/log.h"
#include "core/strmap.h"

/* ---- histograms as JSON ------------------------------------------------------ */

static json_object *hist_json(const struct histogram *h)
{
	json_object *a = json_object_new_array(), *runs = json_object_new_array();

	json_object_array_add(a, json_object_new_int64((int64_t)h->count));
	json_object_array_add(a, json_object_new_int64((int64_t)h->sum));
	for (uint32_t i = 0; h->count && i < HIST_BUCKETS; i++)
		if (h->buckets[i]) {
			json_object *r = json_object_new_array();

			json_object_array_add(r, json_object_new_int((int32_t)i));
			json_object_array_add(r, json_object_new_int64((int64_t)h->buckets[i]));
			json_object_array_add(runs, r);
		}
	json_object_array_add(a, runs);
	return a;
}

/* Add the histogram in JSON a to h; -EINVAL when a is not one (h unchanged). */
static int hist_add_json(struct histogram *h, json_object *a)
{
	json_object *runs;
	struct histogram t;
	uint64_t n = 0;

	if (!json_object_is_type(a, json_type_array) || json_object_array_length(a) != 3)
		return -EINVAL;
	runs = json_object_array_get_idx(a, 2);
	if (!json_object_is_type(runs, json_type_array))
		return -EINVAL;
	memset(&t, 0, sizeof(t));
	for (size_t i = 0; i < json_object_array_length(runs); i++) {
		json_object *r = json_object_array_get_idx(runs, i);
		int64_t idx, cnt;

		if (!json_object_is_type(r, json_type_array) || json_object_array_length(r) != 2)
			return -EINVAL;
		idx = json_object_get_int64(json_object_array_get_idx(r, 0));
		cnt = json_object_get_int64(json_object_array_get_idx(r, 1));
		if (idx < 0 || idx >= HIST_BUCKETS || cnt < 0)
			return -EINVAL;
		t.buckets[idx] += (uint64_t)cnt;
		n += (uint64_t)cnt;
	}
	if (n != (uint64_t)json_object_get_int64(json_object_array_get_idx(a, 0)))
		return -EINVAL;
	t.count = n;
	t.sum = (uint64_t)json_object_get_int64(json_object_array_get_idx(a, 1));
	hist_merge(h, &t);
	return 0;
}

/* ---- peer groups -------------------------------------------------------------- */

struct peer_merge {
	char *const *groups;
	struct histogram *hists;
	size_t n;
	struct strmap *index;
	size_t bad;
};

static void merge_peer_blob(const void *blob, size_t len, void *arg)
{
	struct peer_merge *m = arg;
	char why[160];
	json_object *o = jsonc_parse(blob, len, why, sizeof(why));

	if (!o || !json_object_is_type(o, json_type_object)) {
		m->bad++;
		json_object_put(o);
		return;
	}
	json_object_object_foreach(o, group, h) {
		uint32_t i;

		if (strmap_get(m->index, group, &i) && hist_add_json(&m->hists[i], h))
			m->bad++;
	}
	json_object_put(o);
}

int fleet_peer_merge(const struct engine_fleet *f, const char *topic, char *const *groups,
		     struct histogram *hists, size_t n)
{
	json_object *o = json_object_new_object();
	struct strmap index;
	struct peer_merge m = { groups, hists, n, &index, 0 };
	const char *text;
	int ret;

	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		json_object_object_add(o, groups[i], hist_json(&hists[i]));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	ret = f->publish(f->arg, topic, text, strlen(text));
	json_object_put(o);
	if (ret < 0)
		return ret;
	strmap_init(&index);
	for (size_t i = 0; i < n; i++)
		strmap_put(&index, groups[i], (uint32_t)i);
	ret = f->gather(f->arg, topic, merge_peer_blob, &m);
	strmap_free(&index);
	if (m.bad)
		log_warn("%s: %zu partial(s) from other workers could not be read", topic, m.bad);
	return ret < 0 ? ret : 0;
}

/* ---- rollup populations ------------------------------------------------------- */

struct pop_sum {
	uint64_t n, k;
	size_t bad;
};

static void add_pop(const void *blob, size_t len, void *arg)
{
	struct pop_sum *p = arg;
	char text[64];
	unsigned long long n, k;

	if (len >= sizeof(text)) {
		p->bad++;
		return;
	}
	memcpy(text, blob, len);
	text[len] = '\0';
	if (sscanf(text, "%llu %llu", &n, &k) != 2 || k > n) {
		p->bad++;
		return;
	}
	p->n += n;
	p->k += k;
}

int fleet_population(const struct engine_fleet *f, const char *rule, uint64_t *n, uint64_t *k)
{
	char topic[300], text[64];
	struct pop_sum sum = { *n, *k, 0 };
	int ret;

	snprintf(topic, sizeof(topic), "rollup/%s", rule);
	snprintf(text, sizeof(text), "%llu %llu", (unsigned long long)*n, (unsigned long long)*k);
	ret = f->publish(f->arg, topic, text, strlen(text));
	if (ret < 0)
		return ret;
	ret = f->gather(f->arg, topic, add_pop, &sum);
	if (ret < 0)
		return ret;
	if (sum.bad)
		log_warn("%s: %zu population part(s) from other workers could not be read", topic,
			 sum.bad);
	*n = sum.n;
	*k = sum.k;
	return 0;
}

/* ---- baseline partials ----------------------------------------------------------- */

int fleet_bpart_init(struct fleet_bpart *b, int quantile)
{
	memset(b, 0, sizeof(*b));
	b->quantile = quantile;
	if (quantile) {
		b->dh = calloc(FLEET_SLOTS, sizeof(*b->dh));
		b->ph = calloc(FLEET_SLOTS, sizeof(*b->ph));
		if (!b->dh || !b->ph) {
			fleet_bpart_free(b);
			return -ENOMEM;
		}
	}
	for (int i = 0; i < 4; i++)
		profile_init(&b->prof[i], "");
	b->has_prof = 1;
	return 0;
}

void fleet_bpart_free(struct fleet_bpart *b)
{
	free(b->dh);
	free(b->ph);
	for (int i = 0; i < b->nhosts; i++)
		free(b->hosts[i]);
	free(b->hosts);
	for (int i = 0; b->has_prof && i < 4; i++)
		profile_free(&b->prof[i]);
	memset(b, 0, sizeof(*b));
}

int fleet_bpart_add_host(struct fleet_bpart *b, const char *host)
{
	char **n = realloc(b->hosts, (size_t)(b->nhosts + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	b->hosts = n;
	b->hosts[b->nhosts] = strdup(host);
	if (!b->hosts[b->nhosts])
		return -ENOMEM;
	b->nhosts++;
	return 0;
}

static void put_u32(char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

int fleet_bpart_encode(const struct fleet_bpart *b, char **out, size_t *outlen)
{
	json_object *o = json_object_new_object(), *slots = json_object_new_array(),
		    *hosts = json_object_new_array();
	const char *text;
	char *prof[4] = { 0 }, *buf;
	size_t plen[4] = { 0 }, tlen, total, at;
	int ret = -ENOMEM;

	for (int k = 0; k < FLEET_SLOTS; k++) {
		json_object *s = json_object_new_array();

		json_object_array_add(s, json_object_new_double(b->dsum[k]));
		json_object_array_add(s, json_object_new_int64((int64_t)b->dn[k]));
		json_object_array_add(s, json_object_new_double(b->psum[k]));
		json_object_array_add(s, json_object_new_int64((int64_t)b->pn[k]));
		if (b->quantile) {
			json_object_array_add(s, hist_json(&b->dh[k]));
			json_object_array_add(s, hist_json(&b->ph[k]));
		}
		json_object_array_add(slots, s);
	}
	json_object_object_add(o, "quantile", json_object_new_int(b->quantile));
	json_object_object_add(o, "slots", slots);
	for (int w = 0; w < 2; w++) {
		char key[8];

		snprintf(key, sizeof(key), "wd%d", w);
		json_object_object_add(o, key, hist_json(&b->wd[w]));
		snprintf(key, sizeof(key), "wp%d", w);
		json_object_object_add(o, key, hist_json(&b->wp[w]));
	}
	for (int i = 0; i < b->nhosts; i++)
		json_object_array_add(hosts, jsonc_string(b->hosts[i]));
	json_object_object_add(o, "hosts", hosts);
	json_object_object_add(o, "total", json_object_new_int(b->total));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	tlen = strlen(text);
	total = 5 + 4 + tlen;
	for (int i = 0; i < 4; i++) {
		if (b->has_prof && profile_encode(&b->prof[i], &prof[i], &plen[i]))
			goto out;
		total += 4 + plen[i];
	}
	buf = malloc(total);
	if (!buf)
		goto out;
	memcpy(buf, "FLBP1", 5);
	put_u32(buf + 5, (uint32_t)tlen);
	memcpy(buf + 9, text, tlen);
	at = 9 + tlen;
	for (int i = 0; i < 4; i++) {
		put_u32(buf + at, (uint32_t)plen[i]);
		if (plen[i])
			memcpy(buf + at + 4, prof[i], plen[i]);
		at += 4 + plen[i];
	}
	*out = buf;
	*outlen = total;
	ret = 0;
out:
	for (int i = 0; i < 4; i++)
		free(prof[i]);
	json_object_put(o);
	return ret;
}

static double jnum(json_object *a, size_t i)
{
	return json_object_get_double(json_object_array_get_idx(a, i));
}

static int merge_blob(struct fleet_bpart *b, const void *blob, size_t len)
{
	const char *p = blob;
	uint32_t tlen;
	json_object *o, *slots, *hosts, *v;
	char why[160];
	size_t at;
	int ret = -EINVAL;

	if (len < 9 || memcmp(p, "FLBP1", 5))
		return -EINVAL;
	memcpy(&tlen, p + 5, 4);
	if (tlen > len - 9)
		return -EINVAL;
	o = jsonc_parse(p + 9, tlen, why, sizeof(why));
	if (!o || !json_object_object_get_ex(o, "slots", &slots) ||
	    !json_object_is_type(slots, json_type_array) ||
	    json_object_array_length(slots) != FLEET_SLOTS ||
	    !json_object_object_get_ex(o, "quantile", &v) || json_object_get_int(v) != b->quantile)
		goto out;
	for (int k = 0; k < FLEET_SLOTS; k++) {
		json_object *s = json_object_array_get_idx(slots, (size_t)k);

		if (!json_object_is_type(s, json_type_array) ||
		    json_object_array_length(s) != (b->quantile ? 6u : 4u))
			goto out;
		b->dsum[k] += jnum(s, 0);
		b->dn[k] += (uint64_t)json_object_get_int64(json_object_array_get_idx(s, 1));
		b->psum[k] += jnum(s, 2);
		b->pn[k] += (uint64_t)json_object_get_int64(json_object_array_get_idx(s, 3));
		if (b->quantile && (hist_add_json(&b->dh[k], json_object_array_get_idx(s, 4)) ||
				    hist_add_json(&b->ph[k], json_object_array_get_idx(s, 5))))
			goto out;
	}
	for (int w = 0; w < 2; w++) {
		char key[8];

		snprintf(key, sizeof(key), "wd%d", w);
		if (!json_object_object_get_ex(o, key, &v) || hist_add_json(&b->wd[w], v))
			goto out;
		snprintf(key, sizeof(key), "wp%d", w);
		if (!json_object_object_get_ex(o, key, &v) || hist_add_json(&b->wp[w], v))
			goto out;
	}
	if (json_object_object_get_ex(o, "hosts", &hosts) &&
	    json_object_is_type(hosts, json_type_array))
		for (size_t i = 0; i < json_object_array_length(hosts); i++)
			if (fleet_bpart_add_host(b, json_object_get_string(
						    json_object_array_get_idx(hosts, i))))
				goto out;
	if (json_object_object_get_ex(o, "total", &v))
		b->total += json_object_get_int(v);
	at = 9 + tlen;
	for (int i = 0; i < 4; i++) {
		uint32_t plen;
		struct profile pr;
		char err[128];

		if (at + 4 > len)
			goto out;
		memcpy(&plen, p + at, 4);
		at += 4;
		if (plen > len - at)
			goto out;
		if (plen) {
			if (profile_decode(p + at, plen, &pr, err, sizeof(err)))
				goto out;
			profile_merge(&b->prof[i], &pr, NULL);
			profile_free(&pr);
		}
		at += plen;
	}
	ret = 0;
out:
	json_object_put(o);
	return ret;
}

/* dst += src, part by part (both of one kind). */
int fleet_bpart_add(struct fleet_bpart *dst, const struct fleet_bpart *src)
{
	for (int k = 0; k < FLEET_SLOTS; k++) {
		dst->dsum[k] += src->dsum[k];
		dst->dn[k] += src->dn[k];
		dst->psum[k] += src->psum[k];
		dst->pn[k] += src->pn[k];
		if (dst->quantile) {
			hist_merge(&dst->dh[k], &src->dh[k]);
			hist_merge(&dst->ph[k], &src->ph[k]);
		}
	}
	for (int w = 0; w < 2; w++) {
		hist_merge(&dst->wd[w], &src->wd[w]);
		hist_merge(&dst->wp[w], &src->wp[w]);
	}
	for (int i = 0; i < 4; i++)
		if (profile_merge(&dst->prof[i], &src->prof[i], NULL) < 0)
			return -ENOMEM;
	for (int i = 0; i < src->nhosts; i++)
		if (fleet_bpart_add_host(dst, src->hosts[i]))
			return -ENOMEM;
	dst->total += src->total;
	return 0;
}

int fleet_bpart_merge_blob(struct fleet_bpart *b, const void *blob, size_t len)
{
	struct fleet_bpart part;
	int ret;

	/* decoded whole first: a part that fails half way adds nothing */
	if (fleet_bpart_init(&part, b->quantile))
		return -ENOMEM;
	ret = merge_blob(&part, blob, len);
	if (!ret)
		ret = fleet_bpart_add(b, &part);
	fleet_bpart_free(&part);
	return ret;
}
