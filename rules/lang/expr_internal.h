/*
 * expr_internal.h - what the lexer (expr_lex.c) and the parser (expr.c,
 * and expr_suffix.c for offset, @ and subqueries) of rule expressions
 * share, and nobody else: tokens, the parser's state and its helpers.
 */
#ifndef FL_EXPR_INTERNAL_H
#define FL_EXPR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "rules/lang/expr.h"

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

/* 1 when the current token is operator op / the word w. */
int expr_is_op(struct parser *ps, const char *op);
int expr_is_word(struct parser *ps, const char *w);

/* Take the current token when it is of type t; else fail ("expected what") and return -1. */
int expr_expect(struct parser *ps, enum tok_type t, const char *what);

/* A zeroed node of type t at line:col, or NULL (failed: too many nodes, or no memory). */
struct node *expr_new_node(struct parser *ps, enum node_type t, int line, int col);

/* offset and @ after selector or subquery n, each at most once, in either order (expr_suffix.c). */
void expr_parse_modifiers(struct parser *ps, struct node *n);

/*
 * The rest of a subquery of inner, its range read and the current token
 * ":STEP": the new subquery node (inner, when none could be made), offset
 * and @ after it taken (expr_suffix.c).  line/col: where inner starts.
 */
struct node *expr_subquery_rest(struct parser *ps, struct node *inner, uint64_t range_ns,
				int line, int col);

/* n, or n made a subquery when "[RANGE:STEP]" follows it (expr_suffix.c). */
struct node *expr_maybe_subquery(struct parser *ps, struct node *n, int line, int col);

/* Free what parse_matching left in m when no node took it (expr_walk.c). */
void matching_free(struct node *m);

#endif
