/*
 * workers.c - rules workers' membership, leases, fenced commits and
 * partial aggregates in Redis; see workers.h.
 */
#include "store/workers.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store_internal.h"

/* Every command here routes by fl:alerts: all the keys share its slot. */
#define ROUTE KEY_ALERTS


static int redis_time_ms(struct conn *c, uint64_t *now_ms, char *err, size_t errlen)
{
	redisReply *r = conn_commandf(c, ROUTE, "TIME");

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
		return store_reply_failed(c, r, "TIME", err, errlen);
	*now_ms = strtoull(r->element[0]->str, NULL, 10) * 1000 +
		  strtoull(r->element[1]->str, NULL, 10) / 1000;
	freeReplyObject(r);
	return 0;
}

void workers_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int workers_heartbeat(struct conn *c, const char *me, uint64_t ttl_ms, char ***live,
		      size_t *nlive, uint64_t *now_ms, char *err, size_t errlen)
{
	redisReply *r;
	char **names;
	size_t n = 0;

	*live = NULL;
	*nlive = 0;
	if (redis_time_ms(c, now_ms, err, errlen))
		return -EIO;
	r = conn_commandf(c, ROUTE, "HSET %s %s %" PRIu64, KEY_WORKERS, me, *now_ms + ttl_ms);
	if (!r || r->type != REDIS_REPLY_INTEGER)
		return store_reply_failed(c, r, "HSET " KEY_WORKERS, err, errlen);
	freeReplyObject(r);
	r = conn_commandf(c, ROUTE, "HGETALL %s", KEY_WORKERS);
	if (!r || r->type != REDIS_REPLY_ARRAY)
		return store_reply_failed(c, r, "HGETALL " KEY_WORKERS, err, errlen);
	names = calloc(r->elements / 2 + 1, sizeof(*names));
	if (!names) {
		freeReplyObject(r);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		const redisReply *k = r->element[i], *v = r->element[i + 1];

		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
			continue;
		if (strtoull(v->str, NULL, 10) > *now_ms) {
			names[n] = strdup(k->str);
			n += names[n] != NULL;
		} else {
			/* a worker that stopped beating: forget it (best effort) */
			redisReply *d = conn_commandf(c, ROUTE, "HDEL %s %s", KEY_WORKERS, k->str);

			if (d)
				freeReplyObject(d);
		}
	}
	freeReplyObject(r);
	*live = names;
	*nlive = n;
	return 0;
}

/*
 * KEYS: every partition's lease, then every partition's epoch counter;
 * ARGV: me, ttl ms, then per partition a want flag and the epoch I held
 * (0: none).  A lease reads "worker|epoch".  Takes a free lease wanted
 * under a new epoch (INCR of the partition's counter) — or under the one I
 * held, when it lapsed and nobody took it since (the counter has not
 * moved) — renews mine wanted (same epoch), releases mine not wanted;
 * returns per partition the epoch I hold afterwards, 0 when none.
 */
static const char LEASE_SCRIPT[] =
	"local n = #KEYS / 2\n"
	"local res = {}\n"
	"local mine = ARGV[1] .. '|'\n"
	"for i = 1, n do\n"
	"  local k = KEYS[i]\n"
	"  local cur = redis.call('GET', k)\n"
	"  local ours = cur and string.sub(cur, 1, #mine) == mine\n"
	"  local had = tonumber(ARGV[2 + 2 * i]) or 0\n"
	"  res[i] = 0\n"
	"  if ARGV[1 + 2 * i] == '1' then\n"
	"    if not cur then\n"
	"      local e = tonumber(redis.call('GET', KEYS[n + i]) or '0') or 0\n"
	"      if had == 0 or e ~= had then e = redis.call('INCR', KEYS[n + i]) end\n"
	"      redis.call('SET', k, mine .. e, 'PX', ARGV[2]); res[i] = e\n"
	"    elseif ours then\n"
	"      redis.call('PEXPIRE', k, ARGV[2]); res[i] = tonumber(string.sub(cur, #mine + 1)) or 0\n"
	"    end\n"
	"  elseif ours then redis.call('DEL', k) end\n"
	"end\n"
	"return res\n";

int workers_leases(struct conn *c, const char *me, uint64_t ttl_ms, const char *want,
		   uint64_t *epoch, char *err, size_t errlen)
{
	enum { N = WORKERS_NPART };
	static char keys[N][48], ekeys[N][48], flags[N][2], had[N][24];
	const char *argv[3 + 2 * N + 2 + 2 * N];
	char nk[16], ttl[32];
	int argc = 0;
	redisReply *r;

	if (strchr(me, '|')) {
		snprintf(err, errlen, "worker name '%s' has a '|' (it separates the epoch)", me);
		return -EINVAL;
	}
	snprintf(nk, sizeof(nk), "%d", 2 * N);
	snprintf(ttl, sizeof(ttl), "%" PRIu64, ttl_ms);
	argv[argc++] = "EVAL";
	argv[argc++] = LEASE_SCRIPT;
	argv[argc++] = nk;
	for (int p = 0; p < N; p++) {
		key_lease(keys[p], sizeof(keys[p]), p);
		argv[argc++] = keys[p];
	}
	for (int p = 0; p < N; p++) {
		key_lease_epoch(ekeys[p], sizeof(ekeys[p]), p);
		argv[argc++] = ekeys[p];
	}
	argv[argc++] = me;
	argv[argc++] = ttl;
	for (int p = 0; p < N; p++) {
		flags[p][0] = want[p] ? '1' : '0';
		flags[p][1] = '\0';
		argv[argc++] = flags[p];
		snprintf(had[p], sizeof(had[p]), "%" PRIu64, epoch[p]);
		argv[argc++] = had[p];
	}
	r = conn_command(c, ROUTE, argc, argv, NULL);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != N)
		return store_reply_failed(c, r, "EVAL (partition leases)", err, errlen);
	for (int p = 0; p < N; p++)
		epoch[p] = r->element[p]->type == REDIS_REPLY_INTEGER && r->element[p]->integer > 0 ?
			   (uint64_t)r->element[p]->integer : 0;
	freeReplyObject(r);
	return 0;
}

int workers_leave(struct conn *c, const char *me, char *err, size_t errlen)
{
	char want[WORKERS_NPART] = { 0 };
	uint64_t held[WORKERS_NPART] = { 0 };
	redisReply *r;

	if (workers_leases(c, me, 1000, want, held, err, errlen))
		return -EIO;
	r = conn_commandf(c, ROUTE, "HDEL %s %s", KEY_WORKERS, me);
	if (!r || r->type != REDIS_REPLY_INTEGER)
		return store_reply_failed(c, r, "HDEL " KEY_WORKERS, err, errlen);
	freeReplyObject(r);
	return 0;
}

int workers_commit(struct conn *c, const char *me, const uint64_t *epochs, char *const *events,
		   int nevents, const struct workers_state *states, int ns, char *refused,
		   char *lost, char *err, size_t errlen)
{
	struct alerts_state st[WORKERS_NPART];
	char keys[WORKERS_NPART][64], lkeys[WORKERS_NPART][48], flost[WORKERS_NPART];
	const char *fkeys[WORKERS_NPART];
	uint64_t fep[WORKERS_NPART];
	int idx[WORKERS_NPART], nl = 0, ret;
	struct alerts_fence fence = { me, 0, fkeys, fep };

	memset(lost, 0, WORKERS_NPART);
	for (int p = 0; p < WORKERS_NPART; p++)
		if (epochs[p]) {
			key_lease(lkeys[p], sizeof(lkeys[p]), p);
			fkeys[nl] = lkeys[p];
			fep[nl] = epochs[p];
			idx[nl++] = p;
		}
	fence.n = nl;
	for (int i = 0; i < ns && i < WORKERS_NPART; i++) {
		key_part_state(keys[i], sizeof(keys[i]), states[i].part);
		st[i] = (struct alerts_state){ keys[i], states[i].n, states[i].fps,
					       states[i].states };
	}
	ret = alerts_commit(c, &fence, events, nevents, st, ns < WORKERS_NPART ? ns : WORKERS_NPART,
			    refused, flost, err, errlen);
	if (ret == -ESTALE)
		for (int i = 0; i < nl; i++)
			lost[idx[i]] = flost[i];
	return ret;
}

int workers_state_read(struct conn *c, int part,
		       void (*cb)(const char *fp, const char *json, void *arg), void *arg,
		       char *err, size_t errlen)
{
	char key[64];
	redisReply *r;
	int n = 0;

	key_part_state(key, sizeof(key), part);
	r = conn_commandf(c, ROUTE, "HGETALL %s", key);
	if (!r || r->type != REDIS_REPLY_ARRAY)
		return store_reply_failed(c, r, "HGETALL (partition checkpoint)", err, errlen);
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		if (r->element[i]->type != REDIS_REPLY_STRING ||
		    r->element[i + 1]->type != REDIS_REPLY_STRING)
			continue;
		cb(r->element[i]->str, r->element[i + 1]->str, arg);
		n++;
	}
	freeReplyObject(r);
	return n;
}

/*
 * Move the records of the checkpoints from[0..nfrom) into the checkpoint
 * to(fp, json) names (HSETNX: a record it has already stays) and delete
 * from[], in one MULTI/EXEC under WATCH of from[].  Returns the records
 * moved, 0 when there were none (nothing written), -EAGAIN when one of
 * from[] changed meanwhile (nothing written), -EIO.
 */
static int state_move(struct conn *c, const char *const *from, int nfrom,
		      const char *(*to)(const char *fp, const char *json, void *arg), void *arg,
		      char *err, size_t errlen)
{
	redisReply *got[WORKERS_NPART], *r;
	const char *argv[1 + WORKERS_NPART];
	int n = 0, queued = 0, ret;

	if (nfrom > WORKERS_NPART)
		nfrom = WORKERS_NPART;
	argv[0] = "WATCH";
	for (int i = 0; i < nfrom; i++)
		argv[1 + i] = from[i];
	r = conn_command(c, ROUTE, 1 + nfrom, argv, NULL);
	if (!r || r->type == REDIS_REPLY_ERROR)
		return store_reply_failed(c, r, "WATCH (checkpoints)", err, errlen);
	freeReplyObject(r);
	memset(got, 0, sizeof(got));
	for (int i = 0; i < nfrom; i++) {
		got[i] = conn_commandf(c, ROUTE, "HGETALL %s", from[i]);
		if (!got[i] || got[i]->type != REDIS_REPLY_ARRAY) {
			ret = store_reply_failed(c, got[i], "HGETALL (checkpoint)", err, errlen);
			got[i] = NULL;
			goto out;
		}
		n += (int)got[i]->elements / 2;
	}
	if (!n) {
		freeReplyObject(conn_commandf(c, ROUTE, "UNWATCH"));
		ret = 0;
		goto out;
	}
	ret = -EIO;
	if (conn_appendf(c, ROUTE, "MULTI"))
		goto io;
	queued++;
	for (int i = 0; i < nfrom; i++) {
		for (size_t k = 0; k + 1 < got[i]->elements; k += 2) {
			const redisReply *fp = got[i]->element[k], *js = got[i]->element[k + 1];
			const char *dst;

			if (fp->type != REDIS_REPLY_STRING || js->type != REDIS_REPLY_STRING ||
			    !(dst = to(fp->str, js->str, arg)))
				continue;	/* unreadable: its owner decides (the import logs it) */
			if (conn_appendf(c, ROUTE, "HSETNX %s %s %s", dst, fp->str, js->str))
				goto io;
			queued++;
		}
		if (conn_appendf(c, ROUTE, "DEL %s", from[i]))
			goto io;
		queued++;
	}
	if (conn_appendf(c, ROUTE, "EXEC"))
		goto io;
	r = conn_exec_reply(c, queued);
	if (!r)
		goto io;
	if (r->type == REDIS_REPLY_NIL) {
		snprintf(err, errlen, "an alert checkpoint changed while it was moved");
		ret = -EAGAIN;
	} else if (r->type != REDIS_REPLY_ARRAY) {
		ret = store_reply_failed(c, r, "EXEC (moving checkpoints)", err, errlen);
		r = NULL;
	} else {
		ret = n;
	}
	if (r)
		freeReplyObject(r);
	goto out;
io:
	snprintf(err, errlen, "redis: %s", conn_errstr(c));
	ret = -EIO;
out:
	for (int i = 0; i < nfrom; i++)
		if (got[i])
			freeReplyObject(got[i]);
	return ret;
}

struct to_part {
	int (*part_of)(const char *json, void *arg);
	void *arg;
	char keys[WORKERS_NPART][64];
};

static const char *part_key_of(const char *fp, const char *json, void *arg)
{
	struct to_part *t = arg;
	int p = t->part_of(json, t->arg);

	(void)fp;
	if (p < 0 || p >= WORKERS_NPART)
		p = WORKERS_FLEET;	/* its host left the registry: the fleet's owner resolves it */
	key_part_state(t->keys[p], sizeof(t->keys[p]), p);
	return t->keys[p];
}

int workers_state_from_single(struct conn *c, int (*part_of)(const char *json, void *arg),
			      void *arg, char *err, size_t errlen)
{
	static struct to_part t;
	const char *from[1] = { KEY_ALERTS_STATE };

	t.part_of = part_of;
	t.arg = arg;
	return state_move(c, from, 1, part_key_of, &t, err, errlen);
}

static const char *single_key(const char *fp, const char *json, void *arg)
{
	(void)fp;
	(void)json;
	(void)arg;
	return KEY_ALERTS_STATE;
}

int workers_state_to_single(struct conn *c, char *err, size_t errlen)
{
	static char keys[WORKERS_NPART][64];
	const char *from[WORKERS_NPART];

	for (int p = 0; p < WORKERS_NPART; p++) {
		key_part_state(keys[p], sizeof(keys[p]), p);
		from[p] = keys[p];
	}
	return state_move(c, from, WORKERS_NPART, single_key, NULL, err, errlen);
}

int workers_partial_put(struct conn *c, const char *topic, const char *me, const char *blob,
			size_t len, uint64_t ttl_ms, char *err, size_t errlen)
{
	char key[400];
	redisReply *r;

	if (key_partial(key, sizeof(key), topic) < 0) {
		snprintf(err, errlen, "partial topic too long: %.60s...", topic);
		return -EINVAL;
	}
	if (conn_appendf(c, ROUTE, "HSET %s %s %b", key, me, blob, len) ||
	    conn_appendf(c, ROUTE, "PEXPIRE %s %" PRIu64, key, ttl_ms))
		return store_reply_failed(c, NULL, "HSET (partial)", err, errlen);
	for (int i = 0; i < 2; i++) {
		r = conn_reply(c);
		if (!r || r->type == REDIS_REPLY_ERROR)
			return store_reply_failed(c, r, "HSET (partial)", err, errlen);
		freeReplyObject(r);
	}
	return 0;
}

int workers_partials_read(struct conn *c, const char *topic,
			  void (*cb)(const char *worker, const char *blob, size_t len, void *arg),
			  void *arg, char *err, size_t errlen)
{
	char key[400];
	redisReply *r;
	int n = 0;

	if (key_partial(key, sizeof(key), topic) < 0) {
		snprintf(err, errlen, "partial topic too long: %.60s...", topic);
		return -EINVAL;
	}
	r = conn_commandf(c, ROUTE, "HGETALL %s", key);
	if (!r || r->type != REDIS_REPLY_ARRAY)
		return store_reply_failed(c, r, "HGETALL (partials)", err, errlen);
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		if (r->element[i]->type != REDIS_REPLY_STRING ||
		    r->element[i + 1]->type != REDIS_REPLY_STRING)
			continue;
		cb(r->element[i]->str, r->element[i + 1]->str, r->element[i + 1]->len, arg);
		n++;
	}
	freeReplyObject(r);
	return n;
}
