/*
 * conn_slots.c - what a Redis Cluster client computes and parses about
 * slots, apart from any connection; see conn.h: a key's hash slot, the
 * CLUSTER SLOTS map, and MOVED/ASK redirects.  Pure functions (the
 * fuzzer's and the tests' too).
 */
#include "store/conn.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0, as Redis Cluster uses. */
static uint16_t crc16(const char *buf, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((uint8_t)buf[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned conn_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len);

	if (open) {
		size_t rest = len - (size_t)(open + 1 - key);
		const char *close = memchr(open + 1, '}', rest);

		if (close && close > open + 1)
			return crc16(open + 1, (size_t)(close - open - 1)) & (CONN_SLOTS - 1);
	}
	return crc16(key, len) & (CONN_SLOTS - 1);
}

static int reply_addr(const redisReply *node, struct conn_addr *a)
{
	if (node->type != REDIS_REPLY_ARRAY || node->elements < 2 ||
	    node->element[0]->type != REDIS_REPLY_STRING ||
	    node->element[1]->type != REDIS_REPLY_INTEGER ||
	    node->element[1]->integer <= 0 || node->element[1]->integer > 65535 ||
	    node->element[0]->len >= sizeof(a->host))
		return -1;
	memcpy(a->host, node->element[0]->str, node->element[0]->len);
	a->host[node->element[0]->len] = '\0';
	a->port = (int)node->element[1]->integer;
	return 0;
}

int conn_parse_slots(const redisReply *r, int16_t *map, struct conn_addr *addrs,
		     int max_addrs, char *err, size_t errlen)
{
	int n = 0;

	for (int s = 0; s < CONN_SLOTS; s++)
		map[s] = -1;
	if (!r || r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "CLUSTER SLOTS: not an array");
		return -EINVAL;
	}
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *e = r->element[i];
		struct conn_addr a;
		long long lo, hi;
		int idx;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER || reply_addr(e->element[2], &a)) {
			snprintf(err, errlen, "CLUSTER SLOTS: entry %zu is not [start, end, [host, "
				 "port, ...], ...]", i);
			return -EINVAL;
		}
		lo = e->element[0]->integer;
		hi = e->element[1]->integer;
		if (lo < 0 || hi >= CONN_SLOTS || lo > hi) {
			snprintf(err, errlen, "CLUSTER SLOTS: entry %zu has slots %lld-%lld", i, lo,
				 hi);
			return -EINVAL;
		}
		for (idx = 0; idx < n; idx++)
			if (addrs[idx].port == a.port && !strcmp(addrs[idx].host, a.host))
				break;
		if (idx == n) {
			if (n == max_addrs) {
				snprintf(err, errlen, "CLUSTER SLOTS: more than %d masters", max_addrs);
				return -EINVAL;
			}
			addrs[n++] = a;
		}
		for (long long s = lo; s <= hi; s++)
			map[s] = (int16_t)idx;
	}
	return n;
}

int conn_parse_redirect(const char *msg, unsigned *slot, struct conn_addr *to)
{
	int kind;
	const char *p, *sp;
	char *end;
	unsigned long s;

	if (!strncmp(msg, "MOVED ", 6)) {
		kind = 1;
		p = msg + 6;
	} else if (!strncmp(msg, "ASK ", 4)) {
		kind = 2;
		p = msg + 4;
	} else {
		return 0;
	}
	s = strtoul(p, &end, 10);
	if (end == p || *end != ' ' || s >= CONN_SLOTS)
		return -EINVAL;
	p = end + 1;
	sp = strchr(p, ' ');
	if (conn_addr_parse(p, sp ? (size_t)(sp - p) : strlen(p), to, 1))
		return -EINVAL;
	*slot = (unsigned)s;
	return kind;
}
