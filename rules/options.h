/*
 * options.h - faultline-rules' command line: what it says, and the checks
 * of options that do not go together, before anything is loaded.
 */
#ifndef FL_RULES_OPTIONS_H
#define FL_RULES_OPTIONS_H

#include <stdint.h>

#include "rules/engine/engine.h"

#define RULES_MAX_FILES 32

struct rules_options {
	char *files[RULES_MAX_FILES];	/* --rules, or the default found */
	int nfiles;
	const char *url;		/* --redis */
	const char *topo_path;		/* --topology, or NULL */
	uint64_t interval, stale;	/* ns */
	int once;
	long intervals;			/* 0: until stopped */
	uint64_t replay_from, replay_to;	/* --replay, epoch ms; replay_to 0: live */
	double speed;			/* --replay-speed: 0 flat out */
	const char *metrics_addr, *web_config, *runbook_base;
	int shard;
	const char *worker_name;
	int wait_replicas;
	int no_wake;			/* --no-wake: evaluate on the tick only */
	/* what the engine is built with: stale, domains, generator URL, grace, backlog */
	struct engine_opts eopts;
};

/*
 * Parse argv into o (the default rule file found as the usage says).
 * Returns -1 to go on, or the status to exit with: 0 after --help or
 * --version, 2 after saying what is wrong on stderr.
 */
int rules_options_parse(struct rules_options *o, int argc, char **argv);

#endif
