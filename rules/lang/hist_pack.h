/*
 * hist_pack.h - a histogram point as the rules' history keeps it (columns.h):
 * packed as varints, in full or as its increase over the point before,
 * which is what makes an hour of 1 s latency histograms cost kilobytes.
 *
 * A packed point is one tag byte (HPACK_FULL, HPACK_DELTA), then count,
 * sum and the number of runs, then each run as (gap to the previous
 * bucket index - 1, count): all varints.  Buffers are malloc'd; the
 * caller frees them.  Reading trusts the bytes (they never leave memory).
 */
#ifndef FL_RULES_HIST_PACK_H
#define FL_RULES_HIST_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "model/histogram.h"

enum { HPACK_FULL = 0, HPACK_DELTA = 1 };

/* s packed in full, or NULL (out of memory). */
uint8_t *hpack_full(const struct hist_sparse *s);

/* h (dense) packed in full, or NULL. */
uint8_t *hpack_full_dense(const struct histogram *h);

/*
 * newer packed as its increase over older, or NULL with *grew = 0 when
 * some bucket (or the count or sum) went down: then it is stored in full.
 * NULL with *grew = 1: out of memory.
 */
uint8_t *hpack_delta(const struct hist_sparse *newer, const struct hist_sparse *older, int *grew);

/* The bytes packed point b takes (its tag and every varint). */
size_t hpack_len(const uint8_t *b);

/* Apply packed point b to h: set it (full: h is overwritten) or add it (delta). */
void hpack_apply(struct histogram *h, const uint8_t *b);

#endif
