/*
 * kernel_syms.c - the kernel's function names, compressed; see kernel_syms.h.
 */
#include "probes/kernel_syms.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "core/array.h"

#define BLOCK_NAMES 64			/* names per compressed block */
#define CACHE_SLOTS 8192		/* name cache: open addressing, power of two */
#define CACHE_BYTES (256 * 1024)	/* its names; full, it starts over */
#define LINE_MAX_LEN 1024		/* a longer line is skipped */

struct kernel_syms {
	uint64_t base;		/* the lowest address */
	uint32_t *offs;		/* sorted: address - base */
	uint32_t *ords;		/* the same entry's ordinal, in file order */
	size_t n;
	uint8_t *blocks;	/* compressed blocks, one after the other */
	uint32_t *block_at;	/* block b is blocks[block_at[b] .. block_at[b + 1]) */
	size_t nblocks;
	/* the block decompressed last, and where its names start */
	size_t open_block;
	char *open;
	uint32_t open_name[BLOCK_NAMES];
	size_t open_len, open_cap;
	/* names asked for: ordinal + 1 -> offset in cache_names */
	struct { uint32_t ord1, at; } *cache;
	char *cache_names;
	size_t cache_used, cache_count;
};

/* Parse "ADDR TYPE NAME..." in line: 1 for a text symbol with a non-zero address. */
static int parse_line(char *line, uint64_t *addr, char **name)
{
	char *p = line, *end;
	unsigned long long a;

	errno = 0;
	a = strtoull(p, &end, 16);
	if (end == p || errno || *end != ' ' || !a)
		return 0;
	p = end + 1;
	if (!strchr("tTwW", *p) || !*p || p[1] != ' ')
		return 0;
	p += 2;
	end = p + strcspn(p, " \t\n");
	if (end == p)
		return 0;
	*end = '\0';
	*addr = a;
	*name = p;
	return 1;
}

/* Compress names raw[0..len) as the next block. */
static int add_block(struct kernel_syms *k, ZSTD_CCtx *cctx, const char *raw, size_t len,
		     size_t *cap, size_t *at_cap)
{
	size_t bound = ZSTD_compressBound(len), used = k->nblocks ? k->block_at[k->nblocks] : 0;
	size_t got;

	if (ARRAY_GROW(k->blocks, *cap, used + bound, 65536) ||
	    ARRAY_GROW(k->block_at, *at_cap, k->nblocks + 2, 1024))
		return -ENOMEM;
	got = ZSTD_compressCCtx(cctx, k->blocks + used, bound, raw, len, 1);
	if (ZSTD_isError(got))
		return -EIO;
	if (!k->nblocks)
		k->block_at[0] = 0;
	if (used + got > UINT32_MAX)
		return -E2BIG;
	k->block_at[++k->nblocks] = (uint32_t)(used + got);
	return 0;
}

static int by_addr(const void *a, const void *b, void *addrs)
{
	const uint64_t *at = addrs;
	uint64_t x = at[*(const uint32_t *)a], y = at[*(const uint32_t *)b];

	return x < y ? -1 : x > y;
}

struct kernel_syms *ksyms_read(FILE *f)
{
	struct kernel_syms *k = calloc(1, sizeof(*k));
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	uint64_t *addrs = NULL;
	char *raw = malloc(BLOCK_NAMES * LINE_MAX_LEN), line[LINE_MAX_LEN];
	size_t cap = 0, bcap = 0, atcap = 0, rawlen = 0, inblock = 0, kept = 0;
	int ret = -ENOMEM;

	if (!k || !cctx || !raw)
		goto fail;
	k->open_block = SIZE_MAX;
	while (fgets(line, sizeof(line), f)) {
		uint64_t addr;
		char *name;
		size_t nl;

		if (!strchr(line, '\n') && !feof(f)) {
			/* longer than any symbol: skip the rest of it */
			int c;

			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (!parse_line(line, &addr, &name))
			continue;
		nl = strlen(name) + 1;
		if (ARRAY_GROW(addrs, cap, k->n + 1, 65536))
			goto fail;
		addrs[k->n++] = addr;
		memcpy(raw + rawlen, name, nl);
		rawlen += nl;
		if (++inblock == BLOCK_NAMES) {
			if ((ret = add_block(k, cctx, raw, rawlen, &bcap, &atcap)))
				goto fail;
			rawlen = inblock = 0;
		}
	}
	if (inblock && (ret = add_block(k, cctx, raw, rawlen, &bcap, &atcap)))
		goto fail;
	ret = -ENOMEM;
	if (k->n) {
		uint32_t *order = malloc(k->n * sizeof(*order));

		k->offs = malloc(k->n * sizeof(*k->offs));
		k->ords = malloc(k->n * sizeof(*k->ords));
		if (!order || !k->offs || !k->ords) {
			free(order);
			goto fail;
		}
		k->base = UINT64_MAX;
		for (size_t i = 0; i < k->n; i++) {
			order[i] = (uint32_t)i;
			if (addrs[i] < k->base)
				k->base = addrs[i];
		}
		qsort_r(order, k->n, sizeof(*order), by_addr, addrs);
		for (size_t i = 0; i < k->n; i++) {
			uint64_t off = addrs[order[i]] - k->base;

			if (off > UINT32_MAX)
				break;	/* sorted: the rest are further out */
			k->offs[kept] = (uint32_t)off;
			k->ords[kept++] = order[i];
		}
		free(order);
	}
	k->n = kept;
	free(addrs);
	free(raw);
	ZSTD_freeCCtx(cctx);
	/* give back what the growth left over */
	if (k->nblocks) {
		uint8_t *b = realloc(k->blocks, k->block_at[k->nblocks]);

		if (b)
			k->blocks = b;
	}
	return k;
fail:
	free(addrs);
	free(raw);
	ZSTD_freeCCtx(cctx);
	ksyms_free(k);
	errno = -ret;
	return NULL;
}

struct kernel_syms *ksyms_load(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	struct kernel_syms *k;
	int e;

	if (!f)
		return NULL;
	k = ksyms_read(f);
	e = errno;
	fclose(f);
	errno = e;
	return k;
}

void ksyms_free(struct kernel_syms *k)
{
	if (!k)
		return;
	free(k->offs);
	free(k->ords);
	free(k->blocks);
	free(k->block_at);
	free(k->open);
	free(k->cache);
	free(k->cache_names);
	free(k);
}

size_t ksyms_count(const struct kernel_syms *k)
{
	return k ? k->n : 0;
}

size_t ksyms_bytes(const struct kernel_syms *k)
{
	if (!k)
		return 0;
	return k->n * (sizeof(*k->offs) + sizeof(*k->ords)) +
	       (k->nblocks ? k->block_at[k->nblocks] : 0) + (k->nblocks + 1) * sizeof(uint32_t) +
	       k->open_cap + (k->cache ? CACHE_SLOTS * sizeof(*k->cache) + CACHE_BYTES : 0);
}

/* Name number i (0..BLOCK_NAMES) of block b, decompressing it if it is not open. */
static const char *block_name(struct kernel_syms *k, size_t b, size_t i)
{
	if (k->open_block != b) {
		const uint8_t *src = k->blocks + k->block_at[b];
		size_t srclen = k->block_at[b + 1] - k->block_at[b];
		unsigned long long want = ZSTD_getFrameContentSize(src, srclen);
		size_t got, pos = 0, names = 0;

		k->open_block = SIZE_MAX;
		if (want == ZSTD_CONTENTSIZE_ERROR || want == ZSTD_CONTENTSIZE_UNKNOWN ||
		    want > BLOCK_NAMES * LINE_MAX_LEN ||
		    ARRAY_GROW(k->open, k->open_cap, (size_t)want + 1, 4096))
			return NULL;
		got = ZSTD_decompress(k->open, (size_t)want, src, srclen);
		if (ZSTD_isError(got))
			return NULL;
		k->open[got] = '\0';
		while (pos < got && names < BLOCK_NAMES) {
			k->open_name[names++] = (uint32_t)pos;
			pos += strlen(k->open + pos) + 1;
		}
		for (; names < BLOCK_NAMES; names++)
			k->open_name[names] = (uint32_t)got;	/* "" */
		k->open_len = got;
		k->open_block = b;
	}
	return k->open + k->open_name[i];
}

/* The cached name of ordinal ord, or NULL. */
static const char *cache_get(const struct kernel_syms *k, uint32_t ord)
{
	if (!k->cache)
		return NULL;
	for (uint32_t h = (ord * 2654435761u) & (CACHE_SLOTS - 1);; h = (h + 1) & (CACHE_SLOTS - 1)) {
		if (!k->cache[h].ord1)
			return NULL;
		if (k->cache[h].ord1 == ord + 1)
			return k->cache_names + k->cache[h].at;
	}
}

/* Remember name as ordinal ord's; a full cache starts over. Returns the copy. */
static const char *cache_put(struct kernel_syms *k, uint32_t ord, const char *name)
{
	size_t nl = strlen(name) + 1;
	uint32_t h;

	if (!k->cache) {
		k->cache = calloc(CACHE_SLOTS, sizeof(*k->cache));
		k->cache_names = malloc(CACHE_BYTES);
		if (!k->cache || !k->cache_names) {
			free(k->cache);
			free(k->cache_names);
			k->cache = NULL;
			k->cache_names = NULL;
			return name;
		}
	}
	if (nl > CACHE_BYTES / 2)
		return name;
	if (k->cache_count >= CACHE_SLOTS / 2 || k->cache_used + nl > CACHE_BYTES) {
		memset(k->cache, 0, CACHE_SLOTS * sizeof(*k->cache));
		k->cache_used = k->cache_count = 0;
	}
	for (h = (ord * 2654435761u) & (CACHE_SLOTS - 1); k->cache[h].ord1;
	     h = (h + 1) & (CACHE_SLOTS - 1))
		;
	memcpy(k->cache_names + k->cache_used, name, nl);
	k->cache[h].ord1 = ord + 1;
	k->cache[h].at = (uint32_t)k->cache_used;
	k->cache_used += nl;
	k->cache_count++;
	return k->cache_names + k->cache[h].at;
}

const char *ksyms_name(struct kernel_syms *k, uint64_t addr)
{
	size_t lo = 0, hi;
	const char *name;
	uint32_t ord;

	if (!k || !k->n || addr < k->base || addr - k->base > UINT32_MAX)
		return NULL;
	hi = k->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (k->offs[mid] <= addr - k->base)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	ord = k->ords[lo - 1];
	if ((name = cache_get(k, ord)))
		return name;
	name = block_name(k, ord / BLOCK_NAMES, ord % BLOCK_NAMES);
	return name ? cache_put(k, ord, name) : NULL;
}
