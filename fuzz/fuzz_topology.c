/*
 * fuzz_topology.c - libFuzzer target for etc/topology.yaml (host globs to
 * rack/switch/... labels): a topology or a positioned error, never a crash
 * or a leak; a parsed topology is applied to a snapshot.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules/lang/rules.h"
#include "model/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct topology t;
	struct snapshot s;
	char err[512];

	memset(&t, 0, sizeof(t));
	if (topology_parse(&t, "fuzz.yaml", (const char *)data, size, err, sizeof(err)) == 0) {
		if (snapshot_init(&s, "db-17.r3", 1, 1000, 1, 1) == 0) {
			topology_apply(&t, &s);
			snapshot_free(&s);
		}
		topology_free(&t);
	}
	return 0;
}
