/*
 * rules.c - `faultline rules check|test`: validate rule files, run rule
 * unit tests (rules/ruletest/ruletest.h).
 */
#include <stdio.h>
#include <string.h>

#include "rules/lang/rules.h"
#include "rules/ruletest/ruletest.h"
#include "core/log.h"
#include "cli/cli.h"

/* ---- rules check --------------------------------------------------------- */

int cmd_rules(int argc, char **argv)
{
	int bad = 0, help = help_asked(argc, argv);

	if (!help && argc >= 3 && !strcmp(argv[1], "test")) {
		log_set_level(LOG_WARN);	/* the engine's verdict notes would drown results */
		for (int i = 2; i < argc; i++) {
			int r = ruletest_run(argv[i], stdout);

			if (r)
				bad = 1;
		}
		return bad;
	}
	if (help || argc < 3 || strcmp(argv[1], "check")) {
		fprintf(help ? stdout : stderr, "Usage: faultline rules check FILE...\n"
			"       faultline rules test FILE...\n\n"
			"check: validate rule files (YAML groups of alerting and recording rules):\n"
			"syntax, keys, durations, and every expression (grammar, known metrics,\n"
			"functions), in the order given, as faultline-rules loads them.\n"
			"test: run rule unit tests (input series over time -> which alerts fire\n"
			"when), like promtool test rules; see rules/ruletest/ruletest.h for the format.\n"
			"Errors name file:line:column.  Exit status 1 if anything fails.\n");
		return help ? 0 : 2;
	}
	/* in the order given, into one rule set, as faultline-rules loads them: a
	 * file may select what an earlier one records, and a name recorded twice
	 * across files is caught */
	struct ruleset rs = { 0 };

	for (int i = 2; i < argc; i++) {
		char err[512];
		int nrules = 0, before = rs.ngroups;

		if (rules_load(&rs, argv[i], err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			bad = 1;
		} else {
			for (int g = before; g < rs.ngroups; g++)
				nrules += rs.groups[g].nrules;
			printf("%s: %d group(s), %d rule(s): OK\n", argv[i], rs.ngroups - before,
			       nrules);
		}
	}
	rules_free(&rs);
	return bad;
}
