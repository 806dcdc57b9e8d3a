/*
 * jsonc.c - json-c helpers; see jsonc.h.
 */
#include "core/jsonc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

json_object *jsonc_string(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	json_object *o;

	if (!s)
		return NULL;
	if (utf8_valid(s))
		return json_object_new_string(s);
	strbuf_add_utf8(&sb, s);
	o = strbuf_failed(&sb) ? NULL : json_object_new_string_len(sb.buf, (int)sb.len);
	strbuf_release(&sb);
	return o;
}

void jsonc_put(json_object *o, const char *key, json_object *v)
{
	struct strbuf sb = STRBUF_INIT;

	if (utf8_valid(key)) {
		json_object_object_add(o, key, v);
		return;
	}
	strbuf_add_utf8(&sb, key);
	if (strbuf_failed(&sb))
		json_object_put(v);
	else
		json_object_object_add(o, sb.buf, v);
	strbuf_release(&sb);
}

int jsonc_append(struct strbuf *out, json_object *o)
{
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE);

	if (!text) {
		strbuf_add(out, "", 0);
		strbuf_mark_failed(out);
		return -ENOMEM;
	}
	strbuf_adds(out, text);
	return strbuf_failed(out) ? -ENOMEM : 0;
}

json_object *jsonc_parse(const char *text, size_t len, char *err, size_t errlen)
{
	return jsonc_parse_depth(text, len, JSON_TOKENER_DEFAULT_DEPTH, err, errlen);
}

json_object *jsonc_parse_depth(const char *text, size_t len, int depth, char *err,
			       size_t errlen)
{
	struct json_tokener *tok;
	json_object *o;
	size_t end;

	if (len > 0x7fffffff) {
		snprintf(err, errlen, "JSON text of %zu bytes is too long", len);
		return NULL;
	}
	tok = json_tokener_new_ex(depth);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		snprintf(err, errlen, "invalid JSON at byte %zu: %s", json_tokener_get_parse_end(tok),
			 e == json_tokener_continue ? "the text ends inside a value" :
			 json_tokener_error_desc(e));
		json_object_put(o);
		json_tokener_free(tok);
		return NULL;
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < len && strchr(" \t\r\n", text[end]))
		end++;
	if (end < len) {
		snprintf(err, errlen, "invalid JSON at byte %zu: text after the value", end);
		json_object_put(o);
		return NULL;
	}
	return o;
}

json_object *jsonc_path(json_object *o, const char *path)
{
	char key[64];

	while (o && *path) {
		size_t n = strcspn(path, ".");

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		if (!json_object_is_type(o, json_type_object) ||
		    !json_object_object_get_ex(o, key, &o))
			return NULL;
		path += n + (path[n] == '.');
	}
	return o;
}

int jsonc_number(json_object *o, const char *path, double *v)
{
	json_object *x = jsonc_path(o, path);

	if (!x || !(json_object_is_type(x, json_type_int) ||
		    json_object_is_type(x, json_type_double)))
		return -1;
	*v = json_object_get_double(x);
	return 0;
}

const char *jsonc_str(json_object *o, const char *path)
{
	json_object *x = jsonc_path(o, path);

	return x && json_object_is_type(x, json_type_string) ? json_object_get_string(x) : NULL;
}

json_object *jsonc_build_info(void)
{
	json_object *o = json_object_new_object();

	jsonc_put(o, "version", jsonc_string(FL_VERSION));
	jsonc_put(o, "revision", jsonc_string(""));
	jsonc_put(o, "branch", jsonc_string(""));
	jsonc_put(o, "buildUser", jsonc_string(""));
	jsonc_put(o, "buildDate", jsonc_string(""));
	jsonc_put(o, "goVersion", jsonc_string("none (faultline is C)"));
	return o;
}
