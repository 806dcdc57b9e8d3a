/*
 * report_wear.c - `faultline report wear`: the fleet SSD wear report from
 * Redis (table, CSV, JSON, HTML; cli/wear_report.h does the work).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "cli/wear_report.h"
#include "core/timeutil.h"
#include "cli/cli.h"

/* ---- report wear -------------------------------------------------------- */

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "html", required_argument, NULL, 'H' },
		{ "rack", required_argument, NULL, 'R' },
		{ "model", required_argument, NULL, 'M' },
		{ "verdict", required_argument, NULL, 'v' },
		{ "today", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *url = "unix:///run/faultline/redis.sock", *html = NULL;
	const char *rack = NULL, *model = NULL, *verdict = NULL;
	int64_t today = (int64_t)(time_wall_ns() / NSEC_PER_SEC / 86400);
	struct wear_row *rows;
	size_t n, kept = 0;
	int c, format = 't';
	struct conn *rc;
	char err[512];

	if (argc < 2 || strcmp(argv[1], "wear")) {
		int help = help_asked(argc, argv);

		fprintf(help ? stdout : stderr, "Usage: faultline report wear [OPTIONS] "
			"(faultline report wear --help)\n");
		return help ? 0 : 2;
	}
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "r:cjH:R:M:v:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': url = optarg; break;
		case 'c': case 'j': format = c; break;
		case 'H': html = optarg; break;
		case 'R': rack = optarg; break;
		case 'M': model = optarg; break;
		case 'v': verdict = optarg; break;
		case 't':
			today = wear_parse_day(optarg);
			if (today < 0) {
				fprintf(stderr, "faultline report wear: --today '%s': expected "
					"YYYY-MM-DD\n", optarg);
				return 2;
			}
			break;
		case 'h':
			printf("Usage: faultline report wear [--redis URL] [--csv | --json] [--html FILE]\n"
			       "                             [--rack R] [--model SUBSTR] [--verdict V]\n"
			       "                             [--today YYYY-MM-DD]\n\n"
			       "One row per drive of every host in Redis: wear, spare, errors, bytes\n"
			       "written, power-on hours, wear rate (%% per 30 days from the daily history),\n"
			       "projected date of 100%% used, and a verdict (failing, replace, watch, ok,\n"
			       "unknown) with its reason, most urgent first.  --html writes a page with\n"
			       "the table and a plot of wear against age per model.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (verdict && strcmp(verdict, "failing") && strcmp(verdict, "replace") &&
	    strcmp(verdict, "watch") && strcmp(verdict, "ok") && strcmp(verdict, "unknown")) {
		fprintf(stderr, "faultline report wear: --verdict '%s': expected failing, replace, "
			"watch, ok or unknown\n", verdict);
		return 2;
	}
	rc = conn_open(url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline report wear: %s\n", err);
		return 1;
	}
	if (wear_load(rc, &rows, &n, err, sizeof(err))) {
		fprintf(stderr, "faultline report wear: %s\n", err);
		conn_close(rc);
		return 1;
	}
	conn_close(rc);
	for (size_t i = 0; i < n; i++) {
		wear_assess(&rows[i], today);
		if ((rack && strcmp(rows[i].rack, rack)) ||
		    (model && !strstr(rows[i].rec.model, model)) ||
		    (verdict && strcmp(rows[i].verdict, verdict))) {
			free(rows[i].points);
			continue;
		}
		rows[kept++] = rows[i];
	}
	wear_sort(rows, kept);
	if (format == 'c')
		wear_print_csv(stdout, rows, kept);
	else if (format == 'j')
		wear_print_json(stdout, rows, kept);
	else
		wear_print_table(stdout, rows, kept, today);
	if (html) {
		FILE *f = fopen(html, "w");

		if (!f) {
			fprintf(stderr, "faultline report wear: cannot write %s: %s\n", html,
				strerror(errno));
			wear_free(rows, kept);
			return 1;
		}
		wear_print_html(f, rows, kept, today);
		fclose(f);
		fprintf(stderr, "faultline report wear: wrote %s\n", html);
	}
	wear_free(rows, kept);
	return 0;
}
