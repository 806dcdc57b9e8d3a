/*
 * alert_checkpoint.c - the alert events the rules engine sends and its
 * alert checkpoint ({fl:alerts}:rules), written together in one
 * MULTI/EXEC; see alert_checkpoint.h.  Both keys live in fl:alerts' slot,
 * so one transaction covers them on a cluster too.
 */
#include "store/alert_checkpoint.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store_internal.h"

int alerts_transaction(struct conn *c, char *const *events, int nevents,
		       const struct alerts_state *st, int ns, char *refused, char *err,
		       size_t errlen)
{
	int queued = 0, taken = 0, ret = 0;
	redisReply *r = NULL;

	/* every command routes by KEY_ALERTS: the checkpoints share its slot */
	if (conn_appendf(c, KEY_ALERTS, "MULTI"))
		goto io;
	queued++;
	for (int i = 0; i < nevents; i++, queued++)
		if (conn_appendf(c, KEY_ALERTS, "XADD %s MAXLEN ~ " KEY_STREAM_MAXLEN " * e %s",
				 KEY_ALERTS, events[i]))
			goto io;
	for (int s = 0; s < ns; s++) {
		if (conn_appendf(c, KEY_ALERTS, "DEL %s", st[s].key))
			goto io;
		queued++;
		for (int i = 0; i < st[s].n; i++, queued++)
			if (conn_appendf(c, KEY_ALERTS, "HSET %s %s %s", st[s].key, st[s].fps[i],
					 st[s].states[i]))
				goto io;
	}
	if (conn_appendf(c, KEY_ALERTS, "EXEC"))
		goto io;
	r = conn_exec_reply(c, queued);
	if (!r)
		goto io;
	if (r->type == REDIS_REPLY_NIL) {
		snprintf(err, errlen, "a watched key changed during the transaction");
		ret = -ESTALE;
		goto out;
	}
	if (r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "redis EXEC: %s", r->type == REDIS_REPLY_ERROR ? r->str :
			 "transaction aborted");
		ret = -EIO;
		goto out;
	}
	err[0] = '\0';
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *x = r->element[i];
		int bad = x->type == REDIS_REPLY_ERROR;

		if (bad && !err[0])
			snprintf(err, errlen, "redis refused %s: %s", (int)i < nevents ?
				 "an alert event for " KEY_ALERTS : "an alert checkpoint", x->str);
		if ((int)i < nevents) {
			refused[i] = (char)bad;
			taken += !bad;
		}
	}
	ret = taken;
out:
	freeReplyObject(r);
	return ret;
io:
	snprintf(err, errlen, "redis: %s", conn_errstr(c));
	return -EIO;
}

int store_alerts_commit(struct conn *c, char *const *events, int nevents,
			const char *const *fps, const char *const *states, int nstates,
			char *refused, char *err, size_t errlen)
{
	struct alerts_state st = { KEY_ALERTS_STATE, nstates, fps, states };

	return alerts_transaction(c, events, nevents, &st, nstates >= 0, refused, err, errlen);
}

int store_alerts_state_read(struct conn *c, void (*cb)(const char *fp, const char *json,
							void *arg),
			    void *arg, char *err, size_t errlen)
{
	char cursor[32] = "0";
	int n = 0;

	/*
	 * A single server set up before the checkpoint moved into fl:alerts'
	 * slot still has it under its old name: take it over once (RENAMENX
	 * does nothing when the new one exists).  A cluster never had it.
	 */
	if (!conn_is_cluster(c)) {
		redisReply *r = conn_commandf(c, KEY_ALERTS_STATE, "RENAMENX %s %s",
					      KEY_ALERTS_STATE_LEGACY, KEY_ALERTS_STATE);

		if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 1)
			log_info("redis: took over the alert checkpoint " KEY_ALERTS_STATE_LEGACY
				 " as " KEY_ALERTS_STATE);
		if (r)
			freeReplyObject(r);
	}
	do {
		redisReply *r = conn_commandf(c, KEY_ALERTS_STATE, "HSCAN %s %s COUNT 500",
					      KEY_ALERTS_STATE, cursor);
		const redisReply *kv;

		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    (kv = r->element[1])->type != REDIS_REPLY_ARRAY)
			return store_reply_failed(c, r, "HSCAN " KEY_ALERTS_STATE, err, errlen);
		for (size_t i = 0; i + 1 < kv->elements; i += 2) {
			if (kv->element[i]->type != REDIS_REPLY_STRING ||
			    kv->element[i + 1]->type != REDIS_REPLY_STRING)
				continue;
			cb(kv->element[i]->str, kv->element[i + 1]->str, arg);
			n++;
		}
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		freeReplyObject(r);
	} while (strcmp(cursor, "0"));
	return n;
}

