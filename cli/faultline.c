/*
 * faultline.c - the faultline command: one subcommand per file in cli/
 * (cli.h), dispatched from the commands[] table, which also writes the
 * usage.  Every subcommand answers --help with exit 0 without touching
 * Redis; a usage error is exit 2, a failure exit 1.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/log.h"

static const struct command commands[] = {
	{ "top", cmd_top, "live summary of one host from Redis: block I/O rate and latency\n"
	  "            p50/p99 per device and op, TCP/UDP checksum error rates" },
	{ "metrics", cmd_metrics, "list every metric faultline produces, with kind, unit, "
	  "meaning" },
	{ "drive", cmd_drive, "inspect: decode recorded SMART data (smartctl JSON, libatasmart\n"
	  "            blob, NVMe log page) into the normalized drive record, as JSON" },
	{ "report", cmd_report, "wear: the fleet SSD wear report from Redis (table, CSV, JSON, "
	  "HTML)" },
	{ "profile", cmd_profile, "CPU profiles from Redis: flame graph SVG, pprof, folded, top,\n"
	  "            diff; `profile burst` asks a host for a high-rate burst" },
	{ "alerts", cmd_alerts, "what fires across the fleet, by failure domain, and what mutes it" },
	{ "silence", cmd_silence, "add, update, query or expire silences as amtool does (the alerter records, not sends)" },
	{ "rules", cmd_rules, "check: validate rule files (positions of every error);\n"
	  "            test: run rule unit tests (which alerts fire when)" },
	{ "deploy", cmd_deploy, "mark a deploy (service, version, hosts) or list the markers" },
	{ "sim", cmd_sim, "simulate a fleet's probes into Redis, with a scenario's faults" },
	{ "usage", cmd_usage, "what hosts cost in Redis, stream by stream, now and at a retention" },
	{ "acl", cmd_acl, "the Redis ACL users of a fleet (a probe may write only its own\n"
	  "            host's keys) and their password files" },
};

int help_asked(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: faultline COMMAND [OPTIONS]\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nRun 'faultline COMMAND --help' for a command's options.\n"
		"  -h, --help      this text\n"
		"  -V, --version   print the version\n");
}

int main(int argc, char **argv)
{
	log_init("faultline");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("faultline %s\n", FL_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "faultline: unknown command '%s' (try --help)\n", argv[1]);
	return 2;
}
