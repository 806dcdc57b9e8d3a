/*
 * config.c - YAML configuration files; see config.h.
 *
 * libyaml's event parser drives a recursive builder.  Marks from libyaml
 * are 0-based; messages use 1-based lines and columns like compilers do.
 */
#include "core/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include <yaml.h>

#include "core/timeutil.h"

#define CFG_MAX_DEPTH 32

struct builder {
	yaml_parser_t parser;
	const char *name;
	char *err;
	size_t errlen;
};

static void node_free(struct cfg_node *n)
{
	for (size_t i = 0; i < n->nchild; i++)
		node_free(&n->child[i]);
	free(n->child);
	free(n->key);
	free(n->value);
}

static int fail_at(struct builder *b, const yaml_mark_t *m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_at(struct builder *b, const yaml_mark_t *m, const char *fmt, ...)
{
	size_t off;
	va_list ap;

	off = (size_t)snprintf(b->err, b->errlen, "%s:%zu:%zu: ", b->name,
			       m->line + 1, m->column + 1);
	if (off < b->errlen) {
		va_start(ap, fmt);
		vsnprintf(b->err + off, b->errlen - off, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int next_event(struct builder *b, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&b->parser, ev)) {
		yaml_mark_t m = b->parser.problem_mark;

		return fail_at(b, &m, "YAML syntax error: %s%s%s",
			       b->parser.problem ? b->parser.problem : "unknown",
			       b->parser.context ? " " : "",
			       b->parser.context ? b->parser.context : "");
	}
	return 0;
}

static int add_child(struct cfg_node *parent, struct cfg_node **out)
{
	struct cfg_node *c = realloc(parent->child, (parent->nchild + 1) * sizeof(*c));

	if (!c)
		return -ENOMEM;
	parent->child = c;
	*out = &c[parent->nchild++];
	memset(*out, 0, sizeof(**out));
	return 0;
}

static int build_node(struct builder *b, yaml_event_t *ev, struct cfg_node *n, int depth);

static int build_children(struct builder *b, struct cfg_node *n, int depth)
{
	yaml_event_t ev;
	int ret;

	for (;;) {
		struct cfg_node *child;
		char *key = NULL;

		if ((ret = next_event(b, &ev)))
			return ret;
		if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		if (n->type == CFG_MAP) {
			if (ev.type != YAML_SCALAR_EVENT) {
				ret = fail_at(b, &ev.start_mark, "map keys must be plain strings");
				yaml_event_delete(&ev);
				return ret;
			}
			key = strndup((char *)ev.data.scalar.value, ev.data.scalar.length);
			for (size_t i = 0; key && i < n->nchild; i++) {
				if (strcmp(n->child[i].key, key) == 0) {
					ret = fail_at(b, &ev.start_mark,
						      "%s: duplicate key (first at line %d)", key,
						      n->child[i].line);
					free(key);
					yaml_event_delete(&ev);
					return ret;
				}
			}
			yaml_event_delete(&ev);
			if (!key)
				return -ENOMEM;
			if ((ret = next_event(b, &ev))) {
				free(key);
				return ret;
			}
		}
		if ((ret = add_child(n, &child))) {
			free(key);
			yaml_event_delete(&ev);
			return ret;
		}
		child->key = key;
		ret = build_node(b, &ev, child, depth + 1);
		yaml_event_delete(&ev);
		if (ret)
			return ret;
	}
}

static int build_node(struct builder *b, yaml_event_t *ev, struct cfg_node *n, int depth)
{
	n->line = (int)ev->start_mark.line + 1;
	n->col = (int)ev->start_mark.column + 1;
	if (depth > CFG_MAX_DEPTH)
		return fail_at(b, &ev->start_mark, "nested deeper than %d levels", CFG_MAX_DEPTH);
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		n->type = CFG_SCALAR;
		n->quoted = ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
			    ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
		n->style = n->quoted ? CFG_STYLE_QUOTED :
			   ev->data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
			   ev->data.scalar.style == YAML_FOLDED_SCALAR_STYLE ? CFG_STYLE_BLOCK
									    : CFG_STYLE_PLAIN;
		n->value = strndup((char *)ev->data.scalar.value, ev->data.scalar.length);
		if (!n->value)
			return -ENOMEM;
		if (strlen(n->value) != ev->data.scalar.length)
			return fail_at(b, &ev->start_mark, "NUL byte inside a value");
		return 0;
	case YAML_MAPPING_START_EVENT:
		n->type = CFG_MAP;
		return build_children(b, n, depth);
	case YAML_SEQUENCE_START_EVENT:
		n->type = CFG_SEQ;
		return build_children(b, n, depth);
	case YAML_ALIAS_EVENT:
		return fail_at(b, &ev->start_mark, "YAML aliases are not supported here");
	default:
		return fail_at(b, &ev->start_mark, "unexpected YAML event");
	}
}

int cfg_parse(struct cfg *c, const char *name, const char *text, size_t len,
	      char *err, size_t errlen)
{
	struct builder b = { .name = name, .err = err, .errlen = errlen };
	yaml_event_t ev;
	int ret, docs = 0;

	memset(c, 0, sizeof(*c));
	c->file = strdup(name);
	c->text = malloc(len + 1);
	if (!c->file || !c->text) {
		free(c->file);
		free(c->text);
		return -ENOMEM;
	}
	memcpy(c->text, text, len);
	c->text[len] = '\0';
	c->len = len;
	if (!yaml_parser_initialize(&b.parser)) {
		free(c->file);
		free(c->text);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&b.parser, (const unsigned char *)text, len);
	for (;;) {
		if ((ret = next_event(&b, &ev)))
			goto fail;
		if (ev.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (ev.type == YAML_DOCUMENT_START_EVENT) {
			if (++docs > 1) {
				ret = fail_at(&b, &ev.start_mark, "only one YAML document is allowed");
				yaml_event_delete(&ev);
				goto fail;
			}
		} else if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
			   ev.type == YAML_SCALAR_EVENT || ev.type == YAML_ALIAS_EVENT) {
			if (ev.type == YAML_SCALAR_EVENT && ev.data.scalar.length == 0 &&
			    ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
				yaml_event_delete(&ev);
				continue;	/* empty document */
			}
			if (ev.type != YAML_MAPPING_START_EVENT) {
				ret = fail_at(&b, &ev.start_mark,
					      "the top level must be a map of key: value");
				yaml_event_delete(&ev);
				goto fail;
			}
			c->root = calloc(1, sizeof(*c->root));
			ret = c->root ? build_node(&b, &ev, c->root, 0) : -ENOMEM;
			yaml_event_delete(&ev);
			if (ret)
				goto fail;
			continue;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&b.parser);
	return 0;
fail:
	yaml_parser_delete(&b.parser);
	cfg_free(c);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "%s: out of memory", name);
	return ret;
}

int cfg_read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	char buf[65536], *t = NULL;
	size_t n, total = 0;
	FILE *f;
	int ret;

	f = fopen(path, "r");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return ret;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		char *nt = total + n <= (16u << 20) ? realloc(t, total + n + 1) : NULL;

		if (!nt) {
			free(t);
			fclose(f);
			snprintf(err, errlen, "%s: larger than 16 MiB or out of memory", path);
			return -EFBIG;
		}
		t = nt;
		memcpy(t + total, buf, n);
		total += n;
	}
	if (ferror(f)) {
		free(t);
		fclose(f);
		snprintf(err, errlen, "%s: read error", path);
		return -EIO;
	}
	fclose(f);
	if (!t && !(t = calloc(1, 1)))
		return -ENOMEM;
	t[total] = '\0';
	*text = t;
	*len = total;
	return 0;
}

int cfg_load_file(struct cfg *c, const char *path, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int ret;

	ret = cfg_read_file(path, &text, &len, err, errlen);
	if (ret)
		return ret;
	ret = cfg_parse(c, path, text, len, err, errlen);
	free(text);
	return ret;
}

void cfg_free(struct cfg *c)
{
	if (c->root) {
		node_free(c->root);
		free(c->root);
	}
	free(c->file);
	free(c->text);
	memset(c, 0, sizeof(*c));
}

/* The byte offset in text of line (1-based) and character column (1-based). */
static size_t offset_of(const char *text, size_t len, int line, int col)
{
	size_t p = 0;

	for (int l = 1; l < line && p < len; p++)
		if (text[p] == '\n')
			l++;
	/* libyaml counts columns in characters: step over UTF-8 continuation bytes */
	for (int k = 1; k < col && p < len && text[p] != '\n'; k++)
		do
			p++;
		while (p < len && ((unsigned char)text[p] & 0xc0) == 0x80);
	return p;
}

void cfg_value_pos(const struct cfg *c, const struct cfg_node *n, size_t off, int *line,
		   int *col)
{
	const char *t = c->text;
	size_t p, i = 0, indent = 0, vlen = n->value ? strlen(n->value) : 0;
	int l = n->line, k = n->col, at_start = 0;

	*line = n->line;
	*col = n->col;
	if (!t || !n->value)
		return;
	p = offset_of(t, c->len, n->line, n->col);
	if (n->style == CFG_STYLE_QUOTED && p < c->len) {
		p++;
		k++;
	} else if (n->style == CFG_STYLE_BLOCK) {
		size_t q;

		/* the content starts on the line after the indicator, indented */
		while (p < c->len && t[p] != '\n')
			p++;
		if (p < c->len) {
			p++;
			l++;
			k = 1;
		}
		for (q = p; q < c->len;) {
			size_t s = q;

			while (q < c->len && t[q] == ' ')
				q++;
			if (q < c->len && t[q] != '\n' && t[q] != '\r') {
				indent = q - s;
				break;
			}
			while (q < c->len && t[q] != '\n')
				q++;
			q++;	/* a blank line: the indentation is the next one's */
		}
		at_start = 1;
	}
	if (off > vlen)
		off = vlen;
	while (p < c->len && (i < off || at_start)) {
		if (at_start) {
			/* a continuation line's indentation is not in the value */
			size_t skip = 0;

			while (p < c->len && (t[p] == ' ' || (n->style != CFG_STYLE_BLOCK &&
							      t[p] == '\t')) &&
			       (n->style != CFG_STYLE_BLOCK || skip < indent)) {
				p++;
				k++;
				skip++;
			}
			at_start = 0;
			continue;
		}
		if (t[p] == '\r') {
			p++;
			continue;
		}
		if (t[p] == '\n') {
			/* a line break the value kept, or one folded into a space */
			if (n->value[i] == '\n' || n->value[i] == ' ')
				i++;
			p++;
			l++;
			k = 1;
			at_start = 1;
			continue;
		}
		if (t[p] == n->value[i]) {
			i++;
		} else if (n->style == CFG_STYLE_QUOTED && t[p] == '\\' && p + 1 < c->len) {
			p++;	/* an escape: two bytes in the file, one in the value */
			k++;
			i++;
		}
		/* otherwise a byte the value does not hold (a quote doubled, ...) */
		p++;
		k++;
	}
	*line = l;
	*col = k;
}

const struct cfg_node *cfg_get(const struct cfg_node *map, const char *key)
{
	if (!map || map->type != CFG_MAP)
		return NULL;
	for (size_t i = 0; i < map->nchild; i++) {
		if (strcmp(map->child[i].key, key) == 0) {
			((struct cfg_node *)&map->child[i])->used = 1;
			return &map->child[i];
		}
	}
	return NULL;
}

int cfg_error(const struct cfg *c, const struct cfg_node *n, char *err, size_t errlen,
	      const char *fmt, ...)
{
	size_t off;
	va_list ap;

	off = (size_t)snprintf(err, errlen, "%s:%d:%d: ", c->file ? c->file : "config",
			       n ? n->line : 1, n ? n->col : 1);
	if (off < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + off, errlen - off, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *kind_name(const struct cfg_node *n)
{
	return n->type == CFG_MAP ? "a map" : n->type == CFG_SEQ ? "a list" : "a value";
}

/* Scalar child or error; NULL *out when absent. */
static int scalar(const struct cfg *c, const struct cfg_node *map, const char *key,
		  const struct cfg_node **out, const char *want, char *err, size_t errlen)
{
	const struct cfg_node *n = cfg_get(map, key);

	*out = NULL;
	if (!n)
		return 0;
	if (n->type != CFG_SCALAR)
		return cfg_error(c, n, err, errlen, "%s: expected %s, found %s", key, want,
				 kind_name(n));
	*out = n;
	return 0;
}

int cfg_string(const struct cfg *c, const struct cfg_node *map, const char *key,
	       char **out, char *err, size_t errlen)
{
	const struct cfg_node *n;
	char *v;
	int ret = scalar(c, map, key, &n, "a string", err, errlen);

	if (ret || !n)
		return ret;
	v = strdup(n->value);
	if (!v)
		return -ENOMEM;
	free(*out);
	*out = v;
	return 0;
}

int cfg_duration(const struct cfg *c, const struct cfg_node *map, const char *key,
		 uint64_t *out_ns, char *err, size_t errlen)
{
	const struct cfg_node *n;
	int ret = scalar(c, map, key, &n, "a duration", err, errlen);

	if (ret || !n)
		return ret;
	if (duration_parse(n->value, out_ns))
		return cfg_error(c, n, err, errlen,
				 "%s: expected a duration such as 500ms, 1s, 5m or 7d, found '%s'",
				 key, n->value);
	return 0;
}

int cfg_uint(const struct cfg *c, const struct cfg_node *map, const char *key,
	     uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	const struct cfg_node *n;
	unsigned long long v;
	char *end;
	int ret = scalar(c, map, key, &n, "a number", err, errlen);

	if (ret || !n)
		return ret;
	errno = 0;
	v = strtoull(n->value, &end, 10);
	if (errno || end == n->value || *end || n->value[0] == '-')
		return cfg_error(c, n, err, errlen, "%s: expected a whole number, found '%s'", key,
				 n->value);
	if (v < min || v > max)
		return cfg_error(c, n, err, errlen, "%s: %llu is out of range [%llu, %llu]", key,
				 v, (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

int cfg_number(const struct cfg *c, const struct cfg_node *map, const char *key,
	       double min, double max, double *out, char *err, size_t errlen)
{
	const struct cfg_node *n;
	double v;
	char *end;
	int ret = scalar(c, map, key, &n, "a number", err, errlen);

	if (ret || !n)
		return ret;
	v = strtod(n->value, &end);
	if (end == n->value || *end || !(v >= min && v <= max))
		return cfg_error(c, n, err, errlen, "%s: expected a number in %g..%g, found '%s'",
				 key, min, max, n->value);
	*out = v;
	return 0;
}

int cfg_bool(const struct cfg *c, const struct cfg_node *map, const char *key,
	     int *out, char *err, size_t errlen)
{
	const struct cfg_node *n;
	int ret = scalar(c, map, key, &n, "true or false", err, errlen);

	if (ret || !n)
		return ret;
	if (!strcasecmp(n->value, "true") || !strcasecmp(n->value, "yes") ||
	    !strcasecmp(n->value, "on"))
		*out = 1;
	else if (!strcasecmp(n->value, "false") || !strcasecmp(n->value, "no") ||
		 !strcasecmp(n->value, "off"))
		*out = 0;
	else
		return cfg_error(c, n, err, errlen, "%s: expected true or false, found '%s'", key,
				 n->value);
	return 0;
}

int cfg_map(const struct cfg *c, const struct cfg_node *map, const char *key,
	    const struct cfg_node **out, char *err, size_t errlen)
{
	const struct cfg_node *n = cfg_get(map, key);

	*out = NULL;
	if (!n)
		return 0;
	if (n->type == CFG_SCALAR && !n->quoted && (n->value[0] == '\0' || !strcmp(n->value, "~") ||
						    !strcmp(n->value, "null")))
		return 0;	/* "key:" with nothing under it */
	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "%s: expected a map of key: value, found %s",
				 key, kind_name(n));
	*out = n;
	return 0;
}

int cfg_check_unknown(const struct cfg *c, const struct cfg_node *map, const char *known,
		      char *err, size_t errlen)
{
	if (!map)
		return 0;
	for (size_t i = 0; i < map->nchild; i++)
		if (!map->child[i].used)
			return cfg_error(c, &map->child[i], err, errlen,
					 "%s: unknown key (valid here: %s)", map->child[i].key, known);
	return 0;
}

const char *cfg_find(const char *rel, int source_tree, char *buf, size_t len)
{
	static const char *const dirs[] = CFG_SYSTEM_DIRS;

	if (source_tree) {
		snprintf(buf, len, "etc/%s", rel);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(buf, len, "%s/%s", dirs[i], rel);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	return NULL;
}
