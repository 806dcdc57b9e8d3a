/*
 * main.c - faultline-rules: evaluates rules over the fleet's snapshots and
 * appends alert events to fl:alerts.  The engine itself is the subject of
 * its own issue; this binary already takes the common flags.
 */
#include <getopt.h>
#include <stdio.h>

static void usage(FILE *out)
{
	fprintf(out,
"Usage: faultline-rules [OPTIONS]\n"
"\n"
"Evaluate faultline rules (etc/rules/*.yaml) against the snapshots probes\n"
"write to Redis, roll them up by failure domain, and append firing/resolved\n"
"events to the fl:alerts stream for faultline-alerter.\n"
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
		case 'V': printf("faultline-rules %s\n", FL_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	usage(stderr);
	fprintf(stderr, "faultline-rules: the rules engine is not built yet\n");
	return 1;
}
