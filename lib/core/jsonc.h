/*
 * jsonc.h - the one way faultline reads and writes JSON: json-c, plus the
 * few helpers every wire format and outside input needs.
 *
 * Strings put into a document go through jsonc_string, which replaces the
 * bytes that are not well-formed UTF-8 by U+FFFD: a drive's firmware, a
 * cgroup's name or a label from a config can hold anything, and a document
 * faultline writes is always valid JSON.  Documents are written plain (no
 * whitespace, '/' not escaped).  Reading takes the whole text as exactly one
 * value and says where it stopped when it is not.
 */
#ifndef FL_JSONC_H
#define FL_JSONC_H

#include <stddef.h>

#include <json-c/json.h>

#include "core/strbuf.h"

/* A JSON string of s with invalid UTF-8 replaced; NULL s gives NULL (null). */
json_object *jsonc_string(const char *s);

/* o[key] = v, with invalid UTF-8 in key replaced (v is taken over). */
void jsonc_put(json_object *o, const char *key, json_object *v);

/* Append o as plain JSON.  Returns 0, or -ENOMEM (out is then failed). */
int jsonc_append(struct strbuf *out, json_object *o);

/*
 * Parse text (len bytes) as one JSON value with nothing but whitespace
 * after it.  Returns the value (the caller puts it), or NULL with the
 * reason and byte offset in err.
 */
json_object *jsonc_parse(const char *text, size_t len, char *err, size_t errlen);

/* jsonc_parse with nesting at most depth deep (outside input of a known shape). */
json_object *jsonc_parse_depth(const char *text, size_t len, int depth, char *err,
			       size_t errlen);

/*
 * The build as Prometheus' /api/v1/status/buildinfo and Alertmanager's
 * versionInfo describe theirs (version, revision, branch, buildUser,
 * buildDate, goVersion): faultline's version, and the fields only a Go
 * build fills empty or saying so.
 */
json_object *jsonc_build_info(void);

/* The value at a dotted path of object keys ("smart_status.passed"), or NULL. */
json_object *jsonc_path(json_object *o, const char *path);

/* The number at path into *v: 0, or -1 when absent or not a number. */
int jsonc_number(json_object *o, const char *path, double *v);

/* The string at path, or NULL when absent or not a string. */
const char *jsonc_str(json_object *o, const char *path);

#endif
