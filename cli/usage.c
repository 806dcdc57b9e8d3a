/*
 * usage.c - `faultline usage`: what hosts cost in Redis, stream by stream,
 * now and at a retention (store/host_usage.h), as a table or JSON.
 *
 * The question an owner asks before buying RAM ("what does a host cost at
 * the retention we want?") has an answer only from a host's own data: how
 * many series it has, how many stacks its profiles hold.  This measures it
 * on the hosts given and projects it, instead of a sizing table's guess.
 */
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/timeutil.h"
#include "store/conn.h"
#include "store/host_registry.h"
#include "store/host_usage.h"

/*
 * The retention keys of probe.yaml and their defaults there (test_cli
 * holds them to `faultline-probe --print-config`); io10 and iowait10 follow
 * p10, as retention.p10 says.
 */
#define USAGE_DEFAULTS "s1=15m,s60=1d,s3600=7d,p10=1h,p3600=7d"

static const char usage_help[] =
"Usage: faultline usage [HOST... | --all [--sample N]] [--retention LIST] [--json]\n"
"                       [--redis URL]\n\n"
"What each HOST (default: this host's name) costs in Redis, stream by stream:\n"
"its entries and chunks now (MEMORY USAGE), what an entry and a point in a\n"
"chunk cost, and the bytes it would hold at the retention in steady state\n"
"(the span under way as entries, the rest as chunks).  Every chunk of the\n"
"host is read and decoded to count its points.\n\n"
"  --retention LIST  NAME=DUR,... for s1, s60, s3600, p10 (also io10 and\n"
"                    iowait10), p3600: the probes' retention: (default\n"
"                    " USAGE_DEFAULTS ", the probe's defaults)\n"
"  --all             every registered host: per stream the mean and the\n"
"                    largest a host costs, a host's p50, p90 and max, and\n"
"                    the fleet's total (hosts x the mean)\n"
"  --sample N        with --all, measure N hosts spread over the names\n"
"                    (every k-th) and scale the total to all of them\n"
"  --json            one JSON object per host, in an array (with --all, the\n"
"                    fleet's summary as one object)\n"
"  --redis URL       default unix:///run/faultline/redis.sock\n\n"
"basis: b = both costs measured; e = no chunk yet, all of the retention at\n"
"an entry's cost (an upper bound); c = no entry, all at a chunk point's\n"
"cost; y = chunks under half a span on average (a probe's first day of\n"
"hourly profiles), their cost a point an upper bound; - = nothing stored.\n";

static uint64_t retention_of(const uint64_t *ret_ns, int k)
{
	return ret_ns[usage_stream_retention_key(k)] / 1000000;
}

/* Host u projected at the retention: each stream's bytes and basis, and the totals. */
struct projection {
	double at[USAGE_STREAMS];
	char basis[USAGE_STREAMS];
	double now, total;	/* in Redis now, and at the retention (the rest included) */
};

static void project(const struct host_usage *u, const uint64_t *ret_ns, struct projection *p)
{
	p->now = p->total = (double)u->other_bytes;
	for (int k = 0; k < USAGE_STREAMS; k++) {
		p->at[k] = stream_usage_at(&u->s[k], retention_of(ret_ns, k), &p->basis[k]);
		p->now += (double)(u->s[k].entry_bytes + u->s[k].chunk_bytes);
		p->total += p->at[k];
	}
}

static void print_table(const char *host, const struct host_usage *u, const uint64_t *ret_ns)
{
	struct projection pj;
	char dur[32], empty[128] = "", young[128] = "";

	project(u, ret_ns, &pj);

	printf("%-9s %9s %9s %9s %7s %8s %8s %9s %11s %5s\n", "stream", "retention", "entries",
	       "B/entry", "chunks", "points", "B/point", "now MB", "at ret. MB", "basis");
	for (int k = 0; k < USAGE_STREAMS; k++) {
		const struct stream_usage *s = &u->s[k];
		uint64_t r = retention_of(ret_ns, k);

		if (pj.basis[k] == '-')
			snprintf(empty + strlen(empty), sizeof(empty) - strlen(empty), "%s%s",
				 empty[0] ? ", " : "", usage_stream_name(k));
		if (pj.basis[k] == 'y')
			snprintf(young + strlen(young), sizeof(young) - strlen(young),
				 "%s%s (%llu of %llu points a span)", young[0] ? ", " : "",
				 usage_stream_name(k),
				 (unsigned long long)(s->chunk_points / s->chunks),
				 (unsigned long long)(s->span_ms / s->step_ms));
		printf("%-9s %9s %9llu %9.0f %7llu %8llu %8.0f %9.3f %11.3f %5c\n",
		       usage_stream_name(k), duration_format(r * 1000000, dur, sizeof(dur)),
		       (unsigned long long)s->entries,
		       s->entries ? (double)s->entry_bytes / (double)s->entries : 0,
		       (unsigned long long)s->chunks, (unsigned long long)s->chunk_points,
		       s->chunk_points ? (double)s->chunk_bytes / (double)s->chunk_points : 0,
		       (double)(s->entry_bytes + s->chunk_bytes) / 1e6, pj.at[k] / 1e6,
		       pj.basis[k]);
		if (s->bad_chunks)
			printf("  (%llu chunk(s) of %s did not decode: their bytes are counted, "
			       "their points are not)\n", (unsigned long long)s->bad_chunks,
			       usage_stream_name(k));
	}
	printf("%-9s %9s %9llu %9s %7s %8s %8s %9.3f %11.3f\n", "other", "kept",
	       (unsigned long long)u->other_keys, "", "", "", "", (double)u->other_bytes / 1e6,
	       (double)u->other_bytes / 1e6);
	printf("host %s: %.2f MB in Redis now, %.2f MB at this retention\n", host, pj.now / 1e6,
	       pj.total / 1e6);
	if (empty[0])
		printf("(nothing stored yet in %s: not in the total)\n", empty);
	if (young[0])
		printf("(young chunks in %s: projected from them, an upper bound; measure "
		       "again once they hold whole spans)\n", young);
}

static json_object *host_json(const char *host, const struct host_usage *u,
			      const uint64_t *ret_ns)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	struct projection pj;

	project(u, ret_ns, &pj);
	json_object_object_add(o, "host", json_object_new_string(host));
	for (int k = 0; k < USAGE_STREAMS; k++) {
		const struct stream_usage *s = &u->s[k];
		json_object *j = json_object_new_object();
		uint64_t r = retention_of(ret_ns, k);
		char basis[2] = { pj.basis[k], '\0' };
		json_object_object_add(j, "stream", json_object_new_string(usage_stream_name(k)));
		json_object_object_add(j, "retention_ms", json_object_new_int64((int64_t)r));
		json_object_object_add(j, "step_ms", json_object_new_int64((int64_t)s->step_ms));
		json_object_object_add(j, "span_ms", json_object_new_int64((int64_t)s->span_ms));
		json_object_object_add(j, "entries", json_object_new_int64((int64_t)s->entries));
		json_object_object_add(j, "entry_bytes",
				       json_object_new_int64((int64_t)s->entry_bytes));
		json_object_object_add(j, "chunks", json_object_new_int64((int64_t)s->chunks));
		json_object_object_add(j, "chunk_points",
				       json_object_new_int64((int64_t)s->chunk_points));
		json_object_object_add(j, "chunk_bytes",
				       json_object_new_int64((int64_t)s->chunk_bytes));
		json_object_object_add(j, "bad_chunks", json_object_new_int64((int64_t)s->bad_chunks));
		json_object_object_add(j, "bytes_at_retention",
				       json_object_new_int64((int64_t)pj.at[k]));
		json_object_object_add(j, "basis", json_object_new_string(basis));
		json_object_array_add(arr, j);
	}
	json_object_object_add(o, "streams", arr);
	json_object_object_add(o, "other_bytes", json_object_new_int64((int64_t)u->other_bytes));
	json_object_object_add(o, "bytes_now", json_object_new_int64((int64_t)pj.now));
	json_object_object_add(o, "bytes_at_retention", json_object_new_int64((int64_t)pj.total));
	return o;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* What a fleet of nhosts costs, from the measured hosts' projections. */
struct fleet {
	size_t nhosts, measured;
	double sum[USAGE_STREAMS + 1], max[USAGE_STREAMS + 1];	/* [USAGE_STREAMS]: other */
	double *totals;		/* each measured host's total at the retention */
};

static void fleet_add(struct fleet *f, const struct host_usage *u, const uint64_t *ret_ns)
{
	struct projection pj;

	project(u, ret_ns, &pj);
	for (int k = 0; k <= USAGE_STREAMS; k++) {
		double a = k < USAGE_STREAMS ? pj.at[k] : (double)u->other_bytes;

		f->sum[k] += a;
		if (a > f->max[k])
			f->max[k] = a;
	}
	f->totals[f->measured++] = pj.total;
}

static double pct(const double *sorted, size_t n, double q)
{
	return n ? sorted[(size_t)(q * (double)(n - 1) + 0.5)] : 0;
}

static void fleet_print(struct fleet *f, const uint64_t *ret_ns, int json)
{
	double mean = 0, n = f->measured ? (double)f->measured : 1;
	char dur[32];

	qsort(f->totals, f->measured, sizeof(*f->totals), cmp_double);
	for (size_t i = 0; i < f->measured; i++)
		mean += f->totals[i] / n;
	if (json) {
		json_object *o = json_object_new_object(), *arr = json_object_new_array();

		json_object_object_add(o, "hosts", json_object_new_int64((int64_t)f->nhosts));
		json_object_object_add(o, "measured", json_object_new_int64((int64_t)f->measured));
		for (int k = 0; k <= USAGE_STREAMS; k++) {
			json_object *j = json_object_new_object();

			json_object_object_add(j, "stream", json_object_new_string(
				k < USAGE_STREAMS ? usage_stream_name(k) : "other"));
			json_object_object_add(j, "mean_bytes_at_retention",
					       json_object_new_int64((int64_t)(f->sum[k] / n)));
			json_object_object_add(j, "max_bytes_at_retention",
					       json_object_new_int64((int64_t)f->max[k]));
			json_object_array_add(arr, j);
		}
		json_object_object_add(o, "streams", arr);
		json_object_object_add(o, "host_p50_bytes",
				       json_object_new_int64((int64_t)pct(f->totals, f->measured, 0.5)));
		json_object_object_add(o, "host_p90_bytes",
				       json_object_new_int64((int64_t)pct(f->totals, f->measured, 0.9)));
		json_object_object_add(o, "host_max_bytes",
				       json_object_new_int64((int64_t)pct(f->totals, f->measured, 1)));
		json_object_object_add(o, "fleet_bytes_at_retention",
				       json_object_new_int64((int64_t)(mean * (double)f->nhosts)));
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY));
		json_object_put(o);
		return;
	}
	printf("fleet: %zu host(s) registered, %zu measured\n", f->nhosts, f->measured);
	printf("%-9s %9s %13s %12s\n", "stream", "retention", "mean MB/host", "max MB/host");
	for (int k = 0; k <= USAGE_STREAMS; k++)
		printf("%-9s %9s %13.3f %12.3f\n", k < USAGE_STREAMS ? usage_stream_name(k) : "other",
		       k < USAGE_STREAMS ? duration_format(retention_of(ret_ns, k) * 1000000, dur,
							   sizeof(dur)) : "kept",
		       f->sum[k] / n / 1e6, f->max[k] / 1e6);
	printf("a host at this retention: p50 %.2f MB, p90 %.2f MB, max %.2f MB; the fleet: "
	       "%.2f GB (%zu host(s) x the mean %.2f MB)\n", pct(f->totals, f->measured, 0.5) / 1e6,
	       pct(f->totals, f->measured, 0.9) / 1e6, pct(f->totals, f->measured, 1) / 1e6,
	       mean * (double)f->nhosts / 1e9, f->nhosts, mean / 1e6);
}

int cmd_usage(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "retention", required_argument, NULL, 'E' },
		{ "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },
		{ "sample", required_argument, NULL, 's' },
		{ "redis", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *url = "unix:///run/faultline/redis.sock";
	uint64_t ret_ns[USAGE_RETENTION_KEYS];
	char err[512], self[256] = "";
	json_object *all = NULL;
	struct fleet fleet = { 0 };
	struct conn *rc;
	char **hosts = NULL, *end, *self_list[1] = { self };
	size_t nhosts = 0, sample = 0, step = 1;
	char **names;		/* the hosts measured: the registry's, argv's or this one */
	size_t nnames;
	int c, json = 0, every = 0, rcode = 0;

	if (help_asked(argc, argv)) {
		fputs(usage_help, stdout);
		return 0;
	}
	if (duration_list_parse(USAGE_DEFAULTS, usage_retention_keys, USAGE_RETENTION_KEYS,
				ret_ns, err, sizeof(err)))
		return 1;	/* a bug: the defaults are a constant */
	while ((c = getopt_long(argc, argv, "r:h", opts, NULL)) != -1) {
		switch (c) {
		case 'E':
			if (duration_list_parse(optarg, usage_retention_keys,
						USAGE_RETENTION_KEYS, ret_ns, err, sizeof(err))) {
				fprintf(stderr, "faultline usage: --retention %s\n", err);
				return 2;
			}
			break;
		case 'j': json = 1; break;
		case 'a': every = 1; break;
		case 's':
			sample = strtoul(optarg, &end, 10);
			if (!*optarg || *end || !sample) {
				fprintf(stderr, "faultline usage: --sample '%s': expected a number of "
					"hosts (1 or more)\n", optarg);
				return 2;
			}
			break;
		case 'r': url = optarg; break;
		default:
			fprintf(stderr, "faultline usage: see --help\n");
			return 2;
		}
	}
	if (sample && !every) {
		fprintf(stderr, "faultline usage: --sample goes with --all\n");
		return 2;
	}
	if (every && optind < argc) {
		fprintf(stderr, "faultline usage: --all measures the registered hosts: name no "
			"HOST with it\n");
		return 2;
	}
	rc = conn_open(url, 5 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline usage: %s\n", err);
		return 1;
	}
	if (every) {
		if (store_host_names(rc, &hosts, &nhosts, err, sizeof(err))) {
			fprintf(stderr, "faultline usage: listing the hosts: %s\n", err);
			conn_close(rc);
			return 1;
		}
		/* a sample spread over the names: every step-th */
		if (sample && sample < nhosts)
			step = (nhosts + sample - 1) / sample;
		fleet.nhosts = nhosts;
		fleet.totals = calloc(nhosts + 1, sizeof(*fleet.totals));
		if (!fleet.totals) {
			fprintf(stderr, "faultline usage: out of memory\n");
			rcode = 1;
		}
	} else if (optind == argc) {
		gethostname(self, sizeof(self) - 1);
	}
	if (every) {
		names = hosts;
		nnames = nhosts;
	} else if (optind < argc) {
		names = argv + optind;
		nnames = (size_t)(argc - optind);
	} else {
		names = self_list;
		nnames = 1;
	}
	if (json && !every)
		all = json_object_new_array();
	for (size_t i = 0; !rcode && i < nnames; i += step) {
		const char *host = names[i];
		struct host_usage u;

		if (host_usage_read(rc, host, &u, err, sizeof(err))) {
			fprintf(stderr, "faultline usage: host %s: %s\n", host, err);
			rcode = 1;
			break;
		}
		if (every) {
			fleet_add(&fleet, &u, ret_ns);
			if (isatty(STDERR_FILENO) && fleet.measured % 50 == 0)
				fprintf(stderr, "\rfaultline usage: %zu host(s) measured...",
					fleet.measured);
		} else if (json) {
			json_object_array_add(all, host_json(host, &u, ret_ns));
		} else {
			if (i > 0)
				putchar('\n');
			print_table(host, &u, ret_ns);
		}
	}
	if (every && isatty(STDERR_FILENO) && fleet.measured >= 50)
		fputc('\n', stderr);
	if (every && !rcode)
		fleet_print(&fleet, ret_ns, json);
	if (all) {
		if (!rcode)
			puts(json_object_to_json_string_ext(all, JSON_C_TO_STRING_PRETTY |
								  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(all);
	}
	free(fleet.totals);
	store_host_names_free(hosts, nhosts);
	conn_close(rc);
	return rcode;
}
