/*
 * fuzz_probe_config.c - libFuzzer target for etc/probe.yaml as the probe
 * reads it (probe_config_parse, on top of the built-in default): a config
 * or a positioned error, never a crash or a leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probes/probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct probe_config cfg;
	char err[512];

	if (probe_config_defaults(&cfg, err, sizeof(err)) == 0)
		probe_config_parse(&cfg, "fuzz.yaml", (const char *)data, size, err, sizeof(err));
	probe_config_free(&cfg);
	return 0;
}
