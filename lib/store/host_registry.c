/*
 * host_registry.c - finding the hosts and reading their registry records;
 * see host_registry.h.
 */
#include "store/host_registry.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/log.h"
#include "model/host_entry.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store.h"
#include "store/store_internal.h"

#define SCAN_COUNT "1000"
#define MAX_MASTERS 128
#define GET_BATCH 1000

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The host of a record key "fl:{H}:host" (len bytes), or NULL. */
static char *host_of(const char *key, size_t len)
{
	static const char pre[] = "fl:{", post[] = "}:host";
	size_t np = sizeof(pre) - 1, ns = sizeof(post) - 1;

	if (len <= np + ns || memcmp(key, pre, np) || memcmp(key + len - ns, post, ns))
		return NULL;
	return strndup(key + np, len - np - ns);
}

/* SCAN node for record keys, adding to *names; 1 when the bound was reached. */
static int scan_node(struct conn *c, int node, char ***names, size_t *n, size_t *cap, char *err,
		     size_t errlen)
{
	char cursor[32] = "0";

	do {
		const char *argv[8] = { "SCAN", cursor, "MATCH", KEY_HOST_RECORD_MATCH, "COUNT",
					SCAN_COUNT, "TYPE", "string" };
		redisReply *r = conn_command_at(c, node, 8, argv, NULL), *keys;

		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[0]->len >= sizeof(cursor) ||
		    r->element[1]->type != REDIS_REPLY_ARRAY)
			return store_reply_failed(c, r, "SCAN " KEY_HOST_RECORD_MATCH, err, errlen);
		memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
		keys = r->element[1];
		for (size_t i = 0; i < keys->elements; i++) {
			char *h;

			if (keys->element[i]->type != REDIS_REPLY_STRING)
				continue;
			h = host_of(keys->element[i]->str, keys->element[i]->len);
			if (h && !store_host_valid(h)) {
				log_warn("%.200s is not a host's record (not a host name); left out",
					 keys->element[i]->str);
				free(h);
				h = NULL;
			}
			if (!h)
				continue;
			if (*n == STORE_HOSTS_MAX) {
				free(h);
				freeReplyObject(r);
				return 1;
			}
			if (ARRAY_GROW(*names, *cap, *n + 2, 256)) {
				free(h);
				freeReplyObject(r);
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
			(*names)[(*n)++] = h;
		}
		freeReplyObject(r);
	} while (strcmp(cursor, "0"));
	return 0;
}

int store_host_names(struct conn *c, char ***names, size_t *n, char *err, size_t errlen)
{
	int masters[MAX_MASTERS], nm = conn_masters(c, masters, MAX_MASTERS), full = 0;
	size_t cap = 0;

	*names = NULL;
	*n = 0;
	if (nm < 0) {
		snprintf(err, errlen, "redis: %s", conn_errstr(c));
		return -EIO;
	}
	for (int i = 0; i < nm && !full; i++) {
		int ret = scan_node(c, masters[i], names, n, &cap, err, errlen);

		if (ret < 0) {
			store_host_names_free(*names, *n);
			*names = NULL;
			*n = 0;
			return ret;
		}
		full = ret;
	}
	if (full)
		log_error("more than %d hosts are registered (%s keys); the rest are left out of "
			  "this read. A fleet that large needs a higher bound; a host registering "
			  "fake names cannot (its ACL, acl.h), so look for an operator's mistake",
			  STORE_HOSTS_MAX, KEY_HOST_RECORD_MATCH);
	if (!*names) {
		*names = calloc(1, sizeof(**names));
		if (!*names) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	qsort(*names, *n, sizeof(**names), by_name);
	return 0;
}

void store_host_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* One record's reply: decoded and handed to cb, or logged. */
static int take_record(const char *host, redisReply *v, store_host_entry_cb cb, void *arg)
{
	struct host_entry e;
	char why[160];

	if (v->type != REDIS_REPLY_STRING || !v->len)
		return 0;	/* gone since the scan */
	if (v->len >= STORE_HOST_RECORD_MAX) {
		log_warn("host '%.80s': its registry record is larger than %d bytes; left out",
			 host, STORE_HOST_RECORD_MAX);
		return 0;
	}
	if (host_entry_decode(v->str, v->len, &e, why, sizeof(why))) {
		log_warn("host '%.80s': its registry record is not readable (%s); left out", host,
			 why);
		return 0;
	}
	cb(host, &e, arg);
	host_entry_free(&e);
	return 1;
}

int store_host_entries_of(struct conn *c, char *const *names, size_t n, store_host_entry_cb cb,
			  void *arg, char *err, size_t errlen)
{
	redisReply *replies[GET_BATCH];
	char key[320], last[16];
	int got = 0, ret = 0;

	snprintf(last, sizeof(last), "%d", STORE_HOST_RECORD_MAX - 1);
	for (size_t from = 0; from < n && !ret; from += GET_BATCH) {
		size_t to = from + GET_BATCH < n ? from + GET_BATCH : n, nr = 0, sent = 0;

		for (size_t i = from; i < to && !ret; i++) {
			const char *argv[4] = { "GETRANGE", key, "0", last };

			if (!store_host_valid(names[i]))
				continue;	/* no such key can exist: nothing asked */
			if (key_host_record(key, sizeof(key), names[i]) < 0 ||
			    conn_append(c, key, 4, argv, NULL))
				ret = -EIO;
			else
				sent++;
		}
		/* every reply is read before cb runs: cb may send commands of its own */
		for (size_t i = 0; i < sent; i++) {
			replies[nr] = conn_reply(c);
			if (!replies[nr]) {
				ret = store_reply_failed(c, NULL, "GETRANGE " KEY_HOST_RECORD_MATCH,
							 err, errlen);
				break;
			}
			nr++;
		}
		for (size_t i = from, k = 0; k < nr; i++) {
			if (!store_host_valid(names[i]))
				continue;
			if (!ret)
				got += take_record(names[i], replies[k], cb, arg);
			freeReplyObject(replies[k++]);
		}
	}
	return ret ? ret : got;
}

int store_host_entries(struct conn *c, store_host_entry_cb cb, void *arg, char *err,
		       size_t errlen)
{
	char **names;
	size_t n;
	int ret;

	if (store_host_names(c, &names, &n, err, errlen))
		return -EIO;
	ret = store_host_entries_of(c, names, n, cb, arg, err, errlen);
	store_host_names_free(names, n);
	return ret;
}
