/*
 * fuzz_python.c - libFuzzer target for CPython location tables
 * (probes/python.h): the profiler reads them out of any Python process on
 * the host, whose memory it does not trust.  The first two bytes pick the
 * first line and the instruction asked for; the rest is the table.  A line
 * or -1, never a crash, never a read past the table.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probes/python.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *table;

	if (size < 2)
		return 0;
	/* a copy of exactly the table's length, so a read past it is caught */
	table = malloc(size - 2 ? size - 2 : 1);
	if (!table)
		return 0;
	memcpy(table, data + 2, size - 2);
	for (uint32_t instr = 0; instr < 64; instr += 1 + data[1] % 7)
		(void)python_line_of(table, size - 2, (int)data[0] - 8, instr);
	(void)python_line_of(table, size - 2, 1, UINT32_MAX);
	(void)python_line_of(table, size - 2, 1 << 30, 0);
	free(table);
	return 0;
}
