/*
 * labels.c - comparing and printing label sets; see labels.h.
 */
#include "model/labels.h"

#include <string.h>

#include "core/promtext.h"
#include "core/strbuf.h"

int label_key_cmp(const void *a, const void *b)
{
	return strcmp(((const struct label *)a)->key, ((const struct label *)b)->key);
}

int labels_equal(const struct label *a, int na, const struct label *b, int nb)
{
	if (na != nb)
		return 0;
	for (int i = 0; i < na; i++)
		if (strcmp(a[i].key, b[i].key) || strcmp(a[i].value, b[i].value))
			return 0;
	return 1;
}

void labels_format(struct strbuf *out, const struct label *l, int n)
{
	strbuf_adds(out, "{");
	for (int i = 0; i < n; i++)
		promtext_label(out, l[i].key, l[i].value, i == 0);
	strbuf_adds(out, "}");
}
