/*
 * profile.c - `faultline profile`: CPU profiles from Redis as flame graph
 * SVG, pprof, folded stacks, top functions or a diff; `profile burst` asks
 * a host's probe for a high-rate burst.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/conn.h"
#include "store/keyspace.h"
#include "store/profile_store.h"
#include "model/profile_export.h"
#include "core/timeutil.h"
#include "cli/cli.h"

/* ---- profile ------------------------------------------------------------ */

/*
 * A point in time: "now", a duration ago ("10m"), milliseconds since the
 * epoch, or RFC 3339 UTC ("2026-11-30T14:00:00Z").  Returns ms, or 0.
 */
static uint64_t parse_when(const char *s)
{
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC, d;
	struct tm tm = { 0 };
	char *end;

	if (!strcmp(s, "now"))
		return now;
	if (duration_parse(s, &d) == 0)
		return now - d / NSEC_PER_MSEC;
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end && (*end == 'Z' || !*end))
		return (uint64_t)timegm(&tm) * 1000;
	d = strtoull(s, &end, 10);
	return *end ? 0 : d;
}

static int load_range(struct conn *rc, const char *host, int kind, uint64_t from, uint64_t to,
		      const struct profile_scope *scope, struct profile *out)
{
	char err[256];
	size_t bad = 0;
	int n;

	profile_init(out, host);
	n = profile_read_merge(rc, host, kind, from, to, scope, out, &bad,
			       err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "faultline profile: %s\n", err);
		return -1;
	}
	if (bad)
		fprintf(stderr, "faultline profile: skipped %zu windows or chunks that do not "
			"decode\n", bad);
	{
		char key[300];

		key_profile(key, sizeof(key), host, kind);
		fprintf(stderr, "faultline profile: %s: %d windows, %llu samples\n", key, n,
			(unsigned long long)out->total);
	}
	return 0;
}

static int by_flat(const void *a, const void *b)
{
	const struct profile_func *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

/*
 * The n functions with the most CPU as `pprof -top` prints them: flat (the
 * samples they were the leaf of), flat%, sum% (the running total of flat%),
 * cum (the samples they were anywhere on the stack of) and cum%; sorted by
 * flat, or by cum with cum set (`pprof -top -cum`).
 */
static void print_top_functions(const struct profile *p, size_t n, int cum)
{
	struct profile_func *f;
	size_t nf = profile_functions(p, &f);
	double sum = 0;

	if (!cum)
		qsort(f, nf, sizeof(*f), by_flat);	/* profile_functions sorts by total */
	printf("Showing top %zu of %zu functions, %llu samples\n", n < nf ? n : nf, nf,
	       (unsigned long long)p->total);
	printf("%10s %7s %7s %10s %7s  %s\n", "flat", "flat%", "sum%", "cum", "cum%", "function");
	for (size_t i = 0; i < nf && i < n; i++) {
		sum += f[i].self;
		printf("%10.0f %6.2f%% %6.2f%% %10.0f %6.2f%%  %s\n", f[i].self * (double)p->total,
		       100 * f[i].self, 100 * sum, f[i].total * (double)p->total, 100 * f[i].total,
		       f[i].name);
	}
	free(f);
}

int cmd_profile_burst(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "host", required_argument, NULL, 'H' },
		{ "rate", required_argument, NULL, 'R' },
		{ "for", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *url = "unix:///run/faultline/redis.sock";
	unsigned long hz = 199;
	uint64_t dur = 10 * NSEC_PER_SEC;
	struct conn *rc;
	char err[256], host[256] = "", *end;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "r:H:R:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': url = optarg; break;
		case 'H': snprintf(host, sizeof(host), "%s", optarg); break;
		case 'R':
			hz = strtoul(optarg, &end, 10);
			if (*end || hz < 1 || hz > 999) {
				fprintf(stderr, "faultline profile burst: --rate '%s': expected 1..999 "
					"samples per second per CPU\n", optarg);
				return 2;
			}
			break;
		case 'f':
			if (duration_parse(optarg, &dur) || dur < NSEC_PER_SEC) {
				fprintf(stderr, "faultline profile burst: --for '%s': expected a "
					"duration of at least 1s\n", optarg);
				return 2;
			}
			break;
		case 'h':
			printf("Usage: faultline profile burst [--redis URL] [--host NAME] "
			       "[--rate HZ] [--for DUR]\n\n"
			       "Ask the probe of NAME (default: this host) to sample at HZ (default\n"
			       "199, 1..999) for DUR (default 10s), for richer evidence now.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "faultline profile burst: unexpected argument '%s' (try --help)\n",
			argv[optind]);
		return 2;
	}
	if (!host[0])
		gethostname(host, sizeof(host) - 1);
	rc = conn_open(url, NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline profile burst: %s\n", err);
		return 1;
	}
	if (profile_burst_set(rc, host, hz, dur / NSEC_PER_MSEC, err, sizeof(err))) {
		fprintf(stderr, "faultline profile burst: %s\n", err);
		conn_close(rc);
		return 1;
	}
	conn_close(rc);
	fprintf(stderr, "faultline profile burst: %s samples at %lu Hz for %.0f s (within a second)\n",
		host, hz, (double)dur / 1e9);
	return 0;
}

static void profile_usage(void)
{
	printf("Usage: faultline profile [--host H] [--redis URL]\n"
	       "         [--since WHEN] [--until WHEN] | [--around WHEN [--window 10m]]\n"
	       "         [--service S] [--cgroup PATH] [--hourly | --io | --io-wait]\n"
	       "         [-o FILE] [--top N [--cum]]\n"
	       "         [--diff SINCE..UNTIL]\n"
	       "       faultline profile burst [--host H] [--rate 199] [--for 10s]\n\n"
	       "Merge a host's 10 s profile windows (or hourly profiles) from Redis and\n"
	       "write FILE: .svg an interactive flame graph, .folded folded stacks,\n"
	       "anything else gzip'd pprof (`go tool pprof`); -o - prints folded stacks.\n"
	       "--top N prints the N functions with the most CPU as `pprof -top` does:\n"
	       "flat (samples they were the leaf of), flat%%, sum%%, cum (samples they were\n"
	       "on the stack of), cum%%; sorted by flat, or by cum with --cum.\n"
	       "--diff compares against a base range: the table lists the functions whose\n"
	       "CPU share grew or shrank most, and an .svg output is a differential flame\n"
	       "graph (red grew, blue shrank).  WHEN: now, a duration ago (15m), epoch\n"
	       "milliseconds, or 2026-11-30T14:00:00Z.  Default range: the last 10 min.\n"
	       "--service keeps one service's samples (a systemd unit, \"api\" or\n"
	       "\"api.service\", or a process name), --cgroup one cgroup's and those below\n"
	       "it (/faultline-demo: the path in the cpu hierarchy, or in cgroup v2's).\n"
	       "--io reads the I/O stacks instead (profile.io_interval): who submits block\n"
	       "requests and through which path, each stack rooted at [DEVICE OP], counted\n"
	       "in sampled requests; --io-wait where those submitters wait, in microseconds.\n"
	       "burst: sample the host at a high rate for a while (alert evidence).\n");
}

/* What `faultline profile` is asked. */
struct profile_args {
	const char *url, *outpath, *diff;
	struct profile_scope scope;	/* --service, --cgroup */
	char host[256];
	uint64_t from, to, around, window;	/* epoch ms; window ns */
	long top;
	int kind, cum;			/* enum profile_kind */
};

/* argv into a, with the defaults the usage says: -1 to go on, or the exit status. */
static int parse_profile_args(int argc, char **argv, struct profile_args *a)
{
	static const struct option opts[] = {
		{ "redis", required_argument, NULL, 'r' },
		{ "host", required_argument, NULL, 'H' },
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "around", required_argument, NULL, 'a' },
		{ "window", required_argument, NULL, 'w' },
		{ "service", required_argument, NULL, 'S' },
		{ "cgroup", required_argument, NULL, 'g' },
		{ "output", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 't' },
		{ "cum", no_argument, NULL, 'c' },
		{ "diff", required_argument, NULL, 'd' },
		{ "hourly", no_argument, NULL, 'y' },
		{ "io", no_argument, NULL, 'I' },
		{ "io-wait", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end;
	int c;

	*a = (struct profile_args){ .url = "unix:///run/faultline/redis.sock",
				    .window = 10 * 60 * NSEC_PER_SEC };
	while ((c = getopt_long(argc, argv, "r:H:s:u:a:w:S:g:o:t:d:ych", opts, NULL)) != -1) {
		switch (c) {
		case 'r': a->url = optarg; break;
		case 'H': snprintf(a->host, sizeof(a->host), "%s", optarg); break;
		case 's': a->from = parse_when(optarg); break;
		case 'u': a->to = parse_when(optarg); break;
		case 'a': a->around = parse_when(optarg); break;
		case 'w':
			if (duration_parse(optarg, &a->window)) {
				fprintf(stderr, "faultline profile: --window: expected a duration\n");
				return 2;
			}
			break;
		case 'S': a->scope.service = optarg; break;
		case 'g': a->scope.cgroup = optarg; break;
		case 'o': a->outpath = optarg; break;
		case 't':
			a->top = strtol(optarg, &end, 10);
			if (end == optarg || *end || a->top <= 0) {
				fprintf(stderr, "faultline profile: --top: expected a positive number, "
					"not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'c': a->cum = 1; break;
		case 'd': a->diff = optarg; break;
		case 'y': case 'I': case 'W': {
			int kind = c == 'y' ? PROFILE_CPU_HOURLY : c == 'I' ? PROFILE_IO :
				   PROFILE_IO_WAIT;

			if (a->kind && a->kind != kind) {
				fprintf(stderr, "faultline profile: --hourly, --io and --io-wait "
					"each read other profiles: give one\n");
				return 2;
			}
			a->kind = kind;
			break;
		}
		case 'h': profile_usage(); return 0;
		default: return 2;
		}
	}
	if (!a->host[0])
		gethostname(a->host, sizeof(a->host) - 1);
	if (a->around) {
		a->from = a->around - a->window / NSEC_PER_MSEC / 2;
		a->to = a->around + a->window / NSEC_PER_MSEC / 2;
	} else if (!a->from) {
		a->from = time_wall_ns() / NSEC_PER_MSEC - a->window / NSEC_PER_MSEC;
	}
	if (!a->outpath && !a->top && !a->diff)
		a->top = 20;
	if (a->cum && !a->top) {
		fprintf(stderr, "faultline profile: --cum sorts the --top table; with -o or --diff "
			"give --top N too\n");
		return 2;
	}
	return -1;
}

/* --diff SINCE..UNTIL: the base profile.  0, or the exit status (said). */
static int load_base(struct conn *rc, const struct profile_args *a, struct profile *base)
{
	char copy[128], *dots;

	snprintf(copy, sizeof(copy), "%s", a->diff);
	dots = strstr(copy, "..");
	if (!dots) {
		fprintf(stderr, "faultline profile: --diff: expected SINCE..UNTIL, e.g. 2h..1h\n");
		return 2;
	}
	*dots = '\0';
	if (load_range(rc, a->host, a->kind, parse_when(copy), parse_when(dots + 2), &a->scope,
		       base))
		return 1;
	return 0;
}

/* The functions whose share of the CPU changed most from base to p. */
static void print_diff(const struct profile *base, const struct profile *p, long top)
{
	struct profile_delta *d;
	size_t nd = profile_diff(base, p, &d);

	printf("%8s %8s %8s  %s\n", "BASE%", "NOW%", "CHANGE", "FUNCTION");
	for (size_t i = 0; i < nd && i < (size_t)(top ? top : 20); i++)
		printf("%7.2f%% %7.2f%% %+7.2f  %s\n", 100 * d[i].base, 100 * d[i].target,
		       100 * (d[i].target - d[i].base), d[i].name);
	free(d);
}

/* -o FILE: the profile (against base, or NULL) as the file's name says.  The exit status. */
static int write_output(const struct profile_args *a, const struct profile *p,
			const struct profile *base)
{
	char title[400];
	int ret;

	snprintf(title, sizeof(title), "%s CPU%s%s%s%s%s", a->host,
		 a->scope.service ? " (service " : "", a->scope.service ? a->scope.service : "",
		 a->scope.service ? ")" : "", a->scope.cgroup ? " (cgroup " : "",
		 a->scope.cgroup ? a->scope.cgroup : "");
	if (a->scope.cgroup)
		strncat(title, ")", sizeof(title) - strlen(title) - 1);
	ret = profile_export(p, base, a->outpath, title);
	if (ret)
		fprintf(stderr, "faultline profile: cannot write %s: %s\n", a->outpath,
			strerror(-ret));
	else if (strcmp(a->outpath, "-"))
		fprintf(stderr, "faultline profile: wrote %s\n", a->outpath);
	return ret ? 1 : 0;
}

int cmd_profile(int argc, char **argv)
{
	struct profile_args a;
	struct profile p, base;
	struct conn *rc;
	char err[256];
	int ret;

	if (argc > 1 && !strcmp(argv[1], "burst"))
		return cmd_profile_burst(argc - 1, argv + 1);
	if ((ret = parse_profile_args(argc, argv, &a)) >= 0)
		return ret;
	rc = conn_open(a.url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline profile: %s\n", err);
		return 1;
	}
	if (load_range(rc, a.host, a.kind, a.from, a.to, &a.scope, &p)) {
		conn_close(rc);
		return 1;
	}
	ret = a.diff ? load_base(rc, &a, &base) : 0;
	if (ret)
		goto out;
	if (!p.total)
		fprintf(stderr, "faultline profile: no samples for %s in that range (is the probe "
			"running with profile.enabled?)\n", a.host);
	if (a.top)
		print_top_functions(&p, (size_t)a.top, a.cum);
	if (a.diff)
		print_diff(&base, &p, a.top);
	if (a.outpath)
		ret = write_output(&a, &p, a.diff ? &base : NULL);
	if (a.diff)
		profile_free(&base);
out:
	profile_free(&p);
	conn_close(rc);
	return ret;
}
