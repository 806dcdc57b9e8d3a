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
#include <fnmatch.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "model/alert.h"
#include "tests/cluster.h"
#include "tests/helpers.h"
#include "tests/receiver.h"
#include "core/timeutil.h"

static struct test_redis redis;
static struct test_cluster cluster;
static const char *url, *dir;	/* the Redis (or cluster) this scenario runs on */
static pid_t alerters[2];
static int nalerters = 1, nworkers = 1;
/*
 * A sanitized build (make asan) runs every binary two to three times
 * slower: its replays run SLOWDOWN times slower too (and kills come as much
 * later), so that a deadline in scenario time -- a page within 16 minutes
 * of a deploy -- asks the workers for the same wall-clock work as in a
 * plain build rather than a third of it.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SLOWDOWN 2
#else
#define SLOWDOWN 1
#endif

static int replay_speed = 60;
/* wall seconds after the replay starts to kill -9 worker w0 / alerter 0 (0: never) */
static int kill_worker_at_s, kill_alerter_at_s;
/* ... and the master holding fl:alerts (its replica is promoted) */
static int kill_master_at_s;

static void setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0);
	url = redis.url;
	dir = redis.dir;
	rx_start();
}

/*
 * On a real Redis Cluster (3 masters, 3 replicas), with 3 sharded rules
 * workers and 2 alerters on one consumer group.
 */
static void setup_cluster(void)
{
	cr_assert_eq(test_cluster_start(&cluster, 3, 1), 0, "cannot start a Redis Cluster");
	url = cluster.url;
	dir = cluster.dir;
	nworkers = 3;
	nalerters = 2;
	rx_start();
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++)
		if (alerters[i] > 0) {
			kill(alerters[i], SIGTERM);
			waitpid(alerters[i], NULL, 0);
			alerters[i] = 0;
		}
	rx_stop();
	if (cluster.n)
		test_cluster_destroy(&cluster);
	else
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
	char err[256];
	struct conn *c = conn_open(url, NSEC_PER_SEC, err, sizeof(err));
	redisReply *r;
	long left = -1;

	if (!c)
		goto out;
	r = conn_commandf(c, "fl:alerts", "XINFO GROUPS fl:alerts");
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
		conn_close(c);
	return left;
}

/* One alert as delivered: its identity and the transitions seen. */
struct seen {
	char id[1024];			/* alertname + labels, canonical */
	struct json_object *labels;	/* the first notification's, owned */
	char dlabel[64], dvalue[256];	/* its domain: host, rack, switch, site, service */
	char dsame[256];		/* outer levels of the same hosts: "switch=sw1,..." */
	struct json_object *evidence;	/* the first firing notification's, owned, or NULL */
	int firing, resolved;		/* transitions into each state */
	int last;			/* 0 none, 1 firing, 2 resolved */
	uint64_t fired_at_ms;		/* firedAt of the first firing (startsAt is `for` earlier) */
	uint64_t resolved_at_ms;	/* endsAt of the resolution */
	int claimed;			/* an expectation accounted for it */
	char starts[40];		/* startsAt of the current firing */
	int restarted;			/* firing again with another startsAt: paged twice */
};

/* The entry of faultline.alerts or faultline.evidence with this fingerprint. */
static struct json_object *by_fingerprint(struct json_object *body, const char *list,
					  const char *fp)
{
	struct json_object *fl, *arr;

	if (!fp || !json_object_object_get_ex(body, "faultline", &fl) ||
	    !json_object_object_get_ex(fl, list, &arr))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *o = json_object_array_get_idx(arr, i);
		const char *f = jstr(o, "fingerprint");

		if (f && !strcmp(f, fp))
			return o;
	}
	return NULL;
}

/*
 * Does the alert carry alertname and every label expectation x asks for,
 * and is its domain one x names (a host page never stands for its switch)?
 */
static int fits(const struct seen *s, struct json_object *x)
{
	struct json_object *want;
	const char *d;

	if (!json_object_object_get_ex(x, "labels", &want))
		return 0;
	if (!jstr(s->labels, "alertname") ||
	    strcmp(jstr(s->labels, "alertname"), jstr(x, "alertname")))
		return 0;
	json_object_object_foreach(want, k, v) {
		const char *have = jstr(s->labels, k);

		if (!have || strcmp(have, json_object_get_string(v)))
			return 0;
	}
	if (!s->dlabel[0])
		return 1;
	d = jstr(want, s->dlabel);
	if (d && !strcmp(d, s->dvalue))
		return 1;
	/* a domain that outer levels hold exactly is also those (rack r9 = switch sw9) */
	for (const char *p = s->dsame; *p;) {
		size_t n = strcspn(p, ","), k = strcspn(p, "=");
		char key[64];

		if (k < n && k < sizeof(key)) {
			memcpy(key, p, k);
			key[k] = 0;
			d = jstr(want, key);
			if (d && strlen(d) == n - k - 1 && !strncmp(d, p + k + 1, n - k - 1))
				return 1;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

/* Does the page's evidence name what x's evidence: asks for?  NULL: yes; else what is missing. */
static const char *evidence_missing(const struct seen *s, struct json_object *x)
{
	struct json_object *want, *cpu, *arr, *drive;
	const char *fn, *peer, *dev;

	if (!json_object_object_get_ex(x, "evidence", &want))
		return NULL;
	if (!s->evidence)
		return "no evidence at all";
	fn = jstr(want, "function");
	peer = jstr(want, "peer");
	dev = jstr(want, "device");
	if (fn) {
		int found = 0;

		if (json_object_object_get_ex(s->evidence, "cpu", &cpu)) {
			if (json_object_object_get_ex(cpu, "top_stacks", &arr))
				for (size_t i = 0; i < json_object_array_length(arr) && !found; i++) {
					char *st = strdup(jstr(json_object_array_get_idx(arr, i),
							       "stack") ?: ""), *save, *f;

					for (f = strtok_r(st, ";", &save); f && !found;
					     f = strtok_r(NULL, ";", &save))
						found = !strcmp(f, fn);
					free(st);
				}
			if (json_object_object_get_ex(cpu, "grew_since_deploy", &arr))
				for (size_t i = 0; i < json_object_array_length(arr) && !found; i++)
					found = !strcmp(jstr(json_object_array_get_idx(arr, i),
							     "function") ?: "", fn);
		}
		if (!found)
			return "the function is not among its CPU evidence's stacks";
	}
	if (peer) {
		int found = 0;

		if (json_object_object_get_ex(s->evidence, "checksum_peers", &arr))
			for (size_t i = 0; i < json_object_array_length(arr) && !found; i++)
				found = !fnmatch(peer, jstr(json_object_array_get_idx(arr, i),
							    "peer") ?: "", 0);
		if (!found)
			return "no checksum peer of its evidence matches";
	}
	/*
	 * scoped (issue 42): an alert about a service shows that service's
	 * stacks only, never the hosts' neighbours' (the simulator's logshipper)
	 */
	const char *svc = jstr(s->labels, "service");

	if (svc && json_object_object_get_ex(s->evidence, "cpu", &cpu) &&
	    json_object_object_get_ex(cpu, "top_stacks", &arr))
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			const char *in = jstr(json_object_array_get_idx(arr, i), "service") ?: "";

			if (strcmp(in, svc) && (strncmp(in, svc, strlen(svc)) ||
						strcmp(in + strlen(svc), ".service")))
				return "its CPU evidence holds another service's stacks";
		}
	if (dev && (!json_object_object_get_ex(s->evidence, "drive", &drive) ||
		    !jstr(drive, "device") || strcmp(jstr(drive, "device"), dev)))
		return "its drive evidence is not that device's record";
	return NULL;
}

/* Collect every delivered alert's identity, domain, transitions and evidence into s. */
static int collect(struct seen *s, int max)
{
	int ns = 0;

	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++) {
		struct json_object *body = json_tokener_parse(rx.req[i].body ? rx.req[i].body : ""),
				   *alerts;

		cr_expect_not_null(body, "notification %d is not JSON", i);
		if (!body)
			continue;
		if (json_object_object_get_ex(body, "alerts", &alerts))
			for (size_t k = 0; k < json_object_array_length(alerts); k++) {
				struct json_object *a = json_object_array_get_idx(alerts, k), *l,
						   *fa, *dom, *ev;
				const char *st = jstr(a, "status"), *fp = jstr(a, "fingerprint");
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
					if (ns == max)
						continue;
					snprintf(s[ns].id, sizeof(s[ns].id), "%s", id);
					s[ns].labels = json_object_get(l);
					fa = by_fingerprint(body, "alerts", fp);
					if (fa && json_object_object_get_ex(fa, "domain", &dom)) {
						snprintf(s[ns].dlabel, sizeof(s[ns].dlabel), "%s",
							 jstr(dom, "label") ?: "");
						snprintf(s[ns].dvalue, sizeof(s[ns].dvalue), "%s",
							 jstr(dom, "value") ?: "");
						snprintf(s[ns].dsame, sizeof(s[ns].dsame), "%s",
							 jstr(dom, "same_as") ?: "");
					} else if (jstr(l, "host")) {
						snprintf(s[ns].dlabel, sizeof(s[ns].dlabel), "host");
						snprintf(s[ns].dvalue, sizeof(s[ns].dvalue), "%s",
							 jstr(l, "host"));
					}
					ns++;
				}
				if (state == 1 && !s[j].evidence &&
				    (ev = by_fingerprint(body, "evidence", fp)))
					s[j].evidence = json_object_get(ev);
				if (state == 1 && s[j].last == 1 && jstr(a, "startsAt") &&
				    strcmp(s[j].starts, jstr(a, "startsAt")))
					s[j].restarted++;
				if (state == 1 && jstr(a, "startsAt"))
					snprintf(s[j].starts, sizeof(s[j].starts), "%s",
						 jstr(a, "startsAt"));
				if (state != s[j].last) {
					s[j].firing += state == 1;
					s[j].resolved += state == 2;
					s[j].last = state;
					fa = by_fingerprint(body, "alerts", fp);
					if (state == 1 && !s[j].fired_at_ms && fa && jstr(fa, "firedAt"))
						s[j].fired_at_ms = alert_parse_time(jstr(fa, "firedAt"));
					if (state == 2 && jstr(a, "endsAt"))
						s[j].resolved_at_ms = alert_parse_time(jstr(a, "endsAt"));
				}
			}
		json_object_put(body);
	}
	pthread_mutex_unlock(&rx.lock);
	return ns;
}

/* The wear report's rows (faultline report wear --json), read once; NULL on failure. */
static struct json_object *wear_rows(void)
{
	static struct json_object *rows;
	char path[400];

	if (rows)
		return rows;
	snprintf(path, sizeof(path), "%s/wear.json", dir);
	if (test_sh("%s/faultline report wear --json --redis %s >%s", test_out_dir(), url,
		    path))
		return NULL;
	return rows = json_object_from_file(path);
}

/* Check expectation x's wear: row against the fleet wear report. */
static void check_wear(struct json_object *ev, struct json_object *x)
{
	struct json_object *w, *rows, *row, *labels;
	size_t n;
	const char *verdict;

	if (!json_object_object_get_ex(x, "wear", &w))
		return;
	rows = wear_rows();
	cr_assert_not_null(rows, "faultline report wear failed");
	n = (size_t)jint(w, "row");
	json_object_object_get_ex(x, "labels", &labels);
	cr_expect_geq(json_object_array_length(rows), n, "%s: the wear report has %zu rows, "
		      "want the host at row %zu", jstr(ev, "name"), json_object_array_length(rows),
		      n);
	if (json_object_array_length(rows) < n)
		return;
	row = json_object_array_get_idx(rows, n - 1);
	cr_expect_str_eq(jstr(row, "host"), jstr(labels, "host"), "%s: row %zu of the wear "
			 "report is %s, want %s", jstr(ev, "name"), n, jstr(row, "host"),
			 jstr(labels, "host"));
	verdict = jstr(w, "verdict");
	if (verdict)
		cr_expect_str_eq(jstr(row, "verdict"), verdict, "%s: row %zu's verdict is %s, "
				 "want %s", jstr(ev, "name"), n, jstr(row, "verdict"), verdict);
}

/*
 * Score the notifications the receiver holds against the timeline; every
 * failure is reported (cr_expect), so one run shows all that went wrong.
 *
 *   - an expected page fired exactly once, at the expected domain;
 *   - `resolves: true`: it resolved, after its fault ended; `resolves:
 *     false`: it did not resolve while its fault lasted;
 *   - `within`: it fired (firedAt) at most that long after its event started
 *     (sharded: plus SHARD_SLACK_EVALS evaluations -- a deploy verdict waits
 *     for every worker's part, and each worker replays on its own clock: the
 *     first evaluation past the after-window, whether the other workers
 *     published before or after the judge looked, and a worker descheduled
 *     on a busy machine are an evaluation each, a whole replayed minute at
 *     60x, where live they are seconds);
 *   - `evidence`, `wear`: what it (or the wear report) names;
 *   - nothing else paged.
 */
#define SHARD_SLACK_EVALS 3

static void score(struct json_object *tl)
{
	struct seen *s = calloc(512, sizeof(*s));
	struct json_object *events;
	int ns;

	cr_assert(s);
	ns = collect(s, 512);
	json_object_object_get_ex(tl, "events", &events);
	for (size_t e = 0; e < json_object_array_length(events); e++) {
		struct json_object *ev = json_object_array_get_idx(events, e), *exp;
		uint64_t start = (uint64_t)jint(ev, "start_ms"), end = (uint64_t)jint(ev, "end_ms");

		json_object_object_get_ex(ev, "expect", &exp);
		for (size_t x = 0; x < json_object_array_length(exp); x++) {
			struct json_object *want = json_object_array_get_idx(exp, x), *res;
			uint64_t within = (uint64_t)jint(want, "within_ms");
			/* one evaluation: a second of real time, replay_speed of the scenario's */
			uint64_t slack = nworkers > 1 && within ?
				SHARD_SLACK_EVALS * 1000ULL * (uint64_t)(replay_speed / SLOWDOWN) : 0;
			int matched = 0, resolves;

			json_object_object_get_ex(want, "resolves", &res);
			resolves = json_object_get_boolean(res);
			for (int j = 0; j < ns; j++) {
				const char *missing;

				if (!fits(&s[j], want))
					continue;
				matched++;
				s[j].claimed = 1;
				cr_expect_eq(s[j].firing, 1, "%s: %s paged %d times, want once",
					     jstr(ev, "name"), s[j].id, s[j].firing);
				if (resolves) {
					cr_expect_geq(s[j].resolved, 1, "%s: %s never resolved",
						      jstr(ev, "name"), s[j].id);
					if (s[j].resolved)
						cr_expect_geq(s[j].resolved_at_ms, end,
							      "%s: %s resolved before its fault ended",
							      jstr(ev, "name"), s[j].id);
				} else {
					cr_expect(!s[j].resolved || s[j].resolved_at_ms >= end,
						  "%s: %s resolved %.0f s before its fault ended",
						  jstr(ev, "name"), s[j].id,
						  ((double)end - (double)s[j].resolved_at_ms) / 1000);
				}
				if (within)
					cr_expect(s[j].fired_at_ms &&
						  s[j].fired_at_ms <= start + within + slack,
						  "%s: %s paged %.0f s after the event started, want "
						  "within %.0f s", jstr(ev, "name"), s[j].id,
						  ((double)s[j].fired_at_ms - (double)start) / 1000,
						  (double)(within + slack) / 1000);
				missing = evidence_missing(&s[j], want);
				cr_expect(!missing, "%s: %s: %s (evidence %s)", jstr(ev, "name"),
					  s[j].id, missing ?: "",
					  s[j].evidence ? json_object_to_json_string(s[j].evidence) :
							  "none");
			}
			cr_expect_eq(matched, 1, "%s: expected one %s alert %s, got %d",
				     jstr(ev, "name"), jstr(want, "alertname"),
				     json_object_to_json_string(want), matched);
			check_wear(ev, want);
		}
	}
	for (int j = 0; j < ns; j++) {
		cr_expect(s[j].claimed, "paged for nothing the scenario injected: %s (domain %s=%s)",
			  s[j].id, s[j].dlabel, s[j].dvalue);
		cr_expect_eq(s[j].restarted, 0, "%s fired again with a new startsAt while firing "
			     "(paged twice)", s[j].id);
		json_object_put(s[j].labels);
		json_object_put(s[j].evidence);
	}
	free(s);
}

/*
 * Run scenario `name` through sim, rules (replay) and alerter; score it.
 * must_contain: a string some notification must carry (evidence), or NULL.
 */
static void run_scenario(const char *name, const char *must_contain)
{
	char timeline[400], cfg[400], cmd[4096];
	const char *out = test_out_dir();
	struct json_object *tl;
	FILE *f;

	snprintf(timeline, sizeof(timeline), "%s/timeline.json", dir);
	cr_assert_eq(test_sh("%s/faultline sim --scenario scenarios/%s.yaml --redis %s --ends-now "
			     "--timeline %s >%s/sim.log 2>&1", out, name, url, timeline,
			     dir), 0, "faultline sim failed (see %s/sim.log)", dir);
	tl = read_json(timeline);
	for (int a = 0; a < nalerters; a++) {
		snprintf(cfg, sizeof(cfg), "%s/alerter%d.yaml", dir, a);
		f = fopen(cfg, "w");
		cr_assert(f);
		fprintf(f, "redis: %s\nconsumer: scenarios-%d\ngroup_wait: 0s\n"
			"group_interval: 1s\ndelivery:\n  claim_idle: 2s\nreceivers:\n"
			"  - name: pager\n"
			"    url: http://127.0.0.1:%d/page\n    secret: x\n", url, a, rx.port);
		fclose(f);
		alerters[a] = fork();
		if (alerters[a] == 0) {
			char bin[300];

			snprintf(bin, sizeof(bin), "%s/faultline-alerter", out);
			execl(bin, bin, "--config", cfg, "--log-level", "warn", (char *)NULL);
			_exit(127);
		}
	}
	/*
	 * 60x real time: a minute of the scenario per second, so the alerter
	 * sees a fault's firing and resolution seconds apart, as it would live
	 * (minutes apart), rather than in one batch.  Sharded: nworkers
	 * workers replay side by side, splitting the fleet among themselves.
	 */
	if (nworkers == 1) {
		snprintf(cmd, sizeof(cmd), "%s/faultline-rules --rules etc/rules/faultline.yaml "
			 "--redis %s --replay %lld,%lld --replay-speed %d --log-level warn", out,
			 url, (long long)jint(tl, "start_ms"), (long long)jint(tl, "end_ms"),
			 replay_speed / SLOWDOWN);
	} else {
		int n = 0;

		for (int w = 0; w < nworkers; w++)
			n += snprintf(cmd + n, sizeof(cmd) - (size_t)n,
				      "%s/faultline-rules --rules etc/rules/faultline.yaml "
				      "--redis %s --replay %lld,%lld --replay-speed %d --shard "
				      "--worker-id w%d --log-level info 2>%s/worker%d.log & p%d=$!; ",
				      out, url, (long long)jint(tl, "start_ms"),
				      (long long)jint(tl, "end_ms"), replay_speed / SLOWDOWN, w, dir,
				      w, w);
		if (kill_worker_at_s)
			n += snprintf(cmd + n, sizeof(cmd) - (size_t)n,
				      "(sleep %d; kill -9 $p0) & k=$!; ", kill_worker_at_s * SLOWDOWN);
		if (kill_alerter_at_s)
			n += snprintf(cmd + n, sizeof(cmd) - (size_t)n,
				      "(sleep %d; kill -9 %d) & ", kill_alerter_at_s * SLOWDOWN,
				      (int)alerters[0]);
		if (kill_master_at_s) {
			/* fl:alerts' slot (1464): events, checkpoints and leases all live there */
			int m = test_cluster_master_of(&cluster, 1464);

			cr_assert_geq(m, 0);
			n += snprintf(cmd + n, sizeof(cmd) - (size_t)n,
				      "(sleep %d; kill -9 %d) & ", kill_master_at_s * SLOWDOWN,
				      (int)cluster.pid[m]);
			cluster.pid[m] = 0;	/* reaped by the shell's kill, not teardown */
		}
		for (int w = kill_worker_at_s ? 1 : 0; w < nworkers; w++)
			n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, "wait $p%d && ", w);
		n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, "%s",
			      kill_worker_at_s ? "wait $k" : "true");
	}
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
Test(scenarios, sad_switch, .init = setup, .fini = teardown, .timeout = 240 * SLOWDOWN)
{
	run_scenario("sad-switch", "\"peer\":\"10.");
}

/*
 * One page per fault; and the fleet wear report (the story's second half)
 * lists the failing drive first, then the worn one (to replace), then the
 * cohort close behind it (to watch), ahead of every healthy drive.
 */
Test(scenarios, sad_server, .init = setup, .fini = teardown, .timeout = 240 * SLOWDOWN)
{
	struct json_object *rows;

	run_scenario("sad-server", NULL);
	/* rows 1 and 2 are the scenario's own expectations (wear:) */
	rows = wear_rows();
	cr_assert_not_null(rows);
	cr_assert_geq(json_object_array_length(rows), 6);
	for (size_t i = 2; i < 6; i++) {
		struct json_object *r = json_object_array_get_idx(rows, i);

		cr_expect(!strncmp(jstr(r, "host"), "sw000-r0001-", 12) &&
			  !strcmp(jstr(r, "verdict"), "watch"),
			  "row %zu of the wear report is %s (%s), not the cohort", i, jstr(r, "host"),
			  jstr(r, "verdict"));
	}
}

Test(scenarios, lying_average, .init = setup, .fini = teardown, .timeout = 240 * SLOWDOWN)
{
	run_scenario("lying-average", NULL);
}

/* Both baselines fire once; the evidence lists json_parse among the top stacks. */
Test(scenarios, regression, .init = setup, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("regression", "json_parse");
}

Test(scenarios, load_rise_without_regression_is_silent, .init = setup, .fini = teardown,
     .timeout = 300 * SLOWDOWN)
{
	run_scenario("load-rise", NULL);
	cr_expect_eq(rx_count(), 0, "a harmless deploy during a load rise paged");
}

Test(scenarios, silent_rack, .init = setup, .fini = teardown, .timeout = 240 * SLOWDOWN)
{
	run_scenario("silent-rack", NULL);
}

/* Detection (issue 13): each class of fault pages once, at the right domain. */
Test(scenarios, line_card, .init = setup, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("line-card", NULL);
}

Test(scenarios, rack_or_switch, .init = setup, .fini = teardown, .timeout = 240 * SLOWDOWN)
{
	run_scenario("rack-or-switch", NULL);
}

Test(scenarios, agg_and_tor, .init = setup, .fini = teardown, .timeout = 240 * SLOWDOWN)
{
	run_scenario("agg-and-tor", NULL);
}

Test(scenarios, two_services, .init = setup, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("two-services", NULL);
}

Test(scenarios, new_hot_function, .init = setup, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("new-hot-function", NULL);
}

Test(scenarios, relative_thresholds, .init = setup, .fini = teardown, .timeout = 240 * SLOWDOWN)
{
	run_scenario("relative-thresholds", NULL);
}

/*
 * One cause, one page, named precisely (issue 36): a rack-wide storage or
 * power fault pages the rack; a domain that is its site is named by both;
 * a line card in a small fleet pages the switch because its hosts failed
 * together; a regression in mark is paged as mark, not its caller gc.
 */
Test(scenarios, rack_wide, .init = setup, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("rack-wide", NULL);
}

Test(scenarios, one_switch_site, .init = setup, .fini = teardown, .timeout = 240 * SLOWDOWN)
{
	run_scenario("one-switch-site", NULL);
}

Test(scenarios, small_line_card, .init = setup, .fini = teardown, .timeout = 240 * SLOWDOWN)
{
	run_scenario("small-line-card", NULL);
}

Test(scenarios, gc_regression, .init = setup, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("gc-regression", "mark");
}

/* Deploy trains (issue 43): each deploy judged on the minutes no other deploy touched. */
Test(scenarios, deploy_train, .init = setup, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("deploy-train", "json_parse");
	/* `faultline deploy list` shows each deploy's verdicts, sidecar's naming api */
	cr_expect_eq(test_sh("%s/faultline deploy list --redis %s > %s/deploys.txt 2>&1 && "
			     "grep -q 'verdict PostDeployCpuRegression: regression (other deploys on "
			     "its hosts: sidecar 1.2)' %s/deploys.txt && "
			     "grep -q 'verdict PostDeployCpuRegression: no regression (other deploys "
			     "on its hosts: api 4.0)' %s/deploys.txt", test_out_dir(), url, dir, dir,
			     dir), 0, "the verdicts are not in faultline deploy list (%s/deploys.txt)",
		     dir);
}

Test(scenarios, deploy_train_rollback, .init = setup, .fini = teardown,
     .timeout = 300 * SLOWDOWN)
{
	run_scenario("deploy-train-rollback", "json_parse");
}

Test(scenarios, deploy_train_second, .init = setup, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("deploy-train-second", "send");
}

/*
 * Scale-out (issue 15): the same scenarios on a Redis Cluster (3 masters, 3
 * replicas) with 3 sharded rules workers replaying side by side and 2
 * alerters on one consumer group: every expected page once, at the right
 * domain, with the same evidence; nothing else.
 */
Test(scenarios_cluster, sad_switch, .init = setup_cluster, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("sad-switch", "\"peer\":\"10.");
}

Test(scenarios_cluster, sad_server, .init = setup_cluster, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("sad-server", NULL);
}

Test(scenarios_cluster, regression, .init = setup_cluster, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("regression", "json_parse");
	/*
	 * The fleet's two sites went to w0 and w1 and the fleet-wide verdicts to
	 * w2 (rendezvous hashing of fixed names): w2 judged every deploy from
	 * the parts the others published, having no host of its own.
	 */
	cr_expect_eq(test_sh("grep -q 'judged from this worker.s part (0 host(s)) and those of "
			     "the other workers (64 host(s)' %s/worker2.log", dir), 0,
		     "w2 did not judge the deploy from w0's and w1's parts (%s/worker2.log)", dir);
	cr_expect_eq(test_sh("grep -q 'took [0-9]* partition' %s/worker0.log && "
			     "grep -q 'took [0-9]* partition' %s/worker1.log", dir, dir), 0);
}

Test(scenarios_cluster, lying_average, .init = setup_cluster, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("lying-average", NULL);
}

Test(scenarios_cluster, load_rise_without_regression_is_silent, .init = setup_cluster,
     .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("load-rise", NULL);
	cr_expect_eq(rx_count(), 0, "a harmless deploy during a load rise paged");
}

Test(scenarios_cluster, silent_rack, .init = setup_cluster, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("silent-rack", NULL);
}

Test(scenarios_cluster, line_card, .init = setup_cluster, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("line-card", NULL);
}

Test(scenarios_cluster, rack_or_switch, .init = setup_cluster, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("rack-or-switch", NULL);
}

Test(scenarios_cluster, agg_and_tor, .init = setup_cluster, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("agg-and-tor", NULL);
}

Test(scenarios_cluster, two_services, .init = setup_cluster, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	run_scenario("two-services", NULL);
}

Test(scenarios_cluster, new_hot_function, .init = setup_cluster, .fini = teardown,
     .timeout = 300 * SLOWDOWN)
{
	run_scenario("new-hot-function", NULL);
}

Test(scenarios_cluster, relative_thresholds, .init = setup_cluster, .fini = teardown,
     .timeout = 300 * SLOWDOWN)
{
	run_scenario("relative-thresholds", NULL);
}

/*
 * kill -9 of the rules worker that evaluates sw001 (w0 holds site0) while
 * the switch's alert fires, and of one alerter: w0's partition is taken
 * over with its checkpoint (the page keeps its startsAt and resolves once),
 * and the other alerter claims the dead one's pending entries.
 */
Test(scenarios_cluster, worker_and_alerter_killed, .init = setup_cluster, .fini = teardown,
     .timeout = 300 * SLOWDOWN)
{
	replay_speed = 20;	/* the 10 min scenario in 30 s: the takeover fits in it */
	kill_worker_at_s = 9;	/* replay ~3:00, sw001's page firing since ~1:45 */
	kill_alerter_at_s = 12;
	run_scenario("sad-switch", "\"peer\":\"10.");
	cr_expect_eq(test_sh("grep -q 'took over 1 firing alert' %s/worker1.log %s/worker2.log",
			     dir, dir), 0,
		     "no worker took over w0's firing alert (%s/worker*.log)", dir);
}

/*
 * The master holding fl:alerts, the leases and the checkpoints is killed
 * (SIGKILL) while the switch's page fires: its replica is promoted, the
 * workers and the alerters reconnect through the refreshed slot map, and
 * every expected page arrives once.
 */
Test(scenarios_cluster, master_killed, .init = setup_cluster, .fini = teardown, .timeout = 300 * SLOWDOWN)
{
	replay_speed = 20;
	kill_master_at_s = 8;
	run_scenario("sad-switch", "\"peer\":\"10.");
}
