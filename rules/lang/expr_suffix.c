/*
 * expr_suffix.c - what may follow a selector or an expression in a rule
 * expression: offset and @ (parse modifiers), and "[RANGE:STEP]", which
 * makes the expression before it a subquery.  Split from expr.c, the
 * parser proper, which calls these at the two places a suffix can come.
 */
#include "rules/lang/expr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "core/timeutil.h"
#include "rules/lang/expr_internal.h"

/* offset and @ after a selector or subquery n, each at most once, in either order (as PromQL). */
void expr_parse_modifiers(struct parser *ps, struct node *n)
{
	for (int seen_offset = 0, seen_at = 0;;) {
		if (expr_is_word(ps, "offset") && !seen_offset) {
			seen_offset = 1;
			expr_next(ps);
			if (ps->cur.t != T_DURATION || !ps->cur.ns) {
				expr_fail(ps, ps->cur.line, ps->cur.col, "expected a duration after "
				     "offset, such as offset 1h, found '%s' (negative offsets are not "
				     "supported)", ps->cur.text);
				return;
			}
			n->offset_ns = ps->cur.ns;
			expr_next(ps);
		} else if (ps->cur.t == T_OP && !strcmp(ps->cur.text, "@") && !seen_at) {
			int line = ps->cur.line, col = ps->cur.col;

			seen_at = 1;
			expr_next(ps);
			if (ps->cur.t == T_IDENT && (!strcmp(ps->cur.text, "start") ||
						    !strcmp(ps->cur.text, "end"))) {
				/* a rule is evaluated at one time: start() and end() are it */
				n->at = ps->cur.text[0] == 's' ? AT_START : AT_END;
				expr_next(ps);
				if (expr_expect(ps, T_LPAREN, "'('") || expr_expect(ps, T_RPAREN, "')'"))
					return;
			} else if (ps->cur.t == T_NUM && ps->query) {
				if (!(ps->cur.num >= 0) || ps->cur.num > 9.2e12) {
					expr_fail(ps, ps->cur.line, ps->cur.col, "expected a Unix time "
						  "in seconds after @, found '%s'", ps->cur.text);
					return;
				}
				n->at = AT_TIME;
				n->at_ms = (uint64_t)llround(ps->cur.num * 1000.0);
				expr_next(ps);
			} else if (ps->cur.t == T_NUM) {
				expr_fail(ps, line, col, "'@ %s' pins the selector to a fixed time; a "
				     "rule is evaluated now, over the history its ranges keep, so it "
				     "would see nothing: use offset (or @ start() / @ end(), the "
				     "evaluation time)", ps->cur.text);
				return;
			} else {
				expr_fail(ps, ps->cur.line, ps->cur.col, "expected start(), end() or a "
				     "Unix time after @, found '%s'", ps->cur.text);
				return;
			}
		} else {
			break;
		}
	}
}

static int has_subquery(const struct node *n)
{
	if (!n)
		return 0;
	if (n->t == N_SUBQ)
		return 1;
	for (int i = 0; i < n->nargs; i++)
		if (has_subquery(n->args[i]))
			return 1;
	return has_subquery(n->l) || has_subquery(n->r);
}

/*
 * The rest of a subquery of inner, its range already read and the current
 * token ":STEP" (the lexer reads ":1m" as a name): the step, "]", then
 * offset and @.  line/col: where inner starts.
 */
struct node *expr_subquery_rest(struct parser *ps, struct node *inner, uint64_t range_ns,
				  int line, int col)
{
	struct node *q = expr_new_node(ps, N_SUBQ, line, col);
	uint64_t step;

	if (!q)
		return inner;
	q->l = inner;
	q->range_ns = range_ns;
	/* its results' label strings, interned here: they outlive each step's values */
	q->lf = calloc(1, sizeof(*q->lf));
	if (!q->lf || !(q->lf->index = calloc(1, sizeof(struct strmap)))) {
		expr_fail(ps, line, col, "out of memory");
		return q;
	}
	strmap_init(q->lf->index);
	if (!ps->cur.text[1]) {
		expr_fail(ps, ps->cur.line, ps->cur.col, "a subquery needs its step, such as "
			  "[10m:1m] (the evaluation interval is not assumed)");
		return q;
	}
	if (duration_parse(ps->cur.text + 1, &step) || !step) {
		expr_fail(ps, ps->cur.line, ps->cur.col, "'%s' is not a step such as :1m",
			  ps->cur.text);
		return q;
	}
	if (step > range_ns) {
		expr_fail(ps, ps->cur.line, ps->cur.col, "the step (%s) is longer than the range",
			  ps->cur.text + 1);
		return q;
	}
	if (range_ns / step > SUBQUERY_MAX_STEPS) {
		expr_fail(ps, ps->cur.line, ps->cur.col, "a subquery of more than %d steps",
			  SUBQUERY_MAX_STEPS);
		return q;
	}
	if (has_subquery(inner)) {
		expr_fail(ps, line, col, "a subquery inside a subquery is not supported (its "
			  "steps would multiply): record the inner one (record:) and range over it");
		return q;
	}
	q->step_ns = step;
	expr_next(ps);
	if (expr_expect(ps, T_RBRACK, "']' closing the subquery"))
		return q;
	expr_parse_modifiers(ps, q);
	return q;
}

/* After an expression: "[" DURATION ":" STEP "]" makes it a subquery. */
struct node *expr_maybe_subquery(struct parser *ps, struct node *n, int line, int col)
{
	uint64_t range;

	if (!n || ps->failed || ps->cur.t != T_LBRACK)
		return n;
	expr_next(ps);
	if (ps->cur.t != T_DURATION) {
		expr_fail(ps, ps->cur.line, ps->cur.col, "expected a subquery range like [5m:1m], "
			  "found '%s'", ps->cur.text);
		return n;
	}
	range = ps->cur.ns;
	expr_next(ps);
	if (ps->cur.t != T_IDENT || ps->cur.text[0] != ':') {
		expr_fail(ps, ps->cur.line, ps->cur.col, "expected ':STEP' in a subquery such as "
			  "[5m:1m]; only a selector takes a plain range");
		return n;
	}
	return expr_subquery_rest(ps, n, range, line, col);
}
