/*
 * config_schema.c - configs parsed and documented from one table; see
 * config_schema.h.
 */
#include "core/config_schema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"

#define MAX_DEPTH 4

/* Split path into its parent (dotted, "" for the root) and its last key. */
static const char *last_key(const char *path, char *parent, size_t len)
{
	const char *dot = strrchr(path, '.');
	size_t n = dot ? (size_t)(dot - path) : 0;

	if (n >= len)
		n = len - 1;
	memcpy(parent, path, n);
	parent[n] = '\0';
	return dot ? dot + 1 : path;
}

/*
 * The map at a dotted path under the root (NULL when a part is absent);
 * -EINVAL when a part is present but not a map.
 */
static int map_at(const struct cfg *c, const char *path, const struct cfg_node **out, char *err,
		  size_t errlen)
{
	const struct cfg_node *m = c->root;
	char key[64];

	while (m && *path) {
		size_t n = strcspn(path, ".");
		int ret;

		if (n >= sizeof(key))
			return -EINVAL;
		memcpy(key, path, n);
		key[n] = '\0';
		if ((ret = cfg_map(c, m, key, &m, err, errlen)))
			return ret;
		path += n + (path[n] == '.');
	}
	*out = m;
	return 0;
}

static int apply_one(const struct cfg *c, const struct cfg_field *f, const struct cfg_node *map,
		     const char *key, void *base, char *err, size_t errlen)
{
	void *at = (char *)base + f->offset;
	uint64_t u;
	int ret;

	switch (f->type) {
	case CFG_F_STRING:
		return cfg_string(c, map, key, (char **)at, err, errlen);
	case CFG_F_CHARS: {
		char *v = NULL;

		if ((ret = cfg_string(c, map, key, &v, err, errlen)) || !v)
			return ret;
		if (strlen(v) >= f->size)
			ret = cfg_error(c, cfg_get(map, key), err, errlen,
					"%s: longer than %zu characters", key, f->size - 1);
		else
			memcpy(at, v, strlen(v) + 1);
		free(v);
		return ret;
	}
	case CFG_F_DURATION:
		u = *(uint64_t *)at;
		if ((ret = cfg_duration(c, map, key, &u, err, errlen)))
			return ret;
		if (f->max > 0 && (u < (uint64_t)f->min || u > (uint64_t)f->max)) {
			char lo[32], hi[32];

			return cfg_error(c, cfg_get(map, key), err, errlen,
					 "%s: must be between %s and %s", key,
					 duration_format((uint64_t)f->min, lo, sizeof(lo)),
					 duration_format((uint64_t)f->max, hi, sizeof(hi)));
		}
		*(uint64_t *)at = u;
		return 0;
	case CFG_F_UINT:
		u = f->size == 4 ? *(uint32_t *)at : *(uint64_t *)at;
		if ((ret = cfg_uint(c, map, key, (uint64_t)f->min,
				    f->max > 0 ? (uint64_t)f->max : UINT64_MAX, &u, err, errlen)))
			return ret;
		if (f->size == 4)
			*(uint32_t *)at = (uint32_t)u;
		else
			*(uint64_t *)at = u;
		return 0;
	case CFG_F_NUMBER:
		return cfg_number(c, map, key, f->min, f->max > 0 ? f->max : 1e308, (double *)at,
				  err, errlen);
	case CFG_F_BOOL:
		return cfg_bool(c, map, key, (int *)at, err, errlen);
	case CFG_F_CUSTOM:
		return f->parse(c, map, key, base, err, errlen);
	}
	return -EINVAL;
}

/*
 * The keys schema rows reach directly under the map at parent: their own
 * last keys, and the sections deeper rows pass through.  Comma separated,
 * each once, in table order, into buf.
 */
static void keys_under(const struct cfg_field *schema, size_t n, const char *parent, char *buf,
		       size_t len)
{
	size_t pl = strlen(parent), off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++) {
		const char *rest = schema[i].path;
		char key[64], seen[1040];
		size_t kl;

		if (pl) {
			if (strncmp(rest, parent, pl) || rest[pl] != '.')
				continue;
			rest += pl + 1;
		}
		kl = strcspn(rest, ".");
		if (kl >= sizeof(key))
			continue;
		memcpy(key, rest, kl);
		key[kl] = '\0';
		snprintf(seen, sizeof(seen), ", %s, ", buf);
		{
			char probe[70];

			snprintf(probe, sizeof(probe), ", %s, ", key);
			if (strstr(seen, probe))
				continue;
		}
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "", key);
	}
}

int cfg_apply(const struct cfg *c, const struct cfg_field *schema, size_t n, void *base,
	      char *err, size_t errlen)
{
	const struct cfg_node *map;
	char parent[128], known[1024];
	int ret;

	for (size_t i = 0; i < n; i++) {
		const char *key = last_key(schema[i].path, parent, sizeof(parent));

		if ((ret = map_at(c, parent, &map, err, errlen)))
			return ret;
		if (map && (ret = apply_one(c, &schema[i], map, key, base, err, errlen)))
			return ret;
	}
	/* unknown keys, deepest levels first, so the message names the inner key */
	for (size_t i = n; i-- > 0;) {
		last_key(schema[i].path, parent, sizeof(parent));
		if (!parent[0])
			continue;
		if ((ret = map_at(c, parent, &map, err, errlen)))
			return ret;
		keys_under(schema, n, parent, known, sizeof(known));
		if ((ret = cfg_check_unknown(c, map, known, err, errlen)))
			return ret;
	}
	keys_under(schema, n, "", known, sizeof(known));
	return cfg_check_unknown(c, c->root, known, err, errlen);
}

static const char *type_name(const struct cfg_field *f)
{
	if (f->type == CFG_F_CUSTOM)
		return f->custom_type;
	{
	static const char *const names[] = {
		[CFG_F_STRING] = "string", [CFG_F_CHARS] = "string", [CFG_F_DURATION] = "duration",
		[CFG_F_UINT] = "integer", [CFG_F_NUMBER] = "number", [CFG_F_BOOL] = "bool",
		[CFG_F_CUSTOM] = "",
	};
	return names[f->type];
	}
}

static void format_value(const struct cfg_field *f, const void *base, char *buf, size_t len)
{
	const void *at = (const char *)base + f->offset;

	switch (f->type == CFG_F_CUSTOM ? f->shown : f->type) {
	case CFG_F_STRING:
		snprintf(buf, len, "%s", *(char *const *)at ? *(char *const *)at : "");
		break;
	case CFG_F_CHARS:
		snprintf(buf, len, "%s", (const char *)at);
		break;
	case CFG_F_DURATION:
		duration_format(*(const uint64_t *)at, buf, len);
		break;
	case CFG_F_UINT:
		snprintf(buf, len, "%llu", f->size == 4 ? (unsigned long long)*(const uint32_t *)at :
			 (unsigned long long)*(const uint64_t *)at);
		break;
	case CFG_F_NUMBER:
		snprintf(buf, len, "%g", *(const double *)at);
		break;
	case CFG_F_BOOL:
		snprintf(buf, len, "%s", *(const int *)at ? "true" : "false");
		break;
	case CFG_F_CUSTOM:
		buf[0] = '\0';
		break;
	}
	if (!buf[0] && (f->type == CFG_F_CUSTOM ? f->shown : f->type) != CFG_F_CUSTOM)
		snprintf(buf, len, "\"\"");
}

void cfg_schema_markdown(const struct cfg_field *schema, size_t n, const void *defaults,
			 struct strbuf *out)
{
	strbuf_adds(out, "| key | type | bounds | default | description |\n"
			 "| --- | --- | --- | --- | --- |\n");
	for (size_t i = 0; i < n; i++) {
		const struct cfg_field *f = &schema[i];
		char def[160], bounds[64] = "", lo[32], hi[32];

		format_value(f, defaults, def, sizeof(def));
		if (f->max > 0 && f->type == CFG_F_DURATION)
			snprintf(bounds, sizeof(bounds), "%s .. %s",
				 duration_format((uint64_t)f->min, lo, sizeof(lo)),
				 duration_format((uint64_t)f->max, hi, sizeof(hi)));
		else if (f->max > 0 && f->type == CFG_F_UINT)
			snprintf(bounds, sizeof(bounds), "%.0f .. %.0f", f->min, f->max);
		else if (f->max > 0)
			snprintf(bounds, sizeof(bounds), "%g .. %g", f->min, f->max);
		strbuf_addf(out, "| `%s` | %s | %s | %s%s%s | %s |\n", f->path, type_name(f), bounds,
			    def[0] ? "`" : "", def, def[0] ? "`" : "", f->doc);
	}
}
