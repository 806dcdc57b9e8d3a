/*
 * fuzz_perfmap.c - libFuzzer target for perf map files a JIT runtime
 * writes in /tmp (probes/perfmap.h): anyone on the host can write one, so
 * every line is hostile.  A map or an error, and lookups anywhere in it
 * (and past its end), never a crash.
 */
#include <stdint.h>
#include <stdlib.h>

#include "probes/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *m;
	size_t bad;

	if (perfmap_parse((const char *)data, size, &m, &bad) < 0)
		return 0;
	for (uint64_t a = 0; a < 0x10000; a += 0x101)
		(void)perfmap_lookup(m, a);
	(void)perfmap_lookup(m, UINT64_MAX);
	perfmap_free(m);
	return 0;
}
