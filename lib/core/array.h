/*
 * array.h - growing a caller-owned array geometrically (git's ALLOC_GROW).
 *
 * Most structures here keep `T *items` beside a count and a capacity, and
 * grow by doubling when full.  ARRAY_GROW is the one place that does it, so
 * that every such array gets the same three properties: the size is
 * overflow-checked (reallocarray), a failed grow leaves the array *and* its
 * capacity as they were (the caller's structure stays valid and freeable),
 * and the capacity may be any integer type its structure already uses.
 *
 * Typical use:
 *
 *	if (ARRAY_GROW(v->items, v->cap, v->n + 1, 16))
 *		return -ENOMEM;
 *	v->items[v->n++] = x;
 *
 * An array that grows by another rule (rules/lang/columns.c grows large columns
 * by an eighth, to bound slack) keeps its own code.
 */
#ifndef FL_ARRAY_H
#define FL_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * array_grow_cap - the capacity that holds @need elements: @cap when they
 * already fit, else @cap (or @first when @cap is 0) doubled until they do.
 * Returns 0 when no size_t can hold it.
 */
static inline size_t array_grow_cap(size_t cap, size_t need, size_t first)
{
	size_t c = cap ? cap : (first ? first : 1);

	while (c < need) {
		if (c > SIZE_MAX / 2)
			return 0;
		c *= 2;
	}
	return c;
}

/*
 * ARRAY_GROW(arr, cap, need, first) - make room for @need elements in the
 * array @arr whose capacity (in elements) is @cap; both are lvalues, and
 * each is evaluated more than once.  A new array starts at @first elements.
 * Evaluates to 0, or to -ENOMEM with @arr and @cap unchanged (also when the
 * new capacity would not fit @cap's type).
 */
#define ARRAY_GROW(arr, cap, need, first)                                            \
	({                                                                           \
		int grow_ret_ = 0;                                                   \
		size_t grow_need_ = (need);                                          \
		if (grow_need_ > (size_t)(cap)) {                                    \
			size_t grow_cap_ = array_grow_cap((size_t)(cap), grow_need_, \
							  (first));                  \
			__typeof__(arr) grow_p_ = NULL;                              \
			if (grow_cap_ && (size_t)(__typeof__(cap))grow_cap_ == grow_cap_ && \
			    (__typeof__(cap))grow_cap_ > 0)                          \
				grow_p_ = reallocarray((arr), grow_cap_, sizeof(*(arr))); \
			if (grow_p_) {                                               \
				(arr) = grow_p_;                                     \
				(cap) = (__typeof__(cap))grow_cap_;                  \
			} else {                                                     \
				grow_ret_ = -ENOMEM;                                 \
			}                                                            \
		}                                                                    \
		grow_ret_;                                                           \
	})

#endif
