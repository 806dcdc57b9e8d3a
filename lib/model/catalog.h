/*
 * catalog.h - every metric faultline produces: its one name, kind, unit and
 * meaning.
 *
 * A metric has one name and one unit everywhere a person meets it: rules,
 * rule tests, /metrics, `faultline metrics` and the docs.  Names follow
 * Prometheus' conventions (faultline_block_latency_seconds,
 * faultline_tcp_in_csum_errors_total, faultline_drive_wear_used_ratio) and
 * values are in base units: seconds, bytes, ratios 0..1, degrees Celsius,
 * hertz.  So a threshold means the same in a rule and in a Grafana panel.
 *
 * Snapshots carry each series under its wire name (block.latency) in the
 * unit the kernel counts in (ns, us, percent), exactly; `scale` turns a wire
 * value into the base unit.  Wire names are the storage encoding only: a
 * rule that uses one is refused with the metric's name.
 */
#ifndef FL_CATALOG_H
#define FL_CATALOG_H

#include "model/snapshot.h"

/* The base unit of a metric's values (what it is in rules and on /metrics). */
enum metric_unit {
	UNIT_NONE,
	UNIT_SECONDS,
	UNIT_BYTES,
	UNIT_RATIO,	/* 0..1 */
	UNIT_CELSIUS,
	UNIT_HERTZ,
};

struct metric_info {
	const char *name;	/* the one name: faultline_block_latency_seconds */
	const char *wire;	/* the snapshot's series name: block.latency */
	enum series_kind kind;
	enum metric_unit unit;
	double scale;		/* base unit = wire value x scale (1e-9 for ns) */
	const char *labels;
	const char *help;
};

/*
 * wire x scale, and its inverse, rounded as a person expects: a scale that
 * is 1/N (0.01, 1e-9) divides by N, so 95 % is 0.95 exactly, not
 * 0.9500000000000001 as 95 * 0.01 is.
 */
static inline double catalog_scale_inverse(double scale)
{
	double d = 1.0 / scale, r = __builtin_nearbyint(d);

	return scale < 1 && r > 0 && __builtin_fabs(d - r) < 1e-6 * r ? r : 0;
}

static inline double catalog_to_base(double wire, double scale)
{
	double n = catalog_scale_inverse(scale);

	return n ? wire / n : wire * scale;
}

static inline double catalog_to_wire(double base, double scale)
{
	double n = catalog_scale_inverse(scale);

	return n ? base * n : base / scale;
}

/*
 * A ratio faultline computes (a share of time, a frequency over its
 * maximum) as it reports it: rounded to a multiple of 2^-16 (0.0015 %; of a
 * CPU-second, 15 us).  That is finer than the intervals themselves are
 * timed, and it keeps every value exact in a float32 (4 bytes on the wire,
 * not a float64's 8 of noise in its low bits), a minute's sum of 60 such
 * values too; these gauges are most of a many-CPU host's minute rollup.
 * NaN and infinities are kept as they are.
 */
#define CATALOG_RATIO_STEPS 65536.0

static inline double catalog_ratio(double x)
{
	return __builtin_isfinite(x) ? __builtin_nearbyint(x * CATALOG_RATIO_STEPS) /
				       CATALOG_RATIO_STEPS : x;
}

/* The entry named name, or NULL if faultline does not produce it. */
const struct metric_info *catalog_find(const char *name);

/*
 * Histograms as Prometheus sees them (/metrics, and _bucket/_sum/_count in
 * rules): a fixed bucket set per unit, powers of two, for seconds 1 us ..
 * 16.8 s (25 bounds), for bytes 512 B .. 8 MiB (15).  Sets *bound to the
 * upper bounds in the base unit and *le to their "le" label values (as
 * /metrics prints them, %.9g); returns how many (+Inf not included).
 */
int catalog_hist_bounds(const struct metric_info *m, const double **bound,
			const char *const **le);

/* The histogram whose _bucket, _sum or _count name is name; *part: 1, 2, 3. */
const struct metric_info *catalog_find_hist_part(const char *name, int *part);

/* The entry whose snapshot series are called wire, or NULL. */
const struct metric_info *catalog_find_wire(const char *wire);

/*
 * Why name is not a metric, for an error message: "unknown metric 'x'", or,
 * for a wire name (block.latency), that the metric is called
 * faultline_block_latency_seconds and in which unit.  Returns buf.
 */
char *catalog_unknown(const char *name, char *buf, size_t len);

/* The unit's name for people ("seconds", "ratio 0..1", "" for a count). */
const char *catalog_unit_name(enum metric_unit unit);

/* All entries, terminated by one with a NULL name. */
extern const struct metric_info catalog[];

#endif
