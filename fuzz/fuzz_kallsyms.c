/*
 * fuzz_kallsyms.c - libFuzzer target for kallsyms text (probes/kernel_syms.h):
 * any bytes read as /proc/kallsyms give a table or an error, and lookups
 * anywhere in it (below, inside, above, past 4 GiB) never crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "probes/kernel_syms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kernel_syms *k;
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	k = ksyms_read(f);
	fclose(f);
	if (!k)
		return 0;
	for (uint64_t a = 0xffffffff80000000ULL; a < 0xffffffff80000000ULL + 0x100000;
	     a += 0x1001)
		(void)ksyms_name(k, a);
	(void)ksyms_name(k, 0);
	(void)ksyms_name(k, UINT64_MAX);
	(void)ksyms_bytes(k);
	ksyms_free(k);
	return 0;
}
