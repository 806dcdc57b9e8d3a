/*
 * fuzz_profile_span.c - libFuzzer target for profile span chunks read back
 * from Redis (store/compaction.h), plain msgpack or a zstd frame of it:
 * any bytes give a span or an error; a decoded span's every window views
 * and merges inside its tables, and its windows encode again as a span
 * that reads back the same (profile_span_encode checks; a failure aborts).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/profile.h"
#include "model/profile_span.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile_span s;
	struct profile *views, all;
	char err[256], *buf;
	size_t len;

	if (profile_span_decode(data, size, &s, err, sizeof(err)))
		return 0;
	views = calloc(s.nwindows, sizeof(*views));
	if (!views || profile_init(&all, "")) {
		free(views);
		profile_span_free(&s);
		return 0;
	}
	for (uint32_t k = 0; k < s.nwindows; k++) {
		profile_span_view(&s, k, &views[k]);
		if (profile_merge(&all, &views[k], NULL) == -EINVAL)
			abort();
	}
	if (profile_span_encode(views, s.nwindows, 1, &buf, &len) == 0)
		free(buf);
	else if (s.nwindows)
		abort();	/* what decoded encodes: only memory may run out */
	profile_free(&all);
	free(views);
	profile_span_free(&s);
	return 0;
}
