/*
 * test_lib.c - small library pieces: the retry backoff schedule, the hash
 * map's deletion, masking Redis passwords.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "backoff.h"
#include "store.h"
#include "strmap.h"
#include "timeutil.h"

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
		struct store_url u;

		store_url_redacted(cases[i].in, out, sizeof(out));
		cr_assert_str_eq(out, cases[i].out);
		/* and a parse error does not print it either */
		store_url_parse("redis://:hunter2@db:notaport", &u, err, sizeof(err));
		cr_assert_null(strstr(err, "hunter2"), "%s", err);
	}
}
