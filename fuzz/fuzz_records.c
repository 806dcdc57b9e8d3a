/*
 * fuzz_records.c - libFuzzer target for the records the alerter reads back
 * from Redis that any writer of their keys could have written: an alert
 * group's record ({fl:alerts}:group:GID, alert_group_record_parse, which
 * reads the fleet's index {fl:alerts}:active too) and a
 * silence (fl:silences, silence_decode).  The first byte picks which.  A
 * result or an error, never a crash; a decoded silence has its matchers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/alert_group.h"
#include "store/silence.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct alert_group_member m;
	struct silence s;
	char err[512], *text;

	if (!size)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if ((data[0] & 3) == 2) {
		if (silence_parse_postable(&s, text, size - 1, 1764806400000ULL, err,
					   sizeof(err)) == 0) {
			if (s.nm < 1 || s.nm > SILENCE_MAX_MATCHERS || s.ends_ms <= s.starts_ms)
				abort();
			for (int i = 0; i < s.nm; i++)
				matcher_free(&s.m[i]);
		}
	} else if (data[0] & 1) {
		if (silence_decode(&s, text, size - 1, err, sizeof(err)) == 0) {
			if (s.nm < 1 || s.nm > SILENCE_MAX_MATCHERS)
				abort();
			for (int i = 0; i < s.nm; i++)
				matcher_free(&s.m[i]);
		}
	} else if (alert_group_record_parse(text, size - 1, &m, err, sizeof(err)) == 0) {
		if (!m.entry_id[0])
			abort();
		alert_free(&m.a);
	}
	free(text);
	return 0;
}
