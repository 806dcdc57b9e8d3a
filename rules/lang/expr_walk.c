/*
 * expr_walk.c - a parsed expression tree after parsing: freeing it, and
 * what it asks of the data (how far back it reads, which series keep
 * history, whether it looks across hosts); see expr.h.
 */
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "rules/lang/expr.h"
#include "rules/lang/expr_internal.h"

/* Free what parse_matching left in m when no node took it. */
void matching_free(struct node *m)
{
	for (int i = 0; i < m->nmatch; i++)
		free(m->match[i]);
	for (int i = 0; i < m->ninclude; i++)
		free(m->include[i]);
	free(m->match);
	free(m->include);
	memset(m, 0, sizeof(*m));
}

void expr_free(struct node *n)
{
	if (!n)
		return;
	free(n->str);
	free(n->metric);
	for (int i = 0; i < n->nm; i++) {
		free(n->m[i].label);
		free(n->m[i].value);
		if (n->m[i].has_re)
			promregex_free(&n->m[i].re);
	}
	free(n->m);
	if (n->lf) {
		promregex_free(&n->lf->re);
		for (size_t i = 0; i < n->lf->nmade; i++)
			free(n->lf->made[i]);
		free(n->lf->made);
		if (n->lf->index)
			strmap_free(n->lf->index);
		free(n->lf->index);
		free(n->lf);
	}
	free(n->fn);
	for (int i = 0; i < n->nargs; i++)
		expr_free(n->args[i]);
	free(n->args);
	for (int i = 0; i < n->nby; i++)
		free(n->by[i]);
	free(n->by);
	expr_free(n->l);
	expr_free(n->r);
	matching_free(n);
	free(n);
}

int expr_is_comparison(const struct node *n)
{
	return n && n->t == N_BIN && ((n->op >= OP_EQ && n->op <= OP_LE && !n->bool_mod) ||
				      n->op == OP_AND || n->op == OP_OR || n->op == OP_UNLESS);
}

uint64_t expr_max_range(const struct node *n)
{
	uint64_t m = 0, x;

	if (!n)
		return 0;
	if (n->t == N_SEL)
		m = n->range_ns + n->offset_ns;	/* history kept must reach back that far */
	if (n->t == N_SUBQ)	/* its inner expression is evaluated that far back */
		return n->range_ns + n->offset_ns + expr_max_range(n->l);
	for (int i = 0; i < n->nargs; i++)
		if ((x = expr_max_range(n->args[i])) > m)
			m = x;
	if ((x = expr_max_range(n->l)) > m)
		m = x;
	if ((x = expr_max_range(n->r)) > m)
		m = x;
	return m;
}

static void every_selector(const struct node *n, void (*fn)(const char *wire, void *arg),
			   void *arg)
{
	if (!n)
		return;
	if (n->t == N_SEL)
		fn(n->wire, arg);
	for (int i = 0; i < n->nargs; i++)
		every_selector(n->args[i], fn, arg);
	every_selector(n->l, fn, arg);
	every_selector(n->r, fn, arg);
}

void expr_history_names(const struct node *n, void (*fn)(const char *wire, void *arg), void *arg)
{
	if (!n)
		return;
	if (n->t == N_SEL && (n->range_ns || n->offset_ns))
		fn(n->wire, arg);
	if (n->t == N_SUBQ) {
		every_selector(n->l, fn, arg);	/* all of it is read back in time */
		return;
	}
	for (int i = 0; i < n->nargs; i++)
		expr_history_names(n->args[i], fn, arg);
	expr_history_names(n->l, fn, arg);
	expr_history_names(n->r, fn, arg);
}

/*
 * Such a side of `and` can be evaluated over a subset of the hosts without
 * changing any element it would have produced for them (eval.c).
 */
int expr_host_local(const struct node *n)
{
	if (!n)
		return 1;
	if (n->t == N_AGG || (n->t == N_CALL && (n->fn_id == FN_PEER_RATIO ||
						 n->fn_id == FN_ABSENT || n->fn_id == FN_SCALAR ||
						 n->fn_id == FN_TIME)))
		return 0;	/* they look across hosts */
	if (n->t == N_BIN && (n->match_on || n->nmatch))
		return 0;	/* on/ignoring may pair elements of different hosts */
	for (int i = 0; i < n->nargs; i++)
		if (!expr_host_local(n->args[i]))
			return 0;
	return expr_host_local(n->l) && expr_host_local(n->r);
}

void expr_each_selector(const struct node *n, void (*fn)(const struct node *sel, void *arg),
			void *arg)
{
	if (!n)
		return;
	if (n->t == N_SEL)
		fn(n, arg);
	for (int i = 0; i < n->nargs; i++)
		expr_each_selector(n->args[i], fn, arg);
	expr_each_selector(n->l, fn, arg);
	expr_each_selector(n->r, fn, arg);
}

const char *expr_result_name(const struct node *n)
{
	const char *l, *r;

	switch (n->t) {
	case N_SEL:
		return n->range_ns ? NULL : n->metric;
	case N_CALL:
		return n->fn_id == FN_LABEL_REPLACE || n->fn_id == FN_LABEL_JOIN ?
		       expr_result_name(n->args[0]) : NULL;
	case N_AGG:
		return n->fn_id == FN_TOPK || n->fn_id == FN_BOTTOMK ?
		       expr_result_name(n->args[1]) : NULL;
	case N_BIN:
		if (n->op == OP_AND || n->op == OP_UNLESS)
			return expr_result_name(n->l);
		l = expr_result_name(n->l);
		r = expr_result_name(n->r);
		if (n->op == OP_OR)
			return l && r && !strcmp(l, r) ? l : NULL;
		if (n->op >= OP_EQ && n->op <= OP_LE && !n->bool_mod)
			return l ? l : n->l->t == N_NUM ? r : NULL;
		return NULL;
	default:
		return NULL;
	}
}

uint64_t expr_earliest_at(const struct node *n)
{
	uint64_t m, x;

	if (!n)
		return 0;
	m = n->at == AT_TIME ? n->at_ms : 0;
	for (int i = 0; i < n->nargs; i++)
		if ((x = expr_earliest_at(n->args[i])) && (!m || x < m))
			m = x;
	if ((x = expr_earliest_at(n->l)) && (!m || x < m))
		m = x;
	if ((x = expr_earliest_at(n->r)) && (!m || x < m))
		m = x;
	return m;
}
