/*
 * strmap.h - a string-keyed open-addressing hash map to small integers.
 *
 * Used where series are matched by their canonical key (rollups, readers
 * taking deltas).  Keys are copied; values are caller-chosen uint32_t
 * (typically an index into the caller's array).  Linear probing with
 * FNV-1a, grown at 50 % load.  Deletion shifts the following run back
 * (no tombstones), so a map used as a set of live ids stays short.
 */
#ifndef FL_STRMAP_H
#define FL_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct strmap {
	char **keys;
	uint32_t *vals;
	size_t cap;	/* power of two, or 0 */
	size_t len;
};

void strmap_init(struct strmap *m);
void strmap_free(struct strmap *m);

/* Look key up; returns 1 and sets *val if present, else 0. */
int strmap_get(const struct strmap *m, const char *key, uint32_t *val);

/* Insert or overwrite key. Returns 0 or -ENOMEM. */
int strmap_put(struct strmap *m, const char *key, uint32_t val);

/* Remove key; returns 1 if it was present, else 0. */
int strmap_del(struct strmap *m, const char *key);

#endif
