/*
 * fuzz_snapshot.c - libFuzzer target for snapshot_decode(), the parser of
 * every byte that comes back from Redis.  Whatever decodes must re-encode
 * and decode to the same thing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot s, t;
	char err[256], *buf;
	size_t len;

	if (snapshot_decode(data, size, &s, err, sizeof(err)) != 0)
		return 0;
	if (snapshot_encode(&s, &buf, &len) == 0) {
		if (snapshot_decode(buf, len, &t, err, sizeof(err)) != 0)
			abort();
		if (t.nseries != s.nseries || strcmp(t.host, s.host) != 0)
			abort();
		snapshot_free(&t);
		free(buf);
	}
	snapshot_free(&s);
	return 0;
}
