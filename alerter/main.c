/*
 * main.c - faultline-alerter: consumes fl:alerts, groups, and delivers
 * webhooks with evidence.  Delivery is the subject of its own issue; this
 * binary already takes the common flags.
 */
#include <getopt.h>
#include <stdio.h>

static void usage(FILE *out)
{
	fprintf(out,
"Usage: faultline-alerter [OPTIONS]\n"
"\n"
"Consume alert events from the fl:alerts stream, group and deduplicate\n"
"them, and deliver signed webhooks (Alertmanager-compatible JSON, Slack,\n"
"PagerDuty) with the top CPU stacks of the affected hosts as evidence.\n"
"\n"
"Not implemented in this version: it prints this help and exits 1.\n"
"\n"
"  -h, --help      this text\n"
"  -V, --version   print the version\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); return 0;
		case 'V': printf("faultline-alerter %s\n", FL_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	usage(stderr);
	fprintf(stderr, "faultline-alerter: the alerter is not built yet\n");
	return 1;
}
