/*
 * metrics.c - `faultline metrics`: the metric reference from the catalog.
 */
#include <stdio.h>
#include <string.h>

#include "model/catalog.h"
#include "cli/cli.h"

/* ---- metrics ------------------------------------------------------------ */

int cmd_metrics(int argc, char **argv)
{
	static const char *const kinds[] = { "counter", "gauge", "histogram" };
	int md = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("Usage: faultline metrics [--markdown]\n\nList every metric faultline "
			       "produces: its name (the same in rules, on /metrics and here), kind,\n"
			       "unit, labels and meaning.  --markdown: as the table in "
			       "docs/metrics.md.\n");
			return 0;
		}
		if (strcmp(argv[i], "--markdown")) {
			fprintf(stderr, "faultline metrics: unknown option '%s' (try --help)\n",
				argv[i]);
			return 2;
		}
		md = 1;
	}
	if (md)
		printf("| metric | kind | unit | labels | meaning |\n|---|---|---|---|---|\n");
	for (const struct metric_info *m = catalog; m->name; m++) {
		if (md)
			printf("| `%s` | %s | %s | %s | %s |\n", m->name, kinds[m->kind],
			       catalog_unit_name(m->unit), m->labels, m->help);
		else
			printf("%-46s %-10s %-11s %-18s %s\n", m->name, kinds[m->kind],
			       catalog_unit_name(m->unit), m->labels, m->help);
	}
	return 0;
}
