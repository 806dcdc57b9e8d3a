/*
 * fuzz_scenario.c - libFuzzer target for the fleet simulator's scenario
 * files: any input gives a scenario or a positioned error, never a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scenario sc;
	char err[512];

	if (scenario_parse(&sc, "fuzz.yaml", (const char *)data, size, err, sizeof(err)) == 0)
		scenario_free(&sc);
	return 0;
}
