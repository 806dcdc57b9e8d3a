/*
 * snapshot_internal.h - what snapshot.c (the model), snapshot_encode.c and
 * snapshot_decode.c share; not for other files.
 */
#ifndef FL_SNAPSHOT_INTERNAL_H
#define FL_SNAPSHOT_INTERNAL_H

#include "model/snapshot.h"

/* Free labels l[0..n) and the array. */
void snapshot_labels_free(struct label *l, uint32_t n);

/*
 * Add a series whose name and labels (sorted by key, unique) the snapshot
 * takes over: no copies.  On failure they are freed and NULL is returned.
 * With same (a series of another snapshot with these very strings, see
 * snapshot_decode_like), they stay same's: the series borrows them, with
 * same's id and name hash, and nothing is freed on failure.
 */
struct series *snapshot_add_series(struct snapshot *s, char *name, enum series_kind kind,
				   struct label *labels, uint32_t nlabels, const struct series *same,
				   uint32_t same_index);

/*
 * The series of base a delta's value of ser stands on: the same series and
 * kind, or NULL (no base, or it lacks the series).  hint: ser's index,
 * where a probe's next window has it.
 */
const struct series *snapshot_base_series(const struct snapshot *base, const struct series *ser,
					  uint32_t hint);

#endif
