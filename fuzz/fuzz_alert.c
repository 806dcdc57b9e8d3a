/*
 * fuzz_alert.c - libFuzzer target for what the alerter and the rules
 * engine read back from Redis: an fl:alerts event (alert_parse) and an
 * entry of the rules' alert checkpoint {fl:alerts}:rules
 * (engine_state_import), and what a worker routes either by
 * (engine_alert_subject).  A result or an error, never a crash; a subject
 * host is a string that fits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/alert.h"
#include "rules/engine/engine.h"
#include "rules/lang/rules.h"

static void ignore(const char *json, void *arg)
{
	(void)json;
	(void)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char yaml[] = "groups:\n  - name: t\n    rules:\n      - alert: DriveHot\n"
				   "        expr: faultline_drive_temperature_celsius > 60\n";
	struct ruleset rs = { 0 };
	struct engine *e;
	struct alert a;
	char err[512], *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (alert_parse(&a, text, size, err, sizeof(err)) == 0)
		alert_free(&a);
	{
		char host[64];
		int sub = engine_alert_subject(text, host, sizeof(host));

		if (sub < -1 || sub > 1 || (sub == 0 && strlen(host) >= sizeof(host)))
			abort();
	}
	if (rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)) == 0 &&
	    engine_init(&e, &rs, NULL) == 0) {
		engine_state_import(e, "00112233aabbccdd", text, 1000, ignore, NULL, err,
				    sizeof(err));
		engine_free(e);
	}
	free(text);
	return 0;
}
