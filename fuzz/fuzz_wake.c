/*
 * fuzz_wake.c - libFuzzer target for what faultline-rules reads of
 * fl:wake: RESP bytes (read with hiredis' own reader, as a connection
 * would) given to wake_decode as an XREAD reply.  Every host it hands on
 * is a valid host name, the cursor stays a stream id, never a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/store.h"
#include "store/wake.h"

/* hiredis allocates an array's slots as it reads the count: the transport's bound (see fuzz_deploy) */
static int huge_array(const uint8_t *data, size_t size)
{
	for (size_t i = 0; i + 1 < size; i++)
		if (data[i] == '*') {
			unsigned long long n = 0;

			for (size_t k = i + 1; k < size && data[k] >= '0' && data[k] <= '9'; k++)
				if ((n = n * 10 + (data[k] - '0')) > 100000)
					return 1;
		}
	return 0;
}

static int check_host(const char *host, void *arg)
{
	(void)arg;
	if (!store_host_valid(host))
		abort();
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	redisReader *rd = redisReaderCreate();
	struct wake_cursor cur = { "0-0" };
	void *reply = NULL;
	char err[256];

	if (!rd)
		return 0;
	if (huge_array(data, size)) {
		redisReaderFree(rd);
		return 0;
	}
	if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK &&
	    redisReaderGetReply(rd, &reply) == REDIS_OK && reply) {
		int n = wake_decode(reply, &cur, check_host, NULL, err, sizeof(err));

		if (n < -1 || !strchr(cur.id, '-') || strlen(cur.id) >= sizeof(cur.id))
			abort();
		freeReplyObject(reply);
	}
	redisReaderFree(rd);
	return 0;
}
