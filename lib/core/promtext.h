/*
 * promtext.h - pieces of the Prometheus text exposition format (0.0.4)
 * that every /metrics writer of faultline shares: the probe's, the rules
 * engine's and the alerter's.
 */
#ifndef FL_PROMTEXT_H
#define FL_PROMTEXT_H

#include "core/strbuf.h"

/* Append v as a label value, without the quotes: \ " and newline escaped. */
void promtext_label_value(struct strbuf *out, const char *v);

/*
 * Append key="value" (value escaped), preceded by a comma unless first:
 * promtext_label(sb, "receiver", name, 1) → receiver="a \"b\""
 */
void promtext_label(struct strbuf *out, const char *key, const char *value, int first);

#endif
