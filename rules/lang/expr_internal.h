/*
 * expr_internal.h - what the lexer (expr_lex.c) and the parser (expr.c) of
 * rule expressions share, and nobody else: tokens and the parser's state.
 */
#ifndef FL_EXPR_INTERNAL_H
#define FL_EXPR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

enum tok_type {
	T_EOF, T_NUM, T_STR, T_IDENT, T_LPAREN, T_RPAREN, T_LBRACE, T_RBRACE, T_LBRACK,
	T_RBRACK, T_COMMA, T_OP, T_DURATION,
};

struct tok {
	enum tok_type t;
	char text[256];
	double num;
	uint64_t ns;
	int line, col;
};

struct parser {
	const char *src, *p;
	int line, col;
	struct tok cur;
	char *err;
	size_t errlen;
	int failed;
	int depth;		/* nesting: parentheses, calls, unary minus */
	char *const *names;	/* recording rules' outputs, metrics as well */
	int nnames;
	int nodes;		/* nodes made: a chain "1+1+1..." nests by this */
	int query;		/* a query's (expr_parse_query): `@ <time>` is taken */
};

/*
 * Limits that keep evaluation, printing and freeing (all recursive) far
 * from the stack's end on any input; real rules use a few dozen nodes.
 */
#define EXPR_MAX_DEPTH 64
#define EXPR_MAX_NODES 1024

/* Record the first error, "line:col: reason", and stop the parse. */
void expr_fail(struct parser *ps, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Read the next token into ps->cur (T_EOF at the end or after an error). */
void expr_next(struct parser *ps);

struct node;

/* Free what parse_matching left in m when no node took it (expr_walk.c). */
void matching_free(struct node *m);

#endif
