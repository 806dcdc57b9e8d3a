/*
 * fuzz_proc_maps.c - libFuzzer target for lines of /proc/PID/maps
 * (probes/proc_maps.h).  The kernel writes them, but a path is whatever a
 * process named its file (spaces, newlines cut by fgets, any bytes): each
 * line parses or is refused, and a path found lies inside its line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probes/proc_maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *line, *save;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct maps_line m;
		int r = maps_line_parse(line, &m);

		if (r == 1 && (m.path < line || m.path > line + strlen(line) ||
			       m.perms[2] != 'x'))
			abort();
		if (r == 0 && m.perms[2] == 'x')
			abort();
	}
	free(buf);
	return 0;
}
