/*
 * matcher.c - label matchers in Alertmanager's syntax; see matcher.h.
 */
#include "model/matcher.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static int name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/*
 * The value as written (s, n bytes, spaces around it already dropped) into
 * out: a leading quote asks for a trailing one; \" \\ and \n are
 * unescaped, any other backslash is kept; an unescaped quote elsewhere is
 * an error, as in Alertmanager.
 */
static int value_unquote(const char *s, size_t n, char *out, size_t outlen, const char *whole,
			 char *err, size_t errlen)
{
	int quoted = n > 0 && s[0] == '"';
	size_t o = 0;

	if (quoted) {
		s++;
		n--;
	}
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && i + 1 < n) {
			char e = s[++i];

			if (e == 'n') {
				c = '\n';
			} else if (e == '"' || e == '\\') {
				c = e;
			} else {
				if (o + 1 >= outlen)
					goto long_value;
				out[o++] = '\\';
				c = e;
			}
		} else if (c == '"') {
			if (!quoted || i + 1 < n) {
				snprintf(err, errlen, "matcher '%s': the value holds an unescaped "
					 "double quote (write \\\")", whole);
				return -EINVAL;
			}
			quoted = 0;	/* the closing quote */
			continue;
		}
		if (o + 1 >= outlen)
			goto long_value;
		out[o++] = c;
	}
	if (quoted) {
		snprintf(err, errlen, "matcher '%s': the value's opening quote is never closed",
			 whole);
		return -EINVAL;
	}
	out[o] = '\0';
	return 0;
long_value:
	snprintf(err, errlen, "matcher '%.80s...': the value is longer than %zu bytes", whole,
		 outlen - 1);
	return -EINVAL;
}

int matcher_parse(struct matcher *m, const char *s, char *err, size_t errlen)
{
	const char *p = s, *name, *v, *end;
	size_t nl;

	memset(m, 0, sizeof(*m));
	while (is_space(*p))
		p++;
	name = p;
	if (!name_start(*p)) {
		snprintf(err, errlen, "matcher '%s': expected NAME=VALUE, NAME!=VALUE, NAME=~REGEX "
			 "or NAME!~REGEX (a name is [a-zA-Z_:][a-zA-Z0-9_:]*)", s);
		return -EINVAL;
	}
	while (name_char(*p))
		p++;
	nl = (size_t)(p - name);
	if (nl >= sizeof(m->name)) {
		snprintf(err, errlen, "matcher '%.80s...': the label name is longer than %zu bytes",
			 s, sizeof(m->name) - 1);
		return -EINVAL;
	}
	memcpy(m->name, name, nl);
	while (is_space(*p))
		p++;
	if (p[0] == '=' && p[1] == '~')
		m->op = MATCH_RE, p += 2;
	else if (p[0] == '!' && p[1] == '~')
		m->op = MATCH_NRE, p += 2;
	else if (p[0] == '!' && p[1] == '=')
		m->op = MATCH_NE, p += 2;
	else if (p[0] == '=')
		m->op = MATCH_EQ, p += 1;
	else {
		snprintf(err, errlen, "matcher '%s': expected =, !=, =~ or !~ after '%s'", s,
			 m->name);
		return -EINVAL;
	}
	while (is_space(*p))
		p++;
	v = p;
	end = p + strlen(p);
	while (end > v && is_space(end[-1]))
		end--;
	if (value_unquote(v, (size_t)(end - v), m->value, sizeof(m->value), s, err, errlen))
		return -EINVAL;
	if (m->op == MATCH_RE || m->op == MATCH_NRE) {
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

int matchers_parse(struct matcher *out, int max, const char *s, char *err, size_t errlen)
{
	char buf[MATCHER_NAME_MAX + MATCHER_VALUE_MAX * 2 + 16];
	const char *p = s, *end;
	int n = 0;

	while (is_space(*p))
		p++;
	end = p + strlen(p);
	while (end > p && is_space(end[-1]))
		end--;
	if (end > p && *p == '{') {
		if (end[-1] != '}') {
			snprintf(err, errlen, "matchers '%s': an opening { without a closing }", s);
			return -EINVAL;
		}
		p++;
		end--;
	}
	while (p < end) {
		const char *q = p;
		int in_quote = 0;
		size_t len;

		for (; q < end && (in_quote || *q != ','); q++) {
			if (*q == '\\' && in_quote && q + 1 < end)
				q++;
			else if (*q == '"')
				in_quote = !in_quote;
		}
		len = (size_t)(q - p);
		if (len >= sizeof(buf)) {
			snprintf(err, errlen, "matchers '%.80s...': a matcher longer than %zu bytes", s,
				 sizeof(buf) - 1);
			goto bad;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (n == max) {
			snprintf(err, errlen, "matchers '%s': more than %d matchers", s, max);
			goto bad;
		}
		if (matcher_parse(&out[n], buf, err, errlen))
			goto bad;
		n++;
		p = q < end ? q + 1 : q;
		/* a trailing comma ends the list, as in Alertmanager */
		while (p < end && is_space(*p))
			p++;
	}
	if (!n) {
		snprintf(err, errlen, "matchers '%s': no matcher", s);
		return -EINVAL;
	}
	return n;
bad:
	while (n--)
		matcher_free(&out[n]);
	return -EINVAL;
}

void matcher_free(struct matcher *m)
{
	if (m->has_re)
		promregex_free(&m->re);
	m->has_re = 0;
}

int matcher_match_value(const struct matcher *m, const char *v)
{
	if (!v)
		v = "";
	switch (m->op) {
	case MATCH_EQ: return !strcmp(v, m->value);
	case MATCH_NE: return strcmp(v, m->value) != 0;
	case MATCH_RE: return promregex_match(&m->re, v);
	case MATCH_NRE: return !promregex_match(&m->re, v);
	}
	return 0;
}

int matcher_match(const struct matcher *m, const struct alert *a)
{
	return matcher_match_value(m, alert_label(a, m->name));
}

const char *matcher_op_text(int op)
{
	switch (op) {
	case MATCH_EQ: return "=";
	case MATCH_NE: return "!=";
	case MATCH_RE: return "=~";
	case MATCH_NRE: return "!~";
	}
	return "?";
}

int matcher_format(const struct matcher *m, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "%s%s\"", m->name, matcher_op_text(m->op));

	for (const char *v = m->value; *v; v++) {
		const char *esc = *v == '"' ? "\\\"" : *v == '\\' ? "\\\\" : *v == '\n' ? "\\n" : NULL;
		char one[2] = { *v, 0 };

		o += (size_t)snprintf(o < len ? buf + o : NULL, o < len ? len - o : 0, "%s",
				      esc ? esc : one);
	}
	o += (size_t)snprintf(o < len ? buf + o : NULL, o < len ? len - o : 0, "\"");
	return (int)o;
}
