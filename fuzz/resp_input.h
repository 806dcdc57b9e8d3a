/*
 * resp_input.h - a fuzz input as a Redis reply, read with hiredis' own
 * reader as a connection would, for the targets that fuzz what faultline
 * reads back from Redis (fuzz_deploy, fuzz_wake).
 *
 * hiredis' reader allocates an array's slots as soon as it reads its count
 * ("*1000000000"): that is the transport's bound to set (issue 34), not
 * what these targets exercise, so such inputs give no reply.
 */
#ifndef FL_FUZZ_RESP_INPUT_H
#define FL_FUZZ_RESP_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

static inline int resp_huge_array(const uint8_t *data, size_t size)
{
	for (size_t i = 0; i + 1 < size; i++)
		if (data[i] == '*') {	/* anywhere: a bulk's length decides where a header is */
			unsigned long long n = 0;

			for (size_t k = i + 1; k < size && data[k] >= '0' && data[k] <= '9'; k++)
				if ((n = n * 10 + (data[k] - '0')) > 100000)
					return 1;
		}
	return 0;
}

/* The first reply in data (free it with freeReplyObject), or NULL. */
static inline redisReply *resp_reply(const uint8_t *data, size_t size)
{
	redisReader *rd;
	void *reply = NULL;

	if (resp_huge_array(data, size) || !(rd = redisReaderCreate()))
		return NULL;
	if (redisReaderFeed(rd, (const char *)data, size) != REDIS_OK ||
	    redisReaderGetReply(rd, &reply) != REDIS_OK)
		reply = NULL;
	redisReaderFree(rd);
	return reply;
}

#endif
