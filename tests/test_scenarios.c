/*
 * test_scenarios.c - every shipped scenario (scenarios/NAME.yaml) through the
 * real binaries, scored against its own timeline.
 *
 * For each scenario: its own redis-server; `faultline sim --ends-now`
 * writes the fleet's history with the faults injected and the timeline of
 * what was injected; `faultline-rules --replay` evaluates the shipped
 * rules over that history on its clock; `faultline-alerter` delivers to a
 * webhook receiver on loopback.  The delivered notifications are then
 * scored against the timeline:
 *
 *   - every expected page fired exactly once (one transition to firing of
 *     one alert carrying the expected alertname and labels: the right
 *     domain, not its hosts);
 *   - it resolved after its fault ended, where the scenario says it should;
 *   - nothing else paged (so a no-regression load rise is silent).
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "alert.h"
#include "helpers.h"
#include "receiver.h"
#include "timeutil.h"

static struct test_redis redis;
static pid_t alerter;

static void setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0);
	rx_start();
}

static void teardown(void)
{
	if (alerter > 0) {
		kill(alerter, SIGTERM);
		waitpid(alerter, NULL, 0);
		alerter = 0;
	}
	rx_stop();
	test_redis_destroy(&redis);
}

static struct json_object *read_json(const char *path)
{
	struct json_object *o = json_object_from_file(path);

	cr_assert_not_null(o, "cannot parse %s", path);
	return o;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static int64_t jint(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

/* What fl:alerts' consumer group still has to deliver: entries not read plus pending. */
static long undelivered(void)
{
	redisContext *c = redisConnectUnix(redis.sock);
	redisReply *r;
	long left = -1;

	if (!c || c->err)
		goto out;
	r = redisCommand(c, "XINFO GROUPS fl:alerts");
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
		redisReply *g = r->element[0];

		left = 0;
		for (size_t i = 0; i + 1 < g->elements; i += 2)
			if (!strcmp(g->element[i]->str, "pending") ||
			    !strcmp(g->element[i]->str, "lag"))
				left += g->element[i + 1]->integer;
	}
	if (r)
		freeReplyObject(r);
out:
	if (c)
		redisFree(c);
	return left;
}

/* One alert as delivered: its identity and the transitions seen. */
struct seen {
	char id[1024];			/* alertname + labels, canonical */
	struct json_object *labels;	/* the first notification's, owned */
	int firing, resolved;		/* transitions into each state */
	int last;			/* 0 none, 1 firing, 2 resolved */
	uint64_t resolved_at_ms;	/* endsAt of the resolution */
	int claimed;			/* an expectation accounted for it */
};

/* Does alert labels `l` carry alertname and every label expectation x asks for? */
static int fits(struct json_object *l, struct json_object *x)
{
	struct json_object *want;

	if (!json_object_object_get_ex(x, "labels", &want))
		return 0;
	if (!jstr(l, "alertname") || strcmp(jstr(l, "alertname"), jstr(x, "alertname")))
		return 0;
	json_object_object_foreach(want, k, v) {
		const char *have = jstr(l, k);

		if (!have || strcmp(have, json_object_get_string(v)))
			return 0;
	}
	return 1;
}

/*
 * Score the notifications the receiver holds against the timeline; every
 * failure is reported (cr_expect), so one run shows all that went wrong.
 */
static void score(struct json_object *tl)
{
	struct seen *s = calloc(512, sizeof(*s));
	struct json_object *events;
	int ns = 0;

	cr_assert(s);
	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++) {
		struct json_object *body = json_tokener_parse(rx.req[i].body ? rx.req[i].body : ""),
				   *alerts;

		cr_expect_not_null(body, "notification %d is not JSON", i);
		if (!body)
			continue;
		if (json_object_object_get_ex(body, "alerts", &alerts))
			for (size_t k = 0; k < json_object_array_length(alerts); k++) {
				struct json_object *a = json_object_array_get_idx(alerts, k), *l;
				const char *st = jstr(a, "status");
				int j, state = st && !strcmp(st, "firing") ? 1 : 2;
				char id[1024];

				if (!json_object_object_get_ex(a, "labels", &l))
					continue;
				snprintf(id, sizeof(id), "%s",
					 json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN |
									   JSON_C_TO_STRING_NOSLASHESCAPE));
				for (j = 0; j < ns && strcmp(s[j].id, id); j++)
					;
				if (j == ns) {
					if (ns == 512)
						continue;
					snprintf(s[ns].id, sizeof(s[ns].id), "%s", id);
					s[ns].labels = json_object_get(l);
					ns++;
				}
				if (state != s[j].last) {
					s[j].firing += state == 1;
					s[j].resolved += state == 2;
					s[j].last = state;
					if (state == 2 && jstr(a, "endsAt"))
						s[j].resolved_at_ms = alert_parse_time(jstr(a, "endsAt"));
				}
			}
		json_object_put(body);
	}
	pthread_mutex_unlock(&rx.lock);

	json_object_object_get_ex(tl, "events", &events);
	for (size_t e = 0; e < json_object_array_length(events); e++) {
		struct json_object *ev = json_object_array_get_idx(events, e), *exp;
		uint64_t end = (uint64_t)jint(ev, "end_ms");

		json_object_object_get_ex(ev, "expect", &exp);
		for (size_t x = 0; x < json_object_array_length(exp); x++) {
			struct json_object *want = json_object_array_get_idx(exp, x), *res;
			int matched = 0, resolves;

			json_object_object_get_ex(want, "resolves", &res);
			resolves = json_object_get_boolean(res);
			for (int j = 0; j < ns; j++) {
				if (!fits(s[j].labels, want))
					continue;
				matched++;
				s[j].claimed = 1;
				cr_expect_eq(s[j].firing, 1, "%s: %s paged %d times, want once",
					     jstr(ev, "name"), s[j].id, s[j].firing);
				if (resolves) {
					cr_expect_geq(s[j].resolved, 1, "%s: %s never resolved",
						      jstr(ev, "name"), s[j].id);
					cr_expect_geq(s[j].resolved_at_ms, end,
						      "%s: %s resolved before its fault ended",
						      jstr(ev, "name"), s[j].id);
				}
			}
			cr_expect_eq(matched, 1, "%s: expected one %s alert %s, got %d",
				     jstr(ev, "name"), jstr(want, "alertname"),
				     json_object_to_json_string(want), matched);
		}
	}
	for (int j = 0; j < ns; j++) {
		cr_expect(s[j].claimed, "paged for nothing the scenario injected: %s", s[j].id);
		json_object_put(s[j].labels);
	}
	free(s);
}

/*
 * Run scenario `name` through sim, rules (replay) and alerter; score it.
 * must_contain: a string some notification must carry (evidence), or NULL.
 */
static void run_scenario(const char *name, const char *must_contain)
{
	char timeline[400], cfg[400], cmd[2048];
	const char *out = test_out_dir();
	struct json_object *tl;
	FILE *f;

	snprintf(timeline, sizeof(timeline), "%s/timeline.json", redis.dir);
	cr_assert_eq(test_sh("%s/faultline sim --scenario scenarios/%s.yaml --redis %s --ends-now "
			     "--timeline %s >%s/sim.log 2>&1", out, name, redis.url, timeline,
			     redis.dir), 0, "faultline sim failed (see %s/sim.log)", redis.dir);
	tl = read_json(timeline);
	snprintf(cfg, sizeof(cfg), "%s/alerter.yaml", redis.dir);
	f = fopen(cfg, "w");
	cr_assert(f);
	fprintf(f, "redis: %s\nconsumer: scenarios\ngroup_wait: 0s\ngroup_interval: 1s\n"
		"receivers:\n  - name: pager\n    url: http://127.0.0.1:%d/page\n    secret: x\n",
		redis.url, rx.port);
	fclose(f);
	alerter = fork();
	if (alerter == 0) {
		char bin[300];

		snprintf(bin, sizeof(bin), "%s/faultline-alerter", out);
		execl(bin, bin, "--config", cfg, "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
	/*
	 * 60x real time: a minute of the scenario per second, so the alerter
	 * sees a fault's firing and resolution seconds apart, as it would live
	 * (minutes apart), rather than in one batch.
	 */
	snprintf(cmd, sizeof(cmd), "%s/faultline-rules --rules etc/rules/faultline.yaml --redis %s "
		 "--replay %lld,%lld --replay-speed 60 --log-level warn", out, redis.url,
		 (long long)jint(tl, "start_ms"), (long long)jint(tl, "end_ms"));
	cr_assert_eq(test_sh("%s", cmd), 0, "%s failed", cmd);

	/* delivered: the stream drained and no notification for 3 s */
	uint64_t deadline = time_mono_ns() + 90 * NSEC_PER_SEC, quiet_since = time_mono_ns();
	int last = -1;

	while (time_mono_ns() < deadline) {
		int n = rx_count();

		if (n != last) {
			last = n;
			quiet_since = time_mono_ns();
		}
		if (undelivered() == 0 && time_mono_ns() - quiet_since > 3 * NSEC_PER_SEC)
			break;
		usleep(200000);
	}
	cr_assert_lt(time_mono_ns(), deadline, "the alerter did not deliver within 90 s");
	cr_log_info("%s: %d notification(s)", name, rx_count());
	score(tl);
	if (must_contain) {
		int found = 0;

		pthread_mutex_lock(&rx.lock);
		for (int i = 0; i < rx.n && !found; i++)
			found = rx.req[i].body && strstr(rx.req[i].body, must_contain);
		pthread_mutex_unlock(&rx.lock);
		cr_expect(found, "no notification carries %s", must_contain);
	}
	json_object_put(tl);
}

/* The switch pages once, naming the peers the bad segments came from. */
Test(scenarios, sad_switch, .init = setup, .fini = teardown, .timeout = 240)
{
	run_scenario("sad-switch", "\"peer\":\"10.");
}

/*
 * One page per fault; and the fleet wear report (the story's second half)
 * lists the failing drive first, then the worn one (to replace), then the
 * cohort close behind it (to watch), ahead of every healthy drive.
 */
Test(scenarios, sad_server, .init = setup, .fini = teardown, .timeout = 240)
{
	char path[400];
	struct json_object *rows;

	run_scenario("sad-server", NULL);
	snprintf(path, sizeof(path), "%s/wear.json", redis.dir);
	cr_assert_eq(test_sh("%s/faultline report wear --json --redis %s >%s", test_out_dir(),
			     redis.url, path), 0);
	rows = read_json(path);
	cr_assert_geq(json_object_array_length(rows), 6);
	cr_expect_str_eq(jstr(json_object_array_get_idx(rows, 0), "host"), "sw003-r0006-h01");
	cr_expect_str_eq(jstr(json_object_array_get_idx(rows, 0), "verdict"), "failing");
	cr_expect_str_eq(jstr(json_object_array_get_idx(rows, 1), "host"), "sw002-r0005-h03");
	cr_expect_str_eq(jstr(json_object_array_get_idx(rows, 1), "verdict"), "replace");
	for (size_t i = 2; i < 6; i++) {
		struct json_object *r = json_object_array_get_idx(rows, i);

		cr_expect(!strncmp(jstr(r, "host"), "sw000-r0001-", 12) &&
			  !strcmp(jstr(r, "verdict"), "watch"),
			  "row %zu of the wear report is %s (%s), not the cohort", i, jstr(r, "host"),
			  jstr(r, "verdict"));
	}
	json_object_put(rows);
}

Test(scenarios, lying_average, .init = setup, .fini = teardown, .timeout = 240)
{
	run_scenario("lying-average", NULL);
}

/* Both baselines fire once; the evidence lists json_parse among the top stacks. */
Test(scenarios, regression, .init = setup, .fini = teardown, .timeout = 300)
{
	run_scenario("regression", "json_parse");
}

Test(scenarios, load_rise_without_regression_is_silent, .init = setup, .fini = teardown,
     .timeout = 300)
{
	run_scenario("load-rise", NULL);
	cr_expect_eq(rx_count(), 0, "a harmless deploy during a load rise paged");
}

Test(scenarios, silent_rack, .init = setup, .fini = teardown, .timeout = 240)
{
	run_scenario("silent-rack", NULL);
}
