/*
 * silence.c - `faultline silence add|list|expire` (lib/store/silence.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "store/silence.h"
#include "core/timeutil.h"
#include "cli/cli.h"

/* ---- silence ------------------------------------------------------------ */

int cmd_silence(int argc, char **argv)
{
	const char *url = "unix:///run/faultline/redis.sock", *sub = argc > 1 ? argv[1] : "";
	struct silence s = { 0 };
	uint64_t dur = 2 * 3600 * NSEC_PER_SEC, now = time_wall_ns() / NSEC_PER_MSEC;
	const char *id = NULL;
	struct conn *rc;
	char err[512];
	int ret = 0;

	int help = help_asked(argc, argv);

	if (help || (strcmp(sub, "add") && strcmp(sub, "list") && strcmp(sub, "expire"))) {
		if (!help && sub[0])
			fprintf(stderr, "faultline silence: unknown subcommand '%s'\n", sub);
		printf("Usage: faultline silence add --match NAME=VALUE [--match ...] [--for 2h]\n"
		       "                             [--comment TEXT] [--redis URL]\n"
		       "       faultline silence list [--redis URL]\n"
		       "       faultline silence expire ID [--redis URL]\n\n"
		       "A silenced alert is recorded (fl:notifications), not sent.  Matchers:\n"
		       "name=value, name!=value, name=~regex; all must match.\n");
		return help ? 0 : 2;
	}
	snprintf(s.created_by, sizeof(s.created_by), "%s", getenv("USER") ? getenv("USER") : "");
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--redis") && i + 1 < argc) {
			url = argv[++i];
		} else if (!strcmp(argv[i], "--match") && i + 1 < argc) {
			if (s.nm == SILENCE_MAX_MATCHERS ||
			    matcher_parse(&s.m[s.nm], argv[++i], err, sizeof(err))) {
				fprintf(stderr, "faultline silence: %s\n", err);
				return 2;
			}
			s.nm++;
		} else if (!strcmp(argv[i], "--for") && i + 1 < argc) {
			if (duration_parse(argv[++i], &dur)) {
				fprintf(stderr, "faultline silence: --for: expected a duration\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--comment") && i + 1 < argc) {
			snprintf(s.comment, sizeof(s.comment), "%s", argv[++i]);
		} else if (argv[i][0] != '-' && !id) {
			id = argv[i];
		} else {
			fprintf(stderr, "faultline silence: unexpected '%s' (try --help)\n", argv[i]);
			return 2;
		}
	}
	rc = conn_open(url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline silence: %s\n", err);
		return 1;
	}
	if (!strcmp(sub, "add")) {
		if (!s.nm) {
			fprintf(stderr, "faultline silence add: give at least one --match\n");
			ret = 2;
		} else {
			s.starts_ms = now;
			s.ends_ms = now + dur / NSEC_PER_MSEC;
			ret = silence_add(rc, &s, err, sizeof(err)) ? 1 : 0;
			if (ret)
				fprintf(stderr, "faultline silence: %s\n", err);
			else
				printf("%s\n", s.id);
		}
	} else if (!strcmp(sub, "list")) {
		struct silence *all;
		int n = silence_load(rc, &all, err, sizeof(err));
		char t1[40], t2[40];

		if (n < 0) {
			fprintf(stderr, "faultline silence: %s\n", err);
			ret = 1;
		}
		for (int i = 0; i < n; i++) {
			printf("%-20s %-8s %s .. %s  ", all[i].id,
			       now < all[i].ends_ms ? "active" : "expired",
			       alert_format_time(all[i].starts_ms, t1, sizeof(t1)),
			       alert_format_time(all[i].ends_ms, t2, sizeof(t2)));
			for (int k = 0; k < all[i].nm; k++) {
				char m[MATCHER_NAME_MAX + 2 * MATCHER_VALUE_MAX + 8];

				matcher_format(&all[i].m[k], m, sizeof(m));
				printf("%s%s", k ? "," : "", m);
			}
			printf("  %s\n", all[i].comment);
		}
		if (n >= 0)
			silence_free_all(all, n);
	} else if (!strcmp(sub, "expire") && id) {
		ret = silence_expire(rc, id, err, sizeof(err)) ? 1 : 0;
		if (ret)
			fprintf(stderr, "faultline silence: %s\n", err);
	} else {
		fprintf(stderr, "faultline silence: unknown subcommand (try --help)\n");
		ret = 2;
	}
	for (int i = 0; i < s.nm; i++)
		matcher_free(&s.m[i]);
	conn_close(rc);
	return ret;
}
