/*
 * expr.c - the recursive-descent parser for rule expressions; see expr.h
 * for the grammar (the lexer is expr_lex.c).
 */
#include "rules/lang/expr.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"
#include "model/snapshot.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "rules/lang/expr_internal.h"

struct node *expr_new_node(struct parser *ps, enum node_type t, int line, int col)
{
	struct node *n;

	if (++ps->nodes > EXPR_MAX_NODES) {
		expr_fail(ps, line, col, "expression too long (more than %d terms and operators); "
		     "split it into several rules", EXPR_MAX_NODES);
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		expr_fail(ps, line, col, "out of memory");
		return NULL;
	}
	n->t = t;
	n->line = line;
	n->col = col;
	return n;
}

static struct node *parse_expr(struct parser *ps);

/* Whether the next word after the current token is w (no token consumed). */
static int peek_word(const struct parser *ps, const char *w)
{
	const char *q = ps->p;
	size_t n = strlen(w);

	while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
		q++;
	return !strncmp(q, w, n) && !isalnum((unsigned char)q[n]) && q[n] != '_';
}

/* A call of name, which is not one of ours: say so, with a hint where we have one. */
static void unknown_function(struct parser *ps, int line, int col, const char *name)
{
	char msg[1024];

	expr_fn_unknown(name, msg, sizeof(msg));
	expr_fail(ps, line, col, "%s", msg);
}

/* by (labels) or without (labels), the word being the current token. */
/* "(" LABEL,* ")" after what into *list; what names the clause in errors. */
static int parse_label_list(struct parser *ps, char ***list, int *n, const char *what)
{
	char msg[64];

	snprintf(msg, sizeof(msg), "'(' after %s", what);
	if (expr_expect(ps, T_LPAREN, msg))
		return -1;
	while (ps->cur.t == T_IDENT) {
		char **b = realloc(*list, (size_t)(*n + 1) * sizeof(*b));

		if (!b)
			return -1;
		*list = b;
		(*list)[(*n)++] = strdup(ps->cur.text);
		expr_next(ps);
		if (ps->cur.t != T_COMMA)
			break;
		expr_next(ps);
	}
	snprintf(msg, sizeof(msg), "a label or ')' in %s (...)", what);
	return expr_expect(ps, T_RPAREN, msg);
}

static int parse_by(struct parser *ps, struct node *n)
{
	n->without = !strcmp(ps->cur.text, "without");
	expr_next(ps);	/* "by" / "without" */
	return parse_label_list(ps, &n->by, &n->nby, n->without ? "without" : "by");
}

/*
 * After a binary operator: on (...) / ignoring (...) and group_left /
 * group_right [(...)] into m (a node that only carries them).  Grouping
 * makes no sense for and/or/unless, as in PromQL.
 */
static int parse_matching(struct parser *ps, struct node *m, enum bin_op op)
{
	if (!expr_is_word(ps, "on") && !expr_is_word(ps, "ignoring")) {
		if (expr_is_word(ps, "group_left") || expr_is_word(ps, "group_right"))
			expr_fail(ps, ps->cur.line, ps->cur.col, "%s needs on (...) or ignoring (...) "
			     "before it", ps->cur.text);
		return ps->failed ? -1 : 0;
	}
	m->match_on = expr_is_word(ps, "on");
	expr_next(ps);
	if (parse_label_list(ps, &m->match, &m->nmatch, m->match_on ? "on" : "ignoring"))
		return -1;
	if (!expr_is_word(ps, "group_left") && !expr_is_word(ps, "group_right"))
		return 0;
	if (op == OP_AND || op == OP_OR || op == OP_UNLESS) {
		expr_fail(ps, ps->cur.line, ps->cur.col, "no grouping allowed for and, or, unless");
		return -1;
	}
	m->card = expr_is_word(ps, "group_left") ? CARD_MANY_TO_ONE : CARD_ONE_TO_MANY;
	expr_next(ps);
	if (ps->cur.t == T_LPAREN &&
	    parse_label_list(ps, &m->include, &m->ninclude,
			     m->card == CARD_MANY_TO_ONE ? "group_left" : "group_right"))
		return -1;
	for (int i = 0; m->match_on && i < m->ninclude; i++)
		for (int k = 0; k < m->nmatch; k++)
			if (!strcmp(m->include[i], m->match[k])) {
				expr_fail(ps, ps->cur.line, ps->cur.col, "label '%s' must not occur in "
				     "both on (...) and the grouping clause", m->include[i]);
				return -1;
			}
	return 0;
}

static int add_arg(struct node *n, struct node *a)
{
	struct node **x = realloc(n->args, (size_t)(n->nargs + 1) * sizeof(*x));

	if (!x)
		return -1;
	n->args = x;
	n->args[n->nargs++] = a;
	return 0;
}


static struct node *parse_selector(struct parser *ps)
{
	struct node *n = expr_new_node(ps, N_SEL, ps->cur.line, ps->cur.col);

	if (!n)
		return NULL;
	const struct metric_info *mi = catalog_find(ps->cur.text);

	n->metric = strdup(ps->cur.text);
	if (!mi && (mi = catalog_find_hist_part(ps->cur.text, &n->hist_part))) {
		/* x_bucket{le=...}, x_sum, x_count: the histogram as /metrics shows it */
		n->hist_scale = mi->scale;
		n->nbounds = catalog_hist_bounds(mi, &n->bounds, &n->le);
	}
	for (int i = 0; !mi && !n->hist_part && i < ps->nnames; i++)
		if (!strcmp(ps->names[i], ps->cur.text)) {
			/* a recording rule's output: a gauge in the host's history */
			n->wire = n->metric;
			n->metric_hash = snapshot_name_hash(n->metric);
			n->scale = 1;
			expr_next(ps);
			goto matchers;
		}
	if (!mi) {
		char why[200];

		expr_fail(ps, n->line, n->col, "%s", catalog_unknown(ps->cur.text, why, sizeof(why)));
		return n;
	}
	n->wire = mi->wire;
	n->metric_hash = snapshot_name_hash(mi->wire);
	n->scale = n->hist_part == 2 ? mi->scale : n->hist_part ? 1 : mi->scale;
	expr_next(ps);
matchers:
	if (ps->cur.t == T_LBRACE) {
		expr_next(ps);
		while (ps->cur.t == T_IDENT) {
			struct expr_matcher *m = realloc(n->m, (size_t)(n->nm + 1) * sizeof(*m));
			struct expr_matcher *x;
			int line = ps->cur.line, col = ps->cur.col;

			if (!m)
				return n;
			n->m = m;
			x = &n->m[n->nm++];
			memset(x, 0, sizeof(*x));
			x->label = strdup(ps->cur.text);
			expr_next(ps);
			if (ps->cur.t != T_OP || (strcmp(ps->cur.text, "=") && strcmp(ps->cur.text, "!=") &&
						  strcmp(ps->cur.text, "=~") && strcmp(ps->cur.text, "!~"))) {
				expr_fail(ps, ps->cur.line, ps->cur.col, "expected =, !=, =~ or !~ after "
				     "label '%s', found '%s'", x->label, ps->cur.text);
				return n;
			}
			x->op = !strcmp(ps->cur.text, "=") ? '=' : !strcmp(ps->cur.text, "!=") ? '!' :
				!strcmp(ps->cur.text, "=~") ? '~' : '^';
			expr_next(ps);
			if (ps->cur.t != T_STR) {
				expr_fail(ps, ps->cur.line, ps->cur.col, "expected a quoted value for label "
				     "'%s', found '%s'", x->label, ps->cur.text);
				return n;
			}
			x->value = strdup(ps->cur.text);
			if (x->op == '~' || x->op == '^') {
				char why[200];

				if (promregex_compile(&x->re, x->value, why, sizeof(why))) {
					expr_fail(ps, line, col, "'%s' is not a valid regular expression: %s",
					     x->value, why);
					return n;
				}
				x->has_re = 1;
			}
			expr_next(ps);
			if (ps->cur.t != T_COMMA)
				break;
			expr_next(ps);
		}
		if (expr_expect(ps, T_RBRACE, "',' or '}' in the label matchers"))
			return n;
	}
	if (ps->cur.t == T_LBRACK) {
		expr_next(ps);
		if (ps->cur.t != T_DURATION) {
			expr_fail(ps, ps->cur.line, ps->cur.col, "expected a range like [5m], found '%s'",
			     ps->cur.text);
			return n;
		}
		n->range_ns = ps->cur.ns;
		expr_next(ps);
		if (ps->cur.t == T_IDENT && ps->cur.text[0] == ':') {
			uint64_t range = n->range_ns;

			n->range_ns = 0;
			return expr_subquery_rest(ps, n, range, n->line, n->col);
		}
		if (expr_expect(ps, T_RBRACK, "']'"))
			return n;
	}
	expr_parse_modifiers(ps, n);
	return n;
}

static int valid_label_name(const char *s)
{
	if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/*
 * label_replace(v, "dst", "replacement", "src", "regex") and
 * label_join(v, "dst", "separator", "src", ...): every argument after the
 * vector a quoted string, dst a label name, the regex valid.
 */
static void parse_label_fn(struct parser *ps, struct node *n)
{
	char why[200];

	for (int i = 1; i < n->nargs; i++)
		if (n->args[i]->t != N_STR) {
			expr_fail(ps, n->args[i]->line, n->args[i]->col, "%s's argument %d is a quoted "
			     "string", n->fn, i + 1);
			return;
		}
	/* the destination; label_join's sources (label_replace's may be any name) */
	for (int i = 1; i < n->nargs; i += i == 1 ? 2 : 1)
		if ((i == 1 || n->fn_id == FN_LABEL_JOIN) && !valid_label_name(n->args[i]->str)) {
			expr_fail(ps, n->args[i]->line, n->args[i]->col, "'%s' is not a valid label "
			     "name", n->args[i]->str);
			return;
		}
	n->lf = calloc(1, sizeof(*n->lf));
	if (!n->lf || !(n->lf->index = calloc(1, sizeof(struct strmap)))) {
		expr_fail(ps, n->line, n->col, "out of memory");
		return;
	}
	strmap_init(n->lf->index);
	if (n->fn_id == FN_LABEL_REPLACE &&
	    promregex_compile(&n->lf->re, n->args[4]->str, why, sizeof(why)))
		expr_fail(ps, n->args[4]->line, n->args[4]->col, "'%s' is not a valid regular "
		     "expression: %s", n->args[4]->str, why);
}

/* sum/avg/... [by (...)] (expr[, expr]) [by (...)]: the name is ps->cur. */
static struct node *parse_aggregation(struct parser *ps, const struct expr_fn_info *fi,
				      int line, int col)
{
	struct node *n = expr_new_node(ps, N_AGG, line, col);

	if (!n)
		return NULL;
	n->fn = strdup(ps->cur.text);
	n->fn_id = fi->id;
	expr_next(ps);
	if ((expr_is_word(ps, "by") || expr_is_word(ps, "without")) && parse_by(ps, n))
		return n;
	if (expr_expect(ps, T_LPAREN, "'(' after the aggregation"))
		return n;
	add_arg(n, parse_expr(ps));
	if (fi->nargs == 2 && !ps->failed) {
		if (expr_expect(ps, T_COMMA, "',' after the aggregation's parameter"))
			return n;
		add_arg(n, parse_expr(ps));
	}
	if (ps->failed || expr_expect(ps, T_RPAREN, "')' closing the aggregation"))
		return n;
	if ((expr_is_word(ps, "by") || expr_is_word(ps, "without")) && !n->by)
		parse_by(ps, n);
	return n;
}

/* The kinds of call n's arguments, as function fi takes them (the parser's errors). */
static void check_call_args(struct parser *ps, const struct expr_fn_info *fi, struct node *n,
			    int line, int col)
{
	const struct node *a = fi->range ? n->args[fi->range - 1] : NULL;

	if (fi->range && a && a->t == N_SUBQ) {
		if (!expr_fn_takes_subquery(fi->id))
			expr_fail(ps, a->line, a->col, "%s over a subquery is not supported (only "
				  "avg/min/max/sum/count/last/stddev/stdvar/quantile/"
				  "present_over_time, changes and deriv, which need no counter "
				  "semantics or extrapolation to the range's edges)", n->fn);
		return;
	}
	if (fi->range && (!a || a->t != N_SEL || !a->range_ns))
		expr_fail(ps, a ? a->line : line, a ? a->col : col,
			  "%s needs a range selector such as metric[5m]", n->fn);
	else if (fi->range && a->hist_part && fi->id != FN_RATE && fi->id != FN_IRATE &&
		 fi->id != FN_INCREASE && fi->id != FN_DELTA && fi->id != FN_IDELTA)
		expr_fail(ps, a->line, a->col, "%s of %s: a histogram's _bucket, _sum and _count "
			  "take rate, irate, increase, delta and idelta", n->fn, a->metric);
	else if (fi->id == FN_QUANTILE &&
		 (a->hist_part || catalog_find_wire(a->wire)->kind != SERIES_HISTOGRAM))
		expr_fail(ps, a->line, a->col, "quantile needs a histogram; %s is not one",
			  a->metric);
	else if (fi->id == FN_QUANTILE && n->args[0]->t != N_NUM)
		expr_fail(ps, n->args[0]->line, n->args[0]->col,
			  "quantile's first argument is a number between 0 and 1");
	else if (fi->id == FN_HISTOGRAM_QUANTILE && n->args[1]->t == N_SEL &&
		 !n->args[1]->hist_part &&
		 catalog_find_wire(n->args[1]->wire)->kind == SERIES_HISTOGRAM)
		expr_fail(ps, n->args[1]->line, n->args[1]->col, "histogram_quantile takes "
			  "buckets: rate(%s_bucket[5m]), or quantile(q, %s[5m]) for the merged "
			  "histogram", n->args[1]->metric, n->args[1]->metric);
	else if (fi->id == FN_PEER_RATIO && n->args[1]->t != N_STR)
		expr_fail(ps, n->args[1]->line, n->args[1]->col,
			  "peer_ratio's second argument is a quoted label name");
}

/* fn(args...): the name is ps->cur; arity, then the arguments' kinds. */
static struct node *parse_call(struct parser *ps, const struct expr_fn_info *fi, int line,
			       int col)
{
	struct node *n = expr_new_node(ps, N_CALL, line, col);
	int want = fi->nargs;

	if (!n)
		return NULL;
	n->fn = strdup(ps->cur.text);
	n->fn_id = fi->id;
	expr_next(ps);
	if (expr_expect(ps, T_LPAREN, "'(' after the function name"))
		return n;
	while (ps->cur.t != T_RPAREN && !ps->failed) {
		add_arg(n, parse_expr(ps));
		if (ps->cur.t != T_COMMA)
			break;
		expr_next(ps);
	}
	if (ps->failed || expr_expect(ps, T_RPAREN, "',' or ')' in the arguments"))
		return n;
	if (want < 0 && n->nargs < -want) {
		expr_fail(ps, line, col, "%s takes at least %d arguments, found %d", n->fn, -want,
			  n->nargs);
		return n;
	}
	if (want >= 0 && n->nargs != want) {
		expr_fail(ps, line, col, "%s takes %d argument%s, found %d", n->fn, want,
			  want != 1 ? "s" : "", n->nargs);
		return n;
	}
	if (fi->id == FN_LABEL_REPLACE || fi->id == FN_LABEL_JOIN) {
		parse_label_fn(ps, n);
		return n;
	}
	if (fi->id == FN_QUANTILE && n->args[1] &&
	    (n->args[1]->t != N_SEL || !n->args[1]->range_ns)) {
		/* quantile(q, v) of an instant vector: PromQL's aggregation */
		n->t = N_AGG;
		n->fn_id = FN_QUANTILE_AGG;
		if (expr_is_word(ps, "by") || expr_is_word(ps, "without"))
			parse_by(ps, n);
		return n;
	}
	check_call_args(ps, fi, n, line, col);
	return n;
}

/*
 * A name: an aggregation, a function call, or a selector; a keyword or a
 * call of a function that does not exist is an error.
 */
static struct node *parse_name(struct parser *ps, int line, int col)
{
	const struct expr_fn_info *fi = expr_fn_find(ps->cur.text);
	const char *q = ps->p;

	/* quantile by (...) (q, v): PromQL's aggregation, not our histogram quantile */
	if (fi && fi->id == FN_QUANTILE && (peek_word(ps, "by") || peek_word(ps, "without")))
		fi = expr_fn_quantile_agg();
	if (fi && fi->aggregation)
		return parse_aggregation(ps, fi, line, col);
	if (fi)
		return parse_call(ps, fi, line, col);
	if (!strcmp(ps->cur.text, "by") || !strcmp(ps->cur.text, "and") ||
	    !strcmp(ps->cur.text, "or") || !strcmp(ps->cur.text, "unless")) {
		expr_fail(ps, line, col, "expected an expression, found '%s'", ps->cur.text);
		return NULL;
	}
	/* a name followed by '(' is a call: of a function we do not have */
	while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
		q++;
	if (*q == '(') {
		unknown_function(ps, line, col, ps->cur.text);
		return NULL;
	}
	return parse_selector(ps);
}

static struct node *parse_primary(struct parser *ps)
{
	struct node *n;
	int line = ps->cur.line, col = ps->cur.col;

	if (++ps->depth > EXPR_MAX_DEPTH) {
		expr_fail(ps, line, col, "expression nested too deeply");
		return NULL;
	}
	switch (ps->cur.t) {
	case T_NUM:
	case T_DURATION:
		n = expr_new_node(ps, N_NUM, line, col);
		if (n)
			n->num = ps->cur.num;
		expr_next(ps);
		break;
	case T_STR:
		n = expr_new_node(ps, N_STR, line, col);
		if (n)
			n->str = strdup(ps->cur.text);
		expr_next(ps);
		break;
	case T_LPAREN:
		expr_next(ps);
		n = parse_expr(ps);
		if (!ps->failed)
			expr_expect(ps, T_RPAREN, "')'");
		n = expr_maybe_subquery(ps, n, line, col);
		break;
	case T_IDENT:
		n = parse_name(ps, line, col);
		if (n && n->t != N_SEL)
			n = expr_maybe_subquery(ps, n, line, col);
		break;
	default:
		expr_fail(ps, line, col, "expected an expression, found '%s'", ps->cur.text);
		n = NULL;
	}
	ps->depth--;
	return n;
}

/*
 * The node for l op r, with the vector matching parsed into m (moved; m
 * is then empty).
 */
static struct node *binary(struct parser *ps, enum bin_op op, struct node *l, struct node *r,
			   int line, int col, struct node *m)
{
	struct node *n = expr_new_node(ps, N_BIN, line, col);

	if (!n) {
		expr_free(l);
		expr_free(r);
		return NULL;
	}
	n->op = op;
	n->l = l;
	n->r = r;
	n->match_on = m->match_on;
	n->match = m->match;
	n->nmatch = m->nmatch;
	n->card = m->card;
	n->include = m->include;
	n->ninclude = m->ninclude;
	memset(m, 0, sizeof(*m));
	return n;
}

static struct node *parse_unary(struct parser *ps)
{
	if (expr_is_op(ps, "-")) {
		int line = ps->cur.line, col = ps->cur.col;
		struct node *n;

		if (++ps->depth > EXPR_MAX_DEPTH) {
			expr_fail(ps, line, col, "expression nested deeper than %d", EXPR_MAX_DEPTH);
			return NULL;
		}
		expr_next(ps);
		n = expr_new_node(ps, N_NEG, line, col);
		if (n)
			n->l = parse_unary(ps);
		ps->depth--;
		return n;
	}
	return parse_primary(ps);
}

/*
 * The binary operators by precedence, loosest first; all associate left,
 * as in PromQL.  A word (and, or, unless) is an identifier token.
 */
static const struct bin_level {
	struct {
		const char *s;
		enum bin_op op;
	} ops[6];
	int word;	/* its operators are words, not symbols */
	int cmp;	/* comparisons: `bool` may follow the operator */
} bin_levels[] = {
	{ { { "or", OP_OR } }, 1, 0 },
	{ { { "and", OP_AND }, { "unless", OP_UNLESS } }, 1, 0 },
	{ { { "==", OP_EQ }, { "!=", OP_NE }, { ">=", OP_GE }, { "<=", OP_LE }, { ">", OP_GT },
	    { "<", OP_LT } }, 0, 1 },
	{ { { "+", OP_ADD }, { "-", OP_SUB } }, 0, 0 },
	{ { { "*", OP_MUL }, { "/", OP_DIV }, { "%", OP_MOD } }, 0, 0 },
};

#define BIN_LEVELS ((int)(sizeof(bin_levels) / sizeof(bin_levels[0])))

/* The operator of level lv at the current token; -1 if none. */
static int bin_op_at(struct parser *ps, int lv)
{
	const struct bin_level *b = &bin_levels[lv];

	for (int i = 0; i < 6 && b->ops[i].s; i++)
		if (b->word ? expr_is_word(ps, b->ops[i].s) : expr_is_op(ps, b->ops[i].s))
			return (int)b->ops[i].op;
	return -1;
}

/* An expression of precedence level lv and tighter (BIN_LEVELS: a unary one). */
static struct node *parse_level(struct parser *ps, int lv)
{
	struct node *l;
	int op;

	if (lv == BIN_LEVELS)
		return parse_unary(ps);
	l = parse_level(ps, lv + 1);
	while (!ps->failed && (op = bin_op_at(ps, lv)) >= 0) {
		int line = ps->cur.line, col = ps->cur.col, with_bool = 0;
		struct node m = { 0 };

		expr_next(ps);
		if (bin_levels[lv].cmp && expr_is_word(ps, "bool")) {
			with_bool = 1;
			expr_next(ps);
		}
		if (parse_matching(ps, &m, op)) {
			matching_free(&m);
			return l;
		}
		l = binary(ps, op, l, parse_level(ps, lv + 1), line, col, &m);
		if (l)
			l->bool_mod = with_bool;
	}
	if (bin_levels[lv].cmp && !ps->failed && ps->cur.t == T_OP && expr_is_op(ps, "="))
		expr_fail(ps, ps->cur.line, ps->cur.col, "'=' is not a comparison; use '=='");
	return l;
}

static struct node *parse_expr(struct parser *ps)
{
	return parse_level(ps, 0);
}

int expr_parse(const char *text, struct node **out, char *err, size_t errlen)
{
	return expr_parse_names(text, NULL, 0, out, err, errlen);
}

static int parse_text(const char *text, char *const *names, int nnames, int query,
		      struct node **out, char *err, size_t errlen);

int expr_parse_names(const char *text, char *const *names, int nnames, struct node **out,
		     char *err, size_t errlen)
{
	return parse_text(text, names, nnames, 0, out, err, errlen);
}

int expr_parse_query(const char *text, char *const *names, int nnames, struct node **out,
		     char *err, size_t errlen)
{
	return parse_text(text, names, nnames, 1, out, err, errlen);
}

static int parse_text(const char *text, char *const *names, int nnames, int query,
		      struct node **out, char *err, size_t errlen)
{
	struct parser ps = { .src = text, .p = text, .line = 1, .col = 1, .err = err,
			     .errlen = errlen, .names = names, .nnames = nnames, .query = query };
	struct node *n;

	*out = NULL;
	expr_next(&ps);
	if (ps.cur.t == T_EOF && !ps.failed) {
		snprintf(err, errlen, "1:1: empty expression");
		return -EINVAL;
	}
	n = parse_expr(&ps);
	if (!ps.failed && ps.cur.t != T_EOF)
		expr_fail(&ps, ps.cur.line, ps.cur.col, "unexpected '%s' after the expression",
		     ps.cur.text);
	if (ps.failed) {
		expr_free(n);
		return -EINVAL;
	}
	*out = n;
	return 0;
}
