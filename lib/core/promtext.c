/*
 * promtext.c - Prometheus text format pieces; see promtext.h.
 */
#include "core/promtext.h"

void promtext_label_value(struct strbuf *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			strbuf_adds(out, "\\\\");
		else if (*v == '"')
			strbuf_adds(out, "\\\"");
		else if (*v == '\n')
			strbuf_adds(out, "\\n");
		else
			strbuf_add(out, v, 1);
	}
}

void promtext_label(struct strbuf *out, const char *key, const char *value, int first)
{
	strbuf_addf(out, "%s%s=\"", first ? "" : ",", key);
	promtext_label_value(out, value);
	strbuf_adds(out, "\"");
}
