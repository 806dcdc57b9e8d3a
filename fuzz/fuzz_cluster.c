/*
 * fuzz_cluster.c - libFuzzer target for what a Redis Cluster node answers
 * and faultline interprets: a CLUSTER SLOTS reply (RESP bytes, read with
 * hiredis' own reader as a connection would) turned into a slot map, a
 * MOVED/ASK redirect, and the cluster URL.  A result or an error, never
 * a crash; a slot map only names masters it returned.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int16_t map[CONN_SLOTS];
	struct conn_addr addrs[16], to;
	struct conn_url u;
	redisReader *rd = redisReaderCreate();
	char err[256], *text = malloc(size + 1);
	void *reply = NULL;
	unsigned slot;
	int n;

	if (!rd || !text) {
		free(text);
		if (rd)
			redisReaderFree(rd);
		return 0;
	}
	if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK &&
	    redisReaderGetReply(rd, &reply) == REDIS_OK && reply) {
		n = conn_parse_slots(reply, map, addrs, 16, err, sizeof(err));
		for (int s = 0; n >= 0 && s < CONN_SLOTS; s++)
			if (map[s] >= n)
				abort();	/* a slot names a master that is not there */
		freeReplyObject(reply);
	}
	redisReaderFree(rd);
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
