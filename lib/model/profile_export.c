/*
 * profile_export.c - see profile_export.h.
 */
#include "model/profile_export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/flamegraph.h"
#include "model/pprof.h"

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

int profile_export(const struct profile *p, const struct profile *base, const char *path,
		   const char *title)
{
	FILE *f;
	int ret = 0;

	if (!strcmp(path, "-")) {
		profile_write_folded(p, stdout);
		return 0;
	}
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (ends_with(path, ".svg")) {
		ret = flamegraph_write(f, p, base, title);
	} else if (ends_with(path, ".folded") || ends_with(path, ".txt")) {
		profile_write_folded(p, f);
	} else {
		uint8_t *buf;
		size_t len;

		ret = pprof_encode(p, &buf, &len);
		if (!ret) {
			if (fwrite(buf, 1, len, f) != len)
				ret = -EIO;
			free(buf);
		}
	}
	if (fclose(f) && !ret)
		ret = -EIO;
	return ret;
}
