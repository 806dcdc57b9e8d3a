/*
 * store_internal.h - what lib/store's files share and nobody else.
 */
#ifndef FL_STORE_INTERNAL_H
#define FL_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

struct conn;
struct redisReply;

/*
 * A command that did not answer as expected: "redis WHAT: reason" into err
 * (Redis's error, "unexpected reply", or the connection's error when r is
 * NULL); frees r.  Returns -EIO.
 */
int store_reply_failed(struct conn *c, struct redisReply *r, const char *what, char *err,
		       size_t errlen);

/*
 * Walk hash `key` with HSCAN (COUNT count): cb(field, value, arg) for every
 * pair, the field and value as Redis sent them (strings of any bytes, or
 * whatever else a reply held: cb judges them).  A non-zero cb return stops
 * the walk and is returned; else 0, or -EIO with "redis HSCAN KEY: why" in
 * err.  A key of hash-tagged slot routes itself.
 */
typedef int (*store_hscan_cb)(const struct redisReply *field, const struct redisReply *value,
			      void *arg);
int store_hscan(struct conn *c, const char *key, int count, store_hscan_cb cb, void *arg,
		char *err, size_t errlen);

/*
 * The masters of c (a single server: 1): their node indexes into idx (at
 * most max), for commands that must visit every node (SCAN).  Returns how
 * many, or -EIO when the slot map cannot be read (conn_errstr).
 */
int conn_masters(struct conn *c, int *idx, int max);

/* conn_command sent to node (an index conn_masters gave), no redirects. */
struct redisReply *conn_command_at(struct conn *c, int node, int argc, const char **argv,
				   const size_t *lens);

/* One checkpoint hash an alerts transaction replaces: key <- fps[i] -> states[i]. */
struct alerts_state {
	const char *key;
	int n;
	const char *const *fps;
	const char *const *states;
};

/*
 * Whose leases a commit counts on: lease keys[i] must still read
 * "me|epochs[i]" (workers.h), else nothing is written.  NULL or n 0: no
 * fence (one engine).
 */
struct alerts_fence {
	const char *me;
	int n;
	const char *const *keys;
	const uint64_t *epochs;
};

/*
 * Append events[0..nevents) to fl:alerts and replace every st[i].key with
 * its entries, in Lua scripts routed by fl:alerts (every key involved
 * lives in its slot), each atomic: the fence is checked first, the events
 * are appended in order, and the checkpoints are written only once every
 * event was taken (a checkpoint never runs ahead of the events it
 * implies).  Events go ALERTS_COMMIT_BATCH to a script, the checkpoints
 * with the last batch.  refused[i]: 0 when Redis took event i, 1 when not
 * (refused, or after one that was: the rest stay, in order).  Returns how
 * many events Redis took (all of them and the checkpoints written, or the
 * first refusal in err and no checkpoint), -ESTALE when a fenced lease is
 * no longer ours (lost[i] set per fence key; events of earlier batches may
 * have been taken, refused[] says which), or -EIO (err says why).
 */
#define ALERTS_COMMIT_BATCH 1000

/*
 * How a command of the alert streams and groups went, as an ALERT_STREAM_
 * code (alert_stream.h): r NULL (the connection dropped: _LOST), an error
 * reply (_REFUSED, or _NOGROUP), or fine (0); what names the command in
 * err.
 */
struct redisReply;
int alert_stream_answer(struct conn *rc, const struct redisReply *r, const char *what,
			char *err, size_t errlen);
int alerts_commit(struct conn *c, const struct alerts_fence *fence, char *const *events,
		  int nevents, const struct alerts_state *st, int ns, char *refused, char *lost,
		  char *err, size_t errlen);

/* Lua: stream ids a < b. */
#define LUA_ID_LT \
	"local function lt(a, b)\n" \
	"  local am, as = string.match(a, '^(%d+)-(%d+)$')\n" \
	"  local bm, bs = string.match(b, '^(%d+)-(%d+)$')\n" \
	"  if not am or not bm then return false end\n" \
	"  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)\n" \
	"  return am < bm or (am == bm and as < bs)\n" \
	"end\n"

/*
 * Lua (after LUA_ID_LT): the fleet's index (alert_index.h) takes record
 * rec of alert fp, from stream entry id, when it is newer than the one it
 * holds; its version moves then.
 */
#define LUA_INDEX_PUT \
	"local function index_put(key, fp, id, rec)\n" \
	"  local cur = redis.call('HGET', key, fp)\n" \
	"  local cid = cur and string.match(cur, '^(%S+) ')\n" \
	"  if not cid or lt(cid, id) then\n" \
	"    redis.call('HSET', key, fp, rec)\n" \
	"    redis.call('HINCRBY', key, '_v', 1)\n" \
	"  end\n" \
	"end\n"

/*
 * store_read_blobs (store.h) for field `field` of each entry, page entries a
 * command (chunk streams: a few large entries a page).
 */
int store_read_field(struct conn *c, const char *key, const char *field, int page,
		     uint64_t from_ms, uint64_t to_ms,
		     int (*cb)(const char *blob, size_t len, void *arg), void *arg, char *err,
		     size_t errlen);

#endif
