/*
 * fuzz_spool.c - libFuzzer target for the probe's spool file (what a
 * stopped probe left on disk; read back at start as untrusted input):
 * a count or -EINVAL, never a crash or an unbounded allocation.
 */
#include <stdint.h>
#include <stddef.h>

#include "store/spool_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	store_spool_check(data, size, 1u << 20);
	return 0;
}
