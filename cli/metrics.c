/*
 * metrics.c - `faultline metrics`: the metric reference from the catalog.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "config.h"
#include "drive.h"
#include "profile.h"
#include "rules.h"
#include "ruletest.h"
#include "profile_store.h"
#include "deploy.h"
#include "silence.h"
#include "profile_export.h"
#include "wear_report.h"
#include "log.h"
#include "snapshot.h"
#include "store.h"
#include "timeutil.h"
#include "scenario.h"
#include "sim.h"
#include "cli.h"

/* ---- metrics ------------------------------------------------------------ */

int cmd_metrics(int argc, char **argv)
{
	static const char *const kinds[] = { "counter", "gauge", "histogram" };
	static const char *const units[] = { "", "ns", "bytes", "us", "ratio" };

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: faultline metrics [--markdown]\n\nList every metric faultline "
		       "produces.\n");
		return 0;
	}
	int md = argc > 1 && !strcmp(argv[1], "--markdown");

	if (md)
		printf("| metric | kind | unit | labels | meaning |\n|---|---|---|---|---|\n");
	for (const struct metric_info *m = catalog; m->name; m++) {
		if (md)
			printf("| `%s` | %s | %s | %s | %s |\n", m->name, kinds[m->kind],
			       units[m->unit], m->labels, m->help);
		else
			printf("%-26s %-10s %-6s %-14s %s\n", m->name, kinds[m->kind],
			       units[m->unit], m->labels, m->help);
	}
	return 0;
}
