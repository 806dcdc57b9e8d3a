/*
 * deploy.c - `faultline deploy mark|rollback|list`: deploy markers (lib/store/deploy.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "store/conn.h"
#include "store/deploy.h"
#include "store/silence.h"
#include "core/timeutil.h"
#include "cli/cli.h"

/* ---- deploy ------------------------------------------------------------- */

/* The baseline verdicts stored for the markers, sorted by marker id for print_deploy. */
struct verdict_line {
	char id[32];
	char *line;			/* "RULE: verdict [in FUNCTION] [(other deploys ...)]" */
};

struct verdicts {
	struct verdict_line *v;
	int n, cap;
};

static void keep_verdict(const struct deploy_verdict *v, void *arg)
{
	struct verdicts *vs = arg;
	char line[1200];

	snprintf(line, sizeof(line), "%s: %s%s%s%s%s%s", v->rule, v->verdict,
		 v->function[0] ? " in " : "", v->function,
		 v->by[0] ? " (other deploys on its hosts: " : "", v->by, v->by[0] ? ")" : "");
	if (ARRAY_GROW(vs->v, vs->cap, vs->n + 1, 16))
		return;
	snprintf(vs->v[vs->n].id, sizeof(vs->v[0].id), "%s", v->id);
	if ((vs->v[vs->n].line = strdup(line)))
		vs->n++;
}

static int verdict_line_cmp(const void *a, const void *b)
{
	const struct verdict_line *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	return c ? c : strcmp(x->line, y->line);
}

static int print_deploy(const struct deploy *d, void *arg)
{
	const struct verdicts *vs = arg;
	int lo = 0, hi = vs ? vs->n : 0;
	char t[40];

	printf("%-18s %s  %-8s %-20s %-16s hosts=%s  by=%s\n", d->id,
	       alert_format_time(d->ts_ms, t, sizeof(t)), d->rollback ? "rollback" : "deploy",
	       d->service, d->version, d->hosts, d->by[0] ? d->by : "-");
	while (lo < hi) {	/* the first verdict of d */
		int mid = lo + (hi - lo) / 2;

		if (strcmp(vs->v[mid].id, d->id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; vs && lo < vs->n && !strcmp(vs->v[lo].id, d->id); lo++)
		printf("    verdict %s\n", vs->v[lo].line);
	return 0;
}

int cmd_deploy(int argc, char **argv)
{
	const char *url = "unix:///run/faultline/redis.sock", *sub = argc > 1 ? argv[1] : "";
	const char *service = NULL;
	struct deploy d = { 0 };
	uint64_t since = 7ULL * 24 * 3600 * NSEC_PER_SEC;
	struct conn *rc;
	char err[512];
	int ret = 0, all = 0;

	int help = help_asked(argc, argv);

	int marks = !strcmp(sub, "mark") || !strcmp(sub, "rollback");

	if (help || (!marks && strcmp(sub, "list"))) {
		if (!help && sub[0])
			fprintf(stderr, "faultline deploy: unknown subcommand '%s'\n", sub);
		printf("Usage: faultline deploy mark --service S --version V [--hosts GLOB | --all]\n"
		       "                             [--by WHO] [--redis URL]\n"
		       "       faultline deploy rollback --service S [--version V] [--hosts GLOB | --all]\n"
		       "                             [--by WHO] [--redis URL]\n"
		       "       faultline deploy list [--service S] [--since 7d] [--redis URL]\n\n"
		       "mark: record that service S went to version V on the hosts whose names\n"
		       "match GLOB (fnmatch; --all = \"*\"), now.  Post-deploy comparisons take\n"
		       "their before/after split and their deployed/undeployed peers from these\n"
		       "markers (stream fl:deploys, kept 90 days).  Each service's newest deploy\n"
		       "is judged on its own; its regression page stands until the service's\n"
		       "next deploy or rollback.  Prints the marker's id.\n"
		       "rollback: record that S went back (to V, default \"rollback\"): its\n"
		       "standing regression page resolves; a rollback is not judged.\n"
		       "list: the markers of the last --since (default 7d), oldest first, each with\n"
		       "the verdicts the baseline rules gave it (regression, no regression,\n"
		       "confounded by another deploy on its hosts, too little data).\n");
		return help ? 0 : 2;
	}
	snprintf(d.by, sizeof(d.by), "%s", getenv("USER") ? getenv("USER") : "");
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--redis") && i + 1 < argc)
			url = argv[++i];
		else if (!strcmp(argv[i], "--service") && i + 1 < argc)
			service = argv[++i];
		else if (!strcmp(argv[i], "--version") && i + 1 < argc)
			snprintf(d.version, sizeof(d.version), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--hosts") && i + 1 < argc)
			snprintf(d.hosts, sizeof(d.hosts), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--all"))
			all = 1;
		else if (!strcmp(argv[i], "--by") && i + 1 < argc)
			snprintf(d.by, sizeof(d.by), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--since") && i + 1 < argc) {
			if (duration_parse(argv[++i], &since)) {
				fprintf(stderr, "faultline deploy: --since: expected a duration "
					"(e.g. 7d), got '%s'\n", argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "faultline deploy: unexpected '%s' (try --help)\n", argv[i]);
			return 2;
		}
	}
	if (marks) {
		d.rollback = !strcmp(sub, "rollback");
		if (d.rollback && !d.version[0])
			snprintf(d.version, sizeof(d.version), "rollback");
		if (all && d.hosts[0]) {
			fprintf(stderr, "faultline deploy %s: give --hosts or --all, not both\n", sub);
			return 2;
		}
		if (!d.hosts[0] && !all) {
			fprintf(stderr, "faultline deploy %s: say which hosts: --hosts GLOB or --all\n",
				sub);
			return 2;
		}
		snprintf(d.service, sizeof(d.service), "%s", service ? service : "");
		if (deploy_validate(&d, err, sizeof(err))) {
			fprintf(stderr, "faultline deploy %s: %s (--service, --version)\n", sub, err);
			return 2;
		}
	} else if (strcmp(sub, "list")) {
		fprintf(stderr, "faultline deploy: unknown subcommand '%s' (try --help)\n", sub);
		return 2;
	}
	rc = conn_open(url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline deploy: %s\n", err);
		return 1;
	}
	if (marks) {
		ret = deploy_mark(rc, &d, err, sizeof(err)) ? 1 : 0;
		if (ret)
			fprintf(stderr, "faultline deploy %s: %s\n", sub, err);
		else
			printf("%s\n", d.id);
	} else {
		uint64_t now = time_wall_ns();
		struct verdicts vs = { 0 };
		int n;

		if (deploy_verdicts_read(rc, keep_verdict, &vs, err, sizeof(err)) < 0)
			fprintf(stderr, "faultline deploy list: %s; listing the markers without "
				"their verdicts\n", err);
		qsort(vs.v, (size_t)vs.n, sizeof(*vs.v), verdict_line_cmp);
		n = deploy_list(rc, now > since ? (now - since) / NSEC_PER_MSEC : 0, service,
				print_deploy, &vs, err, sizeof(err));
		for (int i = 0; i < vs.n; i++)
			free(vs.v[i].line);
		free(vs.v);

		if (n < 0) {
			fprintf(stderr, "faultline deploy list: %s\n", err);
			ret = 1;
		} else {
			fprintf(stderr, "%d deploy marker(s)\n", n);
		}
	}
	conn_close(rc);
	return ret;
}
