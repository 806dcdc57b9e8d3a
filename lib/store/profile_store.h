/*
 * profile_store.h - read a host's CPU profile windows back from Redis
 * (fl:{H}:p10, fl:{H}:p3600) and merge them; shared by `faultline
 * profile`, the alerter's evidence and the rules engine's profile
 * baselines.
 */
#ifndef FL_PROFILE_STORE_H
#define FL_PROFILE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "model/profile.h"

/*
 * Merge host's windows in tier ("p10" or "p3600") with from_ms <= ts <=
 * to_ms (0 = open end) into *into (initialised by the caller), only rows
 * of service (NULL: all).  Windows that do not decode are skipped and
 * counted in *bad (may be NULL).  Returns the number merged, or -EIO with
 * the reason in err.
 */
int profile_read_merge(redisContext *rc, const char *host, const char *tier, uint64_t from_ms,
		       uint64_t to_ms, const char *service, struct profile *into, size_t *bad,
		       char *err, size_t errlen);

#endif
