/*
 * wear_report.c - fleet SSD wear report; see wear_report.h.
 */
#include "cli/wear_report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/array.h"
#include "core/jsonc.h"
#include "core/strbuf.h"
#include "model/host_entry.h"
#include "store/drives.h"
#include "store/host_registry.h"
#include "store/store.h"

static const char *const verdicts[] = { "failing", "replace", "watch", "ok", "unknown" };

int64_t wear_parse_day(const char *s)
{
	struct tm tm = { 0 };
	char *end = strptime(s, "%Y-%m-%d", &tm);

	if (!end || *end)
		return -1;
	return (int64_t)(timegm(&tm) / 86400);
}

char *wear_format_day(int64_t day, char *buf, size_t len)
{
	time_t t = (time_t)(day * 86400);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d", &tm);
	return buf;
}

double wear_rate_30d(const struct wear_point *pts, size_t n, int64_t today)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, m = 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;

	for (size_t i = 0; i < n; i++) {
		double x = (double)pts[i].day, y = pts[i].wear;

		if (y < 0 || pts[i].day < today - 180)
			continue;
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		m++;
		if (pts[i].day < lo)
			lo = pts[i].day;
		if (pts[i].day > hi)
			hi = pts[i].day;
	}
	if (m < 2 || hi - lo < 7)
		return NAN;
	double den = m * sxx - sx * sx;

	if (den == 0)
		return NAN;
	return (m * sxy - sx * sy) / den * 30.0;
}

static void because(struct wear_row *row, int rank, const char *fmt, double v)
{
	size_t off = strlen(row->reason);

	if (rank < row->rank)
		row->rank = rank;
	snprintf(row->reason + off, sizeof(row->reason) - off, "%s", off ? "; " : "");
	off = strlen(row->reason);
	snprintf(row->reason + off, sizeof(row->reason) - off, fmt, v);
}

void wear_assess(struct wear_row *row, int64_t today)
{
	const struct drive_record *r = &row->rec;
	const struct drive_value *f = r->f;
	double wear = f[DF_WEAR_USED_PCT].present ? f[DF_WEAR_USED_PCT].v : -1;

	row->rank = 3;
	row->reason[0] = '\0';
	row->eol_day = -1;
	row->rate_30d = wear_rate_30d(row->points, row->npoints, today);
	if (strcmp(r->status, "ok")) {
		row->rank = 4;
		snprintf(row->reason, sizeof(row->reason), "%s", r->error[0] ? r->error : r->status);
		snprintf(row->verdict, sizeof(row->verdict), "%s", verdicts[4]);
		return;
	}
	if (wear >= 100)
		row->eol_day = today;
	else if (wear >= 0 && row->rate_30d > 0)
		row->eol_day = today + (int64_t)ceil((100.0 - wear) / row->rate_30d * 30.0);

	if (r->smart_passed == 0)
		because(row, 0, "SMART assessment failed%.0s", 0);
	if (r->has_critical_warning && (r->critical_warning & (NVME_CW_RELIABILITY |
							      NVME_CW_READ_ONLY |
							      NVME_CW_VOLATILE_BACKUP))) {
		char names[128];

		drive_critical_warning_names(r->critical_warning, names, sizeof(names));
		because(row, 0, "NVMe critical warning 0x%02x", r->critical_warning);
		strncat(row->reason, " (", sizeof(row->reason) - strlen(row->reason) - 1);
		strncat(row->reason, names, sizeof(row->reason) - strlen(row->reason) - 1);
		strncat(row->reason, ")", sizeof(row->reason) - strlen(row->reason) - 1);
	}
	if (wear >= 100)
		because(row, 0, "rated endurance exhausted (%.0f%% used)", wear);
	else if (wear >= 90)
		because(row, 1, "%.0f%% of rated endurance used", wear);
	else if (wear >= 70)
		because(row, 2, "%.0f%% of rated endurance used", wear);
	if (f[DF_SPARE_PCT].present && f[DF_SPARE_THRESHOLD_PCT].present &&
	    f[DF_SPARE_THRESHOLD_PCT].v > 0 && f[DF_SPARE_PCT].v <= f[DF_SPARE_THRESHOLD_PCT].v)
		because(row, 1, "spare %.0f%% at or below its threshold", f[DF_SPARE_PCT].v);
	else if (r->has_critical_warning && (r->critical_warning & NVME_CW_SPARE))
		because(row, 1, "NVMe spare below threshold%.0s", 0);
	if (row->eol_day >= 0 && wear < 100) {
		char d[16];
		double days = (double)(row->eol_day - today);

		wear_format_day(row->eol_day, d, sizeof(d));
		if (days <= 90)
			because(row, 1, "100%% used projected in %.0f days", days);
		else if (days <= 365)
			because(row, 2, "100%% used projected in %.0f days", days);
	}
	if (f[DF_PENDING_SECTORS].present && f[DF_PENDING_SECTORS].v > 0)
		because(row, 1, "%.0f pending sectors", f[DF_PENDING_SECTORS].v);
	if (f[DF_MEDIA_ERRORS].present && f[DF_MEDIA_ERRORS].v > 0)
		because(row, 1, "%.0f media errors", f[DF_MEDIA_ERRORS].v);
	if (f[DF_REALLOCATED_SECTORS].present && f[DF_REALLOCATED_SECTORS].v >= 100)
		because(row, 1, "%.0f reallocated sectors", f[DF_REALLOCATED_SECTORS].v);
	else if (f[DF_REALLOCATED_SECTORS].present && f[DF_REALLOCATED_SECTORS].v > 0)
		because(row, 2, "%.0f reallocated sectors", f[DF_REALLOCATED_SECTORS].v);
	if (f[DF_OFFLINE_UNCORRECTABLE].present && f[DF_OFFLINE_UNCORRECTABLE].v > 0)
		because(row, 2, "%.0f offline-uncorrectable sectors", f[DF_OFFLINE_UNCORRECTABLE].v);
	if (f[DF_CRC_ERRORS].present && f[DF_CRC_ERRORS].v > 0)
		because(row, 2, "%.0f interface CRC errors (check cable/backplane)",
			f[DF_CRC_ERRORS].v);
	if (f[DF_TEMPERATURE_C].present && f[DF_TEMPERATURE_C].v >= 70)
		because(row, 2, "temperature %.0f C", f[DF_TEMPERATURE_C].v);
	if (!row->reason[0])
		snprintf(row->reason, sizeof(row->reason), "%s",
			 wear >= 0 ? "healthy" : "healthy (no wear indicator: HDD)");
	snprintf(row->verdict, sizeof(row->verdict), "%s", verdicts[row->rank]);
}

static int row_cmp(const void *a, const void *b)
{
	const struct wear_row *x = a, *y = b;
	double wx, wy;

	if (x->rank != y->rank)
		return x->rank - y->rank;
	if ((x->eol_day >= 0) != (y->eol_day >= 0))
		return x->eol_day >= 0 ? -1 : 1;
	if (x->eol_day != y->eol_day)
		return x->eol_day < y->eol_day ? -1 : 1;
	wx = x->rec.f[DF_WEAR_USED_PCT].present ? x->rec.f[DF_WEAR_USED_PCT].v : -1;
	wy = y->rec.f[DF_WEAR_USED_PCT].present ? y->rec.f[DF_WEAR_USED_PCT].v : -1;
	if (wx != wy)
		return wx > wy ? -1 : 1;
	return strcmp(x->host, y->host) ? strcmp(x->host, y->host)
					: strcmp(x->rec.device, y->rec.device);
}

void wear_sort(struct wear_row *rows, size_t n)
{
	qsort(rows, n, sizeof(*rows), row_cmp);
}

/* ---- loading ----------------------------------------------------------- */

struct wear_loading {
	struct wear_row *rows;
	size_t n, cap;
	struct conn *c;
	int failed;		/* -EIO / -ENOMEM: stop */
	char *err;
	size_t errlen;
	const char *host, *rack;
};

static void add_point(const char *day, double wear, double bytes, double hours, void *arg)
{
	struct wear_row *row = arg;
	struct wear_point *p = realloc(row->points, (row->npoints + 1) * sizeof(*p));

	if (!p)
		return;
	row->points = p;
	p[row->npoints] = (struct wear_point){ wear_parse_day(day), wear, bytes, hours };
	if (p[row->npoints].day >= 0)
		row->npoints++;
}

static void add_drive(const struct drive_record *r, void *arg)
{
	struct wear_loading *ld = arg;
	struct wear_row *row;

	if (ld->failed)
		return;
	if (ARRAY_GROW(ld->rows, ld->cap, ld->n + 1, 32)) {
		ld->failed = -ENOMEM;
		snprintf(ld->err, ld->errlen, "out of memory");
		return;
	}
	row = &ld->rows[ld->n++];
	memset(row, 0, sizeof(*row));
	row->rec = *r;
	snprintf(row->host, sizeof(row->host), "%s", ld->host);
	snprintf(row->rack, sizeof(row->rack), "%s", ld->rack);
	if (r->serial[0] &&
	    drives_wear_history(ld->c, ld->host, r->serial, add_point, row, ld->err,
				ld->errlen) < 0)
		ld->failed = -EIO;
}

static void add_host(const char *host, const struct host_entry *e, void *arg)
{
	struct wear_loading *ld = arg;

	if (ld->failed)
		return;
	ld->host = host;
	ld->rack = host_entry_label(e, "rack") ?: "";
	if (drives_load(ld->c, host, add_drive, ld, ld->err, ld->errlen) < 0 && !ld->failed)
		ld->failed = -EIO;
}

int wear_load(struct conn *c, struct wear_row **rows, size_t *n, char *err, size_t errlen)
{
	struct wear_loading ld = { .c = c, .err = err, .errlen = errlen };

	*rows = NULL;
	*n = 0;
	if (store_host_entries(c, add_host, &ld, err, errlen) < 0)
		ld.failed = -EIO;
	if (ld.failed) {
		wear_free(ld.rows, ld.n);
		return ld.failed;
	}
	*rows = ld.rows;
	*n = ld.n;
	return 0;
}

void wear_free(struct wear_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].points);
	free(rows);
}

/* ---- output ------------------------------------------------------------ */

static void fmt_opt(char *buf, size_t len, const struct drive_value *v, const char *fmt)
{
	if (v->present)
		snprintf(buf, len, fmt, v->v);
	else
		snprintf(buf, len, "-");
}

static const char *fmt_bytes(double b, char *buf, size_t len)
{
	if (b >= 1e15)
		snprintf(buf, len, "%.1fPB", b / 1e15);
	else if (b >= 1e12)
		snprintf(buf, len, "%.1fTB", b / 1e12);
	else if (b >= 1e9)
		snprintf(buf, len, "%.1fGB", b / 1e9);
	else
		snprintf(buf, len, "%.0fMB", b / 1e6);
	return buf;
}

void wear_print_table(FILE *out, const struct wear_row *rows, size_t n, int64_t today)
{
	char wear[16], spare[16], realloc_[16], pend[16], media[16], written[16], poh[16];
	char rate[16], eol[16], day[16];

	fprintf(out, "faultline wear report  %zu drives  %s\n\n", n,
		wear_format_day(today, day, sizeof(day)));
	fprintf(out, "%-16s %-6s %-8s %-24s %5s %5s %7s %5s %6s %8s %7s %8s %-10s %-8s %s\n",
		"HOST", "RACK", "DEVICE", "MODEL", "WEAR%", "SPARE", "REALLOC", "PEND", "MEDIA",
		"WRITTEN", "POH", "RATE/30d", "EOL", "VERDICT", "REASON");
	for (size_t i = 0; i < n; i++) {
		const struct wear_row *w = &rows[i];
		const struct drive_value *f = w->rec.f;

		fmt_opt(wear, sizeof(wear), &f[DF_WEAR_USED_PCT], "%.0f");
		fmt_opt(spare, sizeof(spare), &f[DF_SPARE_PCT], "%.0f");
		fmt_opt(realloc_, sizeof(realloc_), &f[DF_REALLOCATED_SECTORS], "%.0f");
		fmt_opt(pend, sizeof(pend), &f[DF_PENDING_SECTORS], "%.0f");
		fmt_opt(media, sizeof(media), &f[DF_MEDIA_ERRORS], "%.0f");
		fmt_opt(poh, sizeof(poh), &f[DF_POWER_ON_HOURS], "%.0f");
		if (f[DF_BYTES_WRITTEN].present)
			fmt_bytes(f[DF_BYTES_WRITTEN].v, written, sizeof(written));
		else
			snprintf(written, sizeof(written), "-");
		if (isnan(w->rate_30d))
			snprintf(rate, sizeof(rate), "-");
		else
			snprintf(rate, sizeof(rate), "%.2f", w->rate_30d);
		if (w->eol_day >= 0)
			wear_format_day(w->eol_day, eol, sizeof(eol));
		else
			snprintf(eol, sizeof(eol), "-");
		fprintf(out, "%-16.16s %-6.6s %-8.8s %-24.24s %5s %5s %7s %5s %6s %8s %7s %8s %-10s %-8s %s\n",
			w->host, w->rack[0] ? w->rack : "-", w->rec.device,
			w->rec.model[0] ? w->rec.model : "-", wear, spare, realloc_, pend, media,
			written, poh, rate, eol, w->verdict, w->reason);
	}
}

static void csv_field(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void csv_num(FILE *out, const struct drive_value *v)
{
	if (v->present)
		fprintf(out, ",%.17g", v->v);
	else
		fputs(",", out);
}

void wear_print_csv(FILE *out, const struct wear_row *rows, size_t n)
{
	char eol[16];

	fputs("host,rack,device,model,serial,protocol,wear_used_pct,spare_pct,media_errors,"
	      "reallocated_sectors,pending_sectors,crc_errors,bytes_written,power_on_hours,"
	      "wear_rate_pct_per_30d,projected_eol,verdict,reason\n", out);
	for (size_t i = 0; i < n; i++) {
		const struct wear_row *w = &rows[i];
		const struct drive_value *f = w->rec.f;

		csv_field(out, w->host);
		fputc(',', out);
		csv_field(out, w->rack);
		fputc(',', out);
		csv_field(out, w->rec.device);
		fputc(',', out);
		csv_field(out, w->rec.model);
		fputc(',', out);
		csv_field(out, w->rec.serial);
		fputc(',', out);
		csv_field(out, w->rec.protocol);
		csv_num(out, &f[DF_WEAR_USED_PCT]);
		csv_num(out, &f[DF_SPARE_PCT]);
		csv_num(out, &f[DF_MEDIA_ERRORS]);
		csv_num(out, &f[DF_REALLOCATED_SECTORS]);
		csv_num(out, &f[DF_PENDING_SECTORS]);
		csv_num(out, &f[DF_CRC_ERRORS]);
		csv_num(out, &f[DF_BYTES_WRITTEN]);
		csv_num(out, &f[DF_POWER_ON_HOURS]);
		if (isnan(w->rate_30d))
			fputs(",", out);
		else
			fprintf(out, ",%.4f", w->rate_30d);
		fprintf(out, ",%s,", w->eol_day >= 0 ? wear_format_day(w->eol_day, eol, sizeof(eol)) : "");
		csv_field(out, w->verdict);
		fputc(',', out);
		csv_field(out, w->reason);
		fputc('\n', out);
	}
}

void wear_print_json(FILE *out, const struct wear_row *rows, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	char eol[16], rate[32];

	strbuf_adds(&sb, "[");
	for (size_t i = 0; i < n; i++) {
		const struct wear_row *w = &rows[i];
		json_object *o = json_object_new_object();

		if (!o)
			break;
		json_object_object_add(o, "host", jsonc_string(w->host));
		json_object_object_add(o, "rack", jsonc_string(w->rack));
		snprintf(rate, sizeof(rate), "%.4f", w->rate_30d);
		json_object_object_add(o, "wear_rate_pct_per_30d", isnan(w->rate_30d) ? NULL :
				       json_object_new_double_s(w->rate_30d, rate));
		json_object_object_add(o, "projected_eol", w->eol_day < 0 ? NULL :
				       jsonc_string(wear_format_day(w->eol_day, eol, sizeof(eol))));
		json_object_object_add(o, "verdict", jsonc_string(w->verdict));
		json_object_object_add(o, "reason", jsonc_string(w->reason));
		json_object_object_add(o, "history_points", json_object_new_int64((int64_t)w->npoints));
		json_object_object_add(o, "drive", drive_json(&w->rec));
		strbuf_adds(&sb, i ? ",\n" : "\n");
		jsonc_append(&sb, o);
		json_object_put(o);
	}
	strbuf_adds(&sb, "\n]\n");
	fputs(strbuf_str(&sb), out);
	strbuf_release(&sb);
}

void wear_print_html(FILE *out, const struct wear_row *rows, size_t n, int64_t today)
{
	static const char *const colors[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
					      "#9467bd", "#8c564b", "#e377c2", "#17becf" };
	const char *models[8];
	int nmodels = 0;
	double max_age = 1;
	char day[16];
	const int W = 760, H = 380, L = 60, B = 40;

	for (size_t i = 0; i < n; i++) {
		const struct drive_value *f = rows[i].rec.f;

		if (f[DF_POWER_ON_HOURS].present && f[DF_POWER_ON_HOURS].v / 24 > max_age)
			max_age = f[DF_POWER_ON_HOURS].v / 24;
	}
	max_age = ceil(max_age / 365.0) * 365.0;
	fprintf(out, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>faultline wear "
		"report %s</title>\n<style>body{font:14px sans-serif;margin:24px}table{border-"
		"collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:"
		"left}.failing{background:#fbb}.replace{background:#fdb}.watch{background:#ffd}"
		"</style></head><body>\n<h1>Fleet SSD wear report</h1>\n<p>%zu drives, %s. Wear "
		"(percent of rated endurance used) against age (power-on days), one colour per "
		"model; hover a point for the drive.</p>\n",
		wear_format_day(today, day, sizeof(day)), n, day);
	fprintf(out, "<svg id=\"plot\" width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/"
		"svg\" style=\"border:1px solid #ccc\">\n", W + L + 280, H + B + 20);
	/* axes and grid */
	for (int p = 0; p <= 100; p += 20) {
		int y = 10 + H - p * H / 100;

		fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#eee\"/>"
			"<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%d%%</text>\n",
			L, y, L + W, y, L - 6, y + 4, p);
	}
	for (int yr = 0; yr <= (int)(max_age / 365); yr++) {
		int x = L + (int)(yr * 365 * W / max_age);

		fprintf(out, "<line x1=\"%d\" y1=\"10\" x2=\"%d\" y2=\"%d\" stroke=\"#eee\"/>"
			"<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%dy</text>\n",
			x, x, 10 + H, x, 10 + H + 16, yr);
	}
	fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">age "
		"(power-on time)</text>\n", L + W / 2, 10 + H + 34);
	for (size_t i = 0; i < n; i++) {
		const struct wear_row *w = &rows[i];
		const struct drive_value *f = w->rec.f;
		int m;

		if (!f[DF_WEAR_USED_PCT].present || !f[DF_POWER_ON_HOURS].present)
			continue;
		for (m = 0; m < nmodels && strcmp(models[m], w->rec.model); m++)
			;
		if (m == nmodels && nmodels < 8)
			models[nmodels++] = w->rec.model;
		if (m >= 8)
			m = 7;
		double x = L + f[DF_POWER_ON_HOURS].v / 24 * W / max_age;
		double y = 10 + H - fmin(f[DF_WEAR_USED_PCT].v, 110) * H / 100;

		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" fill-opacity=\"0.75\">"
			"<title>", x, y, colors[m]);
		fputs_xml(w->host, out);
		fprintf(out, " %s %s: %.0f%% used, %.0f days, %s</title></circle>\n", w->rec.device,
			w->rec.model, f[DF_WEAR_USED_PCT].v, f[DF_POWER_ON_HOURS].v / 24, w->verdict);
	}
	for (int m = 0; m < nmodels; m++) {
		fprintf(out, "<circle cx=\"%d\" cy=\"%d\" r=\"5\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" "
			"font-size=\"12\">", L + W + 20, 24 + m * 18, colors[m], L + W + 30,
			28 + m * 18);
		fputs_xml(models[m][0] ? models[m] : "unknown", out);
		fputs("</text>\n", out);
	}
	fputs("</svg>\n<table>\n<tr><th>host</th><th>rack</th><th>device</th><th>model</th>"
	      "<th>wear %</th><th>spare %</th><th>projected 100 %</th><th>verdict</th><th>reason"
	      "</th></tr>\n", out);
	for (size_t i = 0; i < n; i++) {
		const struct wear_row *w = &rows[i];
		const struct drive_value *f = w->rec.f;
		char eol[16] = "-";

		if (w->eol_day >= 0)
			wear_format_day(w->eol_day, eol, sizeof(eol));
		fprintf(out, "<tr class=\"%s\"><td>", w->verdict);
		fputs_xml(w->host, out);
		fputs("</td><td>", out);
		fputs_xml(w->rack, out);
		fputs("</td><td>", out);
		fputs_xml(w->rec.device, out);
		fputs("</td><td>", out);
		fputs_xml(w->rec.model, out);
		if (f[DF_WEAR_USED_PCT].present)
			fprintf(out, "</td><td>%.0f", f[DF_WEAR_USED_PCT].v);
		else
			fputs("</td><td>-", out);
		if (f[DF_SPARE_PCT].present)
			fprintf(out, "</td><td>%.0f", f[DF_SPARE_PCT].v);
		else
			fputs("</td><td>-", out);
		fprintf(out, "</td><td>%s</td><td>%s</td><td>", eol, w->verdict);
		fputs_xml(w->reason, out);
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n</body></html>\n", out);
}
