/*
 * fuzz_partials.c - libFuzzer target for what rules workers read from each
 * other through Redis: a deploy verdict's partial aggregate (FLBP1 blob,
 * fleet_bpart_merge_blob) and the partition of an alert from its JSON
 * (shard_part_of_alert).  A result or an error, never a crash; a partial
 * that merges leaves histograms whose counts match their buckets.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules/engine/fleet.h"
#include "rules/shard/shard.h"

static int hist_sane(const struct histogram *h)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < HIST_BUCKETS; i++)
		n += h->buckets[i];
	return n == h->count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct shard *s;
	struct fleet_bpart b;
	char *text;

	for (int q = 0; q < 2; q++) {
		if (fleet_bpart_init(&b, q))
			return 0;
		if (fleet_bpart_merge_blob(&b, data, size) == 0) {
			for (int k = 0; q && k < FLEET_SLOTS; k++)
				if (!hist_sane(&b.dh[k]) || !hist_sane(&b.ph[k]))
					abort();
			for (int w = 0; w < 2; w++)
				if (!hist_sane(&b.wd[w]) || !hist_sane(&b.wp[w]))
					abort();
		}
		fleet_bpart_free(&b);
	}
	if (!s)
		s = shard_new("fuzz", 1000, NULL, NULL);
	text = malloc(size + 1);
	if (s && text) {
		int p;

		memcpy(text, data, size);
		text[size] = '\0';
		p = shard_part_of_alert(s, text);
		if (p < -1 || p >= WORKERS_NPART)
			abort();
	}
	free(text);
	return 0;
}
