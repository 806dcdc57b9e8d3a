/*
 * test_lib.c - small library pieces: the retry backoff schedule, growing
 * arrays, the hash map's deletion, masking Redis passwords, the alert
 * event's encoder and decoder agreeing.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "model/alert.h"
#include "store/silence.h"
#include "core/array.h"
#include "core/backoff.h"
#include "core/digest.h"
#include "store/conn.h"
#include "store/store.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "core/jsonc.h"
#include "model/drive.h"
#include "model/host_entry.h"
#include "model/catalog.h"
#include "model/profile.h"
#include "model/profile_span.h"

Test(backoff, alertmanagers_schedule_jittered_and_capped)
{
	struct backoff b;
	uint64_t lo = UINT64_MAX, hi = 0;

	backoff_init(&b, 0, 0);
	/* 0.5 s x 1.5 ... capped at 60 s, as Alertmanager */
	cr_assert_eq(backoff_base(&b, 1), 500 * NSEC_PER_MSEC);
	cr_assert_eq(backoff_base(&b, 2), 750 * NSEC_PER_MSEC);
	cr_assert_eq(backoff_base(&b, 3), 1125 * NSEC_PER_MSEC);
	cr_assert_eq(backoff_base(&b, 12), (uint64_t)(500e6 * 86.49755859375));
	cr_assert_eq(backoff_base(&b, 13), 60 * NSEC_PER_SEC, "the cap is reached at retry 13");
	cr_assert_eq(backoff_base(&b, 100), 60 * NSEC_PER_SEC);
	/* each delay within +-50 % of its base, never above the cap, and spread */
	for (int round = 0; round < 200; round++) {
		backoff_reset(&b);
		for (uint32_t n = 1; n <= 20; n++) {
			uint64_t base = backoff_base(&b, n), d = backoff_next(&b);

			cr_assert_geq(d, base / 2, "retry %u: %llu < half of %llu", n,
				      (unsigned long long)d, (unsigned long long)base);
			cr_assert_leq(d, base + base / 2);
			cr_assert_leq(d, 60 * NSEC_PER_SEC);
			if (n == 1) {
				lo = d < lo ? d : lo;
				hi = d > hi ? d : hi;
			}
		}
	}
	cr_assert_lt(lo, 350 * NSEC_PER_MSEC, "no jitter below the base (%llu)",
		     (unsigned long long)lo);
	cr_assert_gt(hi, 650 * NSEC_PER_MSEC, "no jitter above the base (%llu)",
		     (unsigned long long)hi);
	/* two instances do not retry in lock step */
	struct backoff x, y;
	int same = 0;

	backoff_init(&x, 0, 0);
	backoff_init(&y, 0, 0);
	for (int i = 0; i < 10; i++)
		same += backoff_next(&x) == backoff_next(&y);
	cr_assert_lt(same, 10);
}

Test(array, grows_geometrically_and_fails_without_losing_the_array)
{
	int *v = NULL;
	unsigned char cap = 0;	/* a capacity type that runs out at 255 */
	int *before;

	cr_assert_eq(ARRAY_GROW(v, cap, 1, 16), 0);
	cr_assert_not_null(v);
	cr_assert_eq(cap, 16, "a new array starts at the first size, got %u", cap);
	for (int i = 0; i < 16; i++)
		v[i] = i;
	cr_assert_eq(ARRAY_GROW(v, cap, 16, 16), 0, "room enough: nothing to do");
	cr_assert_eq(cap, 16);
	cr_assert_eq(ARRAY_GROW(v, cap, 17, 16), 0);
	cr_assert_eq(cap, 32, "doubling, got %u", cap);
	cr_assert_eq(ARRAY_GROW(v, cap, 100, 16), 0);
	cr_assert_eq(cap, 128, "doubled until 100 fit, got %u", cap);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(v[i], i, "the elements moved with the array");
	before = v;
	/* 256 elements do not fit an unsigned char: refused, nothing changed */
	cr_assert_eq(ARRAY_GROW(v, cap, 200, 16), -ENOMEM);
	cr_assert_eq(v, before);
	cr_assert_eq(cap, 128);
	free(v);

	size_t big = 0;
	char *c = NULL;

	cr_assert_eq(ARRAY_GROW(c, big, SIZE_MAX / 2 + 2, 1), -ENOMEM,
		     "a size no size_t holds is refused, not wrapped");
	cr_assert_null(c);
	cr_assert_eq(big, 0);
	cr_assert_eq(array_grow_cap(0, 0, 0), 1);
}

Test(strmap, delete_keeps_every_other_key_reachable)
{
	struct strmap m;
	char k[32];
	uint32_t v;

	strmap_init(&m);
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "1733000000000-%d", i);
		cr_assert_eq(strmap_put(&m, k, (uint32_t)i), 0);
	}
	/* delete every third key: the rest keep their values, the deleted are gone */
	for (int i = 0; i < 5000; i += 3) {
		snprintf(k, sizeof(k), "1733000000000-%d", i);
		cr_assert_eq(strmap_del(&m, k), 1);
		cr_assert_eq(strmap_del(&m, k), 0);
	}
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "1733000000000-%d", i);
		if (i % 3 == 0) {
			cr_assert_not(strmap_get(&m, k, &v), "%s still there", k);
		} else {
			cr_assert(strmap_get(&m, k, &v), "%s lost by a deletion", k);
			cr_assert_eq(v, (uint32_t)i);
		}
	}
	cr_assert_eq(m.len, 5000 - 1667);
	strmap_free(&m);
}

Test(store, url_password_is_masked)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "redis://:hunter2@db:6379/1", "redis://:****@db:6379/1" },
		{ "redis://alerter:hunter2@db", "redis://alerter:****@db" },
		{ "redis://hunter2@db", "redis://****@db" },
		{ "redis://db:6379", "redis://db:6379" },
		{ "unix:///run/r.sock?db=2&password=hunter2", "unix:///run/r.sock?db=2&password=****" },
		{ "unix:///run/r.sock?password=hunter2&db=2", "unix:///run/r.sock?password=****&db=2" },
		{ "unix:///run/r.sock", "unix:///run/r.sock" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[256], err[256];
		struct conn_url u;

		conn_url_redacted(cases[i].in, out, sizeof(out));
		cr_assert_str_eq(out, cases[i].out);
		/* and a parse error does not print it either */
		conn_url_parse("redis://:hunter2@db:notaport", &u, err, sizeof(err));
		cr_assert_null(strstr(err, "hunter2"), "%s", err);
	}
}

Test(alert, encode_and_parse_round_trip)
{
	struct label labels[] = { { "alertname", "Odd\"Name" }, { "host", "db-1" },
				  { "note", "line1\nline2 \xc3\xa9t\xc3\xa9 \\ /" } };
	struct label ann[] = { { "summary", "{\"not\": \"json\"}" } };
	char *hosts[] = { "db-1", "db-2" };
	struct alert a = { 0 }, b;
	struct strbuf sb = STRBUF_INIT;
	char err[256];

	a.firing = 0;
	snprintf(a.fingerprint, sizeof(a.fingerprint), "00aa11bb22cc33dd");
	a.labels = labels;
	a.nlabels = 3;
	a.annotations = ann;
	a.nannotations = 1;
	a.starts_ms = 1764500000123ULL;
	a.ends_ms = 1764500060456ULL;
	snprintf(a.generator_url, sizeof(a.generator_url), "http://x/rules#Odd");
	a.hosts = hosts;
	a.nhosts = 2;
	a.total_hosts = 8;
	a.value = 0.25;
	a.has_value = 1;
	snprintf(a.domain_label, sizeof(a.domain_label), "rack");
	snprintf(a.domain_value, sizeof(a.domain_value), "r1");
	snprintf(a.domain_same, sizeof(a.domain_same), "switch=sw1");
	a.domain_p = 2.5e-10;
	a.has_domain_p = 1;
	snprintf(a.runbook, sizeof(a.runbook), "runbooks/x.md");
	a.evidence = ALERT_EV_CPU_STACKS | ALERT_EV_CSUM_PEERS;
	snprintf(a.deploy_service, sizeof(a.deploy_service), "api");
	a.deploy_at_ms = 5;
	a.deploy_base_ms = 4;
	a.fired_ms = 1764500030789ULL;
	cr_assert_eq(alert_encode(&a, &sb), 0);
	cr_assert_eq(alert_parse(&b, strbuf_str(&sb), sb.len, err, sizeof(err)), 0, "%s: %s", err,
		     strbuf_str(&sb));
	cr_assert_eq(b.firing, 0);
	cr_assert_str_eq(b.fingerprint, a.fingerprint);
	cr_assert_str_eq(alert_label(&b, "alertname"), "Odd\"Name");
	cr_assert_str_eq(alert_label(&b, "note"), labels[2].value);
	cr_assert_str_eq(alert_annotation(&b, "summary"), ann[0].value);
	cr_assert_eq(b.starts_ms, a.starts_ms);
	cr_assert_eq(b.ends_ms, a.ends_ms);
	cr_assert_str_eq(b.generator_url, a.generator_url);
	cr_assert_eq(b.nhosts, 2);
	cr_assert_str_eq(b.hosts[1], "db-2");
	cr_assert_eq(b.total_hosts, 8);
	cr_assert_float_eq(b.value, 0.25, 1e-12);
	cr_assert_str_eq(b.domain_label, "rack");
	cr_assert_str_eq(b.domain_value, "r1");
	cr_assert_str_eq(b.domain_same, "switch=sw1");
	cr_assert(b.has_domain_p);
	cr_assert_float_eq(b.domain_p, 2.5e-10, 1e-22);
	cr_assert_str_eq(b.runbook, "runbooks/x.md");
	cr_assert_eq(b.evidence, a.evidence);
	cr_assert_str_eq(b.deploy_service, "api");
	cr_assert_eq(b.deploy_at_ms, 5);
	cr_assert_eq(b.deploy_base_ms, 4);
	cr_assert_eq(b.fired_ms, a.fired_ms);
	alert_free(&b);
	strbuf_release(&sb);
}

Test(jsonc, strings_are_always_valid_utf8)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "\"plain\"" },
		{ "q\"b\\\n\x01", "\"q\\\"b\\\\\\n\\u0001\"" },
		{ "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xbe", "\"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xbe\"" },
		{ "bad\xff", "\"bad\xef\xbf\xbd\"" },
		{ "cut\xc3", "\"cut\xef\xbf\xbd\"" },
		{ "overlong\xc0\xaf", "\"overlong\xef\xbf\xbd\xef\xbf\xbd\"" },
		{ "surrogate\xed\xa0\x80", "\"surrogate\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" },
		{ "big\xf4\x90\x80\x80", "\"big\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strbuf sb = STRBUF_INIT;
		json_object *o = jsonc_string(cases[i].in), *back;
		char err[128];

		cr_assert_eq(jsonc_append(&sb, o), 0);
		cr_assert_str_eq(strbuf_str(&sb), cases[i].out, "case %zu: %s", i, strbuf_str(&sb));
		back = jsonc_parse(sb.buf, sb.len, err, sizeof(err));
		cr_assert_not_null(back, "case %zu: %s", i, err);
		json_object_put(back);
		json_object_put(o);
		strbuf_release(&sb);
	}
}

/* A key is sanitized like a value; parse errors say where. */
Test(jsonc, keys_and_parse_errors)
{
	json_object *o = json_object_new_object();
	struct strbuf sb = STRBUF_INIT;
	char err[128];

	jsonc_put(o, "k\xff", json_object_new_int(1));
	jsonc_append(&sb, o);
	cr_assert_str_eq(strbuf_str(&sb), "{\"k\xef\xbf\xbd\":1}");
	json_object_put(o);
	strbuf_release(&sb);
	cr_assert_null(jsonc_parse("{\"a\":1} x", 10, err, sizeof(err)));
	cr_assert(strstr(err, "byte 8") && strstr(err, "after the value"), "%s", err);
	cr_assert_null(jsonc_parse("{\"a\":", 5, err, sizeof(err)));
	cr_assert(strstr(err, "ends inside"), "%s", err);
}

/* The host registry entry round-trips, labels with quotes and bad UTF-8 included. */
Test(host_entry, round_trip)
{
	struct snapshot s;
	struct host_entry e;
	struct strbuf sb = STRBUF_INIT;
	char err[128];

	cr_assert_eq(snapshot_init(&s, "db-1", 5000, 1000, 1, 1), 0);
	cr_assert_eq(snapshot_set_label(&s, "rack", "r\"1"), 0);
	cr_assert_eq(snapshot_set_label(&s, "switch", "sw\xff"), 0);
	cr_assert_eq(host_entry_encode(&s, &sb), 0);
	cr_assert_eq(host_entry_decode(sb.buf, sb.len, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(e.last_seen_ms, 5000);
	cr_assert_eq(e.interval_ms, 1000);
	cr_assert_eq(e.nlabels, 2);
	cr_assert_str_eq(host_entry_label(&e, "rack"), "r\"1");
	cr_assert_str_eq(host_entry_label(&e, "switch"), "sw\xef\xbf\xbd");
	cr_assert_null(host_entry_label(&e, "site"));
	host_entry_free(&e);
	cr_assert_eq(host_entry_decode("[1]", 3, &e, err, sizeof(err)), -EINVAL);
	cr_assert_eq(host_entry_decode("{\"labels\":{\"rack\":3}}", 22, &e, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "labels.rack"), "%s", err);
	cr_assert_eq(host_entry_decode("{\"last_seen_ms\":-1}", 19, &e, err, sizeof(err)), -EINVAL);
	snapshot_free(&s);
	strbuf_release(&sb);
}

/* The wear history point the report projects from: written and read by one pair. */
Test(drive, wear_point_round_trip)
{
	struct drive_record r;
	char buf[128];
	double w, b, h;

	drive_init(&r, "nvme0n1");
	drive_set(&r, DF_WEAR_USED_PCT, 17, "test");
	drive_set(&r, DF_POWER_ON_HOURS, 12345, "test");
	drive_wear_point_format(&r, buf, sizeof(buf));
	cr_assert_eq(drive_wear_point_parse(buf, &w, &b, &h), 0, "%s", buf);
	cr_assert_eq(w, 17);
	cr_assert_eq(b, -1, "no bytes written: -1");
	cr_assert_eq(h, 12345);
	cr_assert_eq(drive_wear_point_parse("1,2", &w, &b, &h), -EINVAL);
	cr_assert_eq(drive_wear_point_parse("1,2,3x", &w, &b, &h), -EINVAL);
	cr_assert_eq(drive_wear_point_parse("1,nan,3", &w, &b, &h), -EINVAL);
}

/*
 * One alert, one id: the fingerprint equals what Alertmanager 0.25 reports
 * for the same label set (82da046665e1aefa, read from a real Alertmanager's
 * /api/v2/alerts), whatever the order the labels come in.
 */
Test(alert, fingerprint_equals_alertmanagers)
{
	struct label a[] = { { "alertname", "TcpChecksumErrors" }, { "severity", "page" },
			     { "switch", "sw001" } };
	struct label b[] = { { "switch", "sw001" }, { "alertname", "TcpChecksumErrors" },
			     { "severity", "page" } };
	char fa[17], fb[17];

	alert_fingerprint(a, 3, fa);
	alert_fingerprint(b, 3, fb);
	cr_assert_str_eq(fa, "82da046665e1aefa");
	cr_assert_str_eq(fb, fa);
}

/* Silence matchers use the rules' regex semantics: RE2 syntax, fully anchored. */
Test(silence, regex_matchers_are_anchored_re2)
{
	struct label l[] = { { "alertname", "SlowWrites" }, { "device", "nvme12n1" } };
	struct alert a = { .labels = l, .nlabels = 2 };
	struct matcher m;
	char err[256];

	cr_assert_eq(matcher_parse(&m, "device=~nvme\\d+n1", err, sizeof(err)), 0, "%s", err);
	cr_expect(matcher_match(&m, &a));
	matcher_free(&m);
	cr_assert_eq(matcher_parse(&m, "device=~nvme\\d", err, sizeof(err)), 0, "%s", err);
	cr_expect(!matcher_match(&m, &a), "a prefix matched: not anchored");
	matcher_free(&m);
	cr_expect_neq(matcher_parse(&m, "device=~(", err, sizeof(err)), 0);
	cr_expect(strstr(err, "not a valid regular expression: "), "%s", err);
}

/* Each metric has one name and one wire name, and both lookups find every entry. */
Test(lib, catalog_lookups_find_every_metric_once)
{
	size_t n = 0;

	for (const struct metric_info *m = catalog; m->name; m++, n++) {
		cr_assert_eq(catalog_find(m->name), m, "%s", m->name);
		cr_assert_eq(catalog_find_wire(m->wire), m, "%s", m->wire);
		for (const struct metric_info *o = catalog; o < m; o++) {
			cr_assert(strcmp(o->name, m->name), "%s twice", m->name);
			cr_assert(strcmp(o->wire, m->wire), "wire %s twice", m->wire);
		}
	}
	cr_assert_gt(n, 50);
	cr_assert_null(catalog_find("faultline_nosuch_total"));
	cr_assert_null(catalog_find_wire("nosuch.metric"));
	cr_assert_null(catalog_find(""));
}

/*
 * An hour's profile cut to its top rows keeps only what those rows name:
 * 5,000 distinct stacks of 3 frames each, cut to 10, encode in a small
 * fraction of the whole and decode to the 10 rows plus [other], the
 * counts and the total unchanged.
 */
Test(profile, truncate_drops_the_stacks_and_names_of_dropped_rows)
{
	struct profile p, back;
	char *whole, *cut, err[200], a[32], b[32];
	size_t whole_len, cut_len;
	uint64_t total;

	cr_assert_eq(profile_init(&p, "h"), 0);
	for (int i = 0; i < 5000; i++) {
		const char *frames[3] = { "main", a, b };

		snprintf(a, sizeof(a), "handler_%d", i);
		snprintf(b, sizeof(b), "leaf_%d", i);
		cr_assert_eq(profile_add(&p, "svc", "api", 7, frames, 3, (uint64_t)(i % 100 + 1)), 0);
	}
	total = p.total;
	/* msgpack (level 0): what the cut keeps, not how well zstd packs repeats */
	cr_assert_eq(profile_encode_level(&p, 0, &whole, &whole_len), 0);
	cr_assert_eq(profile_truncate(&p, 10), 0);
	cr_assert_eq(p.nrows, 11, "10 rows and [other]");
	cr_assert_eq(p.total, total, "counts are moved to [other], not lost");
	cr_assert_leq(p.nstacks, 11);
	cr_assert_leq(p.nstrings, 40, "%u names kept for 11 rows", p.nstrings);
	cr_assert_eq(profile_encode_level(&p, 0, &cut, &cut_len), 0);
	cr_assert_lt(cut_len * 50, whole_len, "cut %zu bytes, whole %zu", cut_len, whole_len);
	cr_assert_eq(profile_decode(cut, cut_len, &back, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(back.nrows, 11);
	cr_assert_eq(back.total, total);
	for (uint32_t r = 0; r < back.nrows; r++)
		cr_assert_geq(back.rows[r].count, 100, "a top row (count 100) or [other]");
	free(whole);
	free(cut);
	profile_free(&p);
	profile_free(&back);
}

/* Window k of a host's run: the same few stacks window after window, counts moving. */
static void span_window(struct profile *p, int k)
{
	static const char *const stacks[4][3] = {
		{ "main", "serve", "parse" }, { "main", "serve", "write" },
		{ "main", "gc", "mark" }, { "[vda W]", "ext4_writepages", "submit_bio" },
	};
	const struct profile_origin who[3] = {
		{ "api.service", "api", "/system.slice/api.service", 100 },
		{ "api.service", "api-worker", "/system.slice/api.service", 101 },
		{ "", "kworker/0:1", NULL, 7 },
	};
	struct profile_where where[3] = {
		{ "/usr/bin/api", "abc123", 0x1000, 1 }, { "/usr/bin/api", "abc123", 0x2000, 1 },
		{ "/lib/libc.so.6", "ffee", 0x3000, 0 },
	};

	cr_assert_eq(profile_init(p, "db-7"), 0);
	p->ts_ms = 1764500000000ULL + 10000ULL * (uint64_t)k;
	p->duration_ms = 10000;
	p->rate_hz = k == 2 ? 997 : 19;	/* a burst */
	if (k == 3)
		return;			/* an idle window: no rows */
	for (int s = 0; s < 4; s++) {
		/* a later window samples the same stack at another address */
		where[2].addr = 0x3000 + (uint64_t)k;
		cr_assert_eq(profile_add_in(p, &who[s % 3], stacks[s], where, 3,
					    (uint64_t)(10 + k * 3 + s)), 0);
	}
}

static char *folded(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	profile_write_folded(p, f);
	fclose(f);
	return buf;
}

/*
 * A span of windows reads back as the windows it was given: every row
 * with its pid, cgroup and count, each window's time, length and rate, an
 * empty window too; merged, the same profile as the windows merged; a
 * stack's location is the first the span saw.  And windows that repeat
 * themselves take far less room as a span than one by one.
 */
Test(profile_span, keeps_every_window_exactly)
{
	struct profile w[40], one, all_w, all_s;
	struct profile_span s;
	char *blob, *enc, err[200];
	size_t len, enclen, singles = 0;

	for (int k = 0; k < 40; k++)
		span_window(&w[k], k);
	cr_assert_eq(profile_span_encode(w, 40, PROFILE_LEVEL_ARCHIVE, &blob, &len), 0);
	cr_assert_eq(profile_span_decode(blob, len, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s.tables.host, "db-7");
	cr_assert_eq(s.nwindows, 40);
	cr_assert_eq(profile_init(&all_w, "db-7"), 0);
	cr_assert_eq(profile_init(&all_s, "db-7"), 0);
	for (uint32_t k = 0; k < 40; k++) {
		char *a, *b;

		profile_span_view(&s, k, &one);
		cr_assert_eq(one.ts_ms, w[k].ts_ms);
		cr_assert_eq(one.duration_ms, w[k].duration_ms);
		cr_assert_eq(one.rate_hz, w[k].rate_hz);
		cr_assert_eq(one.nrows, w[k].nrows, "window %u: %u rows, was %u", k, one.nrows,
			     w[k].nrows);
		cr_assert_eq(one.total, w[k].total);
		for (uint32_t r = 0; r < one.nrows; r++) {
			cr_assert_eq(one.rows[r].pid, w[k].rows[r].pid);
			cr_assert_str_eq(one.strings[one.rows[r].cgroup],
					 w[k].strings[w[k].rows[r].cgroup]);
			cr_assert_str_eq(one.strings[one.rows[r].comm],
					 w[k].strings[w[k].rows[r].comm]);
		}
		a = folded(&one);
		b = folded(&w[k]);
		cr_assert_str_eq(a, b, "window %u", k);
		free(a);
		free(b);
		cr_assert_eq(profile_merge(&all_w, &w[k], NULL), 0);
		cr_assert_eq(profile_merge(&all_s, &one, NULL), 0);
		cr_assert_eq(profile_encode(&w[k], &enc, &enclen), 0);
		singles += enclen;
		free(enc);
	}
	{
		char *a = folded(&all_w), *b = folded(&all_s);

		cr_assert_str_eq(a, b);
		cr_assert_eq(all_s.total, all_w.total);
		cr_assert_eq(all_s.duration_ms, 400000);
		free(a);
		free(b);
	}
	/* libc's frame of the first stack: window 0's address, as a merge keeps */
	profile_span_view(&s, 39, &one);
	cr_assert_eq(profile_frame_loc(&one, one.rows[0].stack, 2)->addr, 0x3000);
	cr_assert_lt(len * 5, singles, "span %zu bytes, 40 windows alone %zu", len, singles);
	cr_log_info("40 windows: %zu bytes alone, %zu as a span", singles, len);
	free(blob);
	profile_span_free(&s);
	profile_free(&all_w);
	profile_free(&all_s);
	for (int k = 0; k < 40; k++)
		profile_free(&w[k]);
}

/*
 * Bytes from Redis are hostile: no span of nothing or of two hosts is
 * made, every cut of a span and every byte of it changed reads back as an
 * error or as a span whose every index is inside its tables, and rows
 * that point past the tables are named.
 */
Test(profile_span, hostile_bytes_are_errors)
{
	struct profile w[3];
	struct profile_span s;
	char *blob, err[200];
	size_t len, plen;
	unsigned char *plain;
	char bad[] = "\x84\xa1v\x01\xa3str\x91\xa0\xa3stk\x90\xa3win\x91\x94\x01\x02\x03"
		     "\x96\x00\x00\x01\x05\x09\x00";

	for (int k = 0; k < 3; k++)
		span_window(&w[k], k);
	cr_assert_eq(profile_span_encode(w, 0, 3, &blob, &len), -EINVAL);
	snprintf(w[1].host, sizeof(w[1].host), "other");
	cr_assert_eq(profile_span_encode(w, 3, 3, &blob, &len), -EINVAL, "two hosts' windows");
	snprintf(w[1].host, sizeof(w[1].host), "db-7");
	cr_assert_eq(profile_span_encode(w, 3, 3, &blob, &len), 0);
	plen = ZSTD_getFrameContentSize(blob, len);
	cr_assert_lt(plen, 1u << 20);
	plain = malloc(plen);
	cr_assert_eq(ZSTD_decompress(plain, plen, blob, len), plen);
	cr_assert_eq(profile_span_decode(plain, plen, &s, err, sizeof(err)), 0, "%s", err);
	profile_span_free(&s);
	for (size_t cut = 0; cut < plen; cut++)
		cr_assert_neq(profile_span_decode(plain, cut, &s, err, sizeof(err)), 0,
			      "a span cut at %zu of %zu bytes decoded", cut, plen);
	for (size_t i = 0; i < plen; i++) {
		unsigned char was = plain[i];

		for (int x = 1; x < 256; x <<= 1) {
			plain[i] = (unsigned char)(was ^ x);
			if (profile_span_decode(plain, plen, &s, err, sizeof(err)) == 0) {
				for (uint32_t r = 0; r < s.nrows; r++)
					cr_assert(s.rows[r].stack < s.tables.nstacks &&
						  s.rows[r].service < s.tables.nstrings &&
						  s.rows[r].cgroup < s.tables.nstrings);
				for (uint32_t k = 0; k < s.nwindows; k++)
					cr_assert_leq(s.windows[k].first + s.windows[k].nrows,
						      s.nrows);
				profile_span_free(&s);
			} else {
				cr_assert_str_neq(err, "");
			}
		}
		plain[i] = was;
	}
	cr_assert_eq(profile_span_decode(bad, sizeof(bad) - 1, &s, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "profile span: row 0 of window 0 refers past the tables");
	free(plain);
	free(blob);
	for (int k = 0; k < 3; k++)
		profile_free(&w[k]);
}

Test(digest, hex_and_sha256_are_lowercase_hex)
{
	const unsigned char b[] = { 0x00, 0x01, 0x7f, 0x80, 0xab, 0xff };
	char out[2 * sizeof(b) + 1], sha[65];

	memset(out, 'x', sizeof(out));
	hex_encode(b, sizeof(b), out);
	cr_assert_str_eq(out, "00017f80abff");
	hex_encode(b, 0, out);
	cr_assert_str_eq(out, "");
	sha256_hex("abc", 3, sha);
	cr_assert_str_eq(sha, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
