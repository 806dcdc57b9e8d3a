/*
 * prom.h - render a snapshot in the Prometheus text exposition format.
 *
 * Names become faultline_<name with dots as underscores>; counters get
 * _total, nanosecond metrics become _seconds (values and bucket bounds
 * scaled), byte metrics _bytes.  Histograms are Prometheus histograms whose
 * `le` bounds are the upper edges of the fleet layout's non-empty buckets
 * (cumulative, so a bucket once present stays present) plus +Inf.  Series
 * of one name are grouped under one HELP/TYPE, as the format requires.
 */
#ifndef FL_PROM_H
#define FL_PROM_H

#include "snapshot.h"
#include "strbuf.h"

/* Append s rendered as Prometheus text to out. */
void prom_render(const struct snapshot *s, struct strbuf *out);

#endif
