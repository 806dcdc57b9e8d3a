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

/*
 * KEYS: fl:alerts, then nl lease keys, then the checkpoints to replace.
 * ARGV: me, nl, the nl epochs, ne, the ne events, then per checkpoint its
 * count and fp, json pairs.  Replies {"stale", {lease indexes, 1-based}},
 * {"refused", taken, why} or {"ok", taken}.  Nothing after a refusal runs:
 * a refused event leaves the checkpoint as it was.
 */
static const char COMMIT_SCRIPT[] =
	"local nl = tonumber(ARGV[2])\n"
	"local lost = {}\n"
	"for i = 1, nl do\n"
	"  if redis.call('GET', KEYS[1 + i]) ~= ARGV[1] .. '|' .. ARGV[2 + i] then\n"
	"    lost[#lost + 1] = i end\n"
	"end\n"
	"if #lost > 0 then return {'stale', lost} end\n"
	"local a = 3 + nl\n"
	"local ne = tonumber(ARGV[a]); a = a + 1\n"
	"for i = 1, ne do\n"
	"  local r = redis.pcall('XADD', KEYS[1], '*', 'e', ARGV[a])\n"
	"  a = a + 1\n"
	"  if type(r) == 'table' and r.err then return {'refused', i - 1, r.err} end\n"
	"end\n"
	"for k = 2 + nl, #KEYS do\n"
	"  redis.call('DEL', KEYS[k])\n"
	"  local n = tonumber(ARGV[a]); a = a + 1\n"
	"  for i = 1, n do redis.call('HSET', KEYS[k], ARGV[a], ARGV[a + 1]); a = a + 2 end\n"
	"end\n"
	"return {'ok', ne}\n";

/* One script: events[0..ne), with the checkpoints when ns >= 0.  As alerts_commit. */
static int commit_batch(struct conn *c, const struct alerts_fence *f, char *const *events,
			int ne, const struct alerts_state *st, int ns, char *lost, char *err,
			size_t errlen)
{
	int nl = f ? f->n : 0, nkeys = 1 + nl + (ns > 0 ? ns : 0), argc = 0, ret;
	size_t cap = 3 + (size_t)nkeys + 3 + (size_t)nl + (size_t)ne;
	char nk[16], nls[16], nes[16], (*nums)[24] = NULL;
	const char **argv;
	redisReply *r;

	for (int s = 0; s < ns; s++)
		cap += 1 + 2 * (size_t)st[s].n;
	argv = malloc(cap * sizeof(*argv));
	nums = calloc((size_t)nl + (size_t)(ns > 0 ? ns : 0) + 1, sizeof(*nums));
	if (!argv || !nums) {
		free(argv);
		free(nums);
		snprintf(err, errlen, "out of memory committing alert events");
		return -EIO;
	}
	snprintf(nk, sizeof(nk), "%d", nkeys);
	snprintf(nls, sizeof(nls), "%d", nl);
	snprintf(nes, sizeof(nes), "%d", ne);
	argv[argc++] = "EVAL";
	argv[argc++] = COMMIT_SCRIPT;
	argv[argc++] = nk;
	argv[argc++] = KEY_ALERTS;
	for (int i = 0; i < nl; i++)
		argv[argc++] = f->keys[i];
	for (int s = 0; s < ns; s++)
		argv[argc++] = st[s].key;
	argv[argc++] = f && f->me ? f->me : "";
	argv[argc++] = nls;
	for (int i = 0; i < nl; i++) {
		snprintf(nums[i], sizeof(nums[i]), "%llu", (unsigned long long)f->epochs[i]);
		argv[argc++] = nums[i];
	}
	argv[argc++] = nes;
	for (int i = 0; i < ne; i++)
		argv[argc++] = events[i];
	for (int s = 0; s < ns; s++) {
		snprintf(nums[nl + s], sizeof(nums[0]), "%d", st[s].n);
		argv[argc++] = nums[nl + s];
		for (int i = 0; i < st[s].n; i++) {
			argv[argc++] = st[s].fps[i];
			argv[argc++] = st[s].states[i];
		}
	}
	r = conn_command(c, KEY_ALERTS, argc, argv, NULL);
	free(argv);
	free(nums);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING) {
		store_reply_failed(c, r, "EVAL (alert events and checkpoint)", err, errlen);
		return -EIO;
	}
	if (!strcmp(r->element[0]->str, "stale")) {
		const redisReply *l = r->element[1];

		for (size_t i = 0; l->type == REDIS_REPLY_ARRAY && i < l->elements; i++)
			if (l->element[i]->type == REDIS_REPLY_INTEGER &&
			    l->element[i]->integer >= 1 && l->element[i]->integer <= nl)
				lost[l->element[i]->integer - 1] = 1;
		snprintf(err, errlen, "a partition lease is no longer this worker's (its epoch "
			 "moved on)");
		ret = -ESTALE;
	} else if (r->element[1]->type != REDIS_REPLY_INTEGER || r->element[1]->integer < 0 ||
		   r->element[1]->integer > ne) {
		snprintf(err, errlen, "EVAL (alert events and checkpoint): unexpected reply");
		ret = -EIO;
	} else {
		ret = (int)r->element[1]->integer;
		if (!strcmp(r->element[0]->str, "refused"))
			snprintf(err, errlen, "redis refused an alert event for " KEY_ALERTS ": %s",
				 r->elements > 2 && r->element[2]->type == REDIS_REPLY_STRING ?
				 r->element[2]->str : "(no reason)");
	}
	freeReplyObject(r);
	return ret;
}

int alerts_commit(struct conn *c, const struct alerts_fence *fence, char *const *events,
		  int nevents, const struct alerts_state *st, int ns, char *refused, char *lost,
		  char *err, size_t errlen)
{
	int taken = 0;

	err[0] = '\0';
	if (fence && lost)
		memset(lost, 0, (size_t)fence->n);
	memset(refused, 1, (size_t)nevents);
	do {
		int n = nevents - taken > ALERTS_COMMIT_BATCH ? ALERTS_COMMIT_BATCH :
			nevents - taken;
		int last = taken + n == nevents;
		int got = commit_batch(c, fence, events + taken, n, st, last ? ns : 0, lost, err,
				       errlen);

		if (got < 0)
			return got;
		memset(refused + taken, 0, (size_t)got);
		taken += got;
		if (got < n)
			return taken;	/* refused: the rest wait, and the checkpoint with them */
	} while (taken < nevents);
	return taken;
}

int store_alerts_commit(struct conn *c, char *const *events, int nevents,
			const char *const *fps, const char *const *states, int nstates,
			char *refused, char *err, size_t errlen)
{
	struct alerts_state st = { KEY_ALERTS_STATE, nstates, fps, states };
	int ret = alerts_commit(c, NULL, events, nevents, &st, nstates >= 0, refused, NULL, err,
				errlen);

	return ret == -ESTALE ? -EIO : ret;
}

struct state_arg {
	void (*cb)(const char *fp, const char *json, void *arg);
	void *arg;
	int n;
};

/* store_hscan: one checkpoint entry for store_alerts_state_read (strings only). */
static int state_one(const redisReply *f, const redisReply *v, void *arg)
{
	struct state_arg *a = arg;

	if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
		return 0;
	a->cb(f->str, v->str, a->arg);
	a->n++;
	return 0;
}

int store_alerts_state_read(struct conn *c, void (*cb)(const char *fp, const char *json,
							void *arg),
			    void *arg, char *err, size_t errlen)
{
	struct state_arg a = { cb, arg, 0 };
	int ret;

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
	ret = store_hscan(c, KEY_ALERTS_STATE, 500, state_one, &a, err, errlen);
	return ret < 0 ? ret : a.n;
}


int store_alerts_wait(struct conn *c, int n, uint64_t timeout_ms, char *err, size_t errlen)
{
	redisReply *r = conn_commandf(c, KEY_ALERTS, "WAIT %d %llu", n,
				      (unsigned long long)timeout_ms);
	int got;

	if (!r || r->type != REDIS_REPLY_INTEGER)
		return store_reply_failed(c, r, "WAIT (replicas of " KEY_ALERTS ")", err, errlen);
	got = (int)r->integer;
	freeReplyObject(r);
	return got;
}
