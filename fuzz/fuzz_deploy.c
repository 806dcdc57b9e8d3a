/*
 * fuzz_deploy.c - libFuzzer target for what the rules engine and the CLI
 * read back of deploys: RESP bytes (read with hiredis' own reader, as a
 * connection would) given to deploy_decode_entry as an fl:deploys entry,
 * and, a reply of two or more elements, its first two to
 * deploy_verdict_decode as an fl:deploys:verdicts field and value.  A
 * marker (a service, a version and a time), a verdict (a marker's id, a
 * rule and a known verdict) or an error, never a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/resp_input.h"
#include "store/deploy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	redisReply *r = resp_reply(data, size);
	struct deploy d;
	struct deploy_verdict v;
	char err[512];

	if (!r)
		return 0;
	if (deploy_decode_entry(&d, r, err, sizeof(err)) == 0 &&
	    (!d.service[0] || !d.version[0] || !d.ts_ms))
		abort();
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
	    deploy_verdict_decode(&v, r->element[0], r->element[1], err, sizeof(err)) == 0 &&
	    (!v.id[0] || !v.rule[0] || !deploy_verdict_known(v.verdict) || strchr(v.rule, ' ')))
		abort();
	freeReplyObject(r);
	return 0;
}
