/*
 * test_domains.c - the rollup's search for the smallest failure domain that
 * explains the hits (rules/engine/domain_rollup.c), on generated fleets of
 * different shapes, through the engine as faultline-rules runs it.
 *
 * Each case builds a fleet (sites > switches > racks > hosts, racks of
 * chosen sizes), marks some hosts as hit (CPU at 99 %), evaluates once and
 * checks which pages come out: their domain and how many hosts each names.
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/alert.h"
#include "rules/engine/engine.h"
#include "core/jsonc.h"
#include "tests/helpers.h"
#include "rules/lang/rules.h"
#include "model/snapshot.h"
#include "rules/engine/stats.h"

#define T0 1764000000000ULL
#define MAX_HOSTS 512

struct fleet {
	int n;
	char name[MAX_HOSTS][32], rack[MAX_HOSTS][16], sw[MAX_HOSTS][16], site[MAX_HOSTS][16];
	int hit[MAX_HOSTS];
	int silent[MAX_HOSTS];
};

/*
 * sites x switches_per_site x racks_per_switch racks; rack r has
 * rack_size[r % nsizes] hosts.  labels: which of site/switch/rack hosts
 * report (bit 0 site, 1 switch, 2 rack).
 */
static void build(struct fleet *f, int sites, int switches, int racks, const int *rack_size,
		  int nsizes)
{
	int r = 0;

	memset(f, 0, sizeof(*f));
	for (int s = 0; s < sites; s++)
		for (int w = 0; w < switches; w++)
			for (int k = 0; k < racks; k++, r++)
				for (int h = 0; h < rack_size[r % nsizes]; h++) {
					cr_assert_lt(f->n, MAX_HOSTS);
					snprintf(f->site[f->n], 16, "s%d", s);
					snprintf(f->sw[f->n], 16, "sw%d", s * switches + w);
					snprintf(f->rack[f->n], 16, "r%d", r);
					snprintf(f->name[f->n], 32, "sw%d-r%d-h%d", s * switches + w, r, h);
					f->n++;
				}
}

/* Mark hosts of rack r hit: the first n of them (n < 0: all). */
static void hit_rack(struct fleet *f, const char *rack, int n)
{
	for (int i = 0; i < f->n && n; i++)
		if (!strcmp(f->rack[i], rack)) {
			f->hit[i] = 1;
			n--;
		}
}

static void hit_host(struct fleet *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (!strcmp(f->name[i], name)) {
			f->hit[i] = 1;
			return;
		}
	cr_assert_fail("no host %s", name);
}

static const char *rule_yaml(const char *rollup)
{
	static char y[512];

	snprintf(y, sizeof(y), "groups:\n  - name: g\n    rules:\n"
		 "      - alert: Hot\n        expr: faultline_host_cpu_utilization_ratio > 0.9\n"
		 "        rollup: %s\n", rollup);
	return y;
}

/* Host i's snapshot at t (ms) into e: CPU 99 % when hit, labels as in evaluate(). */
static void add_host_snapshot(struct engine *e, const struct fleet *f, int i, uint64_t t,
			      int labels, int hit)
{
	struct snapshot s;

	snapshot_init(&s, f->name[i], t, 1000, (t - T0) / 1000, 1);
	if (labels & 1)
		snapshot_set_label(&s, "site", f->site[i]);
	if (labels & 2)
		snapshot_set_label(&s, "switch", f->sw[i]);
	if (labels & 4)
		snapshot_set_label(&s, "rack", f->rack[i]);
	snapshot_add_gauge(&s, "cpu.host_utilization", hit ? 0.99 : 0.3, NULL);
	cr_assert_eq(engine_add_snapshot(e, &s), 0);
	snapshot_free(&s);
}

/*
 * Evaluate the fleet: 10 s of snapshots (silent hosts stop after the
 * first), then one evaluation.  labels: bit 0 site, 1 switch, 2 rack.
 */
static void evaluate(const struct fleet *f, const char *yaml, int labels, struct test_events *ev)
{
	struct ruleset rs = { 0 };
	struct engine *e;
	char err[256];

	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(engine_init(&e, &rs, NULL), 0);
	for (uint64_t t = T0; t <= T0 + 10000; t += 1000) {
		for (int i = 0; i < f->n; i++) {
			if (f->silent[i] && t > T0)
				continue;
			add_host_snapshot(e, f, i, t, labels, f->hit[i]);
		}
	}
	engine_eval(e, T0 + 10000, test_events_collect, ev);
	engine_free(e);
}

/*
 * The pages as "label=value:nhosts" (host pages "host=NAME:1"), sorted,
 * space separated; a domain that outer levels hold exactly as
 * "label=value~outer=name,...:nhosts".
 */
static char *pages(const struct test_events *ev, const char *alertname)
{
	static char out[4096];
	char items[128][96];
	int n = 0;

	out[0] = 0;
	for (int i = 0; i < ev->n && n < 128; i++) {
		json_object *o = json_tokener_parse(ev->json[i]), *l, *fl, *d, *h, *x;

		cr_assert_not_null(o);
		json_object_object_get_ex(o, "labels", &l);
		json_object_object_get_ex(l, "alertname", &x);
		if (strcmp(json_object_get_string(x), alertname)) {
			json_object_put(o);
			continue;
		}
		json_object_object_get_ex(o, "faultline", &fl);
		json_object_object_get_ex(fl, "hosts", &h);
		if (json_object_object_get_ex(fl, "domain", &d)) {
			json_object *dl, *dv;

			json_object *same = NULL, *pv = NULL;

			/* every domain page says how unlikely it is by chance */
			cr_assert(json_object_object_get_ex(d, "p", &pv) &&
				  json_object_is_type(pv, json_type_double) &&
				  json_object_get_double(pv) >= 0 && json_object_get_double(pv) <= 1,
				  "a domain page without its p-value: %s", ev->json[i]);
			json_object_object_get_ex(d, "label", &dl);
			json_object_object_get_ex(d, "value", &dv);
			json_object_object_get_ex(d, "same_as", &same);
			snprintf(items[n++], 96, "%s=%s%s%s:%zu", json_object_get_string(dl),
				 json_object_get_string(dv), same ? "~" : "",
				 same ? json_object_get_string(same) : "",
				 json_object_array_length(h));
			/* every name of the domain is a label of the page */
			json_object_object_get_ex(l, json_object_get_string(dl), &x);
			cr_assert(x && !strcmp(json_object_get_string(x), json_object_get_string(dv)),
				  "the page lacks its domain's label %s", json_object_get_string(dl));
		} else {
			json_object_object_get_ex(l, "host", &x);
			snprintf(items[n++], 96, "host=%s:1", json_object_get_string(x));
		}
		json_object_put(o);
	}
	qsort(items, (size_t)n, sizeof(items[0]), (int (*)(const void *, const void *))strcmp);
	for (int i = 0; i < n; i++) {
		strcat(out, i ? " " : "");
		strcat(out, items[i]);
	}
	return out;
}

/* The p-value of the first domain page of alertname among ev (-1: none). */
static double domain_p(const struct test_events *ev, const char *alertname)
{
	double p = -1;

	for (int i = 0; i < ev->n && p < 0; i++) {
		json_object *o = json_tokener_parse(ev->json[i]), *x;

		x = jsonc_path(o, "labels.alertname");
		if (x && !strcmp(json_object_get_string(x), alertname) &&
		    (x = jsonc_path(o, "faultline.domain.p")))
			p = json_object_get_double(x);
		json_object_put(o);
	}
	return p;
}

static const int eight[] = { 8 };
#define NESTED "{by: [site, switch, rack], min_hosts: 3, min_fraction: 0.2}"

/* A full rack under a small switch is the rack, not the switch (the old rule paged the switch). */
Test(domains, full_rack_under_small_switch_is_the_rack)
{
	static struct fleet f;
	struct test_events ev = { 0 };

	build(&f, 2, 2, 2, eight, 1);	/* 64 hosts, switches of 16 */
	hit_rack(&f, "r2", -1);
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	cr_assert_str_eq(pages(&ev, "Hot"), "rack=r2:8");
	/* the 8 hits of 64 hosts all in this rack of 8: 1 / C(64, 8) */
	cr_assert_float_eq(domain_p(&ev, "Hot") * 4426165368.0, 1.0, 1e-6, "p %g",
			   domain_p(&ev, "Hot"));
	test_events_free(&ev);
}

/* Hits in both racks of a switch are the switch, listing every hit host once. */
Test(domains, hits_across_racks_are_the_switch)
{
	static struct fleet f;
	struct test_events ev = { 0 };

	build(&f, 2, 2, 2, eight, 1);
	hit_rack(&f, "r2", 6);
	hit_rack(&f, "r3", 6);
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	cr_assert_str_eq(pages(&ev, "Hot"), "switch=sw1:12");
	test_events_free(&ev);
}

/*
 * A line card: one host in each of a switch's eight racks.  No rack has
 * min_hosts, the switch has 8 of 64 (< 20 %), but 8 of the fleet's 8 hits
 * under one of four switches is no accident: the switch.  With the
 * concentration test off (alpha: 0) they stay eight host pages.
 */
Test(domains, one_per_rack_across_a_switch_is_the_switch)
{
	static struct fleet f;
	struct test_events ev = { 0 };

	build(&f, 2, 2, 8, eight, 1);	/* 256 hosts, switches of 64 */
	for (int r = 8; r < 16; r++) {
		char rack[16];

		snprintf(rack, sizeof(rack), "r%d", r);
		hit_rack(&f, rack, 1);
	}
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	cr_assert_str_eq(pages(&ev, "Hot"), "switch=sw1:8");
	/* placement is what made it: the page's p is that test's */
	cr_assert_float_eq(domain_p(&ev, "Hot"), stats_hypergeom_tail(256, 8, 64, 8), 1e-15);
	test_events_free(&ev);
	evaluate(&f, rule_yaml("{by: [site, switch, rack], min_hosts: 3, min_fraction: 0.2, "
			       "alpha: 0}"), 7, &ev);
	cr_assert_eq(ev.n, 8, "%s", pages(&ev, "Hot"));
	cr_assert_null(strstr(pages(&ev, "Hot"), "switch="));
	test_events_free(&ev);
}

/* A stray host beside a hit rack does not move the page up: the rack and the host. */
Test(domains, a_stray_beside_a_rack_stays_a_host_page)
{
	static struct fleet f;
	struct test_events ev = { 0 };

	build(&f, 2, 2, 2, eight, 1);
	hit_rack(&f, "r2", -1);
	hit_host(&f, "sw1-r3-h4");
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	cr_assert_str_eq(pages(&ev, "Hot"), "host=sw1-r3-h4:1 rack=r2:8");
	test_events_free(&ev);
}

/* Hits scattered over the fleet (one per switch) are host pages, no domain. */
Test(domains, scattered_hits_page_as_hosts)
{
	static struct fleet f;
	struct test_events ev = { 0 };

	build(&f, 2, 2, 2, eight, 1);
	hit_host(&f, "sw0-r0-h1");
	hit_host(&f, "sw1-r3-h2");
	hit_host(&f, "sw2-r4-h3");
	hit_host(&f, "sw3-r7-h4");
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	cr_assert_str_eq(pages(&ev, "Hot"),
			 "host=sw0-r0-h1:1 host=sw1-r3-h2:1 host=sw2-r4-h3:1 host=sw3-r7-h4:1");
	test_events_free(&ev);
}

/*
 * Racks of different sizes: 3 of a 4-host rack is the rack; 3 of a
 * 20-host rack (15 %) is three hosts.
 */
Test(domains, racks_of_different_sizes)
{
	static const int sizes[] = { 4, 20 };
	static struct fleet f;
	struct test_events ev = { 0 };

	build(&f, 1, 4, 2, sizes, 2);	/* racks r0 (4), r1 (20), ... 96 hosts */
	hit_rack(&f, "r0", 3);
	hit_rack(&f, "r3", 3);
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	cr_assert_str_eq(pages(&ev, "Hot"), "host=sw1-r3-h0:1 host=sw1-r3-h1:1 host=sw1-r3-h2:1 "
			 "rack=r0:3");
	test_events_free(&ev);
}

/* No host reports a site: that level is skipped, not one fleet-wide "unplaced" page. */
Test(domains, a_level_without_labels_is_skipped)
{
	static struct fleet f;
	struct test_events ev = { 0 };

	build(&f, 2, 2, 2, eight, 1);
	hit_rack(&f, "r2", 6);
	hit_rack(&f, "r3", 6);
	hit_rack(&f, "r4", -1);
	evaluate(&f, rule_yaml(NESTED), 6, &ev);	/* switch and rack labels only */
	cr_assert_str_eq(pages(&ev, "Hot"), "rack=r4:8 switch=sw1:12");
	test_events_free(&ev);
}

/* HostSilent rolls up through every level: a dead switch is one page, not one per rack. */
Test(domains, dead_switch_is_one_host_silent_page)
{
	static struct fleet f;
	struct test_events ev = { 0 };

	build(&f, 2, 2, 2, eight, 1);
	for (int i = 0; i < f.n; i++)
		f.silent[i] = !strcmp(f.sw[i], "sw2");
	f.silent[3] = 1;	/* and one host elsewhere */
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	cr_assert_str_eq(pages(&ev, "HostSilent"), "host=sw0-r0-h3:1 switch=sw2:16");
	test_events_free(&ev);
	/* a dead rack stays the rack */
	for (int i = 0; i < f.n; i++)
		f.silent[i] = !strcmp(f.rack[i], "r5");
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	cr_assert_str_eq(pages(&ev, "HostSilent"), "rack=r5:8");
	test_events_free(&ev);
}

/* The concentration test's arithmetic, against values computed by hand. */
Test(domains, hypergeometric_tail)
{
	/* 2 of 2 marked in a draw of 2 from 4: 1/C(4,2) */
	cr_assert_float_eq(stats_hypergeom_tail(4, 2, 2, 2), 1.0 / 6, 1e-12);
	/* at least 1: 1 - C(2,2)/C(4,2) */
	cr_assert_float_eq(stats_hypergeom_tail(4, 2, 2, 1), 5.0 / 6, 1e-12);
	cr_assert_float_eq(stats_hypergeom_tail(64, 8, 16, 0), 1.0, 1e-12);
	cr_assert_float_eq(stats_hypergeom_tail(64, 8, 16, 9), 0.0, 1e-12);
	/* all 8 hits under one 64-host switch of 256: C(64,8)/C(256,8) */
	cr_assert_float_eq(stats_hypergeom_tail(256, 8, 64, 8), 4426165368.0 / 409663695276000.0,
			   1e-15);
	/* onsets: all 8 within 10 s of an hour, 8 * C(7,7) * (1/360)^7; two of 3: 3 * 2 * w */
	cr_assert_float_eq(stats_cluster_tail(8, 8, 10.0 / 3600), 8 * pow(1.0 / 360, 7), 1e-30);
	cr_assert_float_eq(stats_cluster_tail(3, 2, 0.01), 0.06, 1e-12);
	cr_assert_eq(stats_cluster_tail(5, 1, 0.01), 1.0);
	cr_assert_eq(stats_cluster_tail(2, 2, 0.9), 1.0, "capped at 1");
	/* Fisher: t (1 - ln t) */
	cr_assert_float_eq(stats_fisher2(0.01, 0.01), 1e-4 * (1 - log(1e-4)), 1e-15);
}

/* A rack with its own top-of-rack switch is one domain: it pages under the outer label. */
Test(domains, a_rack_and_its_own_tor_are_one_domain)
{
	static struct fleet f;
	struct test_events ev = { 0 };

	build(&f, 1, 4, 1, eight, 1);	/* switch sw<i> holds only rack r<i> */
	hit_rack(&f, "r1", 6);
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	/* named by both: the rack, which is the switch's only one */
	cr_assert_str_eq(pages(&ev, "Hot"), "rack=r1~switch=sw1:6");
	test_events_free(&ev);
}

/* A site that is one switch: a rack's fault inside it is still the rack. */
Test(domains, an_identical_outer_domain_does_not_swallow_a_narrower_fault)
{
	static struct fleet f;
	struct test_events ev = { 0 };

	build(&f, 2, 1, 2, eight, 1);	/* site s<i> is switch sw<i>: racks r<2i>, r<2i+1> */
	hit_rack(&f, "r2", -1);
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	cr_assert_str_eq(pages(&ev, "Hot"), "rack=r2:8");
	test_events_free(&ev);
}

/*
 * A site that holds one switch: a storm over that switch's racks pages the
 * switch, and says it is the whole site too (labels site and switch, the
 * domain the switch) rather than naming only the site.
 */
Test(domains, a_site_of_one_switch_is_named_by_both)
{
	static struct fleet f;
	static const int thirty_two[] = { 8 };
	struct test_events ev = { 0 };
	json_object *o, *l, *x;

	build(&f, 2, 1, 4, thirty_two, 1);	/* site s<i> is switch sw<i>: 4 racks of 8 */
	for (int r = 0; r < 4; r++) {
		char rack[16];

		snprintf(rack, sizeof(rack), "r%d", r);
		hit_rack(&f, rack, 3);		/* 12 of sw0's 32 hosts, in all 4 racks */
	}
	evaluate(&f, rule_yaml(NESTED), 7, &ev);
	cr_assert_str_eq(pages(&ev, "Hot"), "switch=sw0~site=s0:12");
	cr_assert_eq(ev.n, 1);
	o = json_tokener_parse(ev.json[0]);
	json_object_object_get_ex(o, "labels", &l);
	cr_assert(json_object_object_get_ex(l, "site", &x) &&
		  !strcmp(json_object_get_string(x), "s0"), "%s", ev.json[0]);
	cr_assert(!json_object_object_get_ex(l, "rack", &x), "a rack is not the domain: %s",
		  ev.json[0]);
	json_object_put(o);
	test_events_free(&ev);
}

/* ---- onsets: hits that begin together ------------------------------------- */

/*
 * Evaluate the fleet every 2 s for end_s seconds: host i is hit from
 * onset_s[i] on (-1: never), the rule evaluated before any hit began, so
 * every onset is one the engine saw.  The pages are every firing event's.
 */
static void evaluate_onsets(const struct fleet *f, const char *yaml, const int *onset_s,
			    int end_s, struct test_events *ev)
{
	struct ruleset rs = { 0 };
	struct engine *e;
	char err[256];

	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(engine_init(&e, &rs, NULL), 0);
	for (int t = 0; t <= end_s; t += 2) {
		for (int i = 0; i < f->n; i++) {
			add_host_snapshot(e, f, i, T0 + (uint64_t)t * 1000, 7,
					  onset_s[i] >= 0 && t >= onset_s[i]);
		}
		engine_eval(e, T0 + (uint64_t)t * 1000, test_events_collect, ev);
	}
	engine_free(e);
}

/* Firing pages only, as pages() gives them. */
static char *firing_pages(struct test_events *ev)
{
	struct test_events fired = { 0 };
	static char out[4096];

	for (int i = 0; i < ev->n; i++)
		if (strstr(ev->json[i], "\"status\":\"firing\""))
			test_events_collect(ev->json[i], &fired);
	snprintf(out, sizeof(out), "%s", pages(&fired, "Hot"));
	test_events_free(&fired);
	return out;
}

/*
 * A line card in a small fleet: one host in each of sw0's racks, under 2
 * switches.  Where they are alone is chance (above alpha); beginning within
 * the same evaluation they page the switch, once; begun minutes apart, or
 * already there when the engine first looked (no onset known), they page
 * as hosts.  Generated over fleet shapes where placement alone does not pass.
 */
Test(domains, hits_beginning_together_page_the_switch_in_a_small_fleet)
{
	static const struct { int racks, size; } shapes[] = { { 8, 7 }, { 6, 6 }, { 8, 4 }, { 5, 8 }, { 7, 9 } };
	static struct fleet f;
	static int onset[MAX_HOSTS];
	int tried = 0;

	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		const int size[] = { shapes[k].size };
		int racks = shapes[k].racks, hits = 0, mode;
		double ph;
		char want[64], hosts_want[2048];

		build(&f, 1, 2, racks, size, 1);
		ph = stats_hypergeom_tail((size_t)f.n, (size_t)racks, (size_t)f.n / 2,
					  (size_t)racks);
		if (ph < 0.001 || 1.0 / shapes[k].size >= 0.2)
			continue;	/* placement or fraction alone pages the switch */
		tried++;
		for (mode = 0; mode < 3; mode++) {
			struct test_events ev = { 0 };
			char *got;

			hits = 0;
			hosts_want[0] = 0;
			for (int i = 0; i < f.n; i++) {
				onset[i] = -1;
				/* sw0's racks are r0..r<racks-1>; host h0 of each */
				if (!strcmp(f.sw[i], "sw0") && !strcmp(strrchr(f.name[i], '-'), "-h0")) {
					onset[i] = mode == 0 ? 20 : mode == 1 ? 20 + 120 * hits : 0;
					snprintf(hosts_want + strlen(hosts_want),
						 sizeof(hosts_want) - strlen(hosts_want), "%shost=%s:1",
						 hosts_want[0] ? " " : "", f.name[i]);
					hits++;
				}
			}
			cr_assert_eq(hits, racks);
			evaluate_onsets(&f, rule_yaml(NESTED), onset,
					mode == 1 ? 20 + 120 * racks : 40, &ev);
			got = firing_pages(&ev);
			snprintf(want, sizeof(want), "switch=sw0:%d", racks);
			if (mode == 0) {
				cr_expect_str_eq(got, want, "%d racks of %d, p %.4f by placement, "
						 "begun together: %s", racks, shapes[k].size, ph, got);
				/* placement and onsets together: a smaller p than placement's */
				cr_expect(domain_p(&ev, "Hot") >= 0 && domain_p(&ev, "Hot") < ph,
					  "p %g, placement alone %g", domain_p(&ev, "Hot"), ph);
			}
			else
				cr_expect_str_eq(got, hosts_want, "%d racks of %d, %s: %s", racks,
						 shapes[k].size, mode == 1 ? "begun 2 min apart" :
						 "there before the engine's first look", got);
			test_events_free(&ev);
		}
	}
	cr_assert_geq(tried, 2, "the shapes should include small fleets placement cannot decide");
}

/*
 * A rule label that the series also has overrides it (as in Prometheus):
 * the event carries the key once, and its fingerprint is Alertmanager's
 * over exactly the labels it carries.
 */
Test(domains, rule_labels_override_series_labels_once)
{
	static const char yaml[] =
		"groups:\n  - name: g\n    rules:\n"
		"      - alert: Hot\n        expr: faultline_host_cpu_utilization_ratio > 0.9\n"
		"        severity: page\n        labels: {cpu: total, team: infra}\n";
	static struct fleet f;
	struct test_events ev = { 0 };
	json_object *o, *l, *fp;
	struct label ls[8];
	uint32_t n = 0;
	char want[17];

	build(&f, 1, 1, 1, eight, 1);
	hit_host(&f, "sw0-r0-h1");
	evaluate(&f, yaml, 0, &ev);
	cr_assert_eq(ev.n, 1);
	o = json_tokener_parse(ev.json[0]);
	json_object_object_get_ex(o, "labels", &l);
	{
		const char *first = strstr(ev.json[0], "\"cpu\"");

		cr_assert(first && !strstr(first + 1, "\"cpu\""), "cpu twice: %s", ev.json[0]);
	}
	json_object_object_foreach(l, k, v) {
		cr_assert_lt(n, 8);
		ls[n].key = k;
		ls[n++].value = (char *)json_object_get_string(v);
	}
	cr_assert_str_eq(json_object_get_string(json_object_object_get(l, "cpu")), "total");
	alert_fingerprint(ls, n, want);
	json_object_object_get_ex(o, "fingerprint", &fp);
	cr_assert_str_eq(json_object_get_string(fp), want);
	json_object_put(o);
	test_events_free(&ev);
}
