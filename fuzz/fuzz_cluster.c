/*
 * fuzz_cluster.c - libFuzzer target for what a Redis Cluster node answers
 * and faultline interprets: a CLUSTER SLOTS reply (RESP bytes, read by the
 * bounded reader every connection uses, store/link.h) turned into a slot map, a
 * MOVED/ASK redirect, and the cluster URL.  A result or an error, never
 * a crash; a slot map only names masters it returned.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "store/link.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int16_t map[CONN_SLOTS];
	struct conn_addr addrs[16], to;
	struct conn_url u;
	char err[256], *text = malloc(size + 1);
	redisReply *reply = NULL;
	unsigned slot;
	int n;

	if (!text)
		return 0;
	/* a small bound, so that the fuzzer meets it: over it, no reply, never a crash */
	if (link_parse_reply((const char *)data, size, 1 << 16, &reply) == 1) {
		n = conn_parse_slots(reply, map, addrs, 16, err, sizeof(err));
		for (int s = 0; n >= 0 && s < CONN_SLOTS; s++)
			if (map[s] >= n)
				abort();	/* a slot names a master that is not there */
		freeReplyObject(reply);
	}
	memcpy(text, data, size);
	text[size] = '\0';
	if (conn_parse_redirect(text, &slot, &to) > 0 && (slot >= CONN_SLOTS || to.port <= 0))
		abort();
	if (conn_url_parse(text, &u, err, sizeof(err)) == 0 && u.cluster &&
	    (u.nseeds < 1 || u.nseeds > CONN_MAX_SEEDS))
		abort();
	conn_url_redacted(text, err, sizeof(err));
	free(text);
	return 0;
}
