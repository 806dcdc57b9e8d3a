/*
 * columns_internal.h - what columns.c (the ring, columns_push), columns_run.c and
 * columns_append.c (another history appended) share; not for other files.
 */
#ifndef FL_COLUMNS_INTERNAL_H
#define FL_COLUMNS_INTERNAL_H

#include <stdint.h>

#include "rules/lang/columns.h"

/* ---- bitmaps and slots -------------------------------------------------- */

static inline int bit(const uint64_t *b, size_t slot)
{
	return (int)((b[slot / 64] >> (slot % 64)) & 1);
}

static inline void set_bit(uint64_t *b, size_t slot)
{
	b[slot / 64] |= 1ULL << (slot % 64);
}

static inline void clear_bit(uint64_t *b, size_t slot)
{
	b[slot / 64] &= ~(1ULL << (slot % 64));
}

static inline size_t words(size_t cap)
{
	return (cap + 63) / 64;
}

/* Slot of the i-th point of ring g (i may run one past its end). */
static inline size_t wrap(const struct col_ring *g, size_t i)
{
	size_t s = g->head + i;

	return s >= g->cap ? s - g->cap : s;
}

/* The packed points of column k, by slot. */
static inline uint8_t **packed(const struct column *col)
{
	return (uint8_t **)col->v;
}

/* ---- columns.c's, for columns_append.c ---------------------------------- */

/* Column col's histogram at slot s (held there) into out. */
void col_hist_at(const struct columns *c, const struct column *col, size_t s,
		 struct histogram *out);

/* The column of series ser (same name, labels and kind), or -1. */
long col_find(const struct columns *c, const struct series *ser);

/* A new column for series ser, holding no point yet; its index or -ENOMEM. */
long col_add(struct columns *c, const struct series *ser, const struct columns_policy *policy);

/* Room for one more point (the ring grown by an eighth): 0 or -ENOMEM. */
int col_ring_reserve(struct columns *c);

/* Before a point at ts: the points older than keep_ms before it dropped, room made. */
int col_make_room(struct columns *c, uint64_t ts, uint64_t keep_ms);

/* A new newest point at ts (room made), holding no value yet: its slot. */
size_t col_slot_open(struct columns *c, uint64_t ts);

/* Drop the oldest point (a histogram delta on it is rebuilt in full). */
void col_drop_oldest(struct columns *c);

/* Remove the columns no point holds any more. */
void col_collect(struct columns *c);

/* Free c->newest. */
void col_newest_free(struct columns *c);

/* c->hash for the newest snapshot's series (left invalid on -ENOMEM). */
void col_index_newest(struct columns *c);

/* The newest point is about to change: the keep-0 columns' values go. */
void col_forget_newest_only(struct columns *c);

/* The policy changed (a reload): columns it now keeps get their rings. */
void col_follow_policy(struct columns *c, const struct columns_policy *policy);

/* ---- columns.c's, for columns_run.c -------------------------------------- */

/*
 * The histogram column col's (index k) point before slot s as prev (the
 * newest before it) holds it, or NULL when it is not there or not directly
 * before; hint: its index in prev, most likely.
 */
const struct hist_sparse *col_prev_hist(const struct columns *c, const struct column *col,
					uint32_t k, const struct snapshot *prev, uint32_t hint,
					size_t s);

/*
 * Column k's value at slot s (the newest point): series ser's (sp its
 * histogram, compact), a histogram as its increase over older while the
 * chain allows; a slot held already keeps its first value unless again.
 */
int col_put_value(struct columns *c, uint32_t k, const struct series *ser,
		  const struct hist_sparse *sp, size_t s, const struct hist_sparse *older,
		  int again);

/* The column of ser: hint if it is the series' (sure: if the kind is), by id, or new. */
long col_column_for(struct columns *c, const struct series *ser, long hint, int sure,
		    const struct columns_policy *policy);

/* s as the newest snapshot, taken over (free_old: the old one freed), indexed; columns collected. */
void col_newest_take(struct columns *c, struct snapshot *s, int free_old);

#endif
