/*
 * config_schema.h - a config file described by one table.
 *
 * Each key of a config is one row: its dotted path under the document's
 * root, its type, where it goes in the caller's struct, its bounds and one
 * line of documentation.  The table alone drives
 *
 *   - parsing (cfg_apply): each key through the typed getter of
 *     config.h, bounds checked, file:line:col on every error;
 *   - the unknown-key error at every level, listing that level's keys;
 *   - the reference (cfg_schema_markdown): key, type, bounds, default and
 *     description, which the docs carry and a test keeps equal.
 *
 * Keys whose shape no type covers (maps of labels, lists of receivers)
 * are rows of type CFG_F_CUSTOM with a parse function; they are still
 * known keys and still documented.
 */
#ifndef FL_CONFIG_SCHEMA_H
#define FL_CONFIG_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/strbuf.h"

enum cfg_field_type {
	CFG_F_STRING,		/* char * (malloc'd; the old value is freed) */
	CFG_F_CHARS,		/* char[size] */
	CFG_F_DURATION,		/* uint64_t ns; bounds in ns (0, 0: any) */
	CFG_F_UINT,		/* uint64_t or uint32_t (size); bounds */
	CFG_F_NUMBER,		/* double; bounds */
	CFG_F_BOOL,		/* int 0/1 */
	CFG_F_CUSTOM,		/* parse(c, parent map, key, base) */
};

struct cfg_field {
	const char *path;	/* "spool.max_bytes": map keys from the root */
	enum cfg_field_type type;
	size_t offset;		/* of the value in the caller's struct */
	size_t size;		/* CFG_F_CHARS: array size; CFG_F_UINT: 4 or 8 */
	double min, max;	/* CFG_F_UINT / NUMBER / DURATION, when max > 0 */
	int (*parse)(const struct cfg *c, const struct cfg_node *parent, const char *key,
		     void *base, char *err, size_t errlen);
	const char *doc;	/* one line */
	/* CFG_F_CUSTOM: the type in the reference, and how its default shows */
	const char *custom_type;
	enum cfg_field_type shown;	/* CFG_F_CUSTOM: not shown */
};

#define CFG_STRING(path, type, member, doc) \
	{ path, CFG_F_STRING, offsetof(type, member), 0, 0, 0, NULL, doc }
#define CFG_CHARS(path, type, member, doc) \
	{ path, CFG_F_CHARS, offsetof(type, member), sizeof(((type *)0)->member), 0, 0, NULL, doc }
#define CFG_DURATION(path, type, member, min, max, doc) \
	{ path, CFG_F_DURATION, offsetof(type, member), 0, min, max, NULL, doc }
#define CFG_UINT(path, type, member, min, max, doc) \
	{ path, CFG_F_UINT, offsetof(type, member), sizeof(((type *)0)->member), min, max, NULL, doc }
#define CFG_NUMBER(path, type, member, min, max, doc) \
	{ path, CFG_F_NUMBER, offsetof(type, member), 0, min, max, NULL, doc }
#define CFG_BOOL(path, type, member, doc) \
	{ path, CFG_F_BOOL, offsetof(type, member), 0, 0, 0, NULL, doc }
#define CFG_CUSTOM(path, fn, typename, doc) \
	{ path, CFG_F_CUSTOM, 0, 0, 0, 0, fn, doc, typename, CFG_F_CUSTOM }
/* A custom row whose value lands in member, shown as that type's default. */
#define CFG_CUSTOM_AT(path, fn, typename, shown, type, member, doc) \
	{ path, CFG_F_CUSTOM, offsetof(type, member), sizeof(((type *)0)->member), 0, 0, fn, doc, \
	  typename, shown }

/*
 * Read every row of schema[0..n) from c into base, then fail on the first
 * key no row names (at each map level the rows reach, the root included).
 * A path whose parent map is absent leaves its value alone (the caller's
 * default).  Returns 0, -EINVAL (file:line:col in err) or -ENOMEM.
 */
int cfg_apply(const struct cfg *c, const struct cfg_field *schema, size_t n, void *base,
	      char *err, size_t errlen);

/*
 * Append the reference table of schema, in Markdown: key, type, bounds,
 * default (read from defaults, a struct holding the built-in values) and
 * description.
 */
void cfg_schema_markdown(const struct cfg_field *schema, size_t n, const void *defaults,
			 struct strbuf *out);

#endif
