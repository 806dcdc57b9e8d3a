/*
 * silence.c - `faultline silence add|update|query|list|expire`
 * (lib/store/silence.h), taking what `amtool silence` takes: matchers as
 * arguments in Alertmanager's syntax, --comment/-c, --author/-a,
 * --duration/-d, --start and --end in RFC 3339.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "store/silence.h"
#include "core/timeutil.h"
#include "cli/cli.h"

#define SILENCE_MATCHER_TEXT (MATCHER_NAME_MAX + 2 * MATCHER_VALUE_MAX + 8)

static void silence_usage(FILE *out)
{
	fprintf(out,
"Usage: faultline silence add [MATCHER...] [--match MATCHER] [-d 2h | --end TIME]\n"
"                             [--start TIME] [-c TEXT] [-a AUTHOR] [--redis URL]\n"
"       faultline silence update ID [-d DURATION | --end TIME] [--start TIME]\n"
"                             [-c TEXT] [--redis URL]\n"
"       faultline silence query [MATCHER...] [--expired] [-q] [--redis URL]\n"
"       faultline silence expire ID [ID...] [--redis URL]\n\n"
"A silenced alert stays in its group and is recorded (fl:notifications), not\n"
"sent.  Matchers are Alertmanager's, as amtool takes them: name=value,\n"
"name!=value, name=~regex, name!~regex, values quoted or not\n"
"('rack=~\"r1.*\"'); all must match.  TIME is RFC 3339 in UTC\n"
"(2026-12-04T15:00:00Z); a duration is 90s, 30m, 2h, 1d (default 2h).\n"
"query lists active and pending silences (with --expired, the expired ones)\n"
"whose matchers pass the filter, as amtool silence query does; -q prints\n"
"only their ids.  `list` is `query` with no filter.\n");
}

/* An RFC 3339 UTC time into *ms; -1 (said) when it is not one. */
static int utc_time(const char *opt, const char *s, uint64_t *ms)
{
	size_t n = strlen(s);

	*ms = alert_parse_time(s);
	if (!*ms || !n || (s[n - 1] != 'Z' && strcmp(s + (n > 6 ? n - 6 : 0), "+00:00"))) {
		fprintf(stderr, "faultline silence: %s: '%s' is not an RFC 3339 UTC time "
			"(2026-12-04T15:00:00Z)\n", opt, s);
		return -1;
	}
	return 0;
}

static void print_silence(const struct silence *s, uint64_t now)
{
	char t1[40], t2[40];

	printf("%-20s %-8s %s .. %s  ", s->id,
	       now >= s->ends_ms ? "expired" : now < s->starts_ms ? "pending" : "active",
	       alert_format_time(s->starts_ms, t1, sizeof(t1)),
	       alert_format_time(s->ends_ms, t2, sizeof(t2)));
	for (int k = 0; k < s->nm; k++) {
		char m[SILENCE_MATCHER_TEXT];

		matcher_format(&s->m[k], m, sizeof(m));
		printf("%s%s", k ? "," : "", m);
	}
	printf("  %s%s%s\n", s->created_by, s->created_by[0] ? ": " : "", s->comment);
}

struct silence_args {
	const char *url;
	uint64_t duration_ns, start_ms, end_ms;
	int has_duration, expired, quiet;
	const char *comment, *author;
	struct matcher m[SILENCE_MAX_MATCHERS];
	int nm;
	char **ids;
	int nids;
};

static int add_matchers(struct silence_args *a, const char *spec)
{
	char err[600];
	int n = matchers_parse(a->m + a->nm, SILENCE_MAX_MATCHERS - a->nm, spec, err, sizeof(err));

	if (n < 0) {
		fprintf(stderr, "faultline silence: %s%s\n", err, a->nm + 1 > SILENCE_MAX_MATCHERS ||
			strstr(err, "more than") ? " (a silence takes at most 16)" : "");
		return -1;
	}
	a->nm += n;
	return 0;
}

/* argv (after the subcommand) into a; 0, or the status to exit with. */
static int silence_parse(int argc, char **argv, struct silence_args *a, int takes_matchers)
{
	static const struct option opts[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "match", required_argument, NULL, 'm' },
		{ "for", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 'd' },
		{ "start", required_argument, NULL, 's' },
		{ "end", required_argument, NULL, 'e' },
		{ "comment", required_argument, NULL, 'c' },
		{ "author", required_argument, NULL, 'a' },
		{ "expired", no_argument, NULL, 'x' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	optind = 1;
	while (optind < argc) {
		/* options and arguments in any order, as amtool takes them */
		c = getopt_long(argc, argv, "+r:m:d:c:a:qh", opts, NULL);
		if (c == -1) {
			const char *arg = argv[optind++];

			if (!arg || !strcmp(arg, "--"))
				continue;
			if (takes_matchers && strpbrk(arg, "=!~")) {
				if (add_matchers(a, arg))
					return 2;
			} else {
				a->ids[a->nids++] = (char *)arg;
			}
			continue;
		}
		switch (c) {
		case 'r': a->url = optarg; break;
		case 'm':
			if (add_matchers(a, optarg))
				return 2;
			break;
		case 'd':
			if (duration_parse(optarg, &a->duration_ns) || !a->duration_ns) {
				fprintf(stderr, "faultline silence: --duration: '%s' is not a "
					"duration above 0 (90s, 30m, 2h, 1d)\n", optarg);
				return 2;
			}
			a->has_duration = 1;
			break;
		case 's':
			if (utc_time("--start", optarg, &a->start_ms))
				return 2;
			break;
		case 'e':
			if (utc_time("--end", optarg, &a->end_ms))
				return 2;
			break;
		case 'c': a->comment = optarg; break;
		case 'a': a->author = optarg; break;
		case 'x': a->expired = 1; break;
		case 'q': a->quiet = 1; break;
		case 'h': silence_usage(stdout); return 0;
		default: silence_usage(stderr); return 2;
		}
	}
	if (a->has_duration && a->end_ms) {
		fprintf(stderr, "faultline silence: --duration and --end: give one\n");
		return 2;
	}
	return -1;
}

static int silence_add_cmd(struct conn *rc, struct silence_args *a, uint64_t now)
{
	struct silence s = { 0 };
	char err[600];

	if (!a->nm || a->nids) {
		fprintf(stderr, "faultline silence add: %s\n", a->nids ? "an argument that is not "
			"a matcher (NAME=VALUE, NAME=~REGEX, ...)" : "give at least one matcher");
		return 2;
	}
	memcpy(s.m, a->m, sizeof(s.m));
	s.nm = a->nm;
	s.starts_ms = a->start_ms ? a->start_ms : now;
	s.ends_ms = a->end_ms ? a->end_ms : s.starts_ms + (a->has_duration ? a->duration_ns :
							    2 * 3600 * NSEC_PER_SEC) / NSEC_PER_MSEC;
	if (s.ends_ms <= s.starts_ms || s.ends_ms <= now) {
		fprintf(stderr, "faultline silence add: it would end before it starts, or in the "
			"past\n");
		return 2;
	}
	snprintf(s.comment, sizeof(s.comment), "%s", a->comment ? a->comment : "");
	snprintf(s.created_by, sizeof(s.created_by), "%s", a->author ? a->author :
		 getenv("USER") ? getenv("USER") : "");
	if (a->comment && strlen(a->comment) >= sizeof(s.comment)) {
		fprintf(stderr, "faultline silence add: --comment is longer than %zu bytes\n",
			sizeof(s.comment) - 1);
		return 2;
	}
	if (silence_add(rc, &s, err, sizeof(err))) {
		fprintf(stderr, "faultline silence: %s\n", err);
		return 1;
	}
	printf("%s\n", s.id);
	return 0;
}

static int silence_update_cmd(struct conn *rc, struct silence_args *a, uint64_t now)
{
	struct silence s;
	char err[600];
	int ret;

	if (a->nids != 1 || a->nm) {
		fprintf(stderr, "faultline silence update: give one ID (matchers cannot change: "
			"expire it and add another)\n");
		return 2;
	}
	if ((ret = silence_get(rc, a->ids[0], &s, err, sizeof(err)))) {
		fprintf(stderr, "faultline silence: %s\n", err);
		return 1;
	}
	if (a->start_ms) {
		if (s.starts_ms <= now) {
			fprintf(stderr, "faultline silence update: %s has started; its start cannot "
				"move\n", s.id);
			ret = 2;
			goto out;
		}
		s.starts_ms = a->start_ms;
	}
	if (a->end_ms)
		s.ends_ms = a->end_ms;
	if (a->has_duration)
		s.ends_ms = (s.starts_ms > now ? s.starts_ms : now) + a->duration_ns / NSEC_PER_MSEC;
	if (a->comment)
		snprintf(s.comment, sizeof(s.comment), "%s", a->comment);
	if (s.ends_ms <= s.starts_ms) {
		fprintf(stderr, "faultline silence update: it would end before it starts\n");
		ret = 2;
		goto out;
	}
	ret = silence_put(rc, &s, err, sizeof(err)) ? 1 : 0;
	if (ret)
		fprintf(stderr, "faultline silence: %s\n", err);
	else
		printf("%s\n", s.id);
out:
	for (int i = 0; i < s.nm; i++)
		matcher_free(&s.m[i]);
	return ret;
}

static int silence_query_cmd(struct conn *rc, struct silence_args *a, uint64_t now)
{
	struct silence *all;
	char err[600];
	int n = silence_load(rc, &all, err, sizeof(err));

	if (n < 0) {
		fprintf(stderr, "faultline silence: %s\n", err);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		if ((now >= all[i].ends_ms) != !!a->expired ||
		    !silence_matches_filter(&all[i], a->m, a->nm))
			continue;
		if (a->quiet)
			printf("%s\n", all[i].id);
		else
			print_silence(&all[i], now);
	}
	silence_free_all(all, n);
	return 0;
}

int cmd_silence(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	struct silence_args a = { .url = "unix:///run/faultline/redis.sock" };
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	struct conn *rc;
	char err[512];
	int ret, matchers;

	if (help_asked(argc, argv) || (strcmp(sub, "add") && strcmp(sub, "update") &&
				       strcmp(sub, "query") && strcmp(sub, "list") &&
				       strcmp(sub, "expire"))) {
		int help = help_asked(argc, argv);

		if (!help && sub[0])
			fprintf(stderr, "faultline silence: unknown subcommand '%s'\n", sub);
		silence_usage(help ? stdout : stderr);
		return help ? 0 : 2;
	}
	a.ids = calloc((size_t)argc + 1, sizeof(*a.ids));
	if (!a.ids)
		return 1;
	matchers = !strcmp(sub, "add") || !strcmp(sub, "query") || !strcmp(sub, "list");
	ret = silence_parse(argc - 1, argv + 1, &a, matchers);
	if (ret >= 0)
		goto out;
	if (!strcmp(sub, "expire") && !a.nids) {
		fprintf(stderr, "faultline silence expire: give the ID(s) to expire\n");
		ret = 2;
		goto out;
	}
	if ((!strcmp(sub, "query") || !strcmp(sub, "list")) && a.nids) {
		fprintf(stderr, "faultline silence %s: '%s' is not a matcher\n", sub, a.ids[0]);
		ret = 2;
		goto out;
	}
	rc = conn_open(a.url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline silence: %s\n", err);
		ret = 1;
		goto out;
	}
	if (!strcmp(sub, "add")) {
		ret = silence_add_cmd(rc, &a, now);
	} else if (!strcmp(sub, "update")) {
		ret = silence_update_cmd(rc, &a, now);
	} else if (!strcmp(sub, "expire")) {
		ret = 0;
		for (int i = 0; i < a.nids; i++)
			if (silence_expire(rc, a.ids[i], err, sizeof(err))) {
				fprintf(stderr, "faultline silence: %s\n", err);
				ret = 1;
			}
	} else {
		ret = silence_query_cmd(rc, &a, now);
	}
	conn_close(rc);
out:
	for (int i = 0; i < a.nm; i++)
		matcher_free(&a.m[i]);
	free(a.ids);
	return ret;
}
