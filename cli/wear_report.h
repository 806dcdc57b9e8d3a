/*
 * wear_report.h - the fleet SSD wear report: every drive record in Redis,
 * its wear rate from the daily history, a projected end-of-life date and
 * a verdict, sorted by urgency.
 *
 * Verdicts, first match wins (the reason lists every condition that held):
 *   failing  SMART assessment failed; NVMe critical warning reliability
 *            degraded, read-only or volatile backup failed; wear >= 100 %
 *   replace  wear >= 90 %; spare at or below its threshold; 100 % projected
 *            within 90 days; pending sectors; media errors; >= 100
 *            reallocated sectors
 *   watch    wear >= 70 %; 100 % projected within a year; any reallocated
 *            sectors; offline-uncorrectable; CRC errors (cabling);
 *            temperature >= 70 C
 *   ok       none of the above
 *   unknown  no SMART data (the record says why)
 *
 * Wear rate: least-squares slope of wear % over the daily points of the
 * last 180 days (at least two points 7 days apart), in % per 30 days.
 */
#ifndef FL_WEAR_REPORT_H
#define FL_WEAR_REPORT_H

#include <stdio.h>

struct conn;	/* a connection from conn_open (store/conn.h) */

#include "model/drive.h"

struct wear_point {
	int64_t day;		/* days since 1970-01-01 */
	double wear, bytes, hours;
};

struct wear_row {
	char host[200];
	char rack[64];
	struct drive_record rec;
	struct wear_point *points;
	size_t npoints;
	double rate_30d;	/* % per 30 days; NAN when unknown */
	int64_t eol_day;	/* projected day of 100 % used; -1 unknown */
	int rank;		/* 0 failing .. 4 unknown */
	char verdict[8];
	char reason[256];
};

/* Days since the epoch of "YYYY-MM-DD", or -1. */
int64_t wear_parse_day(const char *s);
/* Format a day as YYYY-MM-DD. */
char *wear_format_day(int64_t day, char *buf, size_t len);

/* Slope of wear over the points, % per 30 days; NAN if not enough data. */
double wear_rate_30d(const struct wear_point *pts, size_t n, int64_t today);

/* Fill rate, projection, verdict, rank and reason of row for `today`. */
void wear_assess(struct wear_row *row, int64_t today);

/* Sort by urgency: rank, then projected date (unknown last), then wear. */
void wear_sort(struct wear_row *rows, size_t n);

/*
 * Read every host's drive records and wear history from Redis into a
 * malloc'd array.  Returns 0 or -EIO with a reason in err.
 */
int wear_load(struct conn *c, struct wear_row **rows, size_t *n, char *err, size_t errlen);

void wear_free(struct wear_row *rows, size_t n);

void wear_print_table(FILE *out, const struct wear_row *rows, size_t n, int64_t today);
void wear_print_csv(FILE *out, const struct wear_row *rows, size_t n);
void wear_print_json(FILE *out, const struct wear_row *rows, size_t n);
/* A self-contained HTML page: table and an SVG plot of wear against age per model. */
void wear_print_html(FILE *out, const struct wear_row *rows, size_t n, int64_t today);

#endif
