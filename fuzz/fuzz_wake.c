/*
 * fuzz_wake.c - libFuzzer target for what faultline-rules reads of
 * fl:wake: RESP bytes (read with hiredis' own reader, as a connection
 * would) given to wake_decode as an XREAD reply.  Every host it hands on
 * is a valid host name, the cursor stays a stream id, never a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/resp_input.h"
#include "store/store.h"
#include "store/wake.h"

static int check_host(const char *host, void *arg)
{
	(void)arg;
	if (!store_host_valid(host))
		abort();
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	redisReply *reply = resp_reply(data, size);
	struct wake_cursor cur = { "0-0" };
	char err[256];
	int n;

	if (!reply)
		return 0;
	n = wake_decode(reply, &cur, check_host, NULL, err, sizeof(err));
	if (n < -1 || !strchr(cur.id, '-') || strlen(cur.id) >= sizeof(cur.id))
		abort();
	freeReplyObject(reply);
	return 0;
}
