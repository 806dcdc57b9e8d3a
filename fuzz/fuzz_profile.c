/*
 * fuzz_profile.c - libFuzzer target for profile windows read back from
 * Redis, plain msgpack or a zstd frame of it (seeds of both: *.zst): any
 * bytes give a profile or an error; a decoded profile
 * re-encodes, merges under a cgroup and a service scope (the alerter's
 * evidence) to no more samples than it holds, and exports to pprof
 * without crashing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/pprof.h"
#include "model/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile p, q;
	char err[256], *buf;
	size_t len;
	uint8_t *gz;

	if (profile_decode(data, size, &p, err, sizeof(err)))
		return 0;
	if (profile_encode(&p, &buf, &len) == 0) {
		if (profile_decode(buf, len, &q, err, sizeof(err)))
			abort();
		profile_free(&q);
		free(buf);
	}
	int small = 1;	/* counts that cannot wrap a sum: the totals compare */

	for (uint32_t r = 0; r < p.nrows; r++)
		small &= p.rows[r].count < (1ULL << 40);
	for (int s = 0; s < 2; s++) {
		static const struct profile_scope scopes[2] = { { NULL, "/batch" }, { "api", NULL } };

		if (profile_init(&q, ""))
			break;
		if (profile_merge(&q, &p, &scopes[s]) == 0 && small && q.total > p.total)
			abort();
		profile_free(&q);
	}
	if (pprof_encode(&p, &gz, &len) == 0)
		free(gz);
	profile_free(&p);
	return 0;
}
