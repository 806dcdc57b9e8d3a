/*
 * fuzz_smartctl_json.c - libFuzzer target for the smartctl JSON parser:
 * whatever smartctl (or something pretending to be it) prints gives a
 * record or an error, never a crash; a record always re-encodes as JSON
 * that parses back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/drive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drive_record r, back;
	struct strbuf sb = STRBUF_INIT;

	drive_init(&r, "sdx");
	if (drive_from_smartctl_json(&r, (const char *)data, size) == 0) {
		drive_to_json(&r, &sb);
		if (drive_from_json(&back, strbuf_str(&sb), sb.len) != 0)
			abort();
	}
	strbuf_release(&sb);
	return 0;
}
