/*
 * columns.c - one host's history as columns: the ring of points, its
 * columns and their index, fed a snapshot at a time (columns_push); see
 * columns.h.  Appending another history is columns_append.c.
 */
#include "rules/lang/columns.h"
#include "rules/lang/columns_internal.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "core/varint.h"
#include "rules/lang/hist_pack.h"

void columns_init(struct columns *c)
{
	memset(c, 0, sizeof(*c));
}

/*
 * A column's identity lives in one allocation: the label array, then the
 * name and every key and value, each NUL-terminated (labels points at the
 * block, also when there are none).  One malloc instead of 1 + 2 per label.
 */
static void def_free(struct series *d)
{
	free(d->labels);
}

/* d = the identity of ser (name, labels, kind, id), strings copied. */
static int def_copy(struct series *d, const struct series *ser)
{
	size_t need = ser->nlabels * sizeof(*d->labels) + strlen(ser->name) + 1;
	char *p;

	for (uint32_t i = 0; i < ser->nlabels; i++)
		need += strlen(ser->labels[i].key) + strlen(ser->labels[i].value) + 2;
	memset(d, 0, sizeof(*d));
	d->labels = malloc(need);
	if (!d->labels)
		return -ENOMEM;
	d->kind = ser->kind;
	d->id = ser->id;
	d->name_hash = ser->name_hash;
	d->nlabels = ser->nlabels;
	p = (char *)(d->labels + ser->nlabels);
	d->name = p;
	p = stpcpy(p, ser->name) + 1;
	for (uint32_t i = 0; i < ser->nlabels; i++) {
		d->labels[i].key = p;
		p = stpcpy(p, ser->labels[i].key) + 1;
		d->labels[i].value = p;
		p = stpcpy(p, ser->labels[i].value) + 1;
	}
	return 0;
}

/* A column is one series of one kind (a series that changes kind starts a new column). */
static int same_identity(const struct series *a, const struct series *b)
{
	return a->kind == b->kind && snapshot_same_series(a, b);
}

/* Column k's histogram at slot s (held there) into out. */
void col_hist_at(const struct columns *c, const struct column *col, size_t s,
		 struct histogram *out)
{
	const struct col_ring *g = &c->ring;
	size_t chain[COLUMNS_HIST_CHAIN + 2], n = 0;

	/* back to the full point this one builds on: at most COLUMNS_HIST_CHAIN */
	for (;;) {
		chain[n++] = s;
		if (packed(col)[s][0] == HPACK_FULL || n == COLUMNS_HIST_CHAIN + 2)
			break;
		s = s ? s - 1 : g->cap - 1;
	}
	while (n-- > 0)
		hpack_apply(out, packed(col)[chain[n]]);
}

int columns_hist(const struct columns *c, uint32_t k, size_t i, struct histogram *out)
{
	size_t s;

	if (!c->col[k].keep) {
		if (!columns_has(c, k, i))
			return -ENOENT;
		hpack_apply(out, c->col[k].last.h);
		return 0;
	}
	s = columns_slot(c, i);
	if (!bit(c->col[k].present, s))
		return -ENOENT;
	col_hist_at(c, &c->col[k], s, out);
	return 0;
}

/*
 * The first point (slot s) of histogram column col is about to leave: if
 * the point after it is a delta on it, store that one in full.
 */
static void rebase_next(struct columns *c, struct column *col, size_t s)
{
	const struct col_ring *g = &c->ring;
	size_t next = s + 1 >= g->cap ? 0 : s + 1;
	struct histogram *h;
	uint8_t *full;

	if (g->n < 2 || !bit(col->present, next) || packed(col)[next][0] != HPACK_DELTA)
		return;
	h = malloc(sizeof(*h));
	if (!h)
		return;		/* left as is: col_hist_at stops at its chain bound */
	col_hist_at(c, col, next, h);
	full = hpack_full_dense(h);
	free(h);
	if (!full)
		return;
	free(packed(col)[next]);
	packed(col)[next] = full;
}

static void column_free(struct column *col, const struct columns *c)
{
	if (!col->keep && col->now && col->def.kind == SERIES_HISTOGRAM)
		free(col->last.h);
	if (col->def.kind == SERIES_HISTOGRAM && col->v)
		for (size_t s = 0; s < c->ring.cap; s++)
			if (bit(col->present, s))
				free(packed(col)[s]);
	free(col->v);
	free(col->present);
	def_free(&col->def);
}

void col_newest_free(struct columns *c)
{
	snapshot_free(&c->newest);
	memset(&c->newest, 0, sizeof(c->newest));
}

void columns_free(struct columns *c)
{
	for (uint32_t k = 0; k < c->ncol; k++)
		column_free(&c->col[k], c);
	free(c->col);
	free(c->by_id);
	free(c->hash);
	free(c->ring.ts);
	if (c->newest.host)
		col_newest_free(c);
	memset(c, 0, sizeof(*c));
}

/* ---- the id index ------------------------------------------------------- */

static int index_rebuild(struct columns *c)
{
	uint32_t n = 16;

	while (n < 2 * c->ncol + 2)
		n *= 2;
	if (n != c->nby_id) {
		uint32_t *t = calloc(n, sizeof(*t));

		if (!t)
			return -ENOMEM;
		free(c->by_id);
		c->by_id = t;
		c->nby_id = n;
	} else {
		memset(c->by_id, 0, n * sizeof(*c->by_id));
	}
	for (uint32_t k = 0; k < c->ncol; k++) {
		uint32_t h = (uint32_t)c->col[k].def.id & (n - 1);

		while (c->by_id[h])
			h = (h + 1) & (n - 1);
		c->by_id[h] = k + 1;
	}
	return 0;
}

/* The column of series ser, or -1. */
long col_find(const struct columns *c, const struct series *ser)
{
	if (!c->nby_id)
		return -1;
	for (uint32_t h = (uint32_t)ser->id & (c->nby_id - 1); c->by_id[h];
	     h = (h + 1) & (c->nby_id - 1))
		if (same_identity(&c->col[c->by_id[h] - 1].def, ser))
			return (long)c->by_id[h] - 1;
	return -1;
}

/*
 * Give column col its ring (it had only its newest value): that value
 * moves to the newest point.  Returns 0 or -ENOMEM.
 */
static int column_keep(struct columns *c, struct column *col)
{
	const struct col_ring *d = &c->ring;

	if (d->cap) {
		col->v = calloc(d->cap, sizeof(uint64_t));
		col->present = calloc(words(d->cap), sizeof(uint64_t));
		if (!col->v || !col->present) {
			free(col->v);
			free(col->present);
			col->v = NULL;
			col->present = NULL;
			return -ENOMEM;
		}
	}
	col->keep = 1;
	if (col->now && d->n) {
		size_t s = (d->head + d->n - 1) % d->cap;

		((uint64_t *)col->v)[s] = col->last.u;	/* any of the union's members */
		col->present[s / 64] |= 1ULL << (s % 64);
		col->chain = 0;
	}
	col->now = 0;
	return 0;
}

static int policy_keeps(const struct columns_policy *p, const struct series *def)
{
	return !p || !p->keeps || p->keeps(def, p->arg);
}

/* A new column for series ser, holding no point yet; its index or -ENOMEM. */
long col_add(struct columns *c, const struct series *ser, const struct columns_policy *policy)
{
	struct column *col;

	if (c->ncol == c->capcol) {
		uint32_t cap = c->capcol ? c->capcol * 2 : 16;
		struct column *n = realloc(c->col, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->col = n;
		c->capcol = cap;
	}
	col = &c->col[c->ncol];
	memset(col, 0, sizeof(*col));
	if (def_copy(&col->def, ser))
		return -ENOMEM;
	col->keep = policy_keeps(policy, ser);
	if (col->keep && c->ring.cap) {
		col->v = calloc(c->ring.cap, sizeof(uint64_t));
		col->present = calloc(words(c->ring.cap), sizeof(uint64_t));
		if (!col->v || !col->present) {
			c->ncol++;	/* column_free below frees what it has */
			column_free(col, c);
			c->ncol--;
			return -ENOMEM;
		}
	}
	c->ncol++;
	if (c->ncol * 2 + 2 > c->nby_id) {
		if (index_rebuild(c)) {
			c->ncol--;
			column_free(col, c);
			return -ENOMEM;
		}
	} else {
		uint32_t h = (uint32_t)ser->id & (c->nby_id - 1);

		while (c->by_id[h])
			h = (h + 1) & (c->nby_id - 1);
		c->by_id[h] = c->ncol;
	}
	return (long)c->ncol - 1;
}

/* ---- the ring ----------------------------------------------------------- */

/*
 * The ring made cap slots (> its points), points moved to slots 0..: every
 * array is allocated before any is changed, so -ENOMEM leaves the history
 * as it was (a wrapped ring moved in part would pair values with the wrong
 * times).
 */
static int ring_grow(struct columns *c, size_t cap)
{
	struct col_ring *g = &c->ring;
	uint64_t *ts = cap < SIZE_MAX / sizeof(*ts) ? malloc(cap * sizeof(*ts)) : NULL;
	uint64_t **fresh = calloc(2 * (size_t)c->ncol + 1, sizeof(*fresh));	/* v, present */
	int ret = 0;

	for (uint32_t k = 0; ts && fresh && k < c->ncol && !ret; k++) {
		if (!c->col[k].keep)
			continue;
		fresh[2 * k] = calloc(cap, sizeof(uint64_t));
		fresh[2 * k + 1] = calloc(words(cap), sizeof(uint64_t));
		if (!fresh[2 * k] || !fresh[2 * k + 1])
			ret = -ENOMEM;
	}
	if (!ts || !fresh || ret) {
		for (uint32_t k = 0; fresh && k < 2 * c->ncol; k++)
			free(fresh[k]);
		free(fresh);
		free(ts);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < c->ncol; k++) {
		struct column *col = &c->col[k];
		uint64_t *v = fresh[2 * k], *p = fresh[2 * k + 1];

		if (!col->keep)
			continue;
		for (size_t i = 0; i < g->n; i++) {
			size_t s = wrap(g, i);

			v[i] = ((uint64_t *)col->v)[s];
			if (bit(col->present, s))
				set_bit(p, i);
		}
		free(col->v);
		free(col->present);
		col->v = v;
		col->present = p;
	}
	free(fresh);
	for (size_t i = 0; i < g->n; i++)
		ts[i] = g->ts[wrap(g, i)];
	free(g->ts);
	g->ts = ts;
	g->head = 0;
	g->cap = cap;
	return 0;
}

/* Room for one more point: grown by an eighth (a long-lived history's memory). */
int col_ring_reserve(struct columns *c)
{
	const struct col_ring *g = &c->ring;

	if (g->n < g->cap)
		return 0;
	return ring_grow(c, g->cap < 64 ? (g->cap ? g->cap * 2 : 16) : g->cap + g->cap / 8);
}

int col_make_room(struct columns *c, uint64_t ts, uint64_t keep_ms)
{
	while (c->ring.n && c->ring.ts[c->ring.head] + keep_ms < ts)
		col_drop_oldest(c);
	return col_ring_reserve(c);
}

size_t col_slot_open(struct columns *c, uint64_t ts)
{
	struct col_ring *d = &c->ring;
	size_t slot = wrap(d, d->n);

	for (uint32_t k = 0; k < c->ncol; k++)
		if (c->col[k].keep)
			clear_bit(c->col[k].present, slot);
	d->ts[slot] = ts;
	d->n++;
	return slot;
}

int columns_reserve(struct columns *c, size_t n)
{
	return n > c->ring.cap ? ring_grow(c, n) : 0;
}

/* Drop the oldest point. */
void col_drop_oldest(struct columns *c)
{
	struct col_ring *g = &c->ring;
	size_t s = g->head;

	for (uint32_t k = 0; k < c->ncol; k++) {
		struct column *col = &c->col[k];

		if (!col->keep || !bit(col->present, s))
			continue;
		if (col->def.kind == SERIES_HISTOGRAM) {
			rebase_next(c, col, s);
			free(packed(col)[s]);
		}
		clear_bit(col->present, s);
		col->live--;
	}
	g->head = wrap(g, 1);
	g->n--;
}

/* Remove the columns no point holds any more. */
void col_collect(struct columns *c)
{
	int removed = 0;

	for (uint32_t k = c->ncol; k-- > 0;) {
		if (c->col[k].live)
			continue;
		column_free(&c->col[k], c);
		c->ncol--;
		removed = 1;
		if (k == c->ncol)
			continue;
		c->col[k] = c->col[c->ncol];
		for (uint32_t i = 0; i < c->newest.nseries; i++)
			if (c->newest.series[i].link == c->ncol + 1)
				c->newest.series[i].link = k + 1;
	}
	if (removed)
		index_rebuild(c);	/* -ENOMEM keeps the old (larger) table: still valid */
}

/*
 * The histogram column col's point before slot s as prev (the
 * previous newest snapshot) holds it, or NULL when it is not there or
 * not directly before.
 */
const struct hist_sparse *col_prev_hist(const struct columns *c, const struct column *col,
					uint32_t k, const struct snapshot *prev, uint32_t hint,
					size_t s)
{
	const struct col_ring *d = &c->ring;
	size_t before = s ? s - 1 : d->cap - 1;

	if (d->n < 2 || !bit(col->present, before) || !prev)
		return NULL;
	if (hint < prev->nseries && prev->series[hint].link == k + 1)
		return prev->series[hint].sparse;
	for (uint32_t i = 0; i < prev->nseries; i++)
		if (prev->series[i].link == k + 1)
			return prev->series[i].sparse;
	return NULL;
}

/*
 * Column col (keep 0) holds series ser's value (sp: its histogram,
 * compact) at the newest point.
 */
static int place_newest_only(struct column *col, const struct series *ser,
			     const struct hist_sparse *sp, int again)
{
	if (col->now && (!again || ser->kind == SERIES_HISTOGRAM))
		return 0;	/* the same series twice in one snapshot: the first counts */
	if (ser->kind == SERIES_HISTOGRAM) {
		col->last.h = hpack_full(sp);
		if (!col->last.h)
			return -ENOMEM;
	} else if (ser->kind == SERIES_COUNTER) {
		col->last.u = ser->counter.value;
	} else {
		col->last.d = ser->gauge.last;
	}
	if (!col->now)
		col->live++;
	col->now = 1;
	return 0;
}

/*
 * Column k's value at slot s (the newest point): series ser's, sp its
 * histogram in compact form; a histogram as its increase over older (the
 * column's value at the slot before, NULL when not known) while the chain
 * allows.  A column that holds slot s already keeps its first value (a
 * series twice in one snapshot), unless again (columns_set_newest: a
 * value set again).
 */
int col_put_value(struct columns *c, uint32_t k, const struct series *ser,
		     const struct hist_sparse *sp, size_t s, const struct hist_sparse *older,
		     int again)
{
	struct column *col = &c->col[k];

	if (!col->keep)
		return place_newest_only(col, ser, sp, again);
	if (bit(col->present, s)) {
		if (!again || ser->kind == SERIES_HISTOGRAM)
			return 0;	/* the same series twice in one snapshot: the first counts */
		/* a value set again (columns_set_newest) */
		if (ser->kind == SERIES_COUNTER)
			((uint64_t *)col->v)[s] = ser->counter.value;
		else
			((double *)col->v)[s] = ser->gauge.last;
		return 0;
	}
	if (ser->kind == SERIES_HISTOGRAM) {
		uint8_t *b = NULL;
		int grew = 0;

		if (older && col->chain < COLUMNS_HIST_CHAIN)
			b = hpack_delta(sp, older, &grew);
		if (b) {
			col->chain++;
		} else if (older && grew) {
			return -ENOMEM;
		} else {
			b = hpack_full(sp);
			if (!b)
				return -ENOMEM;
			col->chain = 0;
		}
		packed(col)[s] = b;
	} else if (ser->kind == SERIES_COUNTER) {
		((uint64_t *)col->v)[s] = ser->counter.value;
	} else {
		((double *)col->v)[s] = ser->gauge.last;
	}
	set_bit(col->present, s);
	col->live++;
	return 0;
}

/*
 * The column of series ser: column hint when it is the series' (sure: it
 * is, if the kind is the same), else the column found by id, else a new
 * one.  Its index, or -ENOMEM.
 */
long col_column_for(struct columns *c, const struct series *ser, long hint, int sure,
		       const struct columns_policy *policy)
{
	long k = -1;

	if (hint >= 0 && (uint32_t)hint < c->ncol &&
	    (sure ? c->col[hint].def.kind == ser->kind : same_identity(&c->col[hint].def, ser)))
		k = hint;
	if (k < 0)
		k = col_find(c, ser);
	if (k < 0)
		k = col_add(c, ser, policy);
	return k;
}

/*
 * Place series ser (the i-th of the snapshot at slot s; prev: the newest
 * before it, or NULL) in its column (col_column_for) and link it there.
 */
static int place(struct columns *c, struct series *ser, size_t s, long hint, int sure,
		 const struct snapshot *prev, uint32_t i, int again,
		 const struct columns_policy *policy)
{
	long k = col_column_for(c, ser, hint, sure, policy);
	const struct hist_sparse *older = NULL;
	struct column *col;

	if (k < 0)
		return (int)k;
	col = &c->col[k];
	ser->link = (uint32_t)k + 1;
	if (ser->kind == SERIES_HISTOGRAM) {
		int ret = series_compact(ser);

		if (ret)
			return ret;
		if (col->keep && !bit(col->present, s) && col->chain < COLUMNS_HIST_CHAIN)
			older = col_prev_hist(c, col, (uint32_t)k, prev, i, s);
	}
	return col_put_value(c, (uint32_t)k, ser, ser->sparse, s, older, again);
}

/* c->hash for the newest snapshot's series (left invalid on -ENOMEM). */
void col_index_newest(struct columns *c)
{
	const struct snapshot *s = &c->newest;

	c->nhash = 0;
	if (s->nseries > c->caphash) {
		uint32_t cap = s->nseries + 16;
		uint32_t *h = realloc(c->hash, cap * sizeof(*h));

		if (!h)
			return;
		c->hash = h;
		c->caphash = cap;
	}
	for (uint32_t i = 0; i < s->nseries; i++)
		c->hash[i] = s->series[i].name_hash;
	c->nhash = s->nseries;
}

/* The newest point is about to change: the keep-0 columns' values go. */
void col_forget_newest_only(struct columns *c)
{
	for (uint32_t k = 0; k < c->ncol; k++) {
		struct column *col = &c->col[k];

		if (col->keep || !col->now)
			continue;
		if (col->def.kind == SERIES_HISTOGRAM)
			free(col->last.h);
		col->now = 0;
		col->live--;
	}
}

/* The policy changed (a reload): columns it now keeps get their rings. */
void col_follow_policy(struct columns *c, const struct columns_policy *policy)
{
	for (uint32_t k = 0; k < c->ncol; k++)
		if (!c->col[k].keep && policy_keeps(policy, &c->col[k].def))
			column_keep(c, &c->col[k]);	/* -ENOMEM: asked again next gen */
	c->policy_gen = policy ? policy->gen : 0;
}

#define HINT_SURE (1u << 31)	/* a hint place() need not check (columns are far fewer) */

int columns_push(struct columns *c, struct snapshot *s, uint64_t keep_ms,
		 const struct columns_policy *policy)
{
	struct col_ring *d = &c->ring;
	const struct snapshot *prev = &c->newest;
	uint32_t *hints = NULL;
	size_t slot;
	int ret;

	ret = col_make_room(c, s->ts_ms, keep_ms);
	if (!ret && columns_len(c) && s->nseries) {
		/*
		 * consecutive snapshots of a host list their series in the same
		 * order; one decoded like the newest says which series it repeats
		 */
		hints = malloc(s->nseries * sizeof(*hints));
		if (!hints)
			ret = -ENOMEM;
		for (uint32_t i = 0; hints && i < s->nseries; i++) {
			const struct series *x = &s->series[i];
			uint32_t j = x->like ? x->like - 1 : i;
			const struct series *p = j < prev->nseries ? &prev->series[j] : NULL;

			hints[i] = p && p->link != SERIES_LINK_NONE ? p->link : 0;
			if (hints[i] && x->like && p->name == x->name && p->labels == x->labels)
				hints[i] |= HINT_SURE;
		}
	}
	if (ret) {
		snapshot_free(s);
		return ret;
	}
	if (c->policy_gen != (policy ? policy->gen : 0))
		col_follow_policy(c, policy);
	col_forget_newest_only(c);
	slot = col_slot_open(c, s->ts_ms);
	for (uint32_t i = 0; i < s->nseries && !ret; i++) {
		s->series[i].link = 0;
		ret = place(c, &s->series[i], slot,
			    hints ? (long)(hints[i] & ~HINT_SURE) - 1 : -1,
			    hints && (hints[i] & HINT_SURE),
			    prev->host ? prev : NULL, i, 0, policy);
	}
	free(hints);
	if (ret) {
		/* take the half-placed point back out; its histograms stay with s */
		col_forget_newest_only(c);
		for (uint32_t k = 0; k < c->ncol; k++) {
			if (!c->col[k].keep || !bit(c->col[k].present, slot))
				continue;
			if (c->col[k].def.kind == SERIES_HISTOGRAM)
				free(packed(&c->col[k])[slot]);
			clear_bit(c->col[k].present, slot);
			c->col[k].live--;
		}
		d->n--;
		snapshot_free(s);
		col_collect(c);
		return ret;
	}
	/*
	 * s may use the newest's strings (decoded like it, store_read_ranges):
	 * they become s's.  Should a copy fail, the old newest is leaked rather
	 * than freed under s.
	 */
	col_newest_take(c, s, snapshot_adopt_strings(s, &c->newest) == 0);
	return 0;
}

void col_newest_take(struct columns *c, struct snapshot *s, int free_old)
{
	if (free_old && c->newest.host)
		col_newest_free(c);
	c->newest = *s;
	memset(s, 0, sizeof(*s));
	col_index_newest(c);
	col_collect(c);
}

int columns_set_newest(struct columns *c, struct series *ser, const struct columns_policy *policy)
{
	const struct col_ring *d = &c->ring;

	if (!d->n || ser->kind == SERIES_HISTOGRAM)
		return -EINVAL;
	int ret;

	ret = place(c, ser, wrap(d, d->n - 1), ser->link ? (long)ser->link - 1 : -1, 0, NULL, 0, 1,
		    policy);
	if (c->nhash != c->newest.nseries)
		col_index_newest(c);	/* a series added to the newest snapshot */
	return ret;
}

long columns_last_at(const struct columns *c, uint64_t t)
{
	size_t lo = 0, hi = columns_len(c);

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (columns_ts(c, mid) <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

size_t columns_bytes(const struct columns *c)
{
	size_t b = sizeof(*c) + c->capcol * sizeof(*c->col) + c->nby_id * sizeof(uint32_t) +
		   c->caphash * sizeof(uint32_t);

	b += malloc_usable_size(c->ring.ts);
	for (uint32_t k = 0; k < c->ncol; k++) {
		const struct column *col = &c->col[k];

		b += malloc_usable_size(col->def.labels);	/* the identity's one block */
		if (!col->keep && col->now && col->def.kind == SERIES_HISTOGRAM)
			b += malloc_usable_size(col->last.h);
		b += malloc_usable_size(col->v) + malloc_usable_size(col->present);
		if (col->def.kind != SERIES_HISTOGRAM || !col->v)
			continue;
		for (size_t s = 0; s < c->ring.cap; s++)
			if (bit(col->present, s))
				b += malloc_usable_size(packed(col)[s]);
	}
	return b;
}
