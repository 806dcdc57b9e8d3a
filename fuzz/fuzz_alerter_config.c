/*
 * fuzz_alerter_config.c - libFuzzer target for etc/alerter.yaml parsing
 * (receivers, routes, matchers with regular expressions): any input gives
 * a config or a positioned error, never a crash or a leak.
 */
#include <stdint.h>
#include <stdlib.h>

#include "alerter/alerter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct alerter_config cfg;
	char err[512];

	if (alerter_config_parse(&cfg, "fuzz.yaml", (const char *)data, size, err, sizeof(err)) == 0)
		alerter_config_free(&cfg);
	else
		alerter_config_free(&cfg);
	return 0;
}
