/*
 * unwind_cache.h - built unwind tables kept on disk by GNU build id
 * (profile.unwind_cache), so a restart reads libc's rather than building
 * it again.  A file is BUILD_ID.unwind (0600, written whole then renamed),
 * in unwind_table_encode's format; it is checked when read
 * (unwind_table_decode) and removed, with a warning, when damaged.
 */
#ifndef FL_UNWIND_CACHE_H
#define FL_UNWIND_CACHE_H

#include <stddef.h>

#include "probes/unwind.h"

/* Make dir (and its parents, 0700). Returns 0 or -errno. */
int unwind_cache_dir(const char *dir);

/*
 * Build id bid's table from dir into t, of at most max_rows rows (0: no
 * limit).  Returns 0, -ENOENT (none kept, or bid is not plain hex),
 * -EINVAL (damaged: removed) or -ENOMEM.
 */
int unwind_cache_load(const char *dir, const char *bid, size_t max_rows, struct unwind_table *t);

/* Keep t as bid's table in dir; a failure is logged at debug level and changes nothing. */
void unwind_cache_store(const char *dir, const char *bid, const struct unwind_table *t);

#endif
