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
#include "store/host_usage.h"

/*
 * The retention keys of probe.yaml and their defaults there (test_cli
 * holds them to `faultline-probe --print-config`); io10 and iowait10 follow
 * p10, as retention.p10 says.
 */
#define USAGE_KEYS 5
static const char *const retention_keys[USAGE_KEYS] = { "s1", "s60", "s3600", "p10", "p3600" };
#define USAGE_DEFAULTS "s1=15m,s60=1d,s3600=90d,p10=1h,p3600=7d"

static const char usage_help[] =
"Usage: faultline usage [HOST...] [--retention LIST] [--json] [--redis URL]\n\n"
"What each HOST (default: this host's name) costs in Redis, stream by stream:\n"
"its entries and chunks now (MEMORY USAGE), what an entry and a point in a\n"
"chunk cost, and the bytes it would hold at the retention in steady state\n"
"(the span under way as entries, the rest as chunks).  Every chunk of the\n"
"host is read and decoded to count its points.\n\n"
"  --retention LIST  NAME=DUR,... for s1, s60, s3600, p10 (also io10 and\n"
"                    iowait10), p3600: the probes' retention: (default\n"
"                    " USAGE_DEFAULTS ", the probe's defaults)\n"
"  --json            one JSON object per host, in an array\n"
"  --redis URL       default unix:///run/faultline/redis.sock\n\n"
"basis: b = both costs measured; e = no chunk yet, all of the retention at\n"
"an entry's cost (an upper bound); c = no entry, all at a chunk point's\n"
"cost; - = nothing stored.\n";

static uint64_t retention_of(const uint64_t *ret_ns, int k)
{
	static const int key_of[USAGE_STREAMS] = { 0, 1, 2, 3, 4, 3, 3 };

	return ret_ns[key_of[k]] / 1000000;
}

static void print_table(const char *host, const struct host_usage *u, const uint64_t *ret_ns)
{
	double now = 0, at = 0;
	char dur[32], empty[128] = "";

	printf("%-9s %9s %9s %9s %7s %8s %8s %9s %11s %5s\n", "stream", "retention", "entries",
	       "B/entry", "chunks", "points", "B/point", "now MB", "at ret. MB", "basis");
	for (int k = 0; k < USAGE_STREAMS; k++) {
		const struct stream_usage *s = &u->s[k];
		uint64_t r = retention_of(ret_ns, k);
		char basis;
		double a = stream_usage_at(s, r, &basis);

		now += (double)(s->entry_bytes + s->chunk_bytes);
		at += a;
		if (basis == '-')
			snprintf(empty + strlen(empty), sizeof(empty) - strlen(empty), "%s%s",
				 empty[0] ? ", " : "", usage_stream_name(k));
		printf("%-9s %9s %9llu %9.0f %7llu %8llu %8.0f %9.3f %11.3f %5c\n",
		       usage_stream_name(k), duration_format(r * 1000000, dur, sizeof(dur)),
		       (unsigned long long)s->entries,
		       s->entries ? (double)s->entry_bytes / (double)s->entries : 0,
		       (unsigned long long)s->chunks, (unsigned long long)s->chunk_points,
		       s->chunk_points ? (double)s->chunk_bytes / (double)s->chunk_points : 0,
		       (double)(s->entry_bytes + s->chunk_bytes) / 1e6, a / 1e6, basis);
		if (s->bad_chunks)
			printf("  (%llu chunk(s) of %s did not decode: their bytes are counted, "
			       "their points are not)\n", (unsigned long long)s->bad_chunks,
			       usage_stream_name(k));
	}
	now += (double)u->other_bytes;
	at += (double)u->other_bytes;
	printf("%-9s %9s %9llu %9s %7s %8s %8s %9.3f %11.3f\n", "other", "kept",
	       (unsigned long long)u->other_keys, "", "", "", "", (double)u->other_bytes / 1e6,
	       (double)u->other_bytes / 1e6);
	printf("host %s: %.2f MB in Redis now, %.2f MB at this retention\n", host, now / 1e6,
	       at / 1e6);
	if (empty[0])
		printf("(nothing stored yet in %s: not in the total)\n", empty);
}

static json_object *host_json(const char *host, const struct host_usage *u,
			      const uint64_t *ret_ns)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	double now = 0, at = 0;

	json_object_object_add(o, "host", json_object_new_string(host));
	for (int k = 0; k < USAGE_STREAMS; k++) {
		const struct stream_usage *s = &u->s[k];
		json_object *j = json_object_new_object();
		uint64_t r = retention_of(ret_ns, k);
		char basis[2] = "";
		double a = stream_usage_at(s, r, basis);

		now += (double)(s->entry_bytes + s->chunk_bytes);
		at += a;
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
		json_object_object_add(j, "bytes_at_retention", json_object_new_int64((int64_t)a));
		json_object_object_add(j, "basis", json_object_new_string(basis));
		json_object_array_add(arr, j);
	}
	now += (double)u->other_bytes;
	at += (double)u->other_bytes;
	json_object_object_add(o, "streams", arr);
	json_object_object_add(o, "other_bytes", json_object_new_int64((int64_t)u->other_bytes));
	json_object_object_add(o, "bytes_now", json_object_new_int64((int64_t)now));
	json_object_object_add(o, "bytes_at_retention", json_object_new_int64((int64_t)at));
	return o;
}

int cmd_usage(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "retention", required_argument, NULL, 'E' },
		{ "json", no_argument, NULL, 'j' },
		{ "redis", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *url = "unix:///run/faultline/redis.sock";
	uint64_t ret_ns[USAGE_KEYS];
	char err[512], self[256] = "";
	json_object *all = NULL;
	struct conn *rc;
	int c, json = 0, rcode = 0;

	if (help_asked(argc, argv)) {
		fputs(usage_help, stdout);
		return 0;
	}
	if (duration_list_parse(USAGE_DEFAULTS, retention_keys, USAGE_KEYS, ret_ns, err,
				sizeof(err)))
		return 1;	/* a bug: the defaults are a constant */
	while ((c = getopt_long(argc, argv, "r:h", opts, NULL)) != -1) {
		switch (c) {
		case 'E':
			if (duration_list_parse(optarg, retention_keys, USAGE_KEYS, ret_ns, err,
						sizeof(err))) {
				fprintf(stderr, "faultline usage: --retention %s\n", err);
				return 2;
			}
			break;
		case 'j': json = 1; break;
		case 'r': url = optarg; break;
		default:
			fprintf(stderr, "faultline usage: see --help\n");
			return 2;
		}
	}
	rc = conn_open(url, 5 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline usage: %s\n", err);
		return 1;
	}
	if (optind == argc)
		gethostname(self, sizeof(self) - 1);
	if (json)
		all = json_object_new_array();
	for (int i = optind; i < argc || (i == optind && self[0]); i++) {
		const char *host = i < argc ? argv[i] : self;
		struct host_usage u;

		if (host_usage_read(rc, host, &u, err, sizeof(err))) {
			fprintf(stderr, "faultline usage: host %s: %s\n", host, err);
			rcode = 1;
			break;
		}
		if (json) {
			json_object_array_add(all, host_json(host, &u, ret_ns));
		} else {
			if (i > optind)
				putchar('\n');
			print_table(host, &u, ret_ns);
		}
	}
	if (json) {
		if (!rcode)
			puts(json_object_to_json_string_ext(all, JSON_C_TO_STRING_PRETTY |
								  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(all);
	}
	conn_close(rc);
	return rcode;
}
