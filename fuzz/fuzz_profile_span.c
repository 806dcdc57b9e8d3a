/*
 * fuzz_profile_span.c - libFuzzer target for profile span chunks read back
 * from Redis (store/compaction.h), plain msgpack or a zstd frame of it:
 * any bytes give a span or an error; a decoded span's windows view and
 * merge inside its tables to every sample they hold, and encode again as
 * a span that reads back the same (profile_span_encode checks; a failure
 * aborts).
 */
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
	uint64_t sum = 0;
	int small = 1;	/* counts that cannot wrap a sum: the totals compare */

	for (uint32_t k = 0; k < s.nwindows; k++) {
		profile_span_view(&s, k, &views[k]);
		for (uint32_t r = 0; r < views[k].nrows; r++)
			small &= views[k].rows[r].count < (1ULL << 40);
		sum += views[k].total;
		if (profile_merge(&all, &views[k], NULL))
			small = 0;	/* out of memory: nothing to compare */
	}
	if (small && all.total != sum)
		abort();	/* the windows merged are every sample once */
	if (profile_span_encode(views, s.nwindows, 1, &buf, &len) == 0)
		free(buf);
	else if (s.nwindows)
		abort();	/* what decoded encodes: only memory may run out */
	profile_free(&all);
	free(views);
	profile_span_free(&s);
	return 0;
}
