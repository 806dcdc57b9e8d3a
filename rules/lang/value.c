/*
 * value.c - a PromQL value's storage: its elements, their label arrays
 * carved from slabs the value owns, and the arrays a freed value leaves to
 * the next one on its thread; label helpers for its elements.  See eval.h
 * (struct value) and eval_internal.h.
 */
#include "rules/lang/eval.h"
#include "rules/lang/eval_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/fnv.h"

/*
 * Elements' label arrays are carved from slabs a value owns (a range query
 * makes and frees a value a step, each element a label array: two mallocs
 * and frees a step for one series), and a freed value's element array and
 * first slab are kept per thread for the next value to take.
 */
struct label_slab {
	struct label_slab *next;
	size_t used, cap;		/* labels */
	struct label l[];
};

#define SLAB_FIRST 64		/* labels in a value's first slab */

static __thread struct velem *spare_e;
static __thread size_t spare_cap;
static __thread struct label_slab *spare_slab;
static __thread int spare_armed;
static pthread_key_t spare_key;
static int spare_key_made;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

/* A thread's spares go with it (a key's destructor runs at its exit). */
static void spare_drop(void *unused)
{
	(void)unused;
	free(spare_e);
	free(spare_slab);
	spare_e = NULL;
	spare_slab = NULL;
}

static void spare_key_make(void)
{
	spare_key_made = !pthread_key_create(&spare_key, spare_drop);
}

/* Whether this thread may keep spares: its exit frees them. */
static int spare_arm(void)
{
	if (!spare_armed) {
		pthread_once(&spare_once, spare_key_make);
		spare_armed = spare_key_made && !pthread_setspecific(spare_key, &spare_key) ?
			      1 : -1;
	}
	return spare_armed > 0;
}

void value_free(struct value *v)
{
	struct label_slab *s = v->slab;
	int keep = (v->slab || v->e) && spare_arm();

	while (s) {
		struct label_slab *next = s->next;

		if (keep && !spare_slab && s->cap == SLAB_FIRST) {
			s->next = NULL;
			spare_slab = s;
		} else {
			free(s);
		}
		s = next;
	}
	if (keep && v->e && !spare_e) {
		spare_e = v->e;
		spare_cap = v->cap;
	} else {
		free(v->e);
	}
	memset(v, 0, sizeof(*v));
}

/* Room for n labels in v's slabs, or NULL on -ENOMEM. */
static struct label *slab_take(struct value *v, size_t n)
{
	struct label_slab *s = v->slab;

	if (!s || s->cap - s->used < n) {
		size_t cap = s ? s->cap * 2 : SLAB_FIRST;

		if (cap < n)
			cap = n;
		if (!s && cap == SLAB_FIRST && spare_slab) {
			s = spare_slab;
			spare_slab = NULL;
		} else {
			s = malloc(sizeof(*s) + cap * sizeof(s->l[0]));
			if (!s)
				return NULL;
			s->cap = cap;
		}
		s->used = 0;
		s->next = v->slab;
		v->slab = s;
	}
	s->used += n;
	return &s->l[s->used - n];
}

const char *velem_label(const struct velem *e, const char *key)
{
	for (int i = 0; i < e->nlabels; i++)
		if (!strcmp(e->labels[i].key, key))
			return e->labels[i].value;
	return NULL;
}

/* Hash of a sorted label set, for matching vectors' elements. */
uint64_t labels_hash(const struct label *l, int nl)
{
	return snapshot_labels_hash(FNV64_OFFSET, l, (uint32_t)nl);
}

/* Sort a few labels by key, by insertion (they arrive nearly sorted). */
void labels_sort(struct label *l, int nl)
{
	for (int i = 1; i < nl; i++) {
		struct label t = l[i];
		int k = i;

		while (k > 0 && strcmp(l[k - 1].key, t.key) > 0) {
			l[k] = l[k - 1];
			k--;
		}
		l[k] = t;
	}
}

/* Append an element with labels l (borrowed, sorted by key) and value x. */
int value_push(struct value *v, const struct label *l, int nl, double x)
{
	struct velem *e;

	if (!v->e && spare_e) {
		v->e = spare_e;
		v->cap = spare_cap;
		spare_e = NULL;
	}
	if (ARRAY_GROW(v->e, v->cap, v->n + 1, 16))
		return -ENOMEM;
	e = &v->e[v->n];
	e->labels = slab_take(v, (size_t)nl + 1);
	if (!e->labels)
		return -ENOMEM;
	if (nl)
		memcpy(e->labels, l, (size_t)nl * sizeof(*l));
	e->nlabels = nl;
	e->v = x;
	v->n++;
	return 0;
}
