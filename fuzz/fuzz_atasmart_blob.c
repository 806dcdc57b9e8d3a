/*
 * fuzz_atasmart_blob.c - libFuzzer target for SMART blobs (libatasmart
 * parsing plus faultline's attribute interpretation) and NVMe log pages.
 */
#include <stdint.h>
#include <stdlib.h>

#include "model/drive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drive_record r;

	drive_init(&r, "sdx");
	drive_from_atasmart_blob(&r, data, size);
	drive_init(&r, "nvme0n1");
	drive_from_nvme_log(&r, data, size);
	return 0;
}
