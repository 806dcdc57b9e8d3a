/*
 * strmap.c - string-keyed hash map; see strmap.h.
 */
#include "core/strmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/fnv.h"


void strmap_init(struct strmap *m)
{
	memset(m, 0, sizeof(*m));
}

void strmap_free(struct strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static size_t slot_of(const struct strmap *m, const char *key)
{
	size_t i = fnv64_str(FNV64_OFFSET, key) & (m->cap - 1);

	while (m->keys[i] && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

int strmap_get(const struct strmap *m, const char *key, uint32_t *val)
{
	size_t i;

	if (!m->cap)
		return 0;
	i = slot_of(m, key);
	if (!m->keys[i])
		return 0;
	*val = m->vals[i];
	return 1;
}

static int grow(struct strmap *m)
{
	struct strmap n = { 0 };

	n.cap = m->cap ? m->cap * 2 : 16;
	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = slot_of(&n, m->keys[i]);

		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	n.len = m->len;
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

int strmap_put(struct strmap *m, const char *key, uint32_t val)
{
	size_t i;

	if ((m->len + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	i = slot_of(m, key);
	if (!m->keys[i]) {
		m->keys[i] = strdup(key);
		if (!m->keys[i])
			return -ENOMEM;
		m->len++;
	}
	m->vals[i] = val;
	return 0;
}

int strmap_del(struct strmap *m, const char *key)
{
	size_t i, j;

	if (!m->cap)
		return 0;
	i = slot_of(m, key);
	if (!m->keys[i])
		return 0;
	free(m->keys[i]);
	m->keys[i] = NULL;
	m->len--;
	/*
	 * Backward-shift: move every later key of the probe run whose home
	 * slot is not in (i, j] into the hole, so lookups never stop early.
	 */
	for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		size_t home = fnv64_str(FNV64_OFFSET, m->keys[j]) & (m->cap - 1);

		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		m->keys[j] = NULL;
		i = j;
	}
	return 1;
}
