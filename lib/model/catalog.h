/*
 * catalog.h - every metric faultline produces: name, kind, unit, meaning.
 *
 * One table serves the Prometheus exporter (HELP text, unit suffixes and
 * scaling), the rules engine (unknown metric names are errors, not silent
 * empty results) and the README's metric reference.  Names are dotted,
 * `subsystem.what`; labels are listed for documentation.
 */
#ifndef FL_CATALOG_H
#define FL_CATALOG_H

#include "model/snapshot.h"

enum metric_unit {
	UNIT_NONE,
	UNIT_NS,	/* exported to Prometheus as seconds */
	UNIT_BYTES,
	UNIT_US,	/* exported to Prometheus as seconds */
	UNIT_RATIO,
};

struct metric_info {
	const char *name;
	enum series_kind kind;
	enum metric_unit unit;
	const char *labels;
	const char *help;
};

/* The entry for name, or NULL if faultline does not produce it. */
const struct metric_info *catalog_find(const char *name);

/* All entries, terminated by one with a NULL name. */
extern const struct metric_info catalog[];

#endif
