/*
 * vector_match.c - binary operations between values, with PromQL's vector
 * matching; see eval_internal.h (eval_bin).
 *
 * Two elements match when their signatures are equal: the labels named in
 * on (...), or all labels but those in ignoring (...) (all labels when
 * neither is written).  One-to-one, each signature may occur once on each
 * side that matches; group_left lets many left elements share one right
 * element (group_right the reverse), and copies the labels its list names
 * from the "one" side.  The result's labels are PromQL's: one-to-one keeps
 * the on labels (or drops the ignored ones), grouping keeps the "many"
 * side's labels plus the copied ones; a filtering comparison keeps the left
 * value.  Labels are borrowed, as everywhere in eval (eval.h).
 */
#include "rules/lang/eval_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/snapshot.h"
#include "core/strbuf.h"

/* An element's signature: the labels it is matched on (borrowed). */
struct sig {
	const struct label *l;
	int n;
	uint64_t hash;
};

static int listed(char *const *list, int n, const char *key)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(list[i], key))
			return 1;
	return 0;
}

/*
 * e's signature under n's matching; without on/ignoring it is e's own
 * label set (no copy), else the chosen labels are copied to pool.
 */
static void sig_of(const struct node *n, const struct velem *e, struct label *pool, struct sig *s)
{
	if (!n->match_on && !n->nmatch) {
		s->l = e->labels;
		s->n = e->nlabels;
		/* hashed here, not for every element a selector yields */
		s->hash = labels_hash(e->labels, e->nlabels);
		return;
	}
	s->n = 0;
	for (int i = 0; i < e->nlabels; i++)
		if (listed(n->match, n->nmatch, e->labels[i].key) == n->match_on)
			pool[s->n++] = e->labels[i];
	s->l = pool;
	s->hash = labels_hash(pool, s->n);
}

static int sig_equal(const struct sig *a, const struct sig *b)
{
	return a->hash == b->hash && labels_equal(a->l, a->n, b->l, b->n);
}

/*
 * The signatures of a vector's elements and an open-addressing index of
 * them, so that matching two vectors of n elements is O(n).  slot[] holds
 * element index + 1; 0 is empty.
 */
struct sigindex {
	struct sig *sig;
	struct label *pool;	/* the signatures' labels, when copied */
	size_t *slot;
	size_t mask;
};

static int sigindex_build(struct sigindex *ix, const struct node *n, const struct value *v)
{
	size_t size = 16, nl = 0;

	while (size < v->n * 2)
		size *= 2;
	for (size_t i = 0; (n->match_on || n->nmatch) && i < v->n; i++)
		nl += (size_t)v->e[i].nlabels;
	ix->mask = size - 1;
	ix->sig = malloc((v->n ? v->n : 1) * sizeof(*ix->sig));
	ix->pool = malloc((nl ? nl : 1) * sizeof(*ix->pool));
	ix->slot = calloc(size, sizeof(*ix->slot));
	if (!ix->sig || !ix->pool || !ix->slot)
		return -ENOMEM;
	nl = 0;
	for (size_t i = 0; i < v->n; i++) {
		size_t at;

		sig_of(n, &v->e[i], ix->pool + nl, &ix->sig[i]);
		if (n->match_on || n->nmatch)
			nl += (size_t)ix->sig[i].n;
		at = ix->sig[i].hash & ix->mask;
		while (ix->slot[at])
			at = (at + 1) & ix->mask;
		ix->slot[at] = i + 1;
	}
	return 0;
}

/*
 * Index of the element with signature like, or -1; *dups is set when more
 * than one element has it.
 */
static ssize_t sigindex_find(const struct sigindex *ix, const struct sig *like, int *dups)
{
	ssize_t found = -1;

	*dups = 0;
	for (size_t at = like->hash & ix->mask; ix->slot[at]; at = (at + 1) & ix->mask) {
		size_t k = ix->slot[at] - 1;

		if (!sig_equal(&ix->sig[k], like))
			continue;
		if (found >= 0) {
			*dups = 1;
			break;
		}
		found = (ssize_t)k;
	}
	return found;
}

static void sigindex_free(struct sigindex *ix)
{
	free(ix->sig);
	free(ix->pool);
	free(ix->slot);
}

static int cmp_true(enum bin_op op, double a, double b)
{
	switch (op) {
	case OP_EQ: return a == b;
	case OP_NE: return a != b;
	case OP_GT: return a > b;
	case OP_LT: return a < b;
	case OP_GE: return a >= b;
	case OP_LE: return a <= b;
	default: return 0;
	}
}

static double arith(enum bin_op op, double a, double b)
{
	switch (op) {
	case OP_ADD: return a + b;
	case OP_SUB: return a - b;
	case OP_MUL: return a * b;
	case OP_DIV: return b != 0 ? a / b : NAN;
	case OP_MOD: return b != 0 ? fmod(a, b) : NAN;
	default: return NAN;
	}
}

static int is_cmp(enum bin_op op)
{
	return op >= OP_EQ && op <= OP_LE;
}

/* Printable {k="v",...} of a signature, for errors. */
static void sig_format(const struct sig *s, char *buf, size_t len)
{
	struct strbuf sb = STRBUF_INIT;

	labels_format(&sb, s->l, s->n);
	snprintf(buf, len, "%s", strbuf_failed(&sb) ? "{...}" : strbuf_str(&sb));
	strbuf_release(&sb);
}

/* and / or / unless: elements of l kept or dropped by whether r has their signature. */
static int set_op(const struct node *n, const struct value *l, const struct value *r,
		  struct value *out)
{
	struct sigindex ri = { 0 }, li = { 0 };
	int ret = 0, dups;

	out->is_vector = 1;
	if (sigindex_build(&ri, n, r) || sigindex_build(&li, n, l)) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < l->n && !ret; i++) {
		int in_r = sigindex_find(&ri, &li.sig[i], &dups) >= 0;

		if ((n->op == OP_UNLESS) != in_r || n->op == OP_OR)
			ret = value_push(out, l->e[i].labels, l->e[i].nlabels, l->e[i].v);
	}
	for (size_t k = 0; n->op == OP_OR && k < r->n && !ret; k++)
		if (sigindex_find(&li, &ri.sig[k], &dups) < 0)
			ret = value_push(out, r->e[k].labels, r->e[k].nlabels, r->e[k].v);
out:
	sigindex_free(&ri);
	sigindex_free(&li);
	return ret;
}

/*
 * The labels of the result of many (matched with one): PromQL's
 * resultMetric.  Returns how many were written to res.
 */
static int result_labels(const struct node *n, const struct velem *many, const struct velem *one,
			 struct label *res, int cap)
{
	int nr = 0;

	for (int i = 0; i < many->nlabels && nr < cap; i++) {
		const char *k = many->labels[i].key;

		if (n->card == CARD_ONE_TO_ONE && listed(n->match, n->nmatch, k) != n->match_on)
			continue;
		if (listed(n->include, n->ninclude, k))
			continue;	/* taken from the one side below */
		res[nr++] = many->labels[i];
	}
	for (int i = 0; i < one->nlabels && nr < cap; i++)
		if (listed(n->include, n->ninclude, one->labels[i].key))
			res[nr++] = one->labels[i];
	labels_sort(res, nr);
	return nr;
}

int eval_bin(const struct node *n, const struct value *l, const struct value *r,
	     struct value *out, char *err, size_t errlen)
{
	const struct value *many, *one;
	struct sigindex mi = { 0 }, oi = { 0 };
	struct label res[SNAPSHOT_MAX_LABELS * 2 + 1];
	char *matched = NULL;
	int ret = 0;

	if (n->op == OP_AND || n->op == OP_OR || n->op == OP_UNLESS) {
		if (!l->is_vector || !r->is_vector) {
			snprintf(err, errlen, "%d:%d: and/or/unless need vectors on both sides",
				 n->line, n->col);
			return -EINVAL;
		}
		return set_op(n, l, r, out);
	}
	if (!l->is_vector && !r->is_vector) {
		out->scalar = is_cmp(n->op) ? cmp_true(n->op, l->scalar, r->scalar)
					    : arith(n->op, l->scalar, r->scalar);
		return 0;
	}
	out->is_vector = 1;
	if (!l->is_vector || !r->is_vector) {
		const struct value *vec = l->is_vector ? l : r;

		for (size_t i = 0; i < vec->n && !ret; i++) {
			double a = l->is_vector ? vec->e[i].v : l->scalar;
			double b = r->is_vector ? vec->e[i].v : r->scalar, x;

			if (is_cmp(n->op)) {
				int t = cmp_true(n->op, a, b);

				if (n->bool_mod)
					x = t;
				else if (t)
					x = vec->e[i].v;
				else
					continue;
			} else if (isnan(x = arith(n->op, a, b))) {
				continue;
			}
			ret = value_push(out, vec->e[i].labels, vec->e[i].nlabels, x);
		}
		return ret;
	}
	/* the "one" side is indexed; group_right swaps the roles, not the operands */
	many = n->card == CARD_ONE_TO_MANY ? r : l;
	one = n->card == CARD_ONE_TO_MANY ? l : r;
	if (sigindex_build(&oi, n, one) || sigindex_build(&mi, n, many) ||
	    !(matched = calloc(one->n + 1, 1))) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < many->n && !ret; i++) {
		int dups;
		ssize_t k = sigindex_find(&oi, &mi.sig[i], &dups);
		double a, b, x;
		char what[256];

		if (k < 0)
			continue;
		if (dups) {
			sig_format(&mi.sig[i], what, sizeof(what));
			snprintf(err, errlen, "%d:%d: found duplicate series for the match group %s "
				 "on the %s side of the operation; many-to-many matching is not "
				 "allowed", n->line, n->col, what,
				 n->card == CARD_ONE_TO_MANY ? "left" : "right");
			ret = -EINVAL;
			break;
		}
		if (n->card == CARD_ONE_TO_ONE && matched[k]) {
			sig_format(&mi.sig[i], what, sizeof(what));
			snprintf(err, errlen, "%d:%d: multiple matches for labels %s: many-to-one "
				 "matching must be explicit (group_left/group_right)", n->line,
				 n->col, what);
			ret = -EINVAL;
			break;
		}
		matched[k] = 1;
		a = n->card == CARD_ONE_TO_MANY ? one->e[k].v : many->e[i].v;
		b = n->card == CARD_ONE_TO_MANY ? many->e[i].v : one->e[k].v;
		if (is_cmp(n->op)) {
			int t = cmp_true(n->op, a, b);

			if (n->bool_mod)
				x = t;
			else if (t)
				x = a;	/* a filter keeps the left value */
			else
				continue;
		} else if (isnan(x = arith(n->op, a, b))) {
			continue;
		}
		ret = value_push(out, res, result_labels(n, &many->e[i], &one->e[k], res,
							  (int)(sizeof(res) / sizeof(res[0]))), x);
	}
	if (!ret && n->card != CARD_ONE_TO_ONE) {
		/* grouping labels must keep the results apart */
		struct sigindex ri = { 0 };
		struct node all = { .match_on = 0 };

		if (sigindex_build(&ri, &all, out)) {
			ret = -ENOMEM;
		} else {
			for (size_t i = 0; i < out->n && !ret; i++) {
				int dups;

				sigindex_find(&ri, &ri.sig[i], &dups);
				if (dups) {
					char what[256];

					sig_format(&ri.sig[i], what, sizeof(what));
					snprintf(err, errlen, "%d:%d: multiple matches for labels %s: "
						 "grouping labels must ensure unique matches",
						 n->line, n->col, what);
					ret = -EINVAL;
				}
			}
		}
		sigindex_free(&ri);
	}
out:
	free(matched);
	sigindex_free(&mi);
	sigindex_free(&oi);
	return ret;
}
