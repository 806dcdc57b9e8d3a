/*
 * expr_lex.c - the lexer of rule expressions: numbers, durations, strings,
 * identifiers, operators, with line:col on every token; see expr_internal.h.
 */
#include "rules/lang/expr_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"


/* PromQL keywords faultline's grammar does not have (docs/rules.md lists the differences). */
static const char *const promql_keywords[] = {
	"atan2",
};

void expr_fail(struct parser *ps, int line, int col, const char *fmt, ...)
{
	va_list ap;
	size_t off;

	if (ps->failed)
		return;
	ps->failed = 1;
	/* stumbling on a PromQL keyword: say that, not what the grammar expected */
	for (size_t i = 0; ps->cur.t == T_IDENT && i < sizeof(promql_keywords) /
	     sizeof(promql_keywords[0]); i++)
		if (!strcmp(ps->cur.text, promql_keywords[i])) {
			snprintf(ps->err, ps->errlen, "%d:%d: PromQL's '%s' is not supported by "
				 "faultline's rule language (docs/rules.md lists what is)",
				 ps->cur.line, ps->cur.col, ps->cur.text);
			return;
		}
	off = (size_t)snprintf(ps->err, ps->errlen, "%d:%d: ", line, col);
	if (off < ps->errlen) {
		va_start(ap, fmt);
		vsnprintf(ps->err + off, ps->errlen - off, fmt, ap);
		va_end(ap);
	}
}

static void advance_char(struct parser *ps)
{
	if (*ps->p == '\n') {
		ps->line++;
		ps->col = 1;
	} else {
		ps->col++;
	}
	ps->p++;
}

void expr_next(struct parser *ps)
{
	struct tok *t = &ps->cur;
	size_t n = 0;

	while (*ps->p && isspace((unsigned char)*ps->p))
		advance_char(ps);
	memset(t, 0, sizeof(*t));
	t->line = ps->line;
	t->col = ps->col;
	if (!*ps->p) {
		t->t = T_EOF;
		snprintf(t->text, sizeof(t->text), "end of expression");
		return;
	}
	char c = *ps->p;

	if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)ps->p[1]))) {
		const char *start = ps->p;
		char *end;

		t->num = strtod(start, &end);
		while (ps->p < end)
			advance_char(ps);
		/* a unit makes it a duration: 5m, 250ms, 1h30m */
		if (isalpha((unsigned char)*ps->p)) {
			while (*ps->p && (isalnum((unsigned char)*ps->p)))
				advance_char(ps);
			n = (size_t)(ps->p - start);
			snprintf(t->text, sizeof(t->text), "%.*s", (int)n, start);
			if (duration_parse(t->text, &t->ns)) {
				expr_fail(ps, t->line, t->col, "'%s' is not a number or a duration like 5m",
				     t->text);
				t->t = T_EOF;
				return;
			}
			t->t = T_DURATION;
			t->num = (double)t->ns / 1e9;	/* seconds, the unit of every duration */
			return;
		}
		n = (size_t)(ps->p - start);
		snprintf(t->text, sizeof(t->text), "%.*s", (int)n, start);
		t->t = T_NUM;
		return;
	}
	if (isalpha((unsigned char)c) || c == '_' || c == ':') {
		/* ':' as in recorded names (level:metric:operations) */
		while (*ps->p && (isalnum((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '.' ||
				  *ps->p == ':') &&
		       n + 1 < sizeof(t->text)) {
			t->text[n++] = *ps->p;
			advance_char(ps);
		}
		t->t = T_IDENT;
		return;
	}
	if (c == '"' || c == '\'') {
		char q = c;

		advance_char(ps);
		while (*ps->p && *ps->p != q && n + 1 < sizeof(t->text)) {
			if (*ps->p == '\\' && ps->p[1])
				advance_char(ps);
			t->text[n++] = *ps->p;
			advance_char(ps);
		}
		if (*ps->p != q) {
			expr_fail(ps, t->line, t->col, "unterminated string");
			t->t = T_EOF;
			return;
		}
		advance_char(ps);
		t->t = T_STR;
		return;
	}
	static const char *const two[] = { "==", "!=", ">=", "<=", "=~", "!~" };

	for (size_t i = 0; i < sizeof(two) / sizeof(two[0]); i++) {
		if (!strncmp(ps->p, two[i], 2)) {
			snprintf(t->text, sizeof(t->text), "%s", two[i]);
			advance_char(ps);
			advance_char(ps);
			t->t = T_OP;
			return;
		}
	}
	t->text[0] = c;
	advance_char(ps);
	switch (c) {
	case '(': t->t = T_LPAREN; return;
	case ')': t->t = T_RPAREN; return;
	case '{': t->t = T_LBRACE; return;
	case '}': t->t = T_RBRACE; return;
	case '[': t->t = T_LBRACK; return;
	case ']': t->t = T_RBRACK; return;
	case ',': t->t = T_COMMA; return;
	case '+': case '-': case '*': case '/': case '%': case '>': case '<': case '=':
	case '@':
		t->t = T_OP;
		return;
	}
	expr_fail(ps, t->line, t->col, "unexpected character '%c'", c);
	t->t = T_EOF;
}

int expr_is_op(struct parser *ps, const char *op)
{
	return ps->cur.t == T_OP && !strcmp(ps->cur.text, op);
}

int expr_is_word(struct parser *ps, const char *w)
{
	return ps->cur.t == T_IDENT && !strcmp(ps->cur.text, w);
}

int expr_expect(struct parser *ps, enum tok_type t, const char *what)
{
	if (ps->cur.t != t) {
		expr_fail(ps, ps->cur.line, ps->cur.col, "expected %s, found '%s'", what, ps->cur.text);
		return -1;
	}
	expr_next(ps);
	return 0;
}
