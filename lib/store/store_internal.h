/*
 * store_internal.h - what lib/store's files share and nobody else.
 */
#ifndef FL_STORE_INTERNAL_H
#define FL_STORE_INTERNAL_H

#include <stddef.h>

struct conn;
struct redisReply;

/*
 * A command that did not answer as expected: "redis WHAT: reason" into err
 * (Redis's error, "unexpected reply", or the connection's error when r is
 * NULL); frees r.  Returns -EIO.
 */
int store_reply_failed(struct conn *c, struct redisReply *r, const char *what, char *err,
		       size_t errlen);

/* One checkpoint hash an alerts transaction replaces: key <- fps[i] -> states[i]. */
struct alerts_state {
	const char *key;
	int n;
	const char *const *fps;
	const char *const *states;
};

/*
 * Append events[0..nevents) to fl:alerts and replace every st[i].key with
 * its entries, in one MULTI/EXEC routed by fl:alerts (every key involved
 * lives in its slot).  refused[i]: whether Redis refused event i.  Returns
 * how many events Redis took, -EIO (nothing written; err says why), or
 * -ESTALE when EXEC was aborted because a key WATCHed before it changed.
 */
int alerts_transaction(struct conn *c, char *const *events, int nevents,
		       const struct alerts_state *st, int ns, char *refused, char *err,
		       size_t errlen);

#endif
