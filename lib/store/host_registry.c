/*
 * host_registry.c - reading fl:hosts, the registry every probe keeps its
 * host's entry in (written through the probe's spool, store.c); see
 * host_registry.h.
 */
#include "store/host_registry.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "model/host_entry.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store_internal.h"

int store_host_names(struct conn *c, char ***names, size_t *n, char *err, size_t errlen)
{
	redisReply *r = conn_commandf(c, KEY_HOSTS, "HKEYS %s", KEY_HOSTS);

	*names = NULL;
	*n = 0;
	if (!r || r->type != REDIS_REPLY_ARRAY)
		return store_reply_failed(c, r, "HKEYS " KEY_HOSTS, err, errlen);
	*names = calloc(r->elements + 1, sizeof(**names));
	if (!*names) {
		freeReplyObject(r);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->elements; i++) {
		if (r->element[i]->type != REDIS_REPLY_STRING)
			continue;
		(*names)[*n] = strdup(r->element[i]->str);
		if (!(*names)[*n]) {
			store_host_names_free(*names, *n);
			*names = NULL;
			*n = 0;
			freeReplyObject(r);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		(*n)++;
	}
	freeReplyObject(r);
	return 0;
}

void store_host_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int store_host_entries(struct conn *c, store_host_entry_cb cb, void *arg, char *err,
		       size_t errlen)
{
	redisReply *r = conn_commandf(c, KEY_HOSTS, "HGETALL %s", KEY_HOSTS);
	int n = 0;

	if (!r || r->type != REDIS_REPLY_ARRAY)
		return store_reply_failed(c, r, "HGETALL " KEY_HOSTS, err, errlen);
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		redisReply *k = r->element[i], *v = r->element[i + 1];
		struct host_entry e;
		char why[160];

		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
			continue;
		if (host_entry_decode(v->str, v->len, &e, why, sizeof(why))) {
			log_warn("%s: the entry of host '%.80s' is not readable (%s); left out",
				 KEY_HOSTS, k->str, why);
			continue;
		}
		cb(k->str, &e, arg);
		host_entry_free(&e);
		n++;
	}
	freeReplyObject(r);
	return n;
}

