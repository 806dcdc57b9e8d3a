/*
 * fuzz_http_args.c - libFuzzer target for what a client sends the query
 * API besides the query itself: a POSTed form body (http_form_parse) and
 * the times and durations in it (prom_parse_time, prom_parse_duration).
 * Every field decodes to a NUL-terminated string no longer than its
 * input; a time or duration is read or refused, never a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics_server.h"
#include "web/prom_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_form f;
	char *s;
	uint64_t ms;

	if (http_form_parse(&f, (const char *)data, size) == 0) {
		for (size_t i = 0; i < 2 * f.n; i++) {
			if (strlen(f.kv[i]) > size)
				abort();
			prom_parse_time(f.kv[i], &ms);
			prom_parse_duration(f.kv[i], &ms);
		}
		http_form_free(&f);
	}
	s = malloc(size + 1);
	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
		prom_parse_time(s, &ms);
		prom_parse_duration(s, &ms);
		free(s);
	}
	return 0;
}
