/*
 * hist_pack.c - packing histogram points for the rules' history; see
 * hist_pack.h.
 */
#include "rules/lang/hist_pack.h"

#include <stdlib.h>
#include <string.h>

#include "core/varint.h"

/* The first n bytes of buf as a malloc'd copy, or NULL. */
static uint8_t *dup_bytes(const uint8_t *buf, size_t n)
{
	uint8_t *b = malloc(n);

	if (b)
		memcpy(b, buf, n);
	return b;
}

/* Room for any packed histogram: tag, count, sum, runs, each run two varints. */
#define PACK_MAX (1 + 3 * 10 + HIST_BUCKETS * (5 + 10))

/* s packed in full. */
uint8_t *hpack_full(const struct hist_sparse *s)
{
	uint8_t buf[PACK_MAX];
	size_t n = 0;
	long prev = -1;

	buf[n++] = HPACK_FULL;
	n += varint_put(buf + n, s->count);
	n += varint_put(buf + n, s->sum);
	n += varint_put(buf + n, s->nruns);
	for (uint32_t i = 0; i < s->nruns; i++) {
		n += varint_put(buf + n, (uint64_t)((long)s->runs[i].index - prev - 1));
		n += varint_put(buf + n, s->runs[i].count);
		prev = s->runs[i].index;
	}
	return dup_bytes(buf, n);
}

/* h (dense) packed in full. */
uint8_t *hpack_full_dense(const struct histogram *h)
{
	uint8_t buf[PACK_MAX];
	size_t n = 0, nruns = 0;
	long prev = -1;

	for (size_t i = 0; i < HIST_BUCKETS; i++)
		nruns += h->buckets[i] != 0;
	buf[n++] = HPACK_FULL;
	n += varint_put(buf + n, h->count);
	n += varint_put(buf + n, h->sum);
	n += varint_put(buf + n, nruns);
	for (size_t i = 0; i < HIST_BUCKETS; i++) {
		if (!h->buckets[i])
			continue;
		n += varint_put(buf + n, (uint64_t)((long)i - prev - 1));
		n += varint_put(buf + n, h->buckets[i]);
		prev = (long)i;
	}
	return dup_bytes(buf, n);
}

/*
 * newer packed as its increase over older, or NULL with *grew = 0 when
 * some bucket (or the count or sum) went down: then it is stored in full.
 */
uint8_t *hpack_delta(const struct hist_sparse *newer, const struct hist_sparse *older,
			   int *grew)
{
	uint8_t buf[PACK_MAX], *runs;
	size_t n = 0, nruns = 0, j = 0;
	long prev = -1;

	*grew = newer->count >= older->count && newer->sum >= older->sum;
	if (!*grew)
		return NULL;
	/* the run count goes first but is known last: runs go after the worst case */
	runs = buf + 1 + 3 * 10;
	for (uint32_t i = 0; i < newer->nruns; i++) {
		const struct hist_run *r = &newer->runs[i];
		uint64_t was = 0;

		for (; j < older->nruns && older->runs[j].index < r->index; j++)
			if (older->runs[j].count) {
				*grew = 0;	/* a bucket emptied */
				return NULL;
			}
		if (j < older->nruns && older->runs[j].index == r->index)
			was = older->runs[j++].count;
		if (r->count < was) {
			*grew = 0;
			return NULL;
		}
		if (r->count == was)
			continue;
		n += varint_put(runs + n, (uint64_t)((long)r->index - prev - 1));
		n += varint_put(runs + n, r->count - was);
		prev = r->index;
		nruns++;
	}
	for (; j < older->nruns; j++)
		if (older->runs[j].count) {
			*grew = 0;
			return NULL;
		}
	{
		uint8_t head[1 + 3 * 10];
		size_t h = 0;
		uint8_t *b;

		head[h++] = HPACK_DELTA;
		h += varint_put(head + h, newer->count - older->count);
		h += varint_put(head + h, newer->sum - older->sum);
		h += varint_put(head + h, nruns);
		b = malloc(h + n);
		if (b) {
			memcpy(b, head, h);
			memcpy(b + h, runs, n);
		}
		return b;
	}
}

size_t hpack_len(const uint8_t *b)
{
	const uint8_t *p = b + 1;
	uint64_t nruns;

	varint_get_trusted(&p);		/* count */
	varint_get_trusted(&p);		/* sum */
	nruns = varint_get_trusted(&p);
	for (uint64_t i = 0; i < 2 * nruns; i++)
		varint_get_trusted(&p);
	return (size_t)(p - b);
}

/* Apply packed point b to h: set it (full, h is overwritten) or add it (delta). */
void hpack_apply(struct histogram *h, const uint8_t *b)
{
	int delta = *b++ == HPACK_DELTA;
	uint64_t count = varint_get_trusted(&b), sum = varint_get_trusted(&b), nruns = varint_get_trusted(&b);
	long idx = -1;

	if (!delta) {
		memset(h->buckets, 0, sizeof(h->buckets));
		h->count = h->sum = 0;
	}
	h->count += count;
	h->sum += sum;
	for (uint64_t i = 0; i < nruns; i++) {
		idx += (long)varint_get_trusted(&b) + 1;
		h->buckets[idx] += varint_get_trusted(&b);
	}
}
